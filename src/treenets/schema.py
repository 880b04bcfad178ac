"""The building blocks of every config schema: a frozen section that refuses unknown keys, and value types.

Model and task configs are declared beside their code (`nn/onlstm.py`, `tasks/lm.py`, ...) from these;
`treenets.config` reads, validates and reports errors for all of them.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

Probability = Annotated[float, Field(ge=0.0, lt=1.0)]
PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0.0)]
NonNegativeFloat = Annotated[float, Field(ge=0.0)]


class Section(BaseModel):
    """A config section: unknown keys are errors, values cannot be changed after validation."""

    model_config = ConfigDict(extra="forbid", frozen=True)
