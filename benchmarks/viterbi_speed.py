"""Viterbi (a grammar's parse) by its PyTorch code and by the compiled max-plus products (the `pcfg_chart` kernels,
`src/treenets/nn/chart_cpu.cpp`), in turns in one run: sentences per second, and whether both give the
same trees, scores and ties.

    python benchmarks/viterbi_speed.py [--threads 1] [--nt 30 --t 60] [--batches 4,16] [--lengths 10,20,30,40]

The grammar is random (log-probabilities normalised as the Compound PCFG's: the rules over all (NT + T)^2 children,
the roots over NT, the terms as emissions), float32, the same for both sides; sentences of one length a batch. Each
measurement is the median of `--repeats` runs; the sides alternate, torch first.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from treenets.nn.backend import kernels, use_backend  # noqa: E402
from treenets.nn.chart import Grammar, viterbi  # noqa: E402


def grammar(batch: int, length: int, nt: int, t: int, seed: int = 0) -> Grammar:
    generator = torch.Generator().manual_seed(seed)
    s = nt + t
    rules = torch.randn(batch, nt, s * s, generator=generator).log_softmax(-1).view(batch, nt, s, s)
    roots = torch.randn(batch, nt, generator=generator).log_softmax(-1)
    terms = (torch.randn(batch, length, t, generator=generator) - 9.0).clamp(max=-1.0)
    return Grammar(roots, terms, rules)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--nt", type=int, default=30)
    parser.add_argument("--t", type=int, default=60)
    parser.add_argument("--batches", default="4,16")
    parser.add_argument("--lengths", default="10,20,30,40")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if kernels("pcfg_chart") is None:
        sys.exit("the chart kernels cannot be built here (no C++ compiler?): nothing to compare")
    print("| batch | length | torch sent/s | compiled sent/s | compiled / torch | same trees |")
    print("| ---: | ---: | ---: | ---: | ---: | --- |")
    for batch in map(int, args.batches.split(",")):
        for length in map(int, args.lengths.split(",")):
            g = grammar(batch, length, args.nt, args.t)
            lengths = torch.full((batch,), length)
            times = {"torch": [], "cpp": []}
            found = {}
            for _ in range(args.repeats):
                for backend in times:
                    with use_backend(backend):
                        start = time.perf_counter()
                        trees = viterbi(g, lengths)
                        times[backend].append(time.perf_counter() - start)
                    found[backend] = [(t.spans, t.tags, t.root, t.score) for t in trees]
            torch_s, cpp_s = (statistics.median(times[b]) for b in ("torch", "cpp"))
            print(f"| {batch} | {length} | {batch / torch_s:.1f} | {batch / cpp_s:.1f} | {torch_s / cpp_s:.1f}x | "
                  f"{'yes' if found['torch'] == found['cpp'] else 'NO'} |", flush=True)


if __name__ == "__main__":
    main()
