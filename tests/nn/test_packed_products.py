"""The packed recurrent product (csrc/packed_gemm.h, loaded alone as the `packed_gemm` kernels): against the float64
product (float32, on every CPU: AVX-512, AVX2, NEON or SSE2 code from one micro-kernel) and torch's bfloat16 product
(builds with AVX512-BF16), and inside the ON-LSTM and PRPN kernels (float32, sequences long enough to pack) against
the PyTorch specification (bfloat16 inside the kernels: tests/nn/test_precision.py)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from treenets.nn import backend as kernel_build
from treenets.nn.backend import kernels, use_backend
from treenets.nn.onlstm.model import ONLSTMLayer
from treenets.nn.prpn.model import Memory, PRPNLanguageModel


def _packing(steps=8, rows=1, bfloat16=False):
    """The packed-product kernels, which pack a sequence of `steps` products of `rows` rows (bfloat16: skip on a
    build without AVX512-BF16)."""
    module = kernels("packed_gemm")
    if module is None:
        pytest.skip("compiled kernels unavailable")
    if bfloat16 and not module.packed_products(1000, 1, bfloat16):
        pytest.skip(f"this build ({module.instructions()}) has no AVX512-BF16: bfloat16 runs torch's products")
    assert module.packed_products(steps, rows, bfloat16), f"{steps} products of {rows} rows are not packed"
    return module


def test_which_sequences_are_packed():
    module = _packing()
    assert module.instructions().split()[0] in ("AVX-512", "AVX2", "NEON", "SSE2")
    assert module.packed_products(8, 64) and module.packed_products(70, 20)
    assert not module.packed_products(7, 20)  # packing costs about three products: not for short sequences
    assert not module.packed_products(70, 65)  # nor for large batches, where torch's product is as fast


@settings(deadline=None, max_examples=60)
@given(rows=st.integers(1, 60), inner=st.integers(1, 40) | st.integers(250, 800), cols=st.integers(1, 50),
       transposed=st.booleans(), with_bias=st.booleans(), seed=st.integers(0, 2**16))
def test_packed_product_equals_the_float64_product(rows, inner, cols, transposed, with_bias, seed):
    """Any shape: every row tile of the build (1 to 24 rows with AVX-512, 1 to 6 with AVX2; more rows: several
    tiles), a last panel of 1 to 16 columns, a depth of a few or of hundreds (as the models' weights)."""
    module = _packing()
    a, w, bias = _operands(rows, inner, cols, transposed, with_bias, seed)
    got = module.PackedWeight(w, transposed).multiply(a, bias)
    b = w.t() if transposed else w
    want = a.double() @ b.double() + (bias.double() if with_bias else 0)
    assert got.shape == (rows, cols) and got.dtype == torch.float32
    # float32 rounding grows with the depth; a lost or repeated term is off by about 1
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5 * max(1.0, inner / 40))


@settings(deadline=None, max_examples=60)
@given(rows=st.integers(1, 60), inner=st.integers(1, 40), cols=st.integers(1, 50), transposed=st.booleans(),
       with_bias=st.booleans(), seed=st.integers(0, 2**16))
def test_bfloat16_packed_product_is_torchs_bfloat16_product(rows, inner, cols, transposed, with_bias, seed):
    """With the weight in bfloat16 (an odd K pads the last pair of k): a rounded to bfloat16, the products summed
    in float32, the result rounded to bfloat16, then the float32 bias added; as torch's bfloat16 product under
    autocast (up to one rounding step of the result, where the two sums fall on either side of a tie)."""
    module = _packing(bfloat16=True)
    a, w, bias = _operands(rows, inner, cols, transposed, with_bias, seed)
    w = w.bfloat16()
    got = module.PackedWeight(w, transposed).multiply(a, bias)
    b = w.t() if transposed else w
    product = (a.bfloat16().double() @ b.double()).bfloat16().float()
    want = product + (bias if with_bias else 0)
    assert got.dtype == torch.float32
    step = product.abs() * 2**-7  # one unit in the last place of bfloat16 (8 significant bits), at most
    assert ((got - want).abs() <= step + 1e-6).all()
    assert ((got - want).abs() > 0).float().mean() < 0.02


def test_bfloat16_product_of_odd_depth_forgets_the_last_call():
    """An odd K pads the last pair of k with zeros on both sides: NaNs an earlier call of more rows left where the
    padding now lies (in the product's reused buffer) must not reach a later product."""
    module = _packing(bfloat16=True)
    w = torch.randn(5, 7).bfloat16()  # K = 5
    packed = module.PackedWeight(w, transposed=False)
    assert packed.multiply(torch.full((4, 5), float("nan"))).isnan().all()
    a = torch.randn(3, 5)
    torch.testing.assert_close(packed.multiply(a), (a.bfloat16() @ w).float(), rtol=1e-2, atol=1e-2)


def _operands(rows, inner, cols, transposed, with_bias, seed):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn((cols, inner) if transposed else (inner, cols), generator=g)
    a = torch.randn(rows, inner, generator=g)
    bias = torch.randn(rows, cols, generator=g) if with_bias else None
    return a, w, bias


