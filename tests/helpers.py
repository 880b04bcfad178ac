"""Helpers for tests: a tiny corpus and config that train in seconds, small SICK copies, train-and-test, and the
kill-and-resume experiment (also run by benchmarks/kill_resume.py)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from treenets.data.logic import LABELS
from treenets.nn.precision import cpu_has_bfloat16

# Tests of `precision: bf16` as a user asks for it (train, eval, serve): treenets refuses it on a CPU without native
# bfloat16 products, which tests/nn/test_precision.py checks on every CPU.
needs_cpu_bfloat16 = pytest.mark.skipif(not cpu_has_bfloat16(), reason="this CPU has no native bfloat16 products "
                                        "(AVX512-BF16, AMX or ARM BF16): treenets refuses precision bf16 here")

WORDS = [
    "cat", "dog", "bird", "fish", "tree", "house", "car", "road", "city", "river",
    "sun", "moon", "star", "sky", "rain", "snow", "wind", "fire", "stone", "water",
    "eat", "see", "run", "walk", "take", "give", "make", "find", "know", "think",
    "big", "small", "old", "new", "red", "blue", "green", "fast", "slow", "warm",
    "the", "a", "of", "<unk>",
]


def write_corpus(folder: Path, seed: int = 0, lines=(300, 40, 40)) -> Path:
    """A small Mikolov-format corpus: ptb.{train,valid,test}.txt with a 44-word vocabulary."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, count in zip(("train", "valid", "test"), lines):
        text = "".join(" " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12))) + " \n"
                       for _ in range(count))
        if split == "train":  # every word occurs in the training file
            text += " " + " ".join(WORDS) + " \n"
        (folder / f"ptb.{split}.txt").write_text(text)
    return folder


def tiny_config(corpus: Path, **sections) -> dict:
    """A small ON-LSTM language-model config on `corpus` (seconds per epoch on a CPU)."""
    config = {
        "task": "lm",
        "data": {"path": str(corpus), "batch_size": 4, "eval_batch_size": 2, "test_batch_size": 1, "bptt": 12},
        "model": {"name": "onlstm", "emb_size": 8, "hidden_size": 12, "num_layers": 2, "chunk_size": 4, "dropout": 0.2,
                  "dropout_hidden": 0.1, "dropout_input": 0.2, "dropout_embedding": 0.1, "weight_drop": 0.3},
        "optim": {"lr": 5.0},
        "train": {"seed": 7, "epochs": 3, "log_interval": 1, "threads": 1},
    }
    for section, values in sections.items():
        config.setdefault(section, {}).update(values)
    return config


def tiny_structformer_config(corpus: Path, **train) -> dict:
    """A small StructFormer masked-language-model config on `corpus` (a few steps a second on a CPU)."""
    return {"task": "mlm", "data": {"path": str(corpus), "tokens_per_batch": 64, "eval_tokens_per_batch": 64},
            "model": {"name": "structformer", "hidden_size": 16, "num_layers": 2, "num_heads": 2,
                      "parser_layers": 2, "conv_size": 3},
            "train": {"seed": 3, "epochs": 2, "log_interval": 1, "threads": 1, **train}}


def tiny_sick(data_root, folder, pairs=(40, 12, 12)):
    """The first pairs of each SICK split, and the full vocabulary and embeddings (no copies made)."""
    source = data_root / "sick"
    for split, count in zip(("train", "dev", "test"), pairs):
        (folder / split).mkdir(parents=True)
        for name in ("a.toks", "b.toks", "a.parents", "b.parents", "a.cparents", "b.cparents", "sim.txt"):
            lines = (source / split / name).read_text().splitlines()[:count]
            (folder / split / name).write_text("\n".join(lines) + "\n")
    (folder / "sick.vocab").write_text((source / "sick.vocab").read_text())
    return folder


