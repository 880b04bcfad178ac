"""The device a command or a model runs on, from the name a user gives (`auto`, `cpu`, `cuda`, `cuda:N`), and
how many threads it computes on."""

from __future__ import annotations

import os

import torch

from treenets.core.errors import TreenetsError


def resolve_device(name: str | torch.device, option: str = "train.device") -> torch.device:
    """`auto` -> cuda if available else cpu; a device that is not one, or a CUDA device that is not there, is an
    error naming `option`."""
    if str(name) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, TypeError):
        raise TreenetsError(f"{option}: {str(name)!r} is not a device (expected auto, cpu, cuda, cuda:N)") from None
    if device.type not in ("cpu", "cuda"):  # e.g. meta (no data) or mps: torch devices treenets does not run on
        raise TreenetsError(f"{option}: {str(name)!r} is not supported (expected auto, cpu, cuda, cuda:N)")
    if device.type == "cuda" and (not torch.cuda.is_available() or (device.index or 0) >= torch.cuda.device_count()):
        raise TreenetsError(f"{option}: {str(name)!r} requested but this machine has "
                            f"{torch.cuda.device_count()} CUDA device(s)")
    return device


THREADS_VARIABLE = "TREENETS_THREADS"


def set_threads(threads: int | None = None, option: str = "--threads") -> None:
    """Compute on `threads` of torch's intra-op threads; None: on `$TREENETS_THREADS` of them when it is set, else
    on torch's default (every core, or `$OMP_NUM_THREADS`). Every command that runs a model takes `--threads`,
    `train` also `train.threads`, and `treenets.load` the environment variable; a value that is not a whole
    number of at least 1 is an error naming `option` or the variable."""
    if threads is None:
        text = os.environ.get(THREADS_VARIABLE, "").strip()
        if not text:
            return
        option = f"${THREADS_VARIABLE}"
        threads = int(text) if text.isdigit() else 0
        if threads < 1:
            raise TreenetsError(f"{option}={text!r}: expected a whole number of threads, at least 1")
    elif isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise TreenetsError(f"{option} {threads!r}: expected a whole number of threads, at least 1")
    torch.set_num_threads(threads)