def test_packed_weight_is_used_for_many_products_and_takes_strided_rows():
    module = _packing()
    w = torch.randn(37, 23)
    packed = module.PackedWeight(w, transposed=True)
    steps = torch.randn(5, 4, 3, 23)[:, :, 1]  # [4, 23] with rows 69 values apart
    for a in steps:
        torch.testing.assert_close(packed.multiply(a), a @ w.t(), rtol=1e-5, atol=1e-5)


def test_empty_batches_and_empty_products():
    module = _packing()
    packed = module.PackedWeight(torch.randn(5, 3), transposed=False)
    assert packed.multiply(torch.zeros(0, 5)).shape == (0, 3)
    bias = torch.randn(2, 3)
    empty = module.PackedWeight(torch.zeros(0, 3), transposed=False)  # K = 0: the product is zero
    torch.testing.assert_close(empty.multiply(torch.zeros(2, 0), bias), bias)


def test_onlstm_kernels_read_a_strided_input_projection():
    """x_proj with strided columns (a transposed view) through the packed forward: the same as contiguous."""
    _packing(steps=9, rows=3)
    module = kernels("onlstm")
    g = torch.Generator().manual_seed(0)
    hidden, n_chunks = 8, 2
    width = 2 * n_chunks + 4 * hidden
    x_proj = torch.randn(9, width, 3, generator=g).transpose(1, 2)
    w_hh, h0, c0 = torch.randn(width, hidden, generator=g), torch.zeros(3, hidden), torch.zeros(3, hidden)
    strided = module.forward(x_proj, w_hh, h0, c0, n_chunks, False, None)
    contiguous = module.forward(x_proj.contiguous(), w_hh, h0, c0, n_chunks, False, None)
    for got, want in zip(strided[:3], contiguous[:3]):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def test_packed_weight_refuses_bad_inputs():
    module = _packing()
    with pytest.raises(RuntimeError, match="w must be float32 or bfloat16, got float64"):
        module.PackedWeight(torch.zeros(3, 4, dtype=torch.float64), False)
    with pytest.raises(RuntimeError, match="w must be a 2-D CPU tensor"):
        module.PackedWeight(torch.zeros(3), False)
    packed = module.PackedWeight(torch.zeros(4, 6), False)
    with pytest.raises(RuntimeError, match=r"a must have 4 columns, got shape \[2, 5\]"):
        packed.multiply(torch.zeros(2, 5))
    with pytest.raises(RuntimeError, match=r"bias must have shape \[2, 6\], got \[2, 5\]"):
        packed.multiply(torch.zeros(2, 4), torch.zeros(2, 5))
    with pytest.raises(RuntimeError, match="a must be float32, got float64"):
        packed.multiply(torch.zeros(2, 4, dtype=torch.float64))
    if not module.packed_products(1000, 1, bfloat16=True):
        with pytest.raises(RuntimeError, match=r"this build of the kernels \(.*\) does not pack bfloat16 products"):
            module.PackedWeight(torch.zeros(4, 6, dtype=torch.bfloat16), False)


AVX2_BUILD = """
import torch
from treenets.nn.backend import kernels
module = kernels("packed_gemm")
assert module.instructions() == "AVX2", module.instructions()
assert not module.packed_products(1000, 1, bfloat16=True)
g = torch.Generator().manual_seed(0)
for rows, inner, cols, transposed in [(1, 5, 3, False), (6, 40, 33, True), (7, 17, 16, False), (20, 64, 50, True),
                                      (13, 600, 21, False), (64, 513, 40, True)]:
    w = torch.randn((cols, inner) if transposed else (inner, cols), generator=g)
    a, bias = torch.randn(rows, inner, generator=g), torch.randn(rows, cols, generator=g)
    got = module.PackedWeight(w, transposed).multiply(a, bias)
    want = a.double() @ (w.t() if transposed else w).double() + bias.double()
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=1e-5 * max(1.0, inner / 40))
"""


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or not torch.cpu._is_avx512_supported(),
                    reason="the AVX2 build is played on an AVX-512 CPU (on an AVX2 one the tests above run it)")
def test_the_avx2_build_multiplies_like_the_float64_product():
    """What an AVX2-only CPU runs (-march=x86-64-v3: 8-float vectors, tiles of up to 6 rows, two vectors per panel),
    built and checked here too, so that a machine with AVX-512 tests the code of one without."""
    environment = dict(os.environ, TREENETS_MARCH="x86-64-v3")
    done = subprocess.run([sys.executable, "-c", AVX2_BUILD], env=environment, capture_output=True, text=True,
                          cwd=Path(__file__).parent)
    assert done.returncode == 0, done.stderr[-3000:]


ARM_TOOLS = ("aarch64-linux-gnu-g++", "qemu-aarch64")
_ARM = pytest.mark.skipif(not all(shutil.which(tool) for tool in ARM_TOOLS),
                          reason="needs a cross compiler and an emulator for 64-bit ARM (Debian: apt install "
                                 "g++-aarch64-linux-gnu qemu-user)")
_X86 = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64") or not shutil.which("c++"),
                          reason="an x86-64 build, by this machine's compiler")


