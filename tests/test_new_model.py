"""A new model is one folder: dropped into a copy of the package, with its config and the fixture a test writes, it
runs through `check-golden`, `train`, `eval` and `parse`, and no other file of the copy differs from the source.

The throwaway model is an Elman network language model (Elman, 1990: h_t = tanh(W e_t + U h_{t-1} + b)) whose
syntactic distance is a sigmoid of its state, `d_t = sigmoid(g . h_t)`: a tiny network of the `lm` task that
induces trees. The same network, without its decoder, is also an encoder of formulas (its state at the last token)
that the logic task's pair classifier reads through. Its "official" `state_dict` has other names than its own
(`convert.py`); its fixture kind's outputs are computed here, independently, by a plain NumPy loop.
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from helpers import tiny_config, write_logic

import treenets

pytestmark = pytest.mark.slow

INIT = '''"""An Elman network language model (Elman, 1990), the throwaway model of tests/test_new_model.py."""

from treenets.nn.elman.encoders import ElmanPairEncoderConfig
from treenets.nn.elman.model import ElmanConfig
from treenets.nn.registry import Model, register

register(Model(name="elman", title="Elman network (Elman, 1990)", package=__name__, configs={"lm": (ElmanConfig,)},
               encoders={"pairs": (ElmanPairEncoderConfig,)},
               convert="convert:from_official", fixtures={"elman-lm": "fixtures:elman_lm"}))
'''

ENCODERS = '''"""The Elman network as an encoder of formulas: its state at each formula's last token."""

from typing import ClassVar, Literal

import torch
import torch.nn as nn

from treenets.nn.encoders import last_states
from treenets.core.schema import PositiveInt, Section


class ElmanEncoder(nn.Module):
    def __init__(self, in_dim: int, hidden_size: int):
        super().__init__()
        self.ih = nn.Linear(in_dim, hidden_size)
        self.hh = nn.Linear(hidden_size, hidden_size, bias=False)

    def encode(self, inputs: torch.Tensor, lengths: torch.Tensor, test: bool = False):
        h, outputs = inputs.new_zeros(inputs.size(1), self.hh.weight.size(0)), []
        for x in self.ih(inputs):
            h = torch.tanh(x + self.hh(h))
            outputs.append(h)
        return last_states(torch.stack(outputs), lengths), None


class ElmanPairEncoderConfig(Section):
    name: Literal["elman"] = "elman"
    hidden_size: PositiveInt = 8
    reads_trees: ClassVar[bool] = False
    induces_trees: ClassVar[bool] = False

    @property
    def out_dim(self) -> int:
        return self.hidden_size

    def build(self, in_dim: int) -> ElmanEncoder:
        return ElmanEncoder(in_dim, self.hidden_size)
'''

MODEL = '''"""h_t = tanh(W e_t + U h_{t-1} + b); logits_t = V h_t + c; the syntactic distance d_t = sigmoid(g . h_t)."""

from typing import Literal, NamedTuple

import torch
import torch.nn as nn

from treenets.core.schema import PositiveInt, Section


class ElmanOutput(NamedTuple):
    output: torch.Tensor  # [T, B, H]: the decoder's input
    state: list  # [h]: h [B, H]
    last_layer: torch.Tensor  # [T, B, H]
    distances: torch.Tensor  # [1, T, B]

    @property
    def ar_input(self) -> torch.Tensor:
        return self.last_layer


class ElmanConfig(Section):
    name: Literal["elman"] = "elman"
    emb_size: PositiveInt = 8
    hidden_size: PositiveInt = 8

    def build(self, vocab_size: int) -> "ElmanLanguageModel":
        return ElmanLanguageModel(vocab_size, self.emb_size, self.hidden_size)


