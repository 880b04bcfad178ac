"""Is MKL's packed GEMM worth it for the recurrent product? The ON-LSTM paper config's per-step product
(batch x 1150 by 1150 x 4830) as a plain `addmm` and as MKL's packed product on a weight packed once
(`torch.ops.mkl`, private torch ops, present in CPU builds with MKL), the two in turns, 100 products each,
and what packing costs (DropConnect redraws the weight every forward, so it would be packed every segment).

    python benchmarks/packed_gemm.py [--threads 2] [--batch-sizes 20 64]
"""

from __future__ import annotations

import argparse
import time

import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[20, 64])
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if not hasattr(torch.ops.mkl, "_mkl_reorder_linear_weight"):
        raise SystemExit("this torch build has no MKL packed GEMM")
    for batch in args.batch_sizes:
        plain, packed, packing = measure(batch)
        print(f"threads {args.threads} batch {batch}: addmm {plain * 1e3:.3f} ms, mkl packed {packed * 1e3:.3f} ms; "
              f"packing {packing * 1e3:.1f} ms")


def measure(batch: int, hidden: int = 1150, gates: int = 4830) -> tuple[float, float, float]:
    """Seconds per product, plain and packed (in turns, 100 each), and seconds to pack the weight."""
    packed_linear, pack = torch.ops.mkl._mkl_linear, torch.ops.mkl._mkl_reorder_linear_weight
    w, x, b = torch.randn(gates, hidden), torch.randn(batch, hidden), torch.zeros(gates)
    packed = pack(w, batch)
    torch.testing.assert_close(packed_linear(x, packed, w, b, batch), torch.addmm(b, x, w.t()))
    ways = [lambda: torch.addmm(b, x, w.t()), lambda: packed_linear(x, packed, w, b, batch)]
    seconds = [0.0, 0.0]
    for _ in range(5):
        for k, way in enumerate(ways):
            start = time.perf_counter()
            for _ in range(20):
                way()
            seconds[k] += time.perf_counter() - start
    start = time.perf_counter()
    for _ in range(5):
        pack(w, batch)
    return seconds[0] / 100, seconds[1] / 100, (time.perf_counter() - start) / 5

if __name__ == "__main__":
    main()
