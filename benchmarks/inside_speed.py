"""The inside algorithm and its gradient (the work of a PCFG's training step) against the official Compound PCFG
code and torch-struct, in turns in one run: sentences per second and peak memory, and the achieved GFLOP/s of
treenets' span products against this machine's matrix-product rate.

    git clone https://github.com/harvardnlp/compound-pcfg     # PCFG.py
    pip install --no-deps torch-struct                         # 0.5, pure Python: it runs on today's PyTorch
    python benchmarks/inside_speed.py --official compound-pcfg [--threads 1] [--nt 30 --t 60]

Nothing of theirs is copied here or committed. Every side gets the same grammar (random log-probabilities
normalised as the Compound PCFG's: the rules over all (NT + T)^2 children, the roots over NT, the terms as
emissions), sentences of one length a batch (the official code takes no other), float32, and runs the forward
(log Z) and the backward of its sum. Each (side, batch, length) runs in its own process, so that its peak resident
memory (less the process's after the imports and the grammar, `ru_maxrss`) is its own; the sides run in turns,
the repetitions of one measurement back to back (the median is reported). A side slower than `--budget` seconds a
repetition is measured once.

The span products: treenets' inside (`treenets.nn.chart`, Kim's grammar) does per width w, with c = N - w + 1 cells
per sentence and K = w - 2 middle split points, one product [c, NT, K] @ [c, K, NT] (the outer products of the
children summed over the split points) and one [c, NT^2] @ [NT^2, NT] (the rules), plus per word position the
edge tables [NT, T] x [T, NT] twice (a child of one word) and [NT, T x T] (width 2). Their multiply-adds, twice
for FLOPs, over the forward's time give its achieved rate (the element-wise work, the scaling and the log-sum-exps
count as nothing); the machine's rate is torch's float32 matrix product at the same number of threads, square
(1024) and of the rule product's shape.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

SIDES = ("treenets", "torch-struct", "official")


def grammar(batch: int, length: int, nt: int, t: int, seed: int = 0):
    """(terms [B, N, T], rules [B, NT, S, S], roots [B, NT]) as leaves requiring gradients, float32."""
    generator = torch.Generator().manual_seed(seed)
    s = nt + t
    rules = torch.randn(batch, nt, s * s, generator=generator).log_softmax(-1).view(batch, nt, s, s)
    roots = torch.randn(batch, nt, generator=generator).log_softmax(-1)
    terms = (torch.randn(batch, length, t, generator=generator) - 9.0).clamp(max=-1.0)  # about log(1/10,000)
    return [x.clone().requires_grad_() for x in (terms, rules, roots)]


def step_function(side: str, nt: int, t: int, official: str | None):
    """A function (terms, rules, roots) -> log Z [B] for `side`."""
    if side == "treenets":
        from treenets.nn.chart import Grammar, inside

        def run(terms, rules, roots):
            lengths = torch.full((terms.size(0),), terms.size(1), dtype=torch.long)
            return inside(Grammar(roots=roots, terms=terms, rules=rules), lengths)
        return run
    if side == "torch-struct":
        from torch_struct import SentCFG

        def run(terms, rules, roots):
            lengths = torch.full((terms.size(0),), terms.size(1), dtype=torch.long)
            return SentCFG((terms, rules, roots), lengths=lengths).partition
        return run
    if official is None:
        raise SystemExit("the official side needs --official (a clone of harvardnlp/compound-pcfg)")
    sys.path.insert(0, str(Path(official).resolve()))
    from PCFG import PCFG  # the official module

    pcfg = PCFG(nt, t)
    return lambda terms, rules, roots: pcfg._inside(terms, rules, roots)


def measure_one(side, batch, length, nt, t, official, repeats, budget, threads, memory_gib) -> dict:
    """(In its own process) seconds per forward+backward, forward alone, and the peak memory above the start; its
    address space held to `memory_gib` (the official code's graph of per-cell tensors grows past the machine's
    memory at 16 sentences of 30 words), a side that needs more reported as such."""
    resource.setrlimit(resource.RLIMIT_AS, (memory_gib << 30, memory_gib << 30))
    torch.set_num_threads(threads)
    run = step_function(side, nt, t, official)
    leaves = grammar(batch, length, nt, t)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    times, forwards = [], []
    for k in range(repeats + 1):
        for x in leaves:
            x.grad = None
        start = time.perf_counter()
        try:
            log_z = run(*leaves)
            middle = time.perf_counter()
            log_z.sum().backward()
        except RuntimeError as exc:
            if "can't allocate memory" not in str(exc):
                raise
            return {"out_of_memory": memory_gib}
        end = time.perf_counter()
        slow = end - start > budget
        if k or slow:  # the first is a warm-up, unless it is already over the budget
            times.append(end - start)
            forwards.append(middle - start)
        if slow:
            break
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base  # KiB on Linux
    return {"seconds": statistics.median(times), "forward": statistics.median(forwards), "log_z": float(log_z[0]),
            "peak_mib": peak / 1024, "runs": len(times)}


def span_flops(batch: int, length: int, nt: int, t: int) -> float:
    """The multiply-adds x 2 of treenets' span products in one forward (see the module docstring)."""
    macs = batch * (2 * length * nt * t * nt + max(length - 1, 0) * nt * t * t)  # the edge tables
    for width in range(3, length + 1):
        cells = length - width + 1
        macs += batch * cells * (nt * nt * (width - 2) + nt ** 3 + 2 * nt * nt)
    return 2.0 * macs