class ElmanLanguageModel(nn.Module):
    num_distance_rows = default_distance_row = 1

    def __init__(self, vocab_size: int, emb_size: int, hidden_size: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.ih = nn.Linear(emb_size, hidden_size)
        self.hh = nn.Linear(hidden_size, hidden_size, bias=False)
        self.gate = nn.Linear(hidden_size, 1, bias=False)
        self.decoder = nn.Linear(hidden_size, vocab_size)

    def initial_state(self, batch_size: int) -> list:
        return [self.ih.weight.new_zeros(batch_size, self.hh.weight.size(0))]

    def forward(self, tokens: torch.Tensor, state: list | None = None) -> ElmanOutput:
        h = (state or self.initial_state(tokens.size(1)))[0]
        inputs, outputs = self.ih(self.embedding(tokens)), []
        for x in inputs:
            h = torch.tanh(x + self.hh(h))
            outputs.append(h)
        output = torch.stack(outputs)
        return ElmanOutput(output, [h], output, torch.sigmoid(self.gate(output)).squeeze(-1).unsqueeze(0))
'''

CONVERT = '''"""The "official" Elman network's weights: `embed`, `W`, `U`, `b`, `g`, `V`, `c`."""

from treenets.nn.elman.model import ElmanLanguageModel
from treenets.nn.official import load_renamed


def from_official(state_dict, vocab: int, emb: int, hidden: int, **_ignored) -> ElmanLanguageModel:
    model = ElmanLanguageModel(vocab, emb, hidden)
    renamed = {"embed": "embedding.weight", "W": "ih.weight", "b": "ih.bias", "U": "hh.weight", "g": "gate.weight",
               "V": "decoder.weight", "c": "decoder.bias"}
    load_renamed(model, state_dict, renamed, "an Elman state_dict", f"vocab={vocab}, emb={emb}, hidden={hidden}")
    return model.eval()
'''

FIXTURES = '''"""`elman-lm` fixtures: the logits and distances of `tokens`."""

import torch

from treenets.nn.elman.convert import from_official
from treenets.nn.official import fixture_arg


def elman_lm(config, arrays, path):
    args = {key: fixture_arg(config, key, path) for key in ("vocab", "emb", "hidden")}
    model = from_official(arrays["params"], **args).double()
    with torch.no_grad():
        run = model(torch.from_numpy(arrays["inputs"]["tokens"]))
        return {"logits": model.decoder(run.output).numpy(), "distances": run.distances[0].numpy()}
'''

FOLDER = {"__init__.py": INIT, "model.py": MODEL, "encoders.py": ENCODERS, "convert.py": CONVERT,
          "fixtures.py": FIXTURES}


def _write_fixture(folder: Path, seed: int = 0) -> None:
    """An "official" Elman network's weights, inputs and outputs, computed by a plain NumPy loop."""
    rng = np.random.default_rng(seed)
    vocab, emb, hidden, steps, batch = 7, 4, 5, 6, 3
    params = {"embed": rng.normal(size=(vocab, emb)), "W": rng.normal(size=(hidden, emb)), "b": rng.normal(size=hidden),
              "U": rng.normal(size=(hidden, hidden)), "g": rng.normal(size=(1, hidden)),
              "V": rng.normal(size=(vocab, hidden)), "c": rng.normal(size=vocab)}
    params = {key: value.astype(np.float32) for key, value in params.items()}
    tokens = rng.integers(0, vocab, size=(steps, batch))
    p = {key: value.astype(np.float64) for key, value in params.items()}
    h, logits, distances = np.zeros((batch, hidden)), [], []
    for t in range(steps):
        h = np.tanh(p["embed"][tokens[t]] @ p["W"].T + p["b"] + h @ p["U"].T)
        logits.append(h @ p["V"].T + p["c"])
        distances.append(1 / (1 + np.exp(-(h @ p["g"].T)[:, 0])))
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"kind": "elman-lm", "vocab": vocab, "emb": emb, "hidden": hidden}))
    np.savez(folder / "params.npz", **params)
    np.savez(folder / "inputs.npz", tokens=tokens)
    np.savez(folder / "outputs.npz", logits=np.stack(logits).astype(np.float32),
             distances=np.stack(distances).astype(np.float32))


def _package_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "site" / "treenets"
    shutil.copytree(Path(treenets.__file__).parent, copy, ignore=shutil.ignore_patterns("__pycache__", "configs"))
    (copy / "nn" / "elman").mkdir()
    for name, text in FOLDER.items():
        (copy / "nn" / "elman" / name).write_text(text)
    return copy


def _differing(left: Path, right: Path) -> list[str]:
    """The files of two trees that differ or are in one only (`__pycache__` and the configs link aside)."""
    compared = filecmp.dircmp(left, right, ignore=["__pycache__", "configs"])
    found = [*compared.left_only, *compared.right_only, *compared.diff_files]
    for name in compared.subdirs:
        found += [f"{name}/{path}" for path in _differing(left / name, right / name)]
    return found


def test_a_new_model_is_one_folder(tmp_path, corpus):
    copy = _package_copy(tmp_path)
    assert _differing(Path(treenets.__file__).parent, copy) == ["nn/elman"]  # no other file edited
    _write_fixture(tmp_path / "fixture")
    config = tmp_path / "elman-lm.yaml"
    raw = tiny_config(corpus, train={"max_steps": 3})
    config.write_text(yaml.safe_dump({**raw, "model": {"name": "elman", "emb_size": 6, "hidden_size": 6},
                                      "optim": {"lr": 1.0}}))
    env = {**os.environ, "PYTHONPATH": str(copy.parent), "TREENETS_BACKEND": "torch"}

    def treenets_(*argv):
        return subprocess.run([sys.executable, "-m", "treenets", *argv], env=env, capture_output=True, text=True,
                              cwd=tmp_path, timeout=300)

    checked = treenets_("check-golden", str(tmp_path / "fixture"))
    assert checked.returncode == 0 and checked.stdout.endswith("PASS 2/2\n"), checked.stdout + checked.stderr
    trained = treenets_("train", str(config), "--out", str(tmp_path / "run"), "--no-progress")
    assert trained.returncode == 0, trained.stderr[-3000:]
    run = tmp_path / "run" / "best.pt"
    evaluated = treenets_("eval", str(run), "--split", "test")
    assert evaluated.returncode == 0 and "ppl" in evaluated.stdout, evaluated.stderr[-3000:]
    parsed = treenets_("parse", str(run), "--json", "The cat sat on the mat.")
    assert parsed.returncode == 0, parsed.stderr[-3000:]
    record = json.loads(parsed.stdout)
    assert record["tokens"] == ["the", "cat", "sat", "on", "the", "mat"] and record["tree"].startswith("(")
    # ...and its encoder, which the logic task's classifier reads formulas through
    write_logic(tmp_path / "logic")
    logic = tmp_path / "elman-logic.yaml"
    logic.write_text(yaml.safe_dump({"task": "logic", "data": {"path": str(tmp_path / "logic"), "batch_size": 8,
                                                               "max_train_operators": 3},
                                     "model": {"encoder": {"name": "elman", "hidden_size": 6}, "emb_size": 5},
                                     "train": {"max_steps": 3, "threads": 1}}))
    trained = treenets_("train", str(logic), "--out", str(tmp_path / "logic-run"), "--no-progress")
    assert trained.returncode == 0, trained.stderr[-3000:]
    evaluated = treenets_("eval", str(tmp_path / "logic-run" / "best.pt"), "--split", "test")
    assert evaluated.returncode == 0 and '"accuracy_ops_12+"' in evaluated.stdout, evaluated.stderr[-3000:]

    # The negative controls: one array of the fixture changed fails the check; without its registration the
    # folder is no model (the fixture's kind is unknown, the config's model name too).
    changed = tmp_path / "changed"
    shutil.copytree(tmp_path / "fixture", changed)
    with np.load(changed / "outputs.npz") as outputs:
        arrays = dict(outputs)
    arrays["distances"][2, 1] += 1e-3
    np.savez(changed / "outputs.npz", **arrays)
    failed = treenets_("check-golden", str(changed))
    assert failed.returncode == 1 and failed.stdout.endswith("FAIL 1/2\n"), failed.stdout + failed.stderr
    (copy / "nn" / "elman" / "__init__.py").write_text('"""Not registered."""\n')
    unknown = treenets_("check-golden", str(tmp_path / "fixture"))
    assert unknown.returncode == 2 and "unknown kind 'elman-lm'" in unknown.stderr, unknown.stderr
    refused = treenets_("train", str(config), "--out", str(tmp_path / "run2"), "--no-progress")
    assert refused.returncode != 0 and "model.name: unknown 'elman'" in refused.stderr, refused.stderr[-3000:]
    refused = treenets_("train", str(logic), "--out", str(tmp_path / "logic-run2"), "--no-progress")
    assert refused.returncode != 0 and "model.encoder.name: unknown 'elman'" in refused.stderr, refused.stderr[-3000:]
