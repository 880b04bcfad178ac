"""Bad inputs and faults against the `treenets` command line: does each end in one clear line?

Runs every case below (numerical faults, checkpoint files, config files, devices, output paths, numbers on
the command line, deep input, plots, data files with bad lines, empty inputs, unknown names, logic formulas and
ListOps sequences, model folders, settings, downloads) against a `treenets` executable, in a fresh temporary folder
with files the script writes itself and a tiny language model it trains once (one epoch of a 40-word corpus,
seconds), and prints a markdown table. The download cases fetch from HTTP servers the script runs on this machine
(`serve_models`). Outcomes:

- `clear error`: exit status not 0, stderr holds one `treenets: error:` line (or argparse's `treenets COMMAND:
  error:` after its usage lines) and no traceback;
- `misleading error`: a clear error that does not name what is at fault (the case's `blame`: the setting that
  holds a value of the wrong kind, say);
- `internal error`: a `treenets: internal error:` line (a bug, caught by the command line's error boundary);
- `traceback`: a Python traceback on stderr;
- `ok`: exit status 0;
- `wrong result`: exit status 0 with a wrong answer (the case's `check`), or any run that leaves something wrong
  behind (its `after`: a run written into a model folder, a download's temporary folder left in the cache);
- `hang/timeout`: still running after `--timeout` seconds (then killed);
- `n/a`: that version of treenets has no such command;
- `unclear`: exit status not 0 and none of the above.

The message column is the line of stderr that says what happened: the error line, a traceback's last line
(the exception), else the first line.

    python benchmarks/bad_inputs.py [--treenets .venv/bin/treenets] [--data DIR] [--only WORD,...] > table.md

`--treenets` may be an older checkout's executable (its own virtual environment): the cases only use the
command line, so the same table shows what changed. Run it with a Python that has torch (it writes a few
torch files by hand).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import torch
import yaml

WORDS = ["the", "a", "of", "cat", "dog", "bird", "fish", "tree", "house", "car", "road", "city", "river", "sun",
         "moon", "star", "sky", "rain", "snow", "wind", "fire", "stone", "water", "eat", "see", "run", "walk", "take",
         "give", "make", "find", "know", "big", "small", "old", "new", "red", "blue", "green", "fast", "slow", "<unk>"]


@dataclass
class Case:
    family: str
    name: str
    args: list[str]  # after `treenets` (or `python`, for `api` cases); `{T}` is the temporary folder
    files: dict = field(default_factory=dict)  # path under {T} -> text, bytes, None (a folder) or FIFO
    setup: list = field(default_factory=list)  # `treenets` commands run first (their outcome is not the case's),
    # or Python callables given the folder
    check: object = None  # check(folder, stdout) -> what is wrong with a run that exited 0, or None (correct)
    api: bool = False  # args are `python` arguments: the Python API, whose errors are exceptions
    twice: bool = False  # the command runs twice at the same time (one must refuse)
    env: dict = field(default_factory=dict)  # environment variables set for the command (`{T}` expanded)
    installed: bool = False  # run as an installed treenets sees the zoo: no checkout, so no models/ beside it
    blame: str = ""  # what an error must name (else it misleads)
    after: object = None  # after(folder, stderr) -> what the run left wrong, whatever its outcome, or None


FIFO = object()  # a named pipe: reading it blocks until someone writes


def corpus_text(rng: random.Random, lines: int) -> str:
    return "".join(" " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 10))) + " \n" for _ in range(lines))


def config(**sections) -> dict:
    """The tiny ON-LSTM language model on `{T}/corpus` (one epoch: seconds)."""
    raw = {
        "task": "lm",
        "data": {"path": "{T}/corpus", "batch_size": 4, "eval_batch_size": 2, "test_batch_size": 1, "bptt": 12},
        "model": {"name": "onlstm", "emb_size": 8, "hidden_size": 12, "num_layers": 2, "chunk_size": 4},
        "optim": {"lr": 5.0},
        "train": {"seed": 7, "epochs": 1, "log_interval": 5, "threads": 1},
    }
    for section, values in sections.items():
        raw[section] = {**raw.get(section, {}), **values}
    return raw


def dump(raw: dict) -> str:
    return yaml.safe_dump(raw, sort_keys=False)


def sick_folder(sim: str = "4.5\n3.0\n") -> dict:
    """Two SICK pairs per split (sim.txt of the train split as given) and a vocabulary."""
    files = {"sick/sick.vocab": "a\ncat\ndog\nsits\nruns\n"}
    for split in ("train", "dev", "test"):
        files |= {f"sick/{split}/{side}.toks": "a cat sits\na dog runs\n" for side in "ab"}
        files |= {f"sick/{split}/{side}.parents": "2 3 0\n2 3 0\n" for side in "ab"}
        files[f"sick/{split}/sim.txt"] = sim if split == "train" else "4.5\n3.0\n"
    return files


SICK_CONFIG = dump({"task": "relatedness", "data": {"path": "{T}/sick", "embeddings": None, "batch_size": 2},
                    "model": {"emb_size": 4, "hidden_size": 4}, "train": {"epochs": 1}})
DUPLICATE = "task: lm\ndata:\n  path: {T}/corpus\n  batch_size: 4\n  batch_size: 8\n"
DEEP_TREE = "( " + "(X " * 3000 + "(NN cat)" + ")" * 3000 + " )\n"
LOGIC = {f"logic/{kind}{n}": "=\ta\ta\n" * 10 for kind in ("train", "test") for n in range(13)}
LOGIC_CONFIG = dump({"task": "logic", "data": {"path": "{T}/logic", "batch_size": 8},
                     "model": {"name": "lstm", "emb_size": 4, "hidden_size": 4}})


def write_checkpoint_fakes(root: Path) -> None:
    """Files that are not treenets checkpoints: half of a real one, a train state without its optimizer, a model
    whose saved config holds a tensor, another program's weights, a tensor, a dict in the treenets format without
    weights, a pickled object."""
    full = (root / "run" / "best.pt").read_bytes()
    (root / "truncated.pt").write_bytes(full[: len(full) // 2])
    state = torch.load(root / "run" / "last.pt", weights_only=True)
    del state["optimizer"]
    torch.save(state, root / "nooptimizer.pt")
    state = torch.load(root / "run" / "best.pt", weights_only=True)
    state["config"]["optim"]["lr"] = torch.tensor(1.0)
    torch.save(state, root / "tensorconfig.pt")
    for name, obj in {"other.pt": torch.nn.Linear(2, 2).state_dict(), "tensor.pt": torch.zeros(3),
                      "noweights.pt": {"format": "treenets-checkpoint", "version": 1, "kind": "model",
                                       "config": config(), "vocab": WORDS},
                      "object.pt": argparse.Namespace(weights=1)}.items():
        torch.save(obj, root / name)


def cases() -> list[Case]:
    tiny = "{T}/tiny.yaml"
    best = "{T}/run/best.pt"
    out = ["--out", "{T}/out", "--no-progress"]
    lm_cmds = [("eval", []), ("parse", ["a cat"]), ("parse-eval", ["--treebank", "{T}/tiny.mrg"]),
               ("predict", ["--sentence", "a cat"]), ("syneval", ["--limit", "1"])]
    checkpoints = []
    for label, name, content in [("zero-byte file", "empty.pt", b""), ("truncated", "truncated.pt", b"-"),
                                 ("text file", "text.pt", "hello\n"), ("folder", "folder.pt", None),
                                 ("dict without weights", "noweights.pt", b"-"),
                                 ("another program's weights", "other.pt", b"-")]:
        files = {} if content == b"-" else {name: content}  # b"-": written by `prepare`
        for command, extra in lm_cmds:
            if label in ("zero-byte file", "dict without weights", "another program's weights") or command == "eval":
                checkpoints.append(Case("checkpoint", f"{command}: {label}", [command, "{T}/" + name, *extra], files))
    checkpoints += [
        Case("checkpoint", "eval: a tensor", ["eval", "{T}/tensor.pt"]),
        Case("checkpoint", "eval: pickled object", ["eval", "{T}/object.pt"]),
        Case("checkpoint", "eval: missing file", ["eval", "{T}/absent.pt"]),
        Case("checkpoint", "eval: a tensor in the saved config", ["eval", "{T}/tensorconfig.pt"]),
        Case("checkpoint", "train --resume: zero-byte file", ["train", "--resume", "{T}/empty.pt", *out],
             {"empty.pt": b""}),
        Case("checkpoint", "train --resume: best.pt (weights only)", ["train", "--resume", best, *out]),
        Case("checkpoint", "train --resume: train state without optimizer",
             ["train", "--resume", "{T}/nooptimizer.pt", *out]),
        Case("checkpoint", "train --resume: dict without weights", ["train", "--resume", "{T}/noweights.pt", *out]),
        Case("checkpoint", "train --resume: another program's weights", ["train", "--resume", "{T}/other.pt", *out]),
    ]
    return [
        # numerical
        Case("numerical", "lr .inf in the config", ["train", "{T}/c.yaml", *out], {"c.yaml": dump(config(
            optim={"lr": float("inf")}))}),
        Case("numerical", "--set optim.lr=.nan", ["train", tiny, "--set", "optim.lr=.nan", *out]),
        Case("numerical", "--set model.dropout=.nan", ["train", tiny, "--set", "model.dropout=.nan", *out]),
        Case("numerical", "--max-minutes nan", ["train", tiny, "--max-minutes", "nan", *out]),
        Case("numerical", "diverging lr (NaN loss)", ["train", tiny, "--set", "optim.lr=1e38", *out]),
        *checkpoints,
        # config files
        Case("config", "binary file", ["train", "{T}/c.yaml", *out], {"c.yaml": bytes(range(256))}),
        Case("config", "a directory", ["train", "{T}/confdir", *out], {"confdir": None}),
        Case("config", "a torch checkpoint", ["train", best, *out]),
        Case("config", "UTF-16 text", ["train", "{T}/c.yaml", *out], {"c.yaml": dump(config()).encode("utf-16")}),
        Case("config", "unreadable (/proc/self/mem)", ["train", "/proc/self/mem", *out]),
        Case("config", "a FIFO (blocks on read)", ["train", "{T}/fifo.yaml", *out], {"fifo.yaml": FIFO}),
        Case("config", "duplicate key", ["train", "{T}/c.yaml", *out], {"c.yaml": DUPLICATE}),
        Case("config", "batch_size: true", ["train", "{T}/c.yaml", *out], {"c.yaml": dump(config(
            data={"batch_size": True}))}),
        Case("config", "UTF-8 BOM (valid otherwise)", ["train", "{T}/c.yaml", "--max-steps", "1", *out],
             {"c.yaml": "\ufeff" + dump(config())}),
        Case("config", "a list", ["train", "{T}/c.yaml", *out], {"c.yaml": "[1, 2]\n"}),
        Case("config", "tab indentation", ["train", "{T}/c.yaml", *out], {"c.yaml": "task: lm\ndata:\n\tpath: x\n"}),
        Case("config", "missing file", ["train", "{T}/absent.yaml", *out]),
        # devices
        Case("device", "eval --device tpu", ["eval", best, "--device", "tpu"]),
        Case("device", "parse --device cuda:7", ["parse", best, "a cat", "--device", "cuda:7"]),
        Case("device", "parse --device meta", ["parse", best, "a cat", "--device", "meta"]),
        Case("device", "predict --device mps", ["predict", best, "--sentence", "a cat", "--device", "mps"]),
        Case("device", "train --device ''", ["train", tiny, "--device", "", *out]),
        # output paths
        Case("output", "train --out: an existing file", ["train", tiny, "--out", "{T}/file", "--no-progress"],
             {"file": "x"}),
        Case("output", "train --out: under a file", ["train", tiny, "--out", "{T}/file/run", "--no-progress"],
             {"file": "x"}),
        Case("output", "train --out: read-only place", ["train", tiny, "--out", "/proc/run", "--no-progress"]),
        Case("output", "parse-eval --output: an existing file",
             ["parse-eval", best, "--treebank", "{T}/tiny.mrg", "--output", "{T}/file"], {"file": "x"}),
        Case("output", "parse-eval --output: under a file",
             ["parse-eval", best, "--treebank", "{T}/tiny.mrg", "--output", "{T}/file/out"], {"file": "x"}),
        Case("output", "syneval --output: a folder", ["syneval", best, "--limit", "1", "--output", "{T}/dir"],
             {"dir": None}),
        Case("output", "syneval --output: under a file",
             ["syneval", best, "--limit", "1", "--output", "{T}/file/s.json"], {"file": "x"}),
        Case("output", "parse --svg: an existing file", ["parse", best, "a cat", "--svg", "{T}/file"], {"file": "x"}),
        Case("output", "eval --plot: under a file", ["eval", best, "--plot", "{T}/file/p.png"], {"file": "x"}),
        # numbers on the command line
        Case("numbers", "eval --batch-size 0", ["eval", best, "--batch-size", "0"]),
        Case("numbers", "parse-eval --batch-size -1", ["parse-eval", best, "--treebank", "{T}/tiny.mrg",
                                                       "--batch-size", "-1"]),
        Case("numbers", "train --max-steps 0", ["train", tiny, "--max-steps", "0", *out]),
        Case("numbers", "train --max-minutes -1", ["train", tiny, "--max-minutes", "-1", *out]),
        Case("numbers", "train --threads 0", ["train", tiny, "--threads", "0", *out]),
        Case("numbers", "baselines --random-draws 0", ["baselines", "--treebank", "{T}/tiny.mrg",
                                                       "--random-draws", "0"]),
        Case("numbers", "parse --layer 0", ["parse", best, "a cat", "--layer", "0"]),
        Case("numbers", "parse --layer 9", ["parse", best, "a cat", "--layer", "9"]),
        Case("numbers", "parse --layer all", ["parse", best, "a cat", "--layer", "all"]),
        Case("numbers", "--set data.bptt=-3", ["train", tiny, "--set", "data.bptt=-3", *out]),
        # deep input
        Case("deep", "parse a 3000-word sentence", ["parse", best, " ".join(["cat"] * 3000)]),
        Case("deep", "treebank 3000 levels deep", ["baselines", "--treebank", "{T}/deep.mrg"],
             {"deep.mrg": DEEP_TREE}),
        Case("deep", "logic formula 3000 levels deep", ["train", "{T}/c.yaml", "--max-steps", "1", *out],
             {**LOGIC, "logic/train0": "=\t" + "( not " * 3000 + "a" + " )" * 3000 + "\ta\n" + LOGIC["logic/train0"],
              "c.yaml": LOGIC_CONFIG}),
        Case("deep", "parse-eval: a 3000-word sentence", ["parse-eval", best, "--treebank", "{T}/long.mrg"],
             {"long.mrg": "( (S " + "(NN cat) " * 3000 + ") )\n"}),
        # plots
        Case("plot", "metrics --plot: under a file", ["metrics", "{T}/run", "--plot", "{T}/file/c.png"], {"file": "x"}),
        Case("plot", "metrics --plot: unknown format", ["metrics", "{T}/run", "--plot", "{T}/c.xyz"]),
        Case("plot", "metrics --plot: a folder", ["metrics", "{T}/run", "--plot", "{T}/dir"], {"dir": None}),
        Case("plot", "metrics --plot: no evaluations", ["metrics", "{T}/m.jsonl", "--plot", "{T}/c.png"],
             {"m.jsonl": '{"event": "train", "step": 1, "epoch": 1, "loss": 3.0}\n'}),
        Case("plot", "eval --plot: metric without groups", ["eval", best, "--plot", "{T}/p.png"]),
        # data files with bad lines
        Case("data", "corpus line with a tab", ["train", "{T}/c.yaml", *out],
             {"bad/ptb.train.txt": "a cat\tsat\n", "bad/ptb.valid.txt": "a\n", "bad/ptb.test.txt": "a\n",
              "c.yaml": dump(config(data={"path": "{T}/bad"}))}),
        Case("data", "SICK score 7 (outside 1-5)", ["train", "{T}/c.yaml", *out],
             {**sick_folder("4.5\n7\n"), "c.yaml": SICK_CONFIG}),
        Case("data", "SICK score not a number", ["train", "{T}/c.yaml", *out],
             {**sick_folder("4.5\nhigh\n"), "c.yaml": SICK_CONFIG}),
        Case("data", "SICK vocabulary with a BOM", ["train", "{T}/c.yaml", "--max-steps", "1", *out],
             {**sick_folder(), "sick/sick.vocab": "\ufeffa\ncat\ndog\nsits\nruns\n", "c.yaml": SICK_CONFIG}),
        Case("data", "logic: too few pairs to hold some out", ["train", "{T}/c.yaml", *out],
             {**{name: "=\ta\ta\n" for name in LOGIC}, "c.yaml": LOGIC_CONFIG}),
        Case("data", "treebank with unbalanced brackets", ["baselines", "--treebank", "{T}/bad.mrg"],
             {"bad.mrg": "( (S (NP (DT the) (NN cat)) )\n"}),
        Case("data", "metrics.jsonl: a bad line", ["metrics", "{T}/m.jsonl"], {"m.jsonl": '{"event": "eval"\n'}),
        Case("data", "metrics.jsonl: a record without event", ["metrics", "{T}/m.jsonl"], {"m.jsonl": "[1, 2]\n"}),
        Case("data", "parse --file: binary", ["parse", best, "--file", "{T}/s.bin"], {"s.bin": bytes(range(256))}),
        Case("data", "parse --file: a folder", ["parse", best, "--file", "{T}/dir"], {"dir": None}),
        Case("data", "syneval: templates missing", ["syneval", best, "--data", "{T}/dir"], {"dir": None}),
        # empty inputs
        Case("empty", "parse: no sentence", ["parse", best]),
        Case("empty", "parse: blank sentence", ["parse", best, "   "]),
        Case("empty", "parse --file: empty file", ["parse", best, "--file", "{T}/e.txt"], {"e.txt": ""}),
        Case("empty", "predict --sentence ''", ["predict", best, "--sentence", ""]),
        Case("empty", "empty corpus file", ["train", "{T}/c.yaml", *out],
             {"e/ptb.train.txt": "", "e/ptb.valid.txt": "a\n", "e/ptb.test.txt": "a\n",
              "c.yaml": dump(config(data={"path": "{T}/e"}))}),
        Case("empty", "empty treebank", ["baselines", "--treebank", "{T}/e.mrg"], {"e.mrg": ""}),
        Case("empty", "empty metrics.jsonl", ["metrics", "{T}/m.jsonl", "--plot", "{T}/c.png"], {"m.jsonl": ""}),
        Case("empty", "empty config file", ["train", "{T}/c.yaml", *out], {"c.yaml": ""}),
        # unknown names
        Case("names", "--treebank nosuch", ["baselines", "--treebank", "nosuch"]),
        Case("names", "syneval --cases nosuch", ["syneval", best, "--cases", "nosuch"]),
        Case("names", "data check nosuch", ["data", "check", "nosuch"]),
        Case("names", "eval: unknown model name", ["eval", "nosuch-model"]),
        Case("names", "--set task=nosuch", ["train", tiny, "--set", "task=nosuch", *out]),
        Case("names", "--set model.name=nosuch", ["train", tiny, "--set", "model.name=nosuch", *out]),
        Case("names", "--set nosuch.key=1", ["train", tiny, "--set", "nosuch.key=1", *out]),
        Case("names", "predict --tree to a language model", ["predict", best, "--tree", "(X (X a) (X cat))"]),
        Case("names", "predict --pair to a language model", ["predict", best, "--pair", "a cat", "a dog"]),
        *second_round_cases(),
        *corpus_cases(),
        *third_round_cases(),
        *structformer_cases(),
        *fourth_round_cases(),
        *fifth_round_cases(),
    ]


def corpus_cases() -> list[Case]:
    """`treenets data prepare` and prepared corpora (issue 29)."""
    prepare = ["data", "prepare", "--no-progress", "--out", "{T}/prepared"]
    held_out = ["--split-fraction", "0.1"]
    text = {"text.txt": "The cat sat on the mat.\nA dog ran.\n" * 20}
    corpus = ["data", "prepare", "--no-progress", "{T}/text.txt", *held_out, "--out", "{T}/c"]
    train = ["train", "{T}/tiny.yaml", "--set", "data.path={T}/c", "--max-steps", "1", "--out", "{T}/r",
             "--no-progress"]

    def edit(name: str, change):
        return lambda root: change(root / "c" / name)

    def newer(path: Path):
        path.write_text(path.read_text().replace('"version": 1', '"version": 9'))

    return [
        Case("your own corpus", "prepare: an empty file", [*prepare, "{T}/empty.txt", *held_out], {"empty.txt": ""}),
        Case("your own corpus", "prepare: binary bytes", [*prepare, "{T}/bin.txt", *held_out],
             {"bin.txt": b"words\n\x00\x01\x02\n"}),
        Case("your own corpus", "prepare: Latin-1 text", [*prepare, "{T}/latin.txt", *held_out],
             {"latin.txt": "caf\u00e9 au lait\n".encode("latin-1") * 30}),
        Case("your own corpus", "prepare: a vocabulary with a duplicate", [*prepare, "{T}/text.txt", *held_out,
             "--vocab", "{T}/vocab.txt"], {**text, "vocab.txt": "the\ncat\nthe\n"}),
        Case("your own corpus", "prepare: --vocab-size 0", [*prepare, "{T}/text.txt", *held_out, "--vocab-size", "0"],
             text),
        Case("your own corpus", "prepare: a file that is not gzip named .gz", [*prepare, "{T}/x.gz", *held_out],
             {"x.gz": "plain text\n"}),
        Case("your own corpus", "train: a corpus from a newer treenets", train, text,
             setup=[corpus, edit("meta.json", newer)]),
        Case("your own corpus", "train: a truncated id file", train, text,
             setup=[corpus, edit("train.bin", lambda p: p.write_bytes(p.read_bytes()[:-5]))]),
        Case("your own corpus", "train: ids beyond the vocabulary", train, text,
             setup=[corpus, edit("train.bin", lambda p: p.write_bytes(b"\xff" * p.stat().st_size))]),
        Case("your own corpus", "train: a character corpus for the word task", train, text,
             setup=[[*corpus, "--char"]]),
    ]


# --- the third round (issue 57): formulas and sequences, model folders, settings, downloads ----------------------

# `python -c INSTALLED ARGS...` runs `treenets ARGS...` as an installed treenets sees the zoo (no checkout: models are
# looked up in the cache alone).
INSTALLED = ("import sys; from treenets.core import folders; folders.checkout = lambda: None; "
             "from treenets.cli import main; sys.exit(main(sys.argv[1:]))")
MODELS = Path(__file__).resolve().parents[1] / "models"  # the checkout's models/, which the local servers serve
URLS: dict[str, str] = {}  # name -> base URL of each local server (`serve_models`)
SENT: list[int] = []  # the bytes the `endless` server wrote to each client before it hung up
STALLED, RELEASED = threading.Event(), threading.Event()  # the `stall` server is holding a download / may let go


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class _Endless(_Quiet):
    """A body without Content-Length that does not end (128 MB at most)."""

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        total, block = 0, b"x" * (1 << 16)
        with contextlib.suppress(OSError):
            while total < 128 << 20:
                self.wfile.write(block)
                total += len(block)
        SENT.append(total)


class _Stall(_Quiet):
    """Half of each file, then nothing until `RELEASED` (or 30 s): a download in progress."""

    def copyfile(self, source, outputfile):
        body = source.read()
        outputfile.write(body[: len(body) // 2])
        outputfile.flush()
        STALLED.set()
        RELEASED.wait(30)


def serve_models() -> None:
    """Start the local servers of `MODELS` (`URLS`): `models` (as they are), `endless`, `stall`."""
    for name, handler in (("models", _Quiet), ("endless", _Endless), ("stall", _Stall)):
        server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(MODELS)))
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        URLS[name] = f"http://127.0.0.1:{server.server_address[1]}"


def expand(text: str, root: Path) -> str:
    """`text` with `{T}` (the case's folder), `{MODELS}` (the checkout's models/) and `{URL:name}` (a local server)
    filled in."""
    text = text.replace("{T}", str(root)).replace("{MODELS}", str(MODELS))
    return re.sub(r"\{URL:(\w+)\}", lambda match: URLS[match.group(1)], text)


def _installed_download(root: Path, source: str = "{MODELS}") -> None:
    """Setup: `lstm-logic` downloaded into the case's cache, as an installed treenets does it."""
    subprocess.run([str(Path(TREENETS[0]).with_name("python")), "-c", INSTALLED, "models", "download", "lstm-logic",
                    "--from", expand(source, root)], env={**os.environ, "TREENETS_CACHE": str(root / "cache")},
                   capture_output=True)


