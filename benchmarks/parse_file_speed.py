"""Whole `treenets parse MODEL --file F` commands, timed in turns: how long a user waits for the trees of a file of
raw sentences from each model (an ensemble and its distilled student, say), the process's start and the models'
loading included.

    python benchmarks/parse_file_speed.py ptb-ensemble ptb-distilled [--file F | --sentences 500
        [--treebank wsj24 ...]] [--turns 3] [--threads 1] [--json]

Without `--file`, the first `--sentences` sentences of the treebanks' raw words (capitals, numbers and punctuation
restored from the leaves; WSJ 24 unless `--treebank` names others, read in the order given) are written to a
temporary file: `--treebank wsj22 --treebank wsj24 --treebank nltk-sample --sentences 7000` makes a file of 6,960.
Each turn runs every model once, in the order
given, then in reverse in the next turn, after an untimed first turn of one sentence each (the treenets modules
compiled into a cache folder of the run, as an installed treenets has them, and the models' files read once, as for
a user's second command); the median over the turns is reported, with the ratio of each model's time to the first
one's. The trees go to /dev/null (they are `parse`'s stdout): drawn as text, or with `--json` one JSON
object a sentence (what a program reading the trees of a large file asks for).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def cpu_name() -> str:
    path = Path("/proc/cpuinfo")
    if path.exists():
        text = path.read_text()
        model = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")),
                     platform.processor())
        isa = next((f for f in ("avx512_bf16", "avx512f", "avx2") if f" {f}" in text), "no AVX2")
        return f"{model} ({isa})"
    return platform.processor() or platform.machine()


def raw_sentences(treebanks: list[str], count: int) -> list[str]:
    """The first `count` sentences of the treebanks, one after another, as raw text: their leaves, empty elements
    dropped."""
    from treenets.data.treebanks import resolve_treebank
    from treenets.trees.ptb import WORD_RULES, load_gold

    sentences = [s for name in treebanks for s in load_gold(resolve_treebank(name), rule=WORD_RULES["li-punct"])]
    return [" ".join(s.forms) for s in sentences[:count] if s.forms]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--file", help="a file of raw sentences, one a line (default: the first --sentences of the "
                                       "treebanks)")
    parser.add_argument("--sentences", type=int, default=500)
    parser.add_argument("--treebank", action="append", help="a treebank whose raw sentences make the file, "
                                                            "repeatable (default: wsj24)")
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="parse --json: the trees as JSON lines, not drawn")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(args.file) if args.file else Path(tmp) / "sentences.txt"
        if not args.file:
            path.write_text("\n".join(raw_sentences(args.treebank or ["wsj24"], args.sentences)) + "\n")
        lines = sum(1 for line in path.read_text().splitlines() if line.strip())
        # Python's compiled modules kept (in a folder of this run), as an installed treenets has them: a process
        # started with PYTHONDONTWRITEBYTECODE would compile every treenets module again at each start
        environment = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
        environment["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
        times: dict[str, list[float]] = {model: [] for model in args.models}
        for turn in range(-1, args.turns):  # turn -1: one sentence each, untimed (modules compiled, files read)
            for model in args.models if turn % 2 == 0 else list(reversed(args.models)):
                start = time.perf_counter()
                command = [sys.executable, "-m", "treenets", "parse", model, "--file", str(path), "--threads",
                           str(args.threads), *(["--json"] if args.json else [])]
                if turn < 0:
                    command = [*command[:5], "--threads", str(args.threads), "One sentence."]
                subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                               env=environment)
                if turn >= 0:
                    times[model].append(time.perf_counter() - start)
    print(f"{cpu_name()}, {args.threads} thread(s), {lines} sentences, {args.turns} turns (median), trees "
          f"{'as JSON' if args.json else 'drawn as text'}")
    print("| model | seconds | sentences/s | time / the first model's |")
    print("| --- | ---: | ---: | ---: |")
    first = statistics.median(times[args.models[0]])
    for model, found in times.items():
        seconds = statistics.median(found)
        print(f"| {model} | {seconds:.1f} | {lines / seconds:.1f} | {seconds / first:.3f} |")


if __name__ == "__main__":
    main()
