"""Checkpoints: atomic writes, safe loading, and clear errors for files that are not ours."""

from __future__ import annotations

import pickle

import pytest
import torch

from treenets.core import checkpoint
from treenets.core.errors import TreenetsError


def _payload():
    return {"kind": "model", "config": {"task": "lm"}, "vocab": ["a", "b"], "model": {"w": torch.ones(2, 3)}}


def test_roundtrip_leaves_no_temporary_file(tmp_path):
    path = checkpoint.save(_payload(), tmp_path / "run" / "best.pt")
    assert [p.name for p in path.parent.iterdir()] == ["best.pt"]
    loaded = checkpoint.load(path, task="lm")
    assert loaded["vocab"] == ["a", "b"] and torch.equal(loaded["model"]["w"], torch.ones(2, 3))


def test_truncated_file(tmp_path):
    path = checkpoint.save(_payload(), tmp_path / "c.pt")
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(TreenetsError, match="truncated or corrupt"):
        checkpoint.load(path)


class Model:  # stands for the official code's pickled model objects
    pass


def test_pickled_objects_are_refused(tmp_path):
    path = tmp_path / "official.pt"
    torch.save({"model": Model()}, path)
    with pytest.raises(TreenetsError, match="pickled Python objects"):
        checkpoint.load(path)
    raw = tmp_path / "raw.pkl"
    raw.write_bytes(pickle.dumps(Model()))
    with pytest.raises(TreenetsError, match=str(raw)):
        checkpoint.load(raw)


def test_other_files_and_tasks(tmp_path):
    plain = tmp_path / "weights.pt"
    torch.save({"w": torch.ones(1)}, plain)
    with pytest.raises(TreenetsError, match="not a treenets checkpoint"):
        checkpoint.load(plain)
    path = checkpoint.save(_payload(), tmp_path / "c.pt")
    with pytest.raises(TreenetsError, match="checkpoint of task 'lm', expected a 'sst'"):
        checkpoint.load(path, task="sst")
    with pytest.raises(TreenetsError, match="does not exist"):
        checkpoint.load(tmp_path / "absent.pt")


def test_weights_of_another_model(tmp_path):
    model = torch.nn.Linear(3, 2)
    with pytest.raises(TreenetsError, match="weight has shape"):
        checkpoint.load_weights(model, {"weight": torch.ones(4, 3), "bias": torch.ones(2)}, "x.pt")
    with pytest.raises(TreenetsError, match="another model"):
        checkpoint.load_weights(model, {"embedding.weight": torch.ones(4, 3)}, "x.pt")
