"""Loading a `state_dict` saved by an official implementation into a treenets network: the keys renamed, every key
and shape checked (what each model's `convert.py` shares)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch

from treenets.core.errors import TreenetsError


def as_tensor(value) -> torch.Tensor:
    """A tensor or an array (e.g. from a fixture's `params.npz`) as a tensor of its own."""
    return value.detach().clone() if isinstance(value, torch.Tensor) else torch.from_numpy(np.array(value))


def check_tied(state_dict: Mapping, tie_weights: bool) -> None:
    """An error where `tie_weights` is set but the official embedding and decoder hold different weights."""
    if tie_weights and "encoder.weight" in state_dict and "decoder.weight" in state_dict and not torch.equal(
            as_tensor(state_dict["encoder.weight"]), as_tensor(state_dict["decoder.weight"])):
        raise TreenetsError("tie_weights is set but encoder.weight and decoder.weight differ")


def load_renamed(model, state_dict: Mapping, renamed: dict, what: str, arguments: str, source=None) -> None:
    """Load `state_dict` into `model` under the names `renamed` maps its keys to, checking keys, dtypes and shapes.

    Args:
        what: what the state_dict should be, for messages ("an official ON-LSTM state_dict for nlayers=3").
        arguments: the constructor arguments the shapes follow from, for messages.
        source: the file the state_dict was read from, which the messages name (default: its `source`
            attribute where it has one: a golden fixture's `params.npz`, `treenets.workflows.check_golden.Arrays`).

    Raises:
        TreenetsError: a key missing or unexpected, an array that is not floats where the model holds weights,
            or a shape that does not match.
    """
    source = source if source is not None else getattr(state_dict, "source", None)
    where = f"{source}: " if source is not None else ""
    missing = sorted(set(renamed) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(renamed))
    if missing or unexpected:
        raise TreenetsError(f"{where}not {what}: missing {missing or 'nothing'}, unexpected {unexpected or 'nothing'}")
    ours = model.state_dict()
    converted = {}
    for official, name in renamed.items():
        tensor = as_tensor(state_dict[official])
        if ours[name].is_floating_point() and not tensor.is_floating_point():  # (cast, ids would pass as weights)
            raise TreenetsError(f"{where}{official}: {str(tensor.dtype).removeprefix('torch.')} "
                                f"{list(tensor.shape)}; expected floats (weights: {name} is "
                                f"{str(ours[name].dtype).removeprefix('torch.')})")
        tensor = tensor.to(ours[name].dtype)
        if tensor.shape != ours[name].shape:
            raise TreenetsError(f"{where}{official}: shape {tuple(tensor.shape)} does not match "
                                f"{tuple(ours[name].shape)} expected from {arguments}")
        converted[name] = tensor
    model.load_state_dict(converted)


def fixture_arg(config: dict, key: str, path):
    """`config[key]` of a fixture's `config.json` (at `path`), or an error naming the missing key."""
    if key not in config:
        raise TreenetsError(f"{path}: missing key {key!r}")
    return config[key]


def fixture_floats(arrays: dict, key: str, shape: dict[str, int], path, file: str = "outputs.npz"):
    """The floating-point array `arrays[key]` of a fixture's `file`, checked: present, floats, of `shape` (each
    axis's name and size, for the messages: `{"batch": 2, "z_dim": 4}`); a clear error naming the file, the array and
    what was expected. `path` is the fixture's `config.json`."""
    import numpy as np

    where = f"{Path(path).parent / file}: {key}"
    expected = "floats [" + ", ".join(f"{name} {size}" for name, size in shape.items()) + "]"
    if key not in arrays:
        raise TreenetsError(f"{where}: missing (expected {expected})")
    values = arrays[key]
    if not np.issubdtype(values.dtype, np.floating) or values.shape != tuple(shape.values()):
        raise TreenetsError(f"{where}: {values.dtype} {list(values.shape)}; expected {expected}")
    return values


def fixture_ids(arrays: dict, key: str, axes: tuple[str, ...], vocab_size: int, path, file: str = "inputs.npz"):
    """The token ids `arrays[key]` of a fixture's `file`, checked: present, integers, one dimension for each of
    `axes` (their names, for the messages: `("time", "batch")`), each in [0, vocab_size) (the config's vocabulary);
    a clear error naming the file, the array and what was expected. `path` is the fixture's `config.json`."""
    import numpy as np

    where = f"{Path(path).parent / file}: {key}"
    expected = f"{len(axes)}-D token ids [{', '.join(axes)}]"
    if key not in arrays:
        raise TreenetsError(f"{where}: missing (expected {expected})")
    ids = arrays[key]
    if not np.issubdtype(ids.dtype, np.integer):
        raise TreenetsError(f"{where}: {ids.dtype} values; expected integer token ids")
    if ids.ndim != len(axes):
        raise TreenetsError(f"{where}: {ids.ndim}-D {list(ids.shape)}; expected {expected}")
    if ids.size == 0:  # (a model reads at least one token: an RNN of length 0 fails deep inside)
        empty = ", ".join(axis for axis, size in zip(axes, ids.shape) if size == 0)
        raise TreenetsError(f"{where}: shape {list(ids.shape)}, no token ({empty} 0); expected {expected}, each "
                            "axis at least 1")
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise TreenetsError(f"{where}: ids from {ids.min()} to {ids.max()}; expected 0 to {vocab_size - 1} (the "
                            f"config's vocabulary of {vocab_size})")
    return ids
