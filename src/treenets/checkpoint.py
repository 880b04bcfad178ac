"""Checkpoints: one `torch.save` file of plain data (tensors, numbers, strings, lists, dicts).

They are written atomically (a temporary file in the same folder, flushed, then renamed over the target)
and read with `torch.load(weights_only=True)`, which never runs code from the file.

Layout: `format`, `version`, `kind` (`"train-state"`: everything to resume; `"model"`: weights to use),
`config` (the validated config as a dict), `vocab` (list of words), `model` (state_dict), and for train
states `optimizer`, `trainer`, `ranks` (per process: RNG states and the task's position).
"""

from __future__ import annotations

import os
import pickle
import tempfile
import zipfile
from pathlib import Path

import torch

from treenets.errors import TreenetsError

FORMAT = "treenets-checkpoint"
VERSION = 1


def save(payload: dict, path: str | Path) -> Path:
    """Write `payload` (plus the format tag) to `path` atomically; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            torch.save({"format": FORMAT, "version": VERSION, **payload}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file the usual permissions
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return path


def remove_temporaries(folder: str | Path) -> list[Path]:
    """Delete the temporary files `save` left in `folder` when a process was killed while writing; returns them."""
    stale = sorted(Path(folder).glob(".*.pt.*.tmp"))
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def load(path: str | Path, task: str | None = None) -> dict:
    """Read a checkpoint written by `save`.

    Args:
        path: the file.
        task: if given, the task the checkpoint must belong to (e.g. `"lm"`).

    Raises:
        TreenetsError: if the file is missing, truncated or corrupt, not a treenets checkpoint (e.g. an
            official pickled model), written by a newer treenets, or of another task.
    """
    path = Path(path)
    if not path.is_file():
        raise TreenetsError(f"{path}: checkpoint does not exist")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        raise TreenetsError(
            f"{path}: not a treenets checkpoint: it holds pickled Python objects that are not loaded for "
            f"safety ({str(exc).splitlines()[0][:160]}); official checkpoints load through treenets.convert"
        ) from None
    except (RuntimeError, EOFError, OSError, ValueError, zipfile.BadZipFile) as exc:
        raise TreenetsError(f"{path}: truncated or corrupt checkpoint ({str(exc).splitlines()[0][:160]})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise TreenetsError(f"{path}: not a treenets checkpoint (no '{FORMAT}' tag)")
    if payload.get("version", 0) > VERSION:
        raise TreenetsError(f"{path}: written by a newer treenets (format version {payload['version']})")
    saved_task = payload["config"].get("task")
    if task is not None and saved_task != task:
        raise TreenetsError(f"{path}: checkpoint of task {saved_task!r}, expected a {task!r} checkpoint")
    return payload


def load_weights(model: torch.nn.Module, state_dict: dict, path: str | Path) -> None:
    """`model.load_state_dict`, with a clear error when the weights belong to another model or size."""
    ours = model.state_dict()
    missing = sorted(set(ours) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(ours))
    if missing or unexpected:
        raise TreenetsError(f"{path}: weights of another model: missing {missing[:3]}, unexpected {unexpected[:3]}")
    for name, tensor in state_dict.items():
        if tensor.shape != ours[name].shape:
            raise TreenetsError(f"{path}: {name} has shape {tuple(tensor.shape)}, the model expects "
                                f"{tuple(ours[name].shape)}")
    model.load_state_dict(state_dict)
