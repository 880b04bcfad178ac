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
import re
import tempfile
import zipfile
from pathlib import Path

import torch

from treenets.core.errors import TreenetsError

FORMAT = "treenets-checkpoint"
VERSION = 1


def save(payload: dict, path: str | Path) -> Path:
    """Write `payload` (plus the format tag) to `path` atomically; returns the path.

    Raises:
        TreenetsError: naming `path` when it cannot be written (no space left on the device, no permission,
            ...); the file at `path` is then as before, and the temporary file is removed.
    """
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            torch.save({"format": FORMAT, "version": VERSION, **payload}, fh)
            fh.flush()
            os.fsync(fh.fileno())
        usual_permissions(tmp)
        os.replace(tmp, path)
    except (OSError, RuntimeError) as exc:
        # torch.save reports an OSError raised by the file (e.g. ENOSPC) as a RuntimeError of its own.
        error = exc if isinstance(exc, OSError) else exc.__context__
        if not isinstance(error, OSError):
            raise
        raise TreenetsError(f"{path}: could not write the checkpoint ({error.strerror or error}); the file is as "
                            "it was before") from None
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
    return path


def usual_permissions(path: str | Path) -> None:
    """Give a file (0666) or folder (0777) made by `tempfile` (0600/0700) the permissions the umask allows."""
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(path, (0o777 if os.path.isdir(path) else 0o666) & ~umask)


def remove_temporaries(folder: str | Path) -> list[Path]:
    """Delete the temporary files `save` left in `folder` when a process was killed while writing; returns them."""
    stale = sorted(Path(folder).glob(".*.pt.*.tmp"))
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


# What each kind of checkpoint holds besides `format`, `version` and `kind`.
REQUIRED = {"model": ("config", "vocab", "model"),
            "train-state": ("config", "vocab", "model", "optimizer", "trainer", "ranks")}
_EXPECTED = "expected a checkpoint written by treenets (best.pt, last.pt)"
# torch.save writes a zip archive, or a pickle in its legacy format: a file that begins otherwise is no torch file.
TORCH_FILE_STARTS = (b"PK\x03\x04", b"\x80")


def _first_line(exc: Exception) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:160]


def _contents(payload) -> str:
    """What a torch file holds, in a few words, for errors."""
    if not isinstance(payload, dict):
        return f"a {type(payload).__name__}"
    keys = ", ".join(repr(key) for key in list(payload)[:4]) + (", ..." if len(payload) > 4 else "")
    return f"a dict of {len(payload)} entries ({keys})" if payload else "an empty dict"


