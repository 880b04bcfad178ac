"""Mixed precision: matrix products in bfloat16, everything else as it was.

Precisions:
    fp32  (default) every computation in the model's dtype (float32).
    bf16  matrix products (linear layers, the recurrent products, the decoder) take bfloat16 operands and
          accumulate in float32; the weights stay float32 (the optimizer and NT-ASGD's average update them in
          float32), and so do the gates' element-wise work, the cell, the softmax of the loss and every
          reduction. On CPUs with AVX512-BF16 or AMX a bfloat16 product runs at 2-3 times the float32 rate.
          Refused, in one line saying why, on a CPU without native bfloat16 products (x86 without
          AVX512-BF16/AMX, ARM without BF16) and on a GPU without bfloat16: there the products would be
          emulated, slower than fp32, and oneDNN has no bfloat16 LSTM at all on an AVX2 CPU.

`autocast(precision, device)` is the one switch: a `with` block in which `torch.autocast` turns products
into bfloat16 (on CUDA and on the CPU alike), plus what autocast does not reach: the compiled ON-LSTM and
PRPN kernels read `product_dtype()` and run their recurrent products in bfloat16 too (PRPN's attention, layer
norms and cells in float32); the Tree-LSTM kernels take float32 only, so inside a bf16 block those models run
their PyTorch code (`backend.kernels_for`).
Gradients are computed outside the block (`loss.backward()` after it), as torch recommends.
"""

from __future__ import annotations

import contextlib
import functools
import platform

import torch

from treenets.core.errors import TreenetsError
from treenets.core.schema import PRECISIONS


def autocast(precision: str, device: torch.device | str):
    """A `with` block computing in `precision` on `device` (a context manager); refused as `check_precision` says."""
    check_precision(precision, device)
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(torch.device(device).type, dtype=torch.bfloat16)


def check_precision(precision: str, device: torch.device | str) -> None:
    """Raises TreenetsError, in one line saying why, if `device` cannot compute in `precision`: an unknown name, or bf16
    where bfloat16 products are not native (a GPU without them, `cpu_has_bfloat16`)."""
    if precision not in PRECISIONS:
        raise TreenetsError(f"unknown precision {precision!r} (expected one of: {', '.join(PRECISIONS)})")
    if precision == "fp32":
        return
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_bf16_supported():
        raise TreenetsError(f"precision bf16: {torch.cuda.get_device_name(device)} has no bfloat16 support; "
                            "use precision fp32")
    if device.type == "cpu" and not cpu_has_bfloat16():
        raise TreenetsError("precision bf16: this CPU has no native bfloat16 products (AVX512-BF16 or AMX on x86, "
                            "BF16 on ARM), so they would be emulated, slower than fp32, and the LSTM's would not run "
                            "at all; use precision fp32")


@functools.cache
def cpu_has_bfloat16() -> bool:
    """Whether this CPU multiplies in bfloat16 natively, as torch runs it in this process: x86 with AVX512-BF16 or
    AMX, ARM with BF16 (as oneDNN sees them), and torch's kernels not limited below that (`$ATEN_CPU_CAPABILITY`,
    `$ONEDNN_MAX_CPU_ISA`, which is how the tests play a CPU without it)."""
    capability = torch.backends.cpu.get_cpu_capability()
    try:
        onednn = torch.ops.mkldnn._is_mkldnn_bf16_supported()
        if platform.machine().lower() in ("x86_64", "amd64"):
            return (onednn and capability.startswith("AVX512")
                    and (torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()))
    except (AttributeError, RuntimeError):  # a torch without these checks: no claim of native support
        return False
    return onednn and capability != "DEFAULT"


def product_dtype(device_type: str) -> torch.dtype | None:
    """The dtype of matrix products in the autocast block around this call on `device_type` ("cpu", "cuda"),
    None outside one (products in their operands' dtype)."""
    try:
        enabled, dtype = torch.is_autocast_enabled(device_type), torch.get_autocast_dtype(device_type)
    except (TypeError, AttributeError):  # torch < 2.4: one function per device type
        cpu = device_type == "cpu"
        enabled = torch.is_autocast_cpu_enabled() if cpu else torch.is_autocast_enabled()
        dtype = torch.get_autocast_cpu_dtype() if cpu else torch.get_autocast_gpu_dtype()
    return dtype if enabled else None


def low_precision_copy(weight: torch.Tensor) -> torch.Tensor | None:
    """`weight` in the product dtype of the autocast block around this call, for recurrent products that take
    it at every step: made once per sequence, as autocast caches only the casts of leaf weights. None outside a
    block and for weights that are not float32 (float64 products stay float64)."""
    low = product_dtype(weight.device.type)
    return weight.to(low) if low is not None and weight.dtype == torch.float32 else None


def log_softmax(logits: torch.Tensor, dim: int) -> torch.Tensor:
    """Log-probabilities in float32 at least: float32 when the products ran in bfloat16 (a softmax over bfloat16
    logits would lose most of their digits), float64 for a float64 model (gradient checks)."""
    return torch.log_softmax(logits, dim, dtype=torch.promote_types(logits.dtype, torch.float32))


def full_precision():
    """A `with` block without autocast: for code that chooses the dtype of each product itself."""
    return torch.autocast("cpu", enabled=False)
