"""SST sentiment: training, evaluation and prediction end to end, fine-grained and binary."""

from __future__ import annotations

import json

import pytest
from helpers import train_and_test

from treenets.cli import main


@pytest.mark.parametrize("encoder,classes", [("binary-treelstm", "fine"), ("bilstm", "binary")])
def test_sentiment_trains_evaluates_and_predicts(tmp_path, data_root, capsys, encoder, classes):
    source = data_root / "sst" / "trainDevTestTrees_PTB" / "trees"
    folder = tmp_path / "sst"
    folder.mkdir()
    for split, count in (("train", 60), ("dev", 20), ("test", 20)):
        lines = (source / f"{split}.txt").read_text().splitlines()[:count]
        (folder / f"{split}.txt").write_text("\n".join(lines) + "\n")
    config = {"task": "sentiment", "data": {"path": str(folder), "classes": classes, "batch_size": 10},
              "model": {"name": encoder, "emb_size": 16, "mem_size": 12},
              "train": {"epochs": 2, "threads": 1, "log_interval": 1}}
    result = train_and_test(tmp_path, capsys, config)
    assert 0.0 <= result["root_accuracy"] <= 1.0
    assert ("phrase_accuracy" in result) == (encoder == "binary-treelstm")
    if encoder == "binary-treelstm":
        assert main(["predict", str(tmp_path / "run" / "best.pt"), "--tree", "(X (X It) (X (X works) (X .)))"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert 0 <= out["label"] < 5 and [p[0] for p in out["phrases"]][0] == "It works ."
    else:
        assert main(["predict", str(tmp_path / "run" / "best.pt"), "--sentence", "It works ."]) == 0
        assert json.loads(capsys.readouterr().out)["label"] in (0, 1)
