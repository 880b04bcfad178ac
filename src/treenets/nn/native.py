"""Compiled CPU kernels, built on first use with `torch.utils.cpp_extension` (needs a C++ compiler).

When they cannot be built (no compiler, another platform) or `TREENETS_NATIVE=0` is set, treenets uses the
equivalent PyTorch code instead, which is slower on the CPU but otherwise the same.
"""

from __future__ import annotations

import hashlib
import os
import platform
import warnings
from pathlib import Path

import torch

_SOURCES = Path(__file__).with_name("csrc")
_loaded: dict = {}


def _flags() -> list[str]:
    # -ffast-math lets the compiler call the vectorised exp/tanh of glibc's libmvec; the kernels need no
    # IEEE corner cases (their inputs are finite), and the flag is not passed to the linker, so it does not
    # switch the process to flush-to-zero.
    flags = ["-O3", "-ffast-math", "-fopenmp-simd"]
    if platform.machine() in ("x86_64", "AMD64"):
        flags.append("-march=native")
    return flags


def _cpu_features() -> str:
    """The CPU model and instruction-set flags (Linux), which -march=native compiles for."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return platform.processor()
    return "".join(sorted({line for line in lines if line.startswith(("model name", "flags"))}))


def kernels(name: str):
    """The compiled module `csrc/<name>_cpu.cpp`, or None if unavailable (warns once)."""
    if name in _loaded:
        return _loaded[name]
    module = None
    if os.environ.get("TREENETS_NATIVE", "1") != "0":
        source = _SOURCES / f"{name}_cpu.cpp"
        flags = _flags()
        # The build depends on the source, the flags and this CPU (-march=native): name it after all three.
        cpu = platform.machine() + _cpu_features()
        tag = hashlib.sha1((source.read_text() + " ".join(flags) + cpu).encode()).hexdigest()[:10]
        try:
            from torch.utils.cpp_extension import load

            module = load(name=f"treenets_{name}_{tag}", sources=[str(source)], extra_cflags=flags, verbose=False)
        except Exception as exc:  # noqa: BLE001 - any build failure means: use the PyTorch code
            warnings.warn(f"treenets: compiled CPU kernels for {name} unavailable, using PyTorch code "
                          f"(slower): {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                          stacklevel=2)
    _loaded[name] = module
    return module


def kernels_for(name: str, x: torch.Tensor, autograd: bool = False):
    """`kernels(name)` when they apply to `x`: a CPU float tensor, and no autograd graph to record unless the
    kernels come with their own backward (`autograd`); else None (the PyTorch code runs)."""
    if x.device.type != "cpu" or x.dtype not in (torch.float32, torch.float64):
        return None
    if torch.is_grad_enabled() and not autograd:
        return None
    return kernels(name)
