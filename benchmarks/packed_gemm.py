"""The recurrent product of a small batch: torch's product against the compiled kernels' packed one
(`PackedWeight`, csrc/packed_gemm.h, the `packed_gemm` kernels alone: the weight packed once per sequence into
16-column panels, a tile of the batch's rows in registers; $TREENETS_MARCH=x86-64-v3 times the AVX2 build on an
AVX-512 CPU), in fp32 and in bf16 (mixed precision: torch's side rounds the batch to
bfloat16 and multiplies it with the weight's bfloat16 copy, as the kernels did before they packed). For the
ON-LSTM paper config's two shapes (batch x 1150 by 1150 x 4830, and the last layer's batch x 400 by 400 x 1680)
as a forward product (h U^T) and a backward one (d U), the two ways in turns, `--steps` products each (a
sequence), the packing counted in the packed side's time. The kernels pack sequences of 8 products or more of at
most 64 rows (`kMaxRowsToPack`): this measures where that pays.

    python benchmarks/packed_gemm.py [--threads 2] [--batch-sizes 10 20 64 256] [--steps 70] [--precisions fp32 bf16]
"""

from __future__ import annotations

import argparse
import itertools
import time

import torch

from treenets.nn.backend import kernels

SHAPES = [(4830, 1150), (1680, 400)]  # the weight U: [gates, hidden]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[10, 20, 64, 256])
    parser.add_argument("--steps", type=int, default=70, help="products per sequence (one packing)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    module = kernels("packed_gemm")
    for precision in args.precisions:
        if module is None or not module.packed_products(args.steps, 1, precision == "bf16"):
            raise SystemExit(f"the compiled kernels do not pack {precision} products here (no AVX512-BF16 for bf16, "
                             "or no compiler)")
    print(f"packed products on {module.instructions()}, torch's CPU kernels {torch.backends.cpu.get_cpu_capability()}")
    print(f"{args.threads} threads, {args.steps} products per sequence, GFLOP/s (ms per product), best of "
          f"{args.rounds} rounds in turns")
    print(f"{'weight':>11} {'batch':>5} {'product':>8} {'precision':>9} {'torch':>16} {'packed':>16} {'ratio':>6}")
    for gates, hidden in SHAPES:
        w = torch.randn(gates, hidden)
        for batch in args.batch_sizes:
            for (name, a, transposed), precision in itertools.product(
                    (("h U^T", torch.randn(batch, hidden), True), ("d U", torch.randn(batch, gates), False)),
                    args.precisions):
                weight = w.bfloat16() if precision == "bf16" else w
                plain, packed = measure(module, weight, a, transposed, args.steps, args.rounds)
                flops = 2 * batch * gates * hidden
                torch_cell, packed_cell = (f"{flops / s / 1e9:7.1f} ({s * 1e3:6.3f})" for s in (plain, packed))
                print(f"{gates:>5}x{hidden:<5} {batch:5d} {name:>8} {precision:>9} {torch_cell:>16} {packed_cell:>16} "
                      f"{plain / packed:6.2f}")


def measure(module, w, a, transposed, steps, rounds) -> tuple[float, float]:
    """Seconds per product of a sequence of `steps`: torch's, and the packed one with its packing. `w` float32 or
    bfloat16; `a` float32 (rounded to bfloat16 at each product for a bfloat16 `w`, on both sides)."""
    b = w.t() if transposed else w
    want = (a.to(w.dtype) @ b).float()
    torch.testing.assert_close(module.PackedWeight(w, transposed).multiply(a), want, rtol=1e-2, atol=1e-2)

    def plain():
        for _ in range(steps):
            (a.to(w.dtype) @ b).float()

    def packed():
        weight = module.PackedWeight(w, transposed)
        for _ in range(steps):
            weight.multiply(a)

    best = [float("inf"), float("inf")]
    for _ in range(rounds):
        for k, way in enumerate((plain, packed)):
            start = time.perf_counter()
            way()
            best[k] = min(best[k], (time.perf_counter() - start) / steps)
    return best[0], best[1]


if __name__ == "__main__":
    main()
