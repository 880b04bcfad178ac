"""Load weights saved by the official implementations into treenets models.

The official code saves whole pickled objects; extract their `state_dict()` with the official code (or use
the `params.npz` layout of the golden fixtures: key for key the official `state_dict`) and pass it here
with the official constructor arguments. Each model's folder holds its own conversion (`convert.py`, named in its
registration: `treenets.nn.registry.Model.convert`); this is the one entry point to all of them.
"""

from __future__ import annotations

from collections.abc import Mapping

import torch

from treenets.core.errors import TreenetsError
from treenets.nn.registry import all_models, model


def from_official(name: str, state_dict: Mapping, **arguments) -> torch.nn.Module:
    """The treenets network of model `name` (`treenets.nn.registry`: e.g. `onlstm`, `prpn`, `treelstm`,
    `ordered-memory`, `structformer`) holding the weights of the official `state_dict` (tensors or numpy arrays,
    e.g. `dict(np.load("params.npz"))`), built from the official constructor `arguments`, in eval mode.

    Raises:
        TreenetsError: a model without an official conversion; a key missing or unexpected, or a shape that does
            not match the arguments.
    """
    found = model(name)
    if found.convert is None:
        convertible = [m.name for m in all_models().values() if m.convert]
        raise TreenetsError(f"model {name!r} has no official weights to load (those that do: "
                            f"{', '.join(convertible)})")
    return found.function(found.convert)(state_dict, **arguments)
