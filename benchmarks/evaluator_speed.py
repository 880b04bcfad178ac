"""The evaluator's speed: a whole WSJ section scored for ten systems given as files of trees (`parse-eval` of
files, no model), under every convention, side by side with the paired bootstrap.

The ten systems are random binary trees (ten seeds) written in the formats of the field (ED4UCP's `(X (X a)
(X b))`, treenets' `(X a b)`, bare `((a b) c)`), half of them in a shuffled line order. Timed in turns, each the
best of `--repeats`, in this process (the imports of the command are not counted):

- `score`: reading the treebank, reading and matching the ten files, the table under all five conventions and
  the baselines, the systems side by side (45 + 10 pairs of bootstrap, `--draws` samples each) and agreement;
- `output`: the same with `--output` (trees in two formats, sentences.jsonl, five figures, summary.json, the
  report).

    python benchmarks/evaluator_speed.py [--treebank wsj22] [--systems 10] [--draws 10000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import tempfile
import time
from pathlib import Path

from treenets.cli import main as treenets
from treenets.data.treebanks import GoldTreebank
from treenets.trees import random_tree
from treenets.trees.draw import bracketed, preterminal_bracketed


def bare(tree) -> str:
    return tree if isinstance(tree, str) else "(" + " ".join(bare(child) for child in tree) + ")"


def write_systems(folder: Path, treebank: str, systems: int) -> list[str]:
    """`systems` files of random trees over the treebank's sentences, in several formats and orders."""
    _, sentences = GoldTreebank(treebank).read()
    words = [s.words for s in sentences if s.words]
    formats = (preterminal_bracketed, bracketed, lambda t: bare(t) if isinstance(t, list) else f"({t})")
    paths = []
    for k in range(systems):
        rng = random.Random(k)
        lines = [formats[k % 3](random_tree(w, rng)) for w in words]
        if k % 2:
            rng.shuffle(lines)
        paths.append(str(folder / f"system{k}.txt"))
        Path(paths[-1]).write_text("\n".join(lines) + "\n")
    return paths


def timed(args: list[str]) -> float:
    start = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        assert treenets(args) == 0
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--treebank", default="wsj22")
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--draws", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        files = write_systems(Path(tmp), args.treebank, args.systems)
        common = ["parse-eval", *files, "--treebank", args.treebank, "--convention", "all", "--bootstrap",
                  str(args.draws), "--random-draws", "5"]
        timed(common)  # warm: the first call imports the plotting and reading modules
        best = {"score": float("inf"), "output": float("inf")}
        for _ in range(args.repeats):
            best["score"] = min(best["score"], timed(common))
            best["output"] = min(best["output"], timed([*common, "--output", str(Path(tmp) / "out")]))
        sentences = len(GoldTreebank(args.treebank).read()[1])
    print(f"{args.treebank}: {sentences:,} sentences, {args.systems} systems, 5 conventions, "
          f"{args.systems * (args.systems + 1) // 2} pairs x {args.draws:,} bootstrap samples")
    print(f"score: {best['score']:.1f} s; with --output: {best['output']:.1f} s (best of {args.repeats})")


if __name__ == "__main__":
    main()