def _killed_download(root: Path) -> None:
    """Setup: a download of `lstm-logic` killed with SIGKILL half way through its first file."""
    STALLED.clear()
    RELEASED.clear()
    process = subprocess.Popen([str(Path(TREENETS[0]).with_name("python")), "-c", INSTALLED, "models", "download",
                                "lstm-logic", "--from", URLS["stall"]],
                               env={**os.environ, "TREENETS_CACHE": str(root / "cache")},
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    STALLED.wait(60)
    process.kill()
    process.wait()
    RELEASED.set()


def _no_download_folder(root: Path, _stderr: str):
    left = [p.name for p in (root / "cache").glob(".lstm-logic.*") if p.is_dir()]
    return f"left {', '.join(left)} in the cache" if left else None


def _read_at_most(megabytes: int):
    """After: the `endless` server wrote at most `megabytes` to the download (waiting for it to see the hang-up)."""
    def after(_root: Path, _stderr: str):
        deadline = time.monotonic() + 10
        while len(SENT) <= after.seen and time.monotonic() < deadline:
            time.sleep(0.05)
        after.seen = len(SENT)
        return f"read {SENT[-1] / 1e6:.0f} MB of the body before refusing it" if SENT and SENT[-1] > megabytes << 20 \
            else None
    after.seen = 0
    return after


def _no_run_in(*folders):
    """After: none of `folders` (under the case's folder) holds a run's files."""
    def after(root: Path, _stderr: str):
        written = [f"{folder}/{name}" for folder in folders for name in ("last.pt", "best.pt", "config.yaml",
                                                                         "metrics.jsonl")
                   if (root / folder / name).exists()]
        return f"wrote {', '.join(written)}" if written else None
    return after


def _link(name: str, target: str):
    return lambda root: (root / name).symlink_to(root / target)


def answered(*_):
    return "answered"


def _no_error(_root: Path, stderr: str):
    """After: the command did not fail (it needs nothing that is missing)."""
    return "failed" if ERROR_LINE.search(stderr) else None


def _says_tree(_root: Path, stdout: str):
    return None if '"tree": "(X' in stdout else "no tree"


LISTOPS_CONFIG = dump({"task": "listops", "data": {"path": "{T}/listops", "batch_size": 4, "valid_every": 2},
                       "model": {"name": "ordered-memory", "emb_size": 8, "hidden_size": 8, "slots": 3}})
LISTOPS = {"listops/train.tsv": "9\t[MAX 2 9 ]\n1\t[MIN 1 4 ]\n" * 4, "listops/test.tsv": "9\t[MAX 2 9 ]\n"}


def third_round_cases() -> list[Case]:
    """The families of the third reliability round (issue 57), and adversarial cases of the surfaces it changed."""
    pair = ["predict", "om-logic", "--pair"]
    cache_file = {"file": "mine"}
    models = ["models", "download", "lstm-logic"]
    tiny_out = ["train", "{T}/tiny.yaml", "--no-progress", "--out"]
    export = ["export", "{T}/run/best.pt", "{T}/model"]
    return [
        # formulas and sequences against their grammar: refused, naming the position
        *[Case("grammar", f"{model}: --pair {shlex.quote(premise)} a", ["predict", model, "--pair", premise, "a"],
               blame="at token", check=answered)
          for model, premise in (("om-logic", "and"), ("om-logic", "( and a )"), ("om-logic", "( a b )"),
                                 ("om-logic", "( a ( not b ) )"), ("lstm-logic", "( a ( and b ) ) )"),
                                 ("treelstm-logic", "( not a b )"), ("onlstm-logic", "( a ( or b c ) )"),
                                 ("om-logic", "( a ( and ) )"), ("om-logic", "( not not )"))],
        Case("grammar", "parse om-logic and", ["parse", "om-logic", "and"], blame="at token", check=answered),
        Case("grammar", "om-logic: typed without spaces, capitals (a formula)", [*pair, "(A (and (not B)))", "a"],
             check=lambda _root, out: None if json.loads(out)["relation"] else "no relation"),
        Case("grammar", "om-logic: 10,000 tokens, one bracket short", [*pair, "( not " * 5000 + "a" + " )" * 4999,
                                                                       "a"], blame="at token", check=answered),
        Case("grammar", "logic training file: ( a b )", ["train", "{T}/c.yaml", "--max-steps", "1", *out_of("{T}")],
             {**LOGIC, "logic/train1": "=\t( a b )\ta\n" + LOGIC["logic/train1"], "c.yaml": LOGIC_CONFIG},
             blame="train1:1 (premise): formula '( a b )': 'b' at token 3", check=answered),
        Case("grammar", "listops training file: two sequences on a line", ["train", "{T}/c.yaml", *out_of("{T}")],
             {**LISTOPS, "listops/train.tsv": LISTOPS["listops/train.tsv"] + "9\t[MAX 2 9 ] 4\n",
              "c.yaml": LISTOPS_CONFIG}, blame="train.tsv:9: sequence '[MAX 2 9 ] 4': '4' at token 5"),
        Case("grammar", "listops training file: brackets of another tree", ["train", "{T}/c.yaml", *out_of("{T}")],
             {**LISTOPS, "listops/train.tsv": LISTOPS["listops/train.tsv"] + "9\t( [MAX 2 ) 9 ]\n",
              "c.yaml": LISTOPS_CONFIG}, blame="train.tsv:9: sequence '( [MAX 2 ) 9 ]': '[MAX' at token 2"),
        # runs never written into a model folder
        Case("run folder", "train --init NAME --out the installed model's folder in the cache",
             ["train", "--init", "lstm-logic", "--out", "{T}/cache/lstm-logic", "--no-progress"], installed=True,
             setup=[_installed_download], after=_no_run_in("cache/lstm-logic")),
        Case("run folder", "train --out a folder in an installed model's folder",
             ["train", "--init", "lstm-logic", "--out", "{T}/cache/lstm-logic/run", "--no-progress"], installed=True,
             setup=[_installed_download], after=_no_run_in("cache/lstm-logic/run")),
        Case("run folder", "train --out a zoo model's folder in the cache, not installed",
             ["train", "{T}/tiny.yaml", "--out", "{T}/cache/om-logic", "--no-progress"],
             after=_no_run_in("cache/om-logic")),
        Case("run folder", "train --out an exported model folder", [*tiny_out, "{T}/model"], setup=[export],
             after=_no_run_in("model")),
        Case("run folder", "train --out a link to a model folder", [*tiny_out, "{T}/link"],
             setup=[export, _link("link", "model")], after=_no_run_in("model")),
        Case("run folder", "export --out a folder inside a model folder", ["export", "{T}/run/best.pt",
                                                                             "{T}/model/copy"], setup=[export],
             after=lambda root, _: "wrote a model folder inside another" if (root / "model/copy").exists() else None),
        # settings that name a folder or a copy of one
        Case("settings", "TREENETS_MODELS_URL=htp:/x", models, installed=True, env={"TREENETS_MODELS_URL": "htp:/x"},
             blame="TREENETS_MODELS_URL"),
        Case("settings", "TREENETS_MODELS_URL=http://[::1 (a first use)", ["predict", "lstm-logic", "--pair", "a",
                                                                           "b"], installed=True,
             env={"TREENETS_MODELS_URL": "http://[::1"}, blame="TREENETS_MODELS_URL"),
        Case("settings", "models download --from ftp://host/models", [*models, "--from", "ftp://host/models"],
             installed=True, blame="--from"),
        Case("settings", "TREENETS_CACHE a regular file: models download", [*models, "--from", "{MODELS}"],
             cache_file, installed=True, env={"TREENETS_CACHE": "{T}/file"}, blame="TREENETS_CACHE"),
        Case("settings", "TREENETS_CACHE a regular file: a first use", ["predict", "lstm-logic", "--pair", "a", "b"],
             cache_file, installed=True, env={"TREENETS_CACHE": "{T}/file"}, blame="TREENETS_CACHE"),
        Case("settings", "TREENETS_CACHE under a regular file", [*models, "--from", "{MODELS}"], cache_file,
             installed=True, env={"TREENETS_CACHE": "{T}/file/cache"}, blame="TREENETS_CACHE"),
        Case("settings", "XDG_CACHE_HOME a regular file, no TREENETS_CACHE", ["models"], cache_file, installed=True,
             env={"TREENETS_CACHE": "", "XDG_CACHE_HOME": "{T}/file"}, blame="XDG_CACHE_HOME"),
        Case("settings", "data check --data FILE", ["data", "check", "--data", "{T}/file"], cache_file,
             blame="a file, not a folder"),
        Case("settings", "TREENETS_DATA a regular file", ["data", "check"], cache_file,
             env={"TREENETS_DATA": "{T}/file"}, blame="a file, not a folder"),
        Case("settings", "data download --data under a file", ["data", "download", "sick", "--data", "{T}/file/d"],
             cache_file, blame="--data"),
        Case("settings", "TORCH_EXTENSIONS_DIR a regular file: kernels", ["kernels"], cache_file,
             env={"TORCH_EXTENSIONS_DIR": "{T}/file"}, blame="TORCH_EXTENSIONS_DIR"),
        Case("settings", "TORCH_EXTENSIONS_DIR a regular file: a parse", ["parse", "onlstm-ptb-small", "the cat sat",
                                                                          "--json"], cache_file,
             env={"TORCH_EXTENSIONS_DIR": "{T}/file"}, check=_says_tree, after=_no_error),
        Case("settings", "TREENETS_CACHE a regular file: a model in the checkout",
             ["predict", "lstm-logic", "--pair", "a", "( not a )"], cache_file, env={"TREENETS_CACHE": "{T}/file"},
             check=_says('"relation": "^"', "not negation")),
        # downloads
        Case("downloads", "a body without Content-Length, endless", [*models, "--from", "{URL:endless}"],
             installed=True, after=_read_at_most(16)),
        Case("downloads", "the next download after one killed with SIGKILL", [*models, "--from", "{URL:models}"],
             installed=True, setup=[_killed_download], after=_no_download_folder),
    ]


SF_CONFIG = {"task": "mlm", "data": {"path": "{T}/corpus", "tokens_per_batch": 64},
             "model": {"name": "structformer", "hidden_size": 8, "num_layers": 1, "num_heads": 2, "parser_layers": 1,
                       "conv_size": 3},
             "train": {"seed": 7, "epochs": 1, "max_steps": 2, "threads": 1}}
CONLL_ROW = "{i}\t{w}\t_\tNN\tNN\t_\t{h}\tdep\t_\t_\n"


def _conll(*sentences) -> str:
    """CoNLL-X text: each sentence a list of (word, head)."""
    return "\n".join("".join(CONLL_ROW.format(i=i, w=w, h=h) for i, (w, h) in enumerate(sentence, start=1))
                     for sentence in sentences)


def structformer_cases() -> list[Case]:
    """StructFormer's inputs (the mlm task, its model, its parses) and dependency files in `parse-eval`: the
    surfaces the StructFormer issue adds (issue 56), probed as the third reliability round asks."""
    sf = "{T}/sf/best.pt"
    tree = ["--treebank", "{T}/tiny.mrg"]  # one sentence: the cat sat of a dog
    gold = [("the", 2), ("cat", 3), ("sat", 0), ("of", 3), ("a", 6), ("dog", 4)]
    mlm = dump({**SF_CONFIG, "data": {**SF_CONFIG["data"], "path": "{T}/long"}})
    long_corpus = {f"long/ptb.{split}.txt": " cat dog \n " + " ".join(["cat"] * 501) + " \n"
                   for split in ("train", "valid", "test")}
    return [
        Case("structformer", "parse an empty sentence", ["parse", sf, ""]),
        Case("structformer", "parse --split before", ["parse", sf, "the cat", "--split", "before"], blame="split"),
        Case("structformer", "parse --layer 2 (it has one row of distances)", ["parse", sf, "the cat", "--layer", "2"],
             blame="--layer"),
        Case("structformer", "parse a typed <pad> (read as <unk>)", ["parse", sf, "the <pad> cat", "--pretokenized",
                                                                     "--json"],
             check=lambda _root, out: None if json.loads(out)["unknown"] == ["<pad>"] else "<pad> not unknown"),
        Case("structformer", "parse 600 words (more than its position embedding reads)",
             ["parse", sf, " ".join(["cat"] * 600), "--json"], blame="position embedding"),
        Case("structformer", "eval --file with a line of 600 words", ["eval", sf, "--file", "{T}/long.txt"],
             {"long.txt": " ".join(["cat"] * 600) + "\n"}, blame="position embedding"),
        Case("structformer", "predict --sentence of punctuation only", ["predict", sf, "--sentence", "?!"]),
        Case("structformer", "parse-eval --split before", ["parse-eval", sf, *tree, "--split", "before"],
             blame="split"),
        Case("structformer", "train: a line longer than the position embedding", ["train", "{T}/c.yaml",
                                                                                   *out_of("{T}")],
             {**long_corpus, "c.yaml": mlm}, blame="ptb.train.txt:2"),
        Case("structformer", "train: relations [parent, parent]", ["train", "{T}/c.yaml", *out_of("{T}")],
             {"c.yaml": dump({**SF_CONFIG, "model": {**SF_CONFIG["model"], "relations": ["parent", "parent"]}})},
             blame="relations"),
        Case("structformer", "train: relations [head] (the official name)", ["train", "{T}/c.yaml", *out_of("{T}")],
             {"c.yaml": dump({**SF_CONFIG, "model": {**SF_CONFIG["model"], "relations": ["head"]}})},
             blame="relations"),
        Case("structformer", "check-golden: a structformer-mlm fixture without args", ["check-golden", "{T}/fx"],
             {"fx/config.json": '{"kind": "structformer-mlm"}', "fx/params.npz": b"", "fx/inputs.npz": b"",
              "fx/outputs.npz": b""}),
        Case("dependencies", "a CoNLL system of two sentences for one", ["parse-eval", "{T}/s.conll", *tree],
             {"s.conll": _conll(gold, gold)}, blame="s.conll"),
        Case("dependencies", "a CoNLL system with a head out of range", ["parse-eval", "{T}/s.conll", *tree],
             {"s.conll": _conll([*gold[:5], ("dog", 9)])}, blame="s.conll:6"),
        Case("dependencies", "a CoNLL system with a head that is no number", ["parse-eval", "{T}/s.conll", *tree],
             {"s.conll": _conll([*gold[:5], ("dog", "x")])}, blame="s.conll:6"),
        Case("dependencies", "a CoNLL system with a cycle", ["parse-eval", "{T}/s.conll", *tree],
             {"s.conll": _conll([("the", 2), ("cat", 1), *gold[2:]])}, blame="s.conll"),
        Case("dependencies", "a CoNLL system of other words' count", ["parse-eval", "{T}/s.conll", *tree],
             {"s.conll": _conll(gold[:3])}, blame="s.conll"),
        Case("dependencies", "a CoNLL system that scores itself", ["parse-eval", "{T}/s.conll", *tree],
             {"s.conll": _conll(gold)}, check=_says("100.0  100.0", "not 100")),
        Case("dependencies", "--gold-dependencies of two sentences for one", ["parse-eval", sf, *tree,
                                                                              "--gold-dependencies", "{T}/g.conll"],
             {"g.conll": _conll(gold, gold)}, blame="g.conll"),
        Case("dependencies", "--gold-dependencies a bracketed file", ["parse-eval", sf, *tree, "--gold-dependencies",
                                                                       "{T}/tiny.mrg"], blame="tiny.mrg"),
        Case("dependencies", "--gold-dependencies a missing file", ["parse-eval", sf, *tree, "--gold-dependencies",
                                                                     "{T}/none.conll"], blame="none.conll"),
        Case("dependencies", "an empty .conll system", ["parse-eval", "{T}/s.conll", *tree], {"s.conll": ""},
             blame="s.conll"),
    ]


# --- the fourth round (issue 65): files aligned with the treebank, grammars, their fixtures, ensembles ------------

ROOT = Path(__file__).resolve().parents[1]  # the checkout: its configs/
GOLDEN = Path(os.environ.get("TREENETS_GOLDEN", ROOT.parent / "shared" / "golden"))
TWO = "( (S (NP (DT The) (NN cat)) (VP (VBD sat))) )\n( (S (NP (NNS Dogs)) (VP (VBD ran) (ADVP (RB home)))) )\n"
THE_CAT = [("The", 2), ("cat", 3), ("sat", 0)]
DOGS = [("Dogs", 2), ("ran", 0), ("home", 2)]
MONEY = "( (S (NP (DT The) (NN fee)) (, ,) (ADVP (RB too)) (, ,) (VP (VBD was) (NP ($ $) (CD 5))) (. .)) )\n"
TINY_SPANS = [[0, 6], [0, 2], [2, 6], [3, 6], [4, 6]]  # the gold phrases of tiny.mrg, ends exclusive


def _row(name: str, figure: str):
    """A run that exits 0 is right only if the table's row of `name` starts with `figure` (its sentence F1)."""
    def check(root: Path, stdout: str):
        row = next((line.split() for line in stdout.splitlines() if line.startswith(expand(name, root))), None)
        return None if row and row[1] == figure else f"{name}: {row[1] if row else 'no row'}, not {figure}"
    return check


def _lines_in(name: str, count: int):
    """A run that exits 0 is right only if it wrote `count` lines to `{T}/name`."""
    def check(root: Path, _stdout: str):
        written = (root / name).read_text().splitlines() if (root / name).is_file() else []
        return None if len(written) == count else f"{len(written)} lines in {name}, not {count}"
    return check


def _golden_copy(kind: str, file: str, edit):
    """Setup: `{T}/fx`, a copy of the golden fixture of `kind` with `edit` applied to its `file` (an .npz's arrays,
    or config.json's dict)."""
    def run(root: Path):
        import numpy as np

        folder = root / "fx"
        shutil.copytree(GOLDEN / kind, folder)
        if file == "config.json":
            config = json.loads((folder / file).read_text())
            edit(config)
            (folder / file).write_text(json.dumps(config))
            return
        with np.load(folder / file) as archive:
            arrays = dict(archive)
        edit(arrays)
        np.savez(folder / file, **arrays)
    return run


def fourth_round_cases() -> list[Case]:
    """The families of the fourth reliability round (issue 65): CoNLL files and span lists aligned with the
    treebank's sentences, files no reading fits, files keeping some punctuation, the grammars' configs and fixtures,
    and ensembles of files that disagree on the sentences."""
    two = ["--treebank", "{T}/two.mrg"]
    tiny = ["--treebank", "{T}/tiny.mrg"]
    sf = "{T}/sf/best.pt"
    neural, compound = str(ROOT / "configs/neural-pcfg-ptb.yaml"), str(ROOT / "configs/compound-pcfg-ptb.yaml")
    pcfg = ["--out", "{T}/out", "--max-steps", "1", "--no-progress"]
    ensemble = ["ensemble", "{T}/a.txt", "{T}/b.txt", *two, "--output", "{T}/ens.txt"]
    both = "(X (X The) (X cat) (X sat))\n(X (X Dogs) (X ran) (X home))\n"
    golden = ["check-golden", "{T}/fx"]
    return [
        # CoNLL files: their sentences matched with the treebank's by their words
        Case("alignment", "a CoNLL system whose sentences are swapped", ["parse-eval", "{T}/s.conll", *two],
             {"two.mrg": TWO, "s.conll": _conll(DOGS, THE_CAT)}, check=_says("100.0  100.0", "not 100")),
        Case("alignment", "--gold-dependencies whose sentences are swapped",
             ["parse-eval", "{T}/s.conll", *two, "--gold-dependencies", "{T}/g.conll"],
             {"two.mrg": TWO, "s.conll": _conll(THE_CAT, DOGS), "g.conll": _conll(DOGS, THE_CAT)},
             check=_says("100.0  100.0", "not 100")),
        Case("alignment", "a CoNLL sentence whose words match none", ["parse-eval", "{T}/s.conll", *two],
             {"two.mrg": TWO, "s.conll": _conll(THE_CAT, [("Birds", 2), ("flew", 0)])},
             blame="s.conll:5: no sentence of the treebank", check=answered),
        Case("alignment", "a CoNLL file in the treebank's order, a sentence of other words",
             ["parse-eval", "{T}/s.conll", *two], {"two.mrg": TWO, "s.conll": _conll(THE_CAT, [
                 ("Birds", 2), ("flew", 0), ("away", 2)])}, check=_says("dependencies against", "no dependencies")),
        Case("alignment", "a CoNLL system with --max-length 3", ["parse-eval", "{T}/s.conll", *two, "--max-length",
                                                                 "3"],
             {"two.mrg": TWO, "s.conll": _conll(THE_CAT, DOGS, [(w, 0) for w in ("a", "b", "c", "d")])},
             check=_says("1 lines of more than 3 words skipped", "the length limit unsaid")),
        # span lists without words: their ends as their spans say
        Case("alignment", "span lists without words, ends exclusive ([0, n])", ["parse-eval", "{T}/s.jsonl", *tiny],
             {"s.jsonl": json.dumps(TINY_SPANS) + "\n"}, check=_row("{T}/s.jsonl", "100.0")),
        Case("alignment", "span lists without words, ends inclusive ([0, n - 1])", ["parse-eval", "{T}/s.jsonl",
                                                                                   *tiny],
             {"s.jsonl": json.dumps([[a, b - 1] for a, b in TINY_SPANS]) + "\n"},
             check=_row("{T}/s.jsonl", "100.0")),
        Case("alignment", "span lists without words whose ends nothing says", ["parse-eval", "{T}/s.jsonl", *tiny],
             {"s.jsonl": "[[0, 2], [3, 5]]\n"}, blame="its spans do not say where a span ends"),
        # a system file no reading fits
        Case("alignment", "a system file of white space only", ["parse-eval", "{T}/s.txt", *tiny],
             {"s.txt": "  \n\t\n"}, blame="white space only"),
        Case("alignment", "a CoNLL file separated by spaces, named .txt", ["parse-eval", "{T}/s.txt", *tiny],
             {"s.txt": _conll(THE_CAT).replace("\t", " ")}, blame="10 separated by spaces"),
        # a line keeping some of the punctuation and symbols (Mikolov's text keeps $ and drops commas)
        Case("alignment", "a line keeping $ and dropping commas", ["parse-eval", "{T}/s.txt", "--treebank",
                                                                    "{T}/money.mrg"],
             {"money.mrg": MONEY, "s.txt": "(X (X the fee) too (X was (X $ N)))\n"}, blame="--words li reads"),
        Case("alignment", "a line keeping $ and dropping commas, --drop-punctuation",
             ["parse-eval", "{T}/s.txt", "--treebank", "{T}/money.mrg", "--drop-punctuation"],
             {"money.mrg": MONEY, "s.txt": "(X (X the fee) too (X was (X $ N)))\n"},
             check=_row("{T}/s.txt", "100.0")),
        Case("alignment", "a CoNLL file given to parse-eval beside a StructFormer", ["parse-eval", sf, "{T}/s.conll",
                                                                                    *two],
             {"two.mrg": TWO, "s.conll": _conll(DOGS, THE_CAT)}, check=_says("100.0  100.0", "not 100")),
        # the grammars' configs
        *[Case("pcfg", f"{Path(config).name}: --set {setting}", ["train", config, "--set", setting, *pcfg],
               blame=blame)
          for config, setting, blame in (
              (neural, "model.nonterminals=0", "model.nonterminals"),
              (neural, "model.preterminals=many", "model.preterminals"),
              (neural, "model.name=nosuch", "model.name"),
              (neural, "data.final_max_length=10", "final_max_length 10 is below max_length 30"),
              (compound, "data.length_increment=-1", "data.length_increment"),
              (compound, "model.z_dim=-1", "model.z_dim"),
              (compound, "model.h_dim=0", "model.h_dim"),
              (compound, "data.valid=[nosuch]", "nosuch"),
              (compound, "data.batch_size=0", "data.batch_size"))],
        Case("pcfg", "a grammar config with a field of the wrong kind", ["train", "{T}/c.yaml", *pcfg],
             {"c.yaml": Path(compound).read_text().replace("nonterminals: 30", "nonterminals: [30]")},
             blame="model.nonterminals"),
        # check-golden on a Compound PCFG fixture with a broken array
        Case("pcfg fixture", "compound-pcfg: tokens_1 1-D", golden, setup=[_golden_copy(
            "compound-pcfg", "outputs.npz", lambda a: a.update(tokens_1=a["tokens_1"][0]))],
             blame="tokens_1: 1-D [5]; expected 2-D token ids [batch, length]"),
        Case("pcfg fixture", "compound-pcfg: token ids past the vocabulary", golden, setup=[_golden_copy(
            "compound-pcfg", "outputs.npz", lambda a: a.update(tokens_0=a["tokens_0"] + 1000))],
             blame="tokens_0: ids from"),
        Case("pcfg fixture", "compound-pcfg: eps_0 missing", golden, setup=[_golden_copy(
            "compound-pcfg", "outputs.npz", lambda a: a.pop("eps_0"))], blame="eps_0: missing"),
        Case("pcfg fixture", "compound-pcfg: eps_0 of another shape", golden, setup=[_golden_copy(
            "compound-pcfg", "outputs.npz", lambda a: a.update(eps_0=a["eps_0"][:, :2]))],
             blame="eps_0: float32 [2, 2]; expected floats [batch 2, z_dim 4]"),
        Case("pcfg fixture", "compound-pcfg: a NaN weight", golden, setup=[_golden_copy(
            "compound-pcfg", "params.npz", lambda a: a["t_emb"].__setitem__((0, 0), float("nan")))],
             blame="params.npz: t_emb holds 1 NaN"),
        Case("pcfg fixture", "compound-pcfg: t_emb of another shape", golden, setup=[_golden_copy(
            "compound-pcfg", "params.npz", lambda a: a.update(t_emb=a["t_emb"][:3]))], blame="t_emb: shape (3, 16)"),
        Case("pcfg fixture", "compound-pcfg: outputs.npz a text file", golden, setup=[_golden_copy(
            "compound-pcfg", "config.json", lambda c: None), lambda root: (root / "fx/outputs.npz").write_text("x")],
             blame="outputs.npz: not a readable .npz archive"),
        # ensembles of files that disagree on the sentences
        Case("ensemble", "a file lacking a sentence", ensemble,
             {"two.mrg": TWO, "a.txt": both, "b.txt": "(X (X Dogs) (X ran) (X home))\n"},
             check=_lines_in("ens.txt", 2)),
        Case("ensemble", "files in other orders", ensemble,
             {"two.mrg": TWO, "a.txt": both, "b.txt": "\n".join(reversed(both.splitlines())) + "\n"},
             check=_lines_in("ens.txt", 2)),
        Case("ensemble", "files with no sentence in common", ensemble,
             {"two.mrg": TWO, "a.txt": "(X The (X cat sat))\n", "b.txt": "(X Dogs (X ran home))\n"},
             check=_lines_in("ens.txt", 2)),
        Case("ensemble", "a file with a sentence of other words", ensemble,
             {"two.mrg": TWO, "a.txt": both, "b.txt": both + "(X (X Birds) (X flew))\n"}, blame="b.txt:3"),
        Case("ensemble", "a file with a sentence twice", ensemble,
             {"two.mrg": TWO, "a.txt": both, "b.txt": both + "(X (X The) (X cat) (X sat))\n"},
             blame="b.txt:3: no sentence of the treebank without a tree yet"),
        Case("ensemble", "a CoNLL file as a system", ["ensemble", "{T}/a.txt", "{T}/s.conll", *two, "--output",
                                                      "{T}/ens.txt"],
             {"two.mrg": TWO, "a.txt": both, "s.conll": _conll(THE_CAT, DOGS)}, blame="a CoNLL file"),
        Case("ensemble", "a file of white space only", ensemble, {"two.mrg": TWO, "a.txt": both, "b.txt": " \n"},
             blame="white space only"),
    ]


# --- the fifth round: resuming into another run's folder, a grammar's text and data, every array of a fixture,
# every kind of model served --------------------------------------------------------------------------------------

# `python -c SERVE MODEL...`: `treenets serve MODEL... --port 0` (the `treenets` beside this Python), one sentence sent
# to its API, the answer printed, the server stopped; a server that does not start passes on its stderr and status.
SERVE = """import json, subprocess, sys, time, urllib.error, urllib.request
from pathlib import Path
query, models = {'sentence': 'The cat sat on the mat.'}, []
for arg in sys.argv[1:]:  # sentence=... and second=... set the inputs; the others are models
    key, eq, value = arg.partition('=')
    if eq and key in ('sentence', 'second'):
        query[key] = value
    else:
        models.append(arg)
server = subprocess.Popen([str(Path(sys.executable).with_name('treenets')), 'serve', *models, '--port', '0'],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
line = server.stdout.readline()
if not line:
    sys.stderr.write(server.stderr.read())
    sys.exit(server.wait() or 1)
try:
    url = line.split(' at ')[1].split()[0]
    body = json.dumps({**query, 'models': models}).encode()
    request = urllib.request.Request(url + 'api/parse', body, {'Content-Type': 'application/json'})
    for attempt in range(100):  # (the address is printed before uvicorn listens on it)
        try:
            answer = urllib.request.urlopen(request, timeout=60).read().decode()
            break
        except urllib.error.URLError as exc:
            if not isinstance(exc.reason, ConnectionRefusedError) or attempt == 99:
                raise
            time.sleep(0.2)
    print(answer)
finally:
    server.terminate()
    server.wait()
"""


def _other_run(root: Path):
    """Setup: `{T}/grammar`, a folder holding a run of its own (a grammar's: its last.pt and config.yaml)."""
    folder = root / "grammar"
    folder.mkdir()
    shutil.copy(root / "run" / "last.pt", folder / "last.pt")
    (folder / "config.yaml").write_text("task: pcfg\nmodel:\n  name: compound-pcfg\n")


def _other_run_kept(root: Path, _stderr: str):
    return None if "task: pcfg" in (root / "grammar" / "config.yaml").read_text() else \
        "the grammar's run in grammar/ replaced (its config.yaml now another task's)"


def _grammar_figures(root: Path, stdout: str):
    """A grammar's `eval --file` is right only with its KL (positive for a Compound PCFG) and its bound named so."""
    result = json.loads(stdout.splitlines()[0])
    if not result.get("kl"):
        return f"kl {result.get('kl')} (the forward pass gives each sentence a positive KL)"
    return None if "ppl_bound" in result else "its perplexity bound reported as ppl"


def _says_on_stderr(text: str, wrong: str):
    def after(_root: Path, stderr: str):
        return None if text in stderr else wrong
    return after


def _served(kind: str, field: str = "tree"):
    """A `SERVE` run is right only if the answer holds a result of `kind` with a `field` (its tree, its score)."""
    def check(_root: Path, stdout: str):
        results = json.loads(stdout)["results"]
        found = [r for r in results if r.get("kind") == kind]
        return None if found and found[0].get(field) is not None else f"no {kind} {field} in the answer"
    return check


def fifth_round_cases() -> list[Case]:
    """The families of the fifth reliability round: `train --resume` into another run's folder, a grammar's
    `eval --file` (its KL, its one-word lines), a grammar's training text and validation treebanks, check-golden
    fixtures lacking an array or holding integer weights or no token, `serve` of an ensemble and of models that
    read two inputs, and outputs into a model folder or over a checkpoint read."""
    compound = str(ROOT / "configs/compound-pcfg-ptb.yaml")
    tiny_grammar = ["--set", "data.path={T}/corpus", "--set", "model.h_dim=4", "--set", "model.w_dim=4",
                    "--set", "model.z_dim=2", "--set", "model.state_dim=4", "--set", "data.valid=[{T}/tiny.mrg]"]
    pcfg = ["--out", "{T}/out", "--max-steps", "1", "--no-progress"]
    golden = ["check-golden", "{T}/fx"]
    return [
        Case("resume into", "train --resume A/last.pt --out B, B holding a grammar's run",
             ["train", "--resume", "{T}/run/last.pt", "--out", "{T}/grammar", "--set", "train.epochs=2",
              "--no-progress"], setup=[_other_run], blame="already holds another training run (task pcfg",
             after=_other_run_kept),
        Case("grammar eval", "eval compound-pcfg-ptb --file: its KL", ["eval", "compound-pcfg-ptb", "--file",
                                                                        "{T}/s.txt"],
             {"s.txt": "The cat sat on the mat.\nA dog ran home\n"}, check=_grammar_figures),
        Case("grammar eval", "eval compound-pcfg-ptb --file: a one-word line among others",
             ["eval", "compound-pcfg-ptb", "--file", "{T}/s.txt"], {"s.txt": "The cat sat on the mat.\nDog\n"},
             check=_grammar_figures, after=_says_on_stderr("1 of 2 line(s) skipped, of one word",
                                                           "the one-word line skipped unsaid")),
        Case("grammar eval", "eval compound-pcfg-ptb --file: one-word lines only",
             ["eval", "compound-pcfg-ptb", "--file", "{T}/s.txt"], {"s.txt": "cat\ndog\nbird\n"},
             blame="none of its 3 line(s) reads as two words or more", check=lambda *_: "ppl null over nothing"),
        Case("grammar data", "train compound-pcfg-ptb --set data.max_length=1",
             ["train", compound, *tiny_grammar, "--set", "data.max_length=1", *pcfg],
             blame="a grammar reads sentences of 2 words or more"),
        Case("grammar data", "train compound-pcfg-ptb on a text of one-word lines",
             ["train", compound, *tiny_grammar, "--set", "data.path={T}/one", *pcfg],
             {"one/ptb.train.txt": "cat\ndog\n" * 20}, blame="none of the text's 40 line(s) has two"),
        Case("grammar data", "train compound-pcfg-ptb --set data.valid=[]",
             ["train", compound, *tiny_grammar, "--set", "data.valid=[]", *pcfg], blame="valid is [], no treebank"),
        Case("golden arrays", "compound-pcfg: grad.t_emb missing", golden, setup=[_golden_copy(
            "compound-pcfg", "outputs.npz", lambda a: a.pop("grad.t_emb"))], blame="outputs.npz: grad.t_emb: missing",
             check=lambda *_: "passed without one of its gradients"),
        Case("golden arrays", "compound-pcfg: viterbi_tags missing", golden, setup=[_golden_copy(
            "compound-pcfg", "config.json", lambda c: c.pop("viterbi_tags"))],
             blame="config.json: viterbi_tags: missing"),
        Case("golden arrays", "compound-pcfg: t_emb int64 in params.npz", golden, setup=[_golden_copy(
            "compound-pcfg", "params.npz", lambda a: a.update(t_emb=a["t_emb"].astype("int64")))],
             blame="params.npz: t_emb: int64 [7, 16]; expected floats"),
        Case("golden arrays", "compound-pcfg: tokens_0 of length 0", golden, setup=[_golden_copy(
            "compound-pcfg", "outputs.npz", lambda a: a.update(tokens_0=a["tokens_0"][:, :0]))],
             blame="tokens_0: shape [2, 0], no token"),
        Case("golden arrays", "onlstm-lm: tokens of length 0", golden, setup=[_golden_copy(
            "onlstm-lm", "inputs.npz", lambda a: a.update(tokens=a["tokens"][:0]))],
             blame="tokens: shape [0, 3], no token"),
        Case("serve kinds", "serve compound-pcfg-ptb ptb-small-ensemble", ["-c", SERVE, "compound-pcfg-ptb",
                                                                           "ptb-small-ensemble"],
             api=True, check=_served("ensemble")),
        Case("serve kinds", "serve an ensemble folder of two runs' checkpoints", ["-c", SERVE, "{T}/ens"],
             {"ens/ensemble.json": json.dumps({"members": ["{T}/run/best.pt", "{T}/run/last.pt"]})}, api=True,
             check=_served("ensemble")),
        *[Case("model folder outputs", name, args, setup=[["export", "{T}/run/best.pt", "{T}/model"]],
               blame="which holds nothing but a model's own files")
          for name, args in (
              ("syneval --output MODEL/metrics.json", ["syneval", "{T}/model", "--limit", "1", "--output",
                                                       "{T}/model/metrics.json"]),
              ("configs --out MODEL/mine.yaml", ["configs", "lstm-ptb-small", "--out", "{T}/model/mine.yaml"]),
              ("eval --plot MODEL/curve.png", ["eval", "{T}/model", "--plot", "{T}/model/curve.png"]))],
        Case("model folder outputs", "syneval --output the checkpoint it reads",
             ["syneval", "{T}/run/best.pt", "--limit", "1", "--output", "{T}/run/best.pt"],
             blame="an input of this command"),
        Case("serve kinds", "serve treelstm-sick (relatedness: two sentences)",
             ["-c", SERVE, "treelstm-sick", "second=A dog is sitting on a mat."], api=True,
             check=_served("relatedness", "score")),
        Case("serve kinds", "serve om-logic (logic: two formulas)",
             ["-c", SERVE, "om-logic", "sentence=(A (and (not B)))", "second=a"], api=True,
             check=_served("logic", "formulas")),
    ]


def out_of(folder: str) -> list[str]:
    return ["--out", f"{folder}/out", "--no-progress"]


def _exists(*names):
    def check(root: Path, _stdout: str):
        gone = [name for name in names if not (root / name).exists()]
        return f"deleted the user's {', '.join(gone)}" if gone else None
    return check


def _says(text, wrong):
    """A run that exits 0 is right only if its stdout holds `text`; else `wrong`."""
    return lambda _root, stdout: None if text in stdout else wrong


def _edit_folder(folder: str, edit):
    """Setup: change the model folder `{T}/folder` written by an earlier setup command."""
    def run(root: Path):
        edit(root / folder)
    return run


def _weights(edit):
    def run(folder: Path):
        from safetensors import safe_open
        from safetensors.torch import load_file, save_file

        metadata = safe_open(folder / "model.safetensors", "pt").metadata()
        state = load_file(folder / "model.safetensors")
        edit(state, metadata)
        save_file(state, folder / "model.safetensors", metadata=metadata)
    return run


def _config(edit):
    def run(folder: Path):
        path = folder / "config.json"
        path.write_text(edit(path.read_text()))
    return run


def _first_nan(state, _metadata):
    next(iter(state.values())).view(-1)[0] = float("nan")


def _first_int(state, _metadata):
    key = next(iter(state))
    state[key] = state[key].long()


def _tied_list(_state, metadata):
    metadata["tied"] = "[1, 2]"


def _huge(text):
    raw = json.loads(text)
    raw["model"]["hidden_size"] = 10**9
    return json.dumps(raw)


def _remove(*names):
    def run(root: Path):
        for name in names:
            (root / name).unlink()
    return run


def _append(name, text):
    def run(root: Path):
        with open(root / name, "a") as fh:
            fh.write(text)
    return run


TREENETS = ["treenets"]  # the executable under test (set by `main`)
API = "import treenets, sys; lm = treenets.load(sys.argv[1]); lm.parse({})"


def second_round_cases() -> list[Case]:
    """The families of the second reliability round (issue 27) and of raw text for the Tree-LSTMs (issue 26)."""
    best = "{T}/run/best.pt"
    export = ["export", best, "{T}/model"]
    more = ["--set", "train.epochs=2", "--no-progress"]
    return [
        # nothing a user owns is deleted
        Case("data loss", "export into a model folder holding the user's notes and report",
             ["export", best, "{T}/mine"],
             {"mine/model.safetensors": "x", "mine/notes.txt": "mine", "mine/report": None},
             check=_exists("mine/notes.txt", "mine/report")),
        Case("data loss", "export a model folder (not a checkpoint)", ["export", "{T}/model", "{T}/copy"],
             setup=[export], check=_exists("model/README.md")),
        Case("data loss", "export a model folder onto itself", ["export", "{T}/model", "{T}/model"], setup=[export],
             check=_exists("model/README.md", "model/metrics.json")),
        Case("data loss", "export a run without metrics.jsonl", ["export", best, "{T}/out"],
             setup=[_remove("run/metrics.jsonl")]),
        # no figure over nothing, strict JSON, no silent wrong answer
        Case("wrong result", "parse-eval --output: no sentence with a phrase",
             ["parse-eval", best, "--treebank", "{T}/z.mrg", "--output", "{T}/pe"],
             {"z.mrg": "( (S (NN cat)) )\n( (S (. .)) )\n"},
             check=lambda root, _: "printed F1 100.0 over nothing" + (
                 "; summary.json holds NaN (not JSON)" if "NaN" in (root / "pe/summary.json").read_text() else "")),
        Case("wrong result", "baselines: no sentence with a phrase", ["baselines", "--treebank", "{T}/z.mrg"],
             {"z.mrg": "( (S (NN cat)) )\n"}, check=lambda *_: "printed F1 100.0 over nothing"),
        Case("wrong result", "a model folder with NaN weights", ["parse", "{T}/model", "a cat"],
             setup=[export, _edit_folder("model", _weights(_first_nan))],
             check=lambda *_: "parsed with NaN weights"),
        Case("wrong result", "a model folder with int64 weights", ["parse", "{T}/model", "a cat"],
             setup=[export, _edit_folder("model", _weights(_first_int))],
             check=lambda *_: "loaded integer weights"),
        Case("wrong result", "--resume on a corpus of other words", ["train", "{T}/c.yaml", "--resume",
                                                                     "{T}/run/last.pt", "--out", "{T}/run", *more],
             {"other/ptb.train.txt": "zebra yak quokka\n" * 50, "other/ptb.valid.txt": "zebra yak\n" * 20,
              "other/ptb.test.txt": "yak quokka\n" * 20, "c.yaml": dump(config(data={"path": "{T}/other"}))},
             check=lambda *_: "resumed, every word read as <unk>"),
        Case("wrong result", "--resume after best.pt was deleted",
             ["train", "--resume", "{T}/run/last.pt", "--max-steps", "60", "--no-progress"],
             setup=[_remove("run/best.pt")],
             check=lambda root, out: None if "best.pt" not in out or (root / "run/best.pt").exists() or
             "none yet" in out else "named a best.pt that does not exist"),
        Case("wrong result", "--resume after a kill cut the last line of metrics.jsonl",
             ["train", "--resume", "{T}/run/last.pt", "--max-steps", "60", "--no-progress"],
             setup=[_append("run/metrics.jsonl", '{"event": "tr')],
             check=lambda root, _: None if subprocess.run(
                 [TREENETS[0], "metrics", str(root / "run")],
                 capture_output=True).returncode == 0 else "`treenets metrics` fails on the log afterwards"),
        Case("wrong result", "two trains into the same --out at once", ["train", "{T}/tiny.yaml", "--out", "{T}/twin",
                                                                        "--no-progress"],
             twice=True, check=lambda *_: "both ran, writing the same files"),
        Case("wrong result", "parse --pretokenized: a year (1987) is N",
             ["parse", "onlstm-ptb-small", "in 1987 the cat sat", "--pretokenized", "--json"],
             check=_says('"unknown": []', "read 1987 as <unk>")),
        # internal errors from what a model folder holds
        Case("model folder", "config.json: hidden_size 10^9", ["parse", "{T}/model", "a cat"],
             setup=[export, _edit_folder("model", _config(_huge))]),
        Case("model folder", "config.json: 100,000 arrays deep", ["parse", "{T}/model", "a cat"],
             setup=[export, _edit_folder("model", _config(lambda _: "[" * 100_000 + "]" * 100_000))]),
        Case("model folder", "safetensors metadata of the wrong JSON type", ["parse", "{T}/model", "a cat"],
             setup=[export, _edit_folder("model", _weights(_tied_list))]),
        Case("model folder", "vocab.txt longer than the embedding", ["parse", "{T}/model", "a cat"],
             setup=[export, _edit_folder("model", lambda folder: (folder / "vocab.txt").write_text(
                 (folder / "vocab.txt").read_text() + "extra\nmore\nwords\n"))],
             check=None),
        Case("model folder", "export a run folder instead of its best.pt", ["export", "{T}/run", "{T}/out"]),
        # the command line's numbers
        Case("numbers", "serve --port 70000", ["serve", best, "--port", "70000"]),
        Case("numbers", "serve --port -1", ["serve", best, "--port", "-1"]),
        # the Python API: an exception naming the argument, not a raw one
        Case("api", "lm.parse([['the', 5]])", ["-c", API.format("[['the', 5]]"), best], api=True),
        Case("api", "lm.parse(..., batch_size=0)", ["-c", API.format("['a cat'], batch_size=0"), best], api=True),
        Case("api", "lm.parse(..., batch_size=-1)", ["-c", API.format("['a cat'], batch_size=-1"), best], api=True),
        Case("api", "lm.parse(b'a cat')", ["-c", API.format("b'a cat'"), best], api=True),
        # raw text for the Tree-LSTMs
        Case("raw text", "sentiment: empty sentence", ["predict", "treelstm-sst", "--sentence", ""]),
        Case("raw text", "sentiment: only punctuation", ["predict", "treelstm-sst", "--sentence", "?! ..."]),
        Case("raw text", "sentiment: binary bytes", ["predict", "treelstm-sst", "--sentence",
                                                      "a \udcff\udcfe film"]),
        Case("raw text", "sentiment: a 5,000-word line", ["predict", "treelstm-sst", "--sentence",
                                                          " ".join(["good"] * 5000)]),
        Case("raw text", "sentiment: a sentence as typed", ["predict", "treelstm-sst", "--sentence",
                                                            "It's a dull, lifeless film."],
             check=lambda _root, out: None if json.loads(out)["label"] <= 1 else "not negative"),
        Case("raw text", "relatedness: a pair as typed", ["predict", "treelstm-sick", "--pair", "A man plays a guitar.",
                                                          "A person plays an instrument."],
             check=lambda _root, out: None if json.loads(out)["score"] > 3 else "a paraphrase scored low"),
        Case("raw text", "relatedness: a pair as typed, dependency model",
             ["predict", "treelstm-sick-dependency", "--pair", "A man plays.", "A person plays."]),
    ]


def prepare(root: Path, exe: str, env: dict) -> None:
    """The tiny corpus, config, treebank and trained run every case may use."""
    rng = random.Random(0)
    (root / "corpus").mkdir()
    for split, lines in (("train", 120), ("valid", 20), ("test", 20)):
        text = corpus_text(rng, lines) + (" " + " ".join(WORDS) + " \n" if split == "train" else "")
        (root / "corpus" / f"ptb.{split}.txt").write_text(text)
    (root / "tiny.yaml").write_text(dump(config()).replace("{T}", str(root)))
    (root / "tiny.mrg").write_text("( (S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN of) (NP (DT a) (NN dog)))) "
                                   "(. .)) )\n")
    done = subprocess.run([exe, "train", str(root / "tiny.yaml"), "--out", str(root / "run"), "--no-progress"],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0 or not (root / "run" / "best.pt").is_file():
        sys.exit(f"training the tiny model failed:\n{done.stdout}\n{done.stderr}")
    (root / "sf.yaml").write_text(dump(SF_CONFIG).replace("{T}", str(root)))
    done = subprocess.run([exe, "train", str(root / "sf.yaml"), "--out", str(root / "sf"), "--no-progress"],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0 or not (root / "sf" / "best.pt").is_file():
        sys.exit(f"training the tiny StructFormer failed:\n{done.stdout}\n{done.stderr}")
    write_checkpoint_fakes(root)


# treenets' own errors, and argparse's for an option of a command ("treenets train: error: argument ...").
ERROR_LINE = re.compile(r"treenets(?: [\w-]+)*: error: ")


def outcome(returncode: int | None, stderr: str, command: str) -> tuple[str, str]:
    """The outcome class and the message line of one run."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if ERROR_LINE.match(line)]
    internal = [line for line in lines if line.startswith("treenets: internal error:")]
    if returncode is None:
        return "hang/timeout", lines[0] if lines else ""
    if "Traceback (most recent call last)" in stderr:
        return "traceback", lines[-1]
    if re.search(rf"invalid choice: '{re.escape(command)}'", stderr):
        return "n/a", errors[0] if errors else lines[0]
    if returncode == 0:
        return "ok", lines[0] if lines else ""
    if internal:
        return "internal error", internal[0]
    if len(errors) == 1:
        return "clear error", errors[0]
    return "unclear", lines[0] if lines else ""


def run_case(case: Case, root: Path, exe: str, env: dict, timeout: float) -> tuple[str, int | None, str, float]:
    for name, content in case.files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content is None:
            path.mkdir(exist_ok=True)
        elif content is FIFO:
            os.mkfifo(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content.replace("{T}", str(root)))
    env = {**env, "TREENETS_CACHE": str(root / "cache"), **{k: expand(v, root) for k, v in case.env.items()}}
    for step in case.setup:
        if callable(step):
            step(root)
        else:
            subprocess.run([exe, *[expand(a, root) for a in step]], cwd=root, env=env, capture_output=True)
    args = [expand(a, root) for a in case.args]
    python = str(Path(exe).with_name("python"))
    command = [python, *args] if case.api else [python, "-c", INSTALLED, *args] if case.installed else [exe, *args]
    start = time.perf_counter()
    procs = [subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, errors="replace") for _ in range(2 if case.twice else 1)]
    runs = []
    for proc in procs:
        with proc:
            try:
                stdout, stderr = proc.communicate(timeout=timeout)
                code = proc.returncode
            except subprocess.TimeoutExpired:
                proc.kill()
                stdout, stderr = proc.communicate()
                code = None
        runs.append((code, stdout, stderr))
    seconds = time.perf_counter() - start
    if case.twice:  # one of the two must refuse, clearly
        refused = [run for run in runs if run[0] not in (0, None)]
        code, stdout, stderr = refused[0] if refused else runs[0]
    else:
        code, stdout, stderr = runs[0]
    kind, message = (api_outcome if case.api else outcome)(code, stderr, args[0])
    if kind == "ok" and case.check is not None:
        wrong = case.check(root, stdout)
        if wrong:
            kind, message = "wrong result", wrong
    if kind == "clear error" and case.blame and case.blame not in message:
        kind = "misleading error"
    left = case.after(root, stderr) if case.after is not None else None
    if left:
        kind, message = "wrong result", f"{left} ({kind}: {message})"
    return kind, code, message, seconds


# Exceptions of the API that name nothing: Python's own words for a wrong type deep inside.
RAW = re.compile(r"object has no attribute|object is not (iterable|subscriptable)|range\(\) arg|can't multiply|"
                 r"unsupported operand|cannot be interpreted as an integer")


def api_outcome(returncode: int | None, stderr: str, _command: str) -> tuple[str, str]:
    """The outcome of a Python API call: an exception of treenets' (or a TypeError / ValueError that names the
    argument) is a clear error; Python's own messages about a wrong type deep inside are a raw exception."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    if returncode is None:
        return "hang/timeout", lines[0] if lines else ""
    if returncode == 0:
        return "ok", ""
    last = lines[-1] if lines else ""
    if re.match(r"(treenets\.errors\.)?(TreenetsError|TypeError|ValueError): ", last) and not RAW.search(last):
        return "clear error", last
    return "raw exception", last


def cell(text: str, width: int = 150) -> str:
    text = text if len(text) <= width else text[: width - 3] + "..."
    return text.replace("|", "\\|").replace("`", "'")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--treenets", default=str(Path(sys.executable).with_name("treenets")),
                        help="the executable to test (default: treenets beside this Python)")
    parser.add_argument("--data", help="data root for the cases that read staged data (default: treenets' own)")
    parser.add_argument("--timeout", type=float, default=90, help="seconds before a case counts as a hang")
    parser.add_argument("--only", metavar="WORDS", help="only cases whose family or name contains one of these "
                        "comma-separated words")
    args = parser.parse_args()
    exe = str(Path(args.treenets).resolve())
    TREENETS[0] = exe
    serve_models()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "TREENETS_DATA": args.data or os.environ.get("TREENETS_DATA")
           or str(Path(__file__).resolve().parents[2] / "shared" / "data")}
    env.pop("TREENETS_DEBUG", None)
    words = args.only.split(",") if args.only else []
    selected = [c for c in cases() if not words or any(w in c.family or w in c.name for w in words)]
    with tempfile.TemporaryDirectory(prefix="bad-inputs-") as tmp:
        template = Path(tmp) / "template"
        template.mkdir()
        prepare(template, exe, env)
        print(f"treenets: `{exe}`; {len(selected)} cases; `$T` is a fresh copy of a folder with a tiny trained "
              "run (run/best.pt, run/last.pt), its config tiny.yaml and a one-sentence treebank tiny.mrg\n")
        print("| # | family | case | command | outcome | exit | stderr |")
        print("|---|---|---|---|---|---|---|")
        counts: dict[str, int] = {}
        for number, case in enumerate(selected, start=1):
            root = Path(tmp) / f"case{number}"
            shutil.copytree(template, root)
            kind, code, message, seconds = run_case(case, root, exe, env, args.timeout)
            counts[kind] = counts.get(kind, 0) + 1
            shown = [(a if len(a) < 60 else a[:40] + "...").replace("\n", " ") for a in case.args]
            program = "python" if case.api else "treenets"
            command = " ".join(a if re.fullmatch(r"[\w{}/.:=-]+", a) else shlex.quote(a) for a in [program, *shown])
            command = re.sub(r"\{URL:(\w+)\}", r"$URL_\1", command.replace("{T}", "$T").replace("{MODELS}", "models"))
            print(f"| {number} | {case.family} | {cell(case.name)} | `{cell(command, 110)}` | {kind} | "
                  f"{'-' if code is None else code} | {cell(message.replace(str(root), '$T'))} |", flush=True)
            print(f"[{number}/{len(selected)}] {case.name}: {kind} ({seconds:.1f} s)", file=sys.stderr)
            shutil.rmtree(root, ignore_errors=True)
        print("\n" + ", ".join(f"{kind}: {n}" for kind, n in sorted(counts.items())))
        expected = counts.get("clear error", 0) + counts.get("ok", 0)
        print(f"\n{len(selected)} cases, {expected} as expected (a clear error, or a correct answer)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
