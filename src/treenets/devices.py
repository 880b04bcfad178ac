"""The device a command or a model runs on, from the name a user gives (`auto`, `cpu`, `cuda`, `cuda:N`)."""

from __future__ import annotations

import torch

from treenets.errors import TreenetsError


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
