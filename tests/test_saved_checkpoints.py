"""Checkpoints written by an earlier treenets load, evaluate and resume as they did when they were written.

`tests/saved/` holds the `last.pt` of tiny training runs (two steps of the first of two epochs) of every classifier
and encoder, written by treenets 0.11.0 (commit b3164b0), whose model sections held the encoder's fields flat beside
the classifier's (`model: {name: binary-treelstm, emb_size: 6, mem_size: 5}`); `expected.json` what that treenets
printed evaluating each on its test split, and the losses of its run resumed to step 4. The data they read is
written again by `tests/saved/saved_data.py`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from treenets.config import saved_config, to_dict
from treenets.core.checkpoint import load

SAVED = Path(__file__).with_name("saved")
EXPECTED = json.loads((SAVED / "expected.json").read_text())
sys.path.insert(0, str(SAVED))
from saved_data import write_data  # noqa: E402 - the folder's own module

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def data_folder(data_root, tmp_path_factory) -> Path:
    return write_data(tmp_path_factory.mktemp("saved") / "data", data_root)


def _treenets(*arguments: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "treenets", *arguments, "--threads", "1"], capture_output=True,
                          text=True)


def test_every_saved_run_is_checked():
    assert sorted(EXPECTED) == sorted(p.parent.name for p in SAVED.glob("*/last.pt")) and len(EXPECTED) == 7


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_checkpoint_of_an_earlier_treenets_evaluates_as_it_did(name, data_folder):
    done = _treenets("eval", str(SAVED / name / "last.pt"), "--split", "test", "--data", str(data_folder))
    assert done.returncode == 0, done.stderr[-2000:]
    figures = json.loads(done.stdout.splitlines()[0])
    expected = {key: value for key, value in EXPECTED[name]["test"].items() if key != "split"}
    assert figures["split"] == "test"
    assert {key: figures[key] for key in expected} == pytest.approx(expected, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_run_of_an_earlier_treenets_resumes_as_it_did(name, data_folder, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(SAVED / name / "last.pt", run / "last.pt")
    done = _treenets("train", "--resume", str(run / "last.pt"), "--set", "train.max_steps=4", "--data",
                     str(data_folder), "--no-progress")
    assert done.returncode == 0, done.stderr[-2000:]
    events = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    expected = EXPECTED[name]["resumed"]
    assert [e["loss"] for e in events if e["event"] == "train"] == pytest.approx(expected["train_losses"], rel=1e-4)
    assert [e["loss"] for e in events if e["event"] == "eval"][-1] == pytest.approx(expected["valid_loss"], rel=1e-4)
    # the resumed run saved its config in today's schema, the same config as the earlier one read today
    before = saved_config(load(SAVED / name / "last.pt"), "before")
    after = saved_config(load(run / "last.pt"), "after")
    assert to_dict(after)["model"] == to_dict(before)["model"]