@pytest.mark.parametrize("compiler,march,runner,instructions", [
    pytest.param("c++", "x86-64", [], "SSE2", marks=_X86, id="sse2"),
    pytest.param(ARM_TOOLS[0], "armv8-a", [ARM_TOOLS[1], "-cpu", "max"], "NEON", marks=_ARM, id="neon"),
    pytest.param(ARM_TOOLS[0], "armv8.2-a+sve", [ARM_TOOLS[1], "-cpu", "max"], "NEON", marks=_ARM, id="neon+sve"),
])
def test_builds_for_other_cpus_multiply_like_the_float64_product(tmp_path, compiler, march, runner, instructions):
    """The float32 product of builds for CPUs other than this one: x86-64's baseline (SSE2: 4-float vectors, tiles
    of up to 3 rows) and 64-bit ARM (NEON: 4-float vectors, tiles of up to 6 rows; with SVE enabled too; run in an
    emulator), built from csrc/packed_gemm.h with the kernels' flags: 400 random products against the float64 product
    (packed_product_alone/check.cpp, with a stand-in for the few torch types the header uses, so that it needs no
    torch for that CPU; `make test-arm` runs the kernels in torch for ARM)."""
    here = Path(__file__).parent / "packed_product_alone"
    flags = [flag for flag in kernel_build._flags() if not flag.startswith("-march") and flag != "-fopenmp"]
    binary = tmp_path / "check"
    static = ["-static"] if runner else []  # for the emulator, which has no ARM libraries to load
    built = subprocess.run([compiler, "-std=c++17", *flags, f"-march={march}", *static, f"-I{here}",
                            f"-I{kernel_build._SOURCES}", str(here / "check.cpp"), "-o", str(binary)],
                           capture_output=True, text=True)
    assert built.returncode == 0, built.stderr[-3000:]
    done = subprocess.run([*runner, str(binary)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.startswith(f"{instructions}: 400 products"), done.stdout + done.stderr


@pytest.mark.parametrize("batch", [5, 30])
def test_onlstm_layer_with_packed_products_matches_pytorch(two_threads, batch):
    """float32, 12 steps (the kernels pack from 8), DropConnect on, a random initial state (from zeros the last
    chunk's cell stays zero: its master input gate is 0): outputs, last cell and every gradient. At batch 30 a
    product runs in two row tiles; the layer's widths (H = 36, 4H + 2 * 9 = 162) end in partial panels."""
    _packing(steps=12, rows=batch)
    torch.manual_seed(0)
    layer = ONLSTMLayer(5, 36, 4, weight_drop=0.3)
    x, h0, c0 = torch.randn(12, batch, 5), torch.randn(batch, 36), torch.randn(batch, 36)
    results = []
    for backend in ("auto", "torch"):
        layer.zero_grad()
        torch.manual_seed(1)  # the same DropConnect mask
        inputs = [t.clone().requires_grad_() for t in (x, h0, c0)]
        with use_backend(backend):
            out = layer(inputs[0], (inputs[1], inputs[2]))
            (out.output.pow(2).sum() + out.state[1].sum() + out.master.sum()).backward()
        grads = [t.grad for t in inputs] + [p.grad.clone() for p in layer.parameters()]
        results.append([out.output, out.state[1], *grads])
    for got, want in zip(*results):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)


def test_prpn_training_with_packed_products_matches_pytorch(two_threads):
    """float32 PRPN reading layers over two segments of 10 steps with dropout, the state carried: outputs and
    every gradient (the query's and the cell's hidden products, forward and backward, are packed; batch 26 in
    two row tiles, widths 20 and 80 ending in partial panels)."""
    _packing(steps=10, rows=26)
    torch.manual_seed(5)
    model = PRPNLanguageModel(30, 7, 20, 2, nslots=4, nlookback=2, dropout=0.3, idropout=0.2, rdropout=0.2).train()
    tokens = torch.randint(0, 30, (20, 26))

    def run():
        torch.manual_seed(11)  # the same dropout masks on both paths
        model.zero_grad()
        state = model.initial_state(tokens.size(1))
        state = state._replace(reader=[Memory(torch.randn_like(m.h), torch.randn_like(m.c)) for m in state.reader])
        first = model(tokens[:10], state)
        second = model(tokens[10:], first.state)
        loss = first.output.pow(2).sum() + second.output.sin().sum() + second.state.reader[0].h.pow(2).sum()
        loss.backward()
        return [first.output, second.output], {n: p.grad.clone() for n, p in model.named_parameters()
                                               if p.grad is not None}

    outputs, grads = run()
    with use_backend("torch"):
        expected_outputs, expected_grads = run()
    assert grads.keys() == expected_grads.keys()
    for got, want in zip(outputs, expected_outputs):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    # Some gradients are small sums of large terms (the parser's conv bias: at most 0.01, of terms up to 1e3),
    # whose float32 rounding differs between any two orders of summation: tolerances scale with the largest.
    scale = max(g.abs().max().item() for g in expected_grads.values())
    for name in grads:
        torch.testing.assert_close(grads[name], expected_grads[name], rtol=1e-4, atol=1e-5 * scale, msg=name)