def matmul_rate(threads: int, nt: int) -> dict:
    """torch's float32 matrix product in GFLOP/s: square 1024, and the rule product's shape [2048, NT^2] @ [NT^2,
    NT]."""
    torch.set_num_threads(threads)
    rates = {}
    for name, (m, k, n) in {"square 1024": (1024, 1024, 1024), f"[2048, {nt * nt}] @ [{nt * nt}, {nt}]":
                            (2048, nt * nt, nt)}.items():
        a, b = torch.randn(m, k), torch.randn(k, n)
        a @ b
        start, count = time.perf_counter(), 0
        while time.perf_counter() - start < 1.0:
            a @ b
            count += 1
        rates[name] = 2.0 * m * k * n * count / (time.perf_counter() - start) / 1e9
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--official", help="a clone of harvardnlp/compound-pcfg (its PCFG.py)")
    parser.add_argument("--sides", default=",".join(SIDES))
    parser.add_argument("--batches", default="4,16")
    parser.add_argument("--lengths", default="10,20,30,40")
    parser.add_argument("--nt", type=int, default=30)
    parser.add_argument("--t", type=int, default=60)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--budget", type=float, default=20.0, help="seconds: a slower side is measured once")
    parser.add_argument("--memory", type=int, default=12, help="GiB of address space each measurement may take")
    parser.add_argument("--one", nargs=3, metavar=("SIDE", "BATCH", "LENGTH"), help=argparse.SUPPRESS)
    parser.add_argument("--json", help="also write the results to this file")
    args = parser.parse_args()
    if args.one:
        side, batch, length = args.one[0], int(args.one[1]), int(args.one[2])
        print(json.dumps(measure_one(side, batch, length, args.nt, args.t, args.official, args.repeats,
                                     args.budget, args.threads, args.memory)))
        return
    sides = [s for s in args.sides.split(",") if s != "official" or args.official]
    rates = matmul_rate(args.threads, args.nt)
    results = []
    print(f"inside + gradient, NT={args.nt}, T={args.t}, float32, {args.threads} thread(s); torch {torch.__version__}")
    print("matrix product: " + ", ".join(f"{name} {rate:.1f} GFLOP/s" for name, rate in rates.items()))
    print("| batch | length | side | sentences/s | ms per batch | peak MiB | vs treenets | span GFLOP/s |")
    print("| ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |")
    for batch in map(int, args.batches.split(",")):
        for length in map(int, args.lengths.split(",")):
            row = {}
            for side in sides:  # in turns
                command = [sys.executable, __file__, "--one", side, str(batch), str(length), "--nt", str(args.nt),
                           "--t", str(args.t), "--threads", str(args.threads), "--repeats", str(args.repeats),
                           "--budget", str(args.budget), "--memory", str(args.memory)] + \
                    (["--official", args.official] if args.official else [])
                done = subprocess.run(command, capture_output=True, text=True)
                if done.returncode:
                    print(f"{side} failed: {done.stderr[-2000:]}", file=sys.stderr)
                    continue
                row[side] = json.loads(done.stdout)
            for side, found in list(row.items()):
                if "out_of_memory" in found:
                    print(f"| {batch} | {length} | {side} | out of memory (over {found['out_of_memory']} GiB) "
                          "| | | | |", flush=True)
                    del row[side]
                    continue
                ratio = found["seconds"] / row["treenets"]["seconds"] if "treenets" in row else float("nan")
                rate = (f"{span_flops(batch, length, args.nt, args.t) / found['forward'] / 1e9:.1f}"
                        if side == "treenets" else "")
                print(f"| {batch} | {length} | {side} | {batch / found['seconds']:.1f} | {1e3 * found['seconds']:.1f} "
                      f"| {found['peak_mib']:.0f} | {ratio:.1f}x | {rate} |", flush=True)
                results.append({"batch": batch, "length": length, "side": side, **found})
            values = [found["log_z"] for found in row.values()]
            if max(values) - min(values) > 1e-2 * max(1.0, abs(values[0])):
                print(f"  log Z differs between the sides: {values}", file=sys.stderr)
    if args.json:
        Path(args.json).write_text(json.dumps({"matmul": rates, "results": results}, indent=1))


if __name__ == "__main__":
    main()
