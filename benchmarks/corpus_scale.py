"""A corpus at scale: `treenets data prepare` throughput, and the memory and speed of training from a prepared
(memory-mapped) corpus against the text files read into memory.

The large corpus is Mikolov's PTB training text repeated `--repeats` times (54: 50.2M tokens), with PTB's own
valid and test files. Each measurement is a separate `treenets` process; its peak resident memory is
`ru_maxrss` from `wait4` (the largest of the process and the workers it waited for).

1. prepare: `treenets data prepare` of the large text (`--normalize none`: PTB is tokenised already) and of PTB
   with the `ptb` normaliser (raw text is tokenised by nltk's Treebank rules: the slow case), tokens/s and peak
   memory.
2. memory: `--steps` training steps of `configs/onlstm-ptb-small.yaml` (one thread) on PTB and on the large
   corpus, each as Mikolov text files (read into memory, the way before prepared corpora) and as a prepared
   corpus.
3. speed: tokens/s of training on PTB from the text files and from the prepared corpus, in turns (`--turns`
   each, each side first in every other turn), from the runs' `metrics.jsonl`.
4. windows: the time to read one training window (`bptt` 70 x batch 20) from the memory map
   (`StreamColumns`) against slicing the whole stream held as a tensor (the way before), in this process.

    python benchmarks/corpus_scale.py --out runs/corpus-scale [--repeats 54] [--steps 20] [--turns 3]
        [--parts prepare,memory,speed,windows]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from treenets.data import resolve

TRAIN = [sys.executable, "-m", "treenets", "train", "configs/onlstm-ptb-small.yaml", "--overwrite", "--no-progress",
         "--threads", "1"]


def run(args: list[str], log: Path) -> tuple[float, float]:
    """Run a treenets command; (seconds, peak resident memory in MB). Its output goes to `log`."""
    started = time.perf_counter()
    with log.open("w") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(map(str, args))} failed; see {log}")
    return seconds, usage.ru_maxrss / 1024


def text_folder(folder: Path, train: Path, ptb: Path) -> Path:
    """A Mikolov-format folder whose training file is `train` and valid/test files PTB's."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, source in (("ptb.train.txt", train), ("ptb.valid.txt", ptb / "ptb.valid.txt"),
                         ("ptb.test.txt", ptb / "ptb.test.txt")):
        if not (folder / name).exists():
            (folder / name).symlink_to(source.resolve())
    return folder


def prepare(text: Path, ptb: Path, out: Path, log: Path, *options: str) -> dict:
    seconds, rss = run([sys.executable, "-m", "treenets", "data", "prepare", str(text), "--valid",
                        str(ptb / "ptb.valid.txt"), "--test", str(ptb / "ptb.test.txt"), "--out", str(out),
                        "--overwrite", "--no-progress", *options], log)
    meta = json.loads((out / "meta.json").read_text())
    tokens = sum(split["tokens"] for split in meta["splits"].values())
    return {"tokens": tokens, "seconds": round(seconds, 1), "tokens_per_s": round(tokens / seconds),
            "peak_rss_mb": round(rss), "workers": meta["workers"], "options": " ".join(options) or "(none)"}


