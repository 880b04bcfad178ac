"""The building blocks of every config schema: a frozen section that refuses unknown keys, and value types.

Model and task configs are declared beside their code (`nn/onlstm/model.py`, `tasks/lm.py`, ...) from these;
`treenets.config` reads, validates and reports errors for all of them.
"""

from __future__ import annotations

from typing import Annotated, Any, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

Probability = Annotated[float, Field(ge=0.0, lt=1.0)]
PositiveInt = Annotated[int, Field(gt=0)]
NonNegativeInt = Annotated[int, Field(ge=0)]
PositiveFloat = Annotated[float, Field(gt=0.0)]
NonNegativeFloat = Annotated[float, Field(ge=0.0)]

# The names of two settings that a config, the command line and the code they choose between all read: the kernel
# backend (`treenets.nn.backend`) and the precision of the matrix products (`treenets.nn.precision`).
BACKENDS = ("auto", "torch", "cpp", "compile")
PRECISIONS = ("fp32", "bf16")


def _leaf_types(annotation) -> set:
    """The types an annotation is made of: `Annotated[int, ...] | None` -> {int, NoneType, ...}."""
    args = get_args(annotation)
    if not args:
        return {annotation}
    return {leaf for arg in args for leaf in _leaf_types(arg)}


class Section(BaseModel):
    """A config section: unknown keys are errors, values cannot be changed after validation, numbers are finite
    (`.inf` and `.nan` are refused) and a boolean is not a number."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @classmethod
    def upgrade_saved(cls, section: dict) -> dict:
        """This section as a checkpoint of an earlier treenets saved it (plain data), in today's schema: a model's
        config section drops what its model no longer has (`treenets.config.upgrade_saved`). As it is, here."""
        return section

    @model_validator(mode="before")
    @classmethod
    def _no_boolean_numbers(cls, data: Any) -> Any:
        # pydantic reads `true` as 1 in a number field; in a config it is a mistake (`batch_size: yes`).
        if not isinstance(data, dict):
            return data
        errors = []
        for key, value in data.items():
            types = _leaf_types(cls.model_fields[key].annotation) if key in cls.model_fields else set()
            if bool in types or not types & {int, float}:
                continue
            # A number, or the numbers of a tuple (e.g. Adam's betas).
            many = isinstance(value, (list, tuple))
            items = [((key, i), v) for i, v in enumerate(value)] if many else [((key,), value)]
            for loc, item in items:
                if isinstance(item, bool):
                    error = PydanticCustomError("bool_number", "{value} is a boolean; expected a number",
                                                {"value": str(item).lower()})
                    errors.append(InitErrorDetails(type=error, loc=loc, input=item))
        if errors:
            raise ValidationError.from_exception_data(cls.__name__, errors)
        return data