def train_and_test(tmp_path, capsys, config: dict) -> dict:
    """Train `config` through the CLI into tmp_path/run, evaluate best.pt on test, return the printed metrics."""
    path = tmp_path / "config.yaml"
    from treenets.cli import main

    path.write_text(yaml.safe_dump(config))
    assert main(["train", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "run" / "best.pt"), "--split", "test"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


def train_tiny_lm(root: Path) -> Path:
    """`root` with a tiny corpus, its config `tiny.yaml` and a run folder `run/` trained one epoch by the CLI."""
    from treenets.cli import main

    corpus = write_corpus(root / "corpus")
    config = root / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny_config(corpus, train={"epochs": 1})))
    assert main(["train", str(config), "--out", str(root / "run"), "--no-progress"]) == 0
    return root


def _checkpoint_id(path: Path):
    """Changes whenever `checkpoint.save` replaces the file (a new inode, a new time)."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return None
    return stat.st_ino, stat.st_mtime_ns


def _train(arguments: list[str]) -> subprocess.Popen:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    return subprocess.Popen([sys.executable, "-m", "treenets", "train", *arguments, "--no-progress"], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def kill_and_resume(folder: Path, kills: int, seed: int, max_delay: float, final_steps: int) -> list[dict]:
    """Train a tiny language model in `folder`, `kill -9` it `kills` times (each time `max_delay` seconds at
    most, drawn with `seed`, after the process wrote a checkpoint), resuming it after each kill, then resume it
    once more to `final_steps` more steps. Returns a record per kill: `delay`, `step` of last.pt after the kill,
    `loadable`, `mid_write` (the kill left a checkpoint's temporary file: it hit a write), and `resumed` (the
    step the next run reached: its next kill's step, or the final one)."""
    from treenets.core import checkpoint
    from treenets.core.errors import TreenetsError

    rng = random.Random(seed)
    config = folder / "tiny.yaml"
    # A checkpoint every few milliseconds of training, so that kills often land in the middle of one.
    train = {"epochs": 1000, "checkpoint_minutes": 0.0005, "backend": "torch"}
    config.write_text(yaml.safe_dump(tiny_config(write_corpus(folder / "corpus"), train=train)))
    run = folder / "run"
    arguments = [str(config), "--out", str(run)]
    records = []
    for _ in range(kills):
        previous = _checkpoint_id(run / "last.pt")
        process = _train(arguments)
        deadline = time.monotonic() + 120
        while _checkpoint_id(run / "last.pt") == previous:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise AssertionError(f"treenets train wrote no checkpoint: {process.communicate()[1]}")
            time.sleep(0.01)
        delay = rng.uniform(0.0, max_delay)
        time.sleep(delay)
        process.kill()  # SIGKILL: no handler runs
        process.wait()
        process.stderr.close()
        try:
            step, loadable = checkpoint.load(run / "last.pt")["trainer"]["step"], True
        except TreenetsError:
            step, loadable = None, False
        if records:
            records[-1]["resumed"] = step
        records.append({"delay": delay, "step": step, "loadable": loadable, "mid_write": any(run.glob(".*.tmp"))})
        arguments = ["--resume", str(run / "last.pt")]
    final = _train([*arguments, "--max-steps", str(records[-1]["step"] + final_steps)])
    _, errors = final.communicate()
    if final.returncode != 0:
        raise AssertionError(f"the last resumed run failed: {errors}")
    records[-1]["resumed"] = checkpoint.load(run / "last.pt")["trainer"]["step"]
    return records


def write_logic(folder: Path, pairs_per_file: int = 12, labels=LABELS) -> Path:
    """`folder` holding train0..train12, test0..test12: `pairs_per_file` random pairs of formulas each, with as many
    operators as the file's number (the hypothesis at most as many), their relations drawn from `labels`."""
    rng = random.Random(0)

    def formula(ops: int) -> str:
        if ops == 0:
            return rng.choice("abcdef")
        if rng.random() < 0.3:
            return f"( not {formula(ops - 1)} )"
        left = rng.randint(0, ops - 1)
        return f"( {formula(left)} ( {rng.choice(['and', 'or'])} {formula(ops - 1 - left)} ) )"

    folder.mkdir(parents=True)
    for kind in ("train", "test"):
        for n in range(13):
            lines = [f"{rng.choice(labels)}\t{formula(n)}\t{formula(rng.randint(0, n))}" for _ in range(pairs_per_file)]
            (folder / f"{kind}{n}").write_text("\n".join(lines) + "\n")
    return folder