def train(data: Path, out: Path, steps: int, log_interval: int) -> dict:
    seconds, rss = run([*TRAIN, "--out", str(out), "--set", f"data.path={data}", "--set", f"train.max_steps={steps}",
                        "--set", f"train.log_interval={log_interval}", "--set", "train.max_minutes=null"],
                       out.with_suffix(".log"))
    speeds = [json.loads(line).get("tokens_per_s") for line in (out / "metrics.jsonl").read_text().splitlines()]
    speeds = [s for s in speeds if s is not None]
    return {"seconds": round(seconds, 1), "peak_rss_mb": round(rss), "tokens_per_s": speeds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=54)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument("--speed-steps", type=int, default=300)
    parser.add_argument("--parts", default="prepare,memory,speed,windows")
    args = parser.parse_args()
    out, ptb = args.out.resolve(), resolve("ptb_lm")
    out.mkdir(parents=True, exist_ok=True)
    big = out / f"ptb-x{args.repeats}.txt"
    if not big.exists() or big.stat().st_size != args.repeats * (ptb / "ptb.train.txt").stat().st_size:
        block = (ptb / "ptb.train.txt").read_bytes()
        with big.open("wb") as file:
            for _ in range(args.repeats):
                file.write(block)
    saved = out / "results.json"
    results = json.loads(saved.read_text()) if saved.exists() else {}
    results.update({"cpu": _cpu(), "repeats": args.repeats})
    parts = args.parts.split(",")
    prepared = {"large": out / "large-prepared", "ptb": out / "ptb-prepared"}

    if "prepare" in parts:
        results["prepare"] = {
            "large, none": prepare(big, ptb, prepared["large"], out / "prepare-large.log"),
            "ptb, ptb normaliser": prepare(ptb / "ptb.train.txt", ptb, out / "ptb-normalised",
                                           out / "prepare-ptb.log", "--normalize", "ptb"),
            "ptb, none": prepare(ptb / "ptb.train.txt", ptb, prepared["ptb"], out / "prepare-ptb-none.log"),
        }
        print(json.dumps(results["prepare"], indent=1), flush=True)

    folders = {"ptb text": text_folder(out / "ptb-text", ptb / "ptb.train.txt", ptb),
               "ptb prepared": prepared["ptb"],
               "large text": text_folder(out / "large-text", big, ptb),
               "large prepared": prepared["large"]}
    if "memory" in parts:
        results["memory"] = {name: train(folder, out / f"train-{name.replace(' ', '-')}", args.steps, args.steps)
                             for name, folder in folders.items()}
        print(json.dumps(results["memory"], indent=1), flush=True)

    if "speed" in parts:
        speeds = {"ptb text": [], "ptb prepared": []}
        for turn in range(args.turns):
            for name in list(speeds)[:: 1 if turn % 2 == 0 else -1]:  # each side first in every other turn
                result = train(folders[name], out / f"speed-{name.replace(' ', '-')}-{turn}", args.speed_steps, 50)
                speeds[name].append(statistics.fmean(result["tokens_per_s"][1:]))  # the first interval warms up
        results["speed"] = {name: {"turns": [round(s) for s in values], "mean": round(statistics.fmean(values))}
                            for name, values in speeds.items()}
        results["speed"]["ratio prepared / text"] = round(results["speed"]["ptb prepared"]["mean"]
                                                          / results["speed"]["ptb text"]["mean"], 3)
        print(json.dumps(results["speed"], indent=1), flush=True)

    if "windows" in parts:
        results["windows"] = window_times(prepared["large"])
        print(json.dumps(results["windows"], indent=1))
    saved.write_text(json.dumps(results, indent=1))
    shutil.rmtree(out / "large-text", ignore_errors=True)


def window_times(folder: Path, windows: int = 20_000, bptt: int = 70, batch: int = 20) -> dict:
    """Microseconds per training window: gathered from the memory map of `folder`'s training split
    (`StreamColumns`), and sliced from the same stream held whole as a time-major tensor (the way before: the
    stream copied into memory, cut into columns once), in turns."""
    import numpy as np
    import torch

    from treenets.data.corpus import PreparedCorpus
    from treenets.data.lm import StreamColumns

    corpus = PreparedCorpus.open(folder)
    stream = corpus.ids("train")
    columns = StreamColumns(stream, batch, vocab_size=len(corpus.vocab))
    rows = len(stream) // batch
    held = torch.from_numpy(np.asarray(stream[: rows * batch], dtype=np.int64)).view(batch, rows).t().contiguous()
    starts = np.random.default_rng(0).integers(0, rows - bptt - 1, windows)
    times = {"memory map (StreamColumns)": [], "tensor in memory (before)": []}
    for _ in range(3):
        for name, read in (("memory map (StreamColumns)", lambda i: columns[i : i + bptt + 1]),
                           ("tensor in memory (before)", lambda i: held[i : i + bptt + 1].clone())):
            began = time.perf_counter()
            for i in starts:
                read(int(i))
            times[name].append((time.perf_counter() - began) / windows * 1e6)
    return {name: round(min(values), 1) for name, values in times.items()}


def _cpu() -> str:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")), "?")
    flags = [flag for flag in ("avx512_bf16", "avx512f", "avx2") if f" {flag}" in info]
    return f"{name} ({', '.join(flags)}), {os.cpu_count()} cores"


if __name__ == "__main__":
    main()