def load(path: str | Path, task: str | None = None) -> dict:
    """Read a checkpoint written by `save`.

    Args:
        path: the file.
        task: if given, the task the checkpoint must belong to (e.g. `"lm"`).

    Raises:
        TreenetsError: if the file is missing, empty, truncated or corrupt, not a treenets checkpoint (e.g. an
            official pickled model, another program's weights), incomplete for its kind (`REQUIRED`), written by
            a newer treenets, or of another task.
    """
    path = Path(path)
    if not path.exists():
        raise TreenetsError(f"{path}: checkpoint does not exist")
    if not path.is_file():
        raise TreenetsError(f"{path}: not a file; {_EXPECTED}")
    try:
        with open(path, "rb") as fh:
            head = fh.read(4)
    except OSError as exc:
        raise TreenetsError(f"{path}: cannot read the checkpoint ({exc.strerror})") from None
    if not head:
        raise TreenetsError(f"{path}: empty file (0 bytes); {_EXPECTED}")
    if not head.startswith(TORCH_FILE_STARTS):
        raise TreenetsError(f"{path}: not a treenets checkpoint, nor any torch file (it begins with {head!r}); "
                            f"{_EXPECTED}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as exc:
        refused = re.search(r"GLOBAL (\S+)", str(exc))  # torch names the first class it would have to import
        if refused is None:
            raise TreenetsError(f"{path}: truncated or corrupt checkpoint ({_first_line(exc)})") from None
        raise TreenetsError(
            f"{path}: not a treenets checkpoint: it holds pickled Python objects ({refused.group(1)}) that are not "
            "loaded for safety; official checkpoints load through treenets.workflows.convert") from None
    except (RuntimeError, EOFError, OSError, ValueError, KeyError, IndexError, zipfile.BadZipFile) as exc:
        raise TreenetsError(f"{path}: truncated or corrupt checkpoint ({_first_line(exc)})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        raise TreenetsError(f"{path}: not a treenets checkpoint: a torch file of {_contents(payload)} without the "
                            f"'{FORMAT}' tag; {_EXPECTED}")
    if payload.get("version", 0) > VERSION:
        raise TreenetsError(f"{path}: written by a newer treenets (format version {payload['version']})")
    kind = payload.get("kind")
    if kind not in REQUIRED:
        raise TreenetsError(f"{path}: treenets checkpoint of unknown kind {kind!r} (expected {' or '.join(REQUIRED)})")
    missing = [key for key in REQUIRED[kind] if key not in payload]
    if missing:
        raise TreenetsError(f"{path}: incomplete {kind} checkpoint: no {', '.join(missing)} (a {kind} checkpoint "
                            f"holds {', '.join(REQUIRED[kind])})")
    if not (isinstance(payload["config"], dict) and isinstance(payload["vocab"], list)
            and isinstance(payload["model"], dict)):
        raise TreenetsError(f"{path}: damaged {kind} checkpoint: expected config (a dict), vocab (a list of words) "
                            "and model (a dict of tensors)")
    saved_task = payload["config"].get("task")
    if task is not None and saved_task != task:
        raise TreenetsError(f"{path}: checkpoint of task {saved_task!r}, expected a {task!r} checkpoint")
    return payload


def load_weights(model: torch.nn.Module, state_dict: dict, path: str | Path,
                 vocab: tuple[str, int] | None = None) -> None:
    """`model.load_state_dict`, with a clear error naming the tensor when the weights belong to another model
    or size (naming the vocabulary file of `vocab`, `(file, words)`, when the size that differs is the number of
    words the model was built with), are not floating-point numbers where the model has them, or hold NaN or
    infinities (a diverged run)."""
    ours = model.state_dict()
    missing = sorted(set(ours) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(ours))
    if missing or unexpected:
        raise TreenetsError(f"{path}: weights of another model: missing {missing[:3]}, unexpected {unexpected[:3]}")
    for name, tensor in state_dict.items():
        if not isinstance(tensor, torch.Tensor):
            raise TreenetsError(f"{path}: {name} is a {type(tensor).__name__}, not a tensor")
        if tensor.shape != ours[name].shape:
            differ = [(mine, theirs) for mine, theirs in zip(ours[name].shape, tensor.shape) if mine != theirs]
            if vocab is not None and len(tensor.shape) == len(ours[name].shape) and len(differ) == 1 \
                    and differ[0][0] == vocab[1]:
                raise TreenetsError(f"{vocab[0]}: {vocab[1]:,} words, but the weights were trained with a vocabulary "
                                    f"of {differ[0][1]:,} ({name} has shape {tuple(tensor.shape)}); expected the "
                                    "vocabulary the model was trained with")
            raise TreenetsError(f"{path}: {name} has shape {tuple(tensor.shape)}, the model expects "
                                f"{tuple(ours[name].shape)}")
        if ours[name].is_floating_point() and not tensor.is_floating_point():
            raise TreenetsError(f"{path}: {name} holds {str(tensor.dtype).removeprefix('torch.')} values; expected "
                                "floating-point weights")
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise TreenetsError(f"{path}: {name} holds {bad:,} NaN or infinite value(s); these weights come from a "
                                "run that diverged and give no meaningful result")
    model.load_state_dict(state_dict)
