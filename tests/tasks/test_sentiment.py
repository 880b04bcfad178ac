"""SST sentiment: training, evaluation and prediction end to end, fine-grained and binary."""

from __future__ import annotations

import json

import pytest
from helpers import train_and_test

from treenets.cli import main


@pytest.mark.parametrize("encoder,classes,trees", [("binary-treelstm", "fine", "gold"), ("bilstm", "binary", "gold"),
                                                   ("binary-treelstm", "fine", "induced"),
                                                   ("binary-treelstm", "binary", "right-branching")])
def test_sentiment_trains_evaluates_and_predicts(tmp_path, data_root, capsys, encoder, classes, trees):
    source = data_root / "sst" / "trainDevTestTrees_PTB" / "trees"
    folder = tmp_path / "sst"
    folder.mkdir()
    for split, count in (("train", 60), ("dev", 20), ("test", 20)):
        lines = (source / f"{split}.txt").read_text().splitlines()[:count]
        (folder / f"{split}.txt").write_text("\n".join(lines) + "\n")
    config = {"task": "sentiment", "data": {"path": str(folder), "classes": classes, "batch_size": 10, "trees": trees},
              "model": {"name": encoder, "emb_size": 16, "mem_size": 12},
              "train": {"epochs": 2, "threads": 1, "log_interval": 1}}
    result = train_and_test(tmp_path, capsys, config)
    assert 0.0 <= result["root_accuracy"] <= 1.0
    assert ("phrase_accuracy" in result) == (encoder == "binary-treelstm")
    if encoder == "binary-treelstm":
        assert main(["predict", str(tmp_path / "run" / "best.pt"), "--tree", "(X (X It) (X (X works) (X .)))"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert 0 <= out["label"] < 5 and [p[0] for p in out["phrases"]][0] == "It works ."
        # Each class with its name (before: numbers alone), and `--json` taken as `parse --json` takes it.
        names = {"fine": ["very negative", "negative", "neutral", "positive", "very positive"],
                 "binary": ["negative", "positive"]}[classes]
        assert out["classes"] == names and out["name"] == names[out["label"]]
        assert all(name == names[label] for _, label, name in out["phrases"])
        assert out["parser"] == "given" and out["tree"].count("(") == 5
        # A sentence as typed: SST's tokens, over the tree the model's parser induces or the shape it trained on.
        assert main(["predict", str(tmp_path / "run" / "best.pt"), "--sentence", "It doesn't work.", "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["tokens"] == ["It", "does", "n't", "work", "."]
        assert out["parser"] == {"right-branching": "right-branching"}.get(trees, "onlstm-ptb-small")
        assert len(out["phrases"]) == 2 * 5 - 1 and out["phrases"][0] == ["It does n't work .", out["label"],
                                                                       out["name"]]
    else:
        assert main(["predict", str(tmp_path / "run" / "best.pt"), "--sentence", "It works ."]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["label"] in (0, 1) and out["name"] == ["negative", "positive"][out["label"]]


def test_over_other_trees_a_node_is_trained_on_the_label_of_the_treebank_phrase_over_its_words(data_root, tmp_path):
    from treenets.config import build_config
    from treenets.tasks.sentiment import SentimentTask
    from treenets.trees.parents import node_spans

    folder = tmp_path / "sst"
    folder.mkdir()
    source = data_root / "sst" / "trainDevTestTrees_PTB" / "trees"
    for name in ("train.txt", "dev.txt", "test.txt"):
        (folder / name).write_text("\n".join((source / name).read_text().splitlines()[:15]) + "\n")
    gold = SentimentTask(build_config({"task": "sentiment", "data": {"path": str(folder)}}))
    for kind in ("induced", "right-branching", "balanced"):
        task = SentimentTask(build_config({"task": "sentiment", "data": {"path": str(folder), "trees": kind}}))
        for tree, labelled in zip(task.trees["valid"], gold.trees["valid"]):
            assert tree.words == labelled.words and tree.labels[tree.root] == labelled.labels[labelled.root]
            assert tree.labels[: len(tree.words)] == labelled.labels[: len(tree.words)]
            gold_spans = {span: labelled.labels[node] for node, span in node_spans(labelled).items()}
            for node, span in node_spans(tree).items():
                assert tree.labels[node] == gold_spans.get(span, -1)
        assert task.vocab.words == gold.vocab.words
