"""SST sentiment: training, evaluation and prediction end to end, fine-grained and binary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from helpers import train_and_test

from treenets.cli import main
from treenets.nn.ordered_memory.model import OrderedMemoryOutput
from treenets.nn.ordered_memory.trees import tree_from_slots
from treenets.predictors.sentiment import SentimentClassifier
from treenets.trees.draw import bracketed


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
    # Only an Ordered Memory encoder induces trees: parse names the encoder and exits non-zero.
    capsys.readouterr()
    assert main(["parse", str(tmp_path / "run" / "best.pt"), "It works ."]) == 2
    assert (f"this sentiment model's encoder ({encoder}) induces no trees: only Ordered Memory (ordered-memory) does"
            in capsys.readouterr().err)


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


def test_every_labelled_phrase_becomes_a_sentence_of_its_own(tmp_path):
    from treenets.data.sst import labelled_phrases, read_trees

    path = tmp_path / "train.txt"
    path.write_text("(3 (2 It) (4 (4 works) (2 .)))\n(2 (3 good) (2 film))\n")
    binary = read_trees(path, "binary")
    assert len(binary) == 1  # the neutral sentence is not a binary example...
    phrases = labelled_phrases(read_trees(path, "binary", neutral_roots=True))  # ...but its positive phrase is
    assert sorted((p.words, p.labels[p.root]) for p in phrases) == [(("It", "works", "."), 1), (("good",), 1),
                                                                     (("works",), 1), (("works", "."), 1)]
    assert len(labelled_phrases(read_trees(path, "fine"))) == 5 + 3  # every node of both sentences


def test_ordered_memory_reads_sst_with_its_recipe_trained_on_phrases(tmp_path, data_root, capsys):
    from treenets.config import build_config, load_config, to_dict
    from treenets.core.errors import TreenetsError
    from treenets.data.sst import labelled_phrases, read_trees
    from treenets.nn.ordered_memory.model import OrderedMemory
    from treenets.tasks import make_task

    source = data_root / "sst" / "trainDevTestTrees_PTB" / "trees"
    folder = tmp_path / "sst"
    folder.mkdir()
    for split, count in (("train", 30), ("dev", 20), ("test", 20)):
        lines = (source / f"{split}.txt").read_text().splitlines()[:count]
        (folder / f"{split}.txt").write_text("\n".join(lines) + "\n")
    config = to_dict(load_config(Path(__file__).resolve().parents[2] / "configs" / "om-sst.yaml"))
    config["data"].update(path=str(folder), batch_size=64)
    config["model"].update(emb_size=8, mlp_hidden=5)
    config["model"]["encoder"].update(mem_size=6, slots=4)
    config["train"].update(epochs=1, log_interval=4)
    task = make_task(build_config(config), None, splits=("train",))
    assert len(task.trees["train"]) == len(labelled_phrases(read_trees(folder / "train.txt", "binary", True)))
    assert task.batches.lengths.tolist() == [len(tree.words) for tree in task.trees["train"]]  # batched by length
    model = task.build_model().eval()
    # the sentence's vector is Ordered Memory's output at its last word, then the hidden ReLU layer
    assert isinstance(model.encoder.memory, OrderedMemory) and model.hidden.out_features == 5
    words = [torch.tensor([1, 2, 3]), torch.tensor([4, 5])]
    states, _ = model.encode([None, None], words)
    alone = model.encoder.memory(model.emb(words[1]).unsqueeze(1), torch.tensor([2])).output
    torch.testing.assert_close(states.h[1:], alone)
    assert states.c is None
    result = train_and_test(tmp_path, capsys, config)
    assert 0.0 <= result["root_accuracy"] <= 1.0 and "phrase_accuracy" not in result
    # its trees of the test sentences scored against the treebank's
    assert 0.0 <= result["tree_f1"] <= 1.0 and 0.0 <= result["tree_sentence_f1"] <= 1.0
    assert main(["predict", str(tmp_path / "run" / "best.pt"), "--sentence", "It works ."]) == 0
    assert json.loads(capsys.readouterr().out)["name"] in ("negative", "positive")
    with pytest.raises(TreenetsError, match="data.subtrees: a binary-treelstm trains on every phrase of the trees"):
        build_config({**config, "model": {"encoder": {"name": "binary-treelstm"}}})
    # `treenets parse`: the tree its Ordered Memory induces of a sentence as typed, over the tokens predict reads
    best = str(tmp_path / "run" / "best.pt")
    capsys.readouterr()
    assert main(["parse", best, "A charming film.", "--json", "--distances"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["tokens"] == ["A", "charming", "film", "."] and record["gold_tree"] is None  # none of its own
    model = SentimentClassifier.load(best)
    _, induced = model.net.forward_inducing([torch.tensor(model.vocab.encode(record["tokens"])[0])])
    slots = induced.distances[:, 0].tolist()
    assert record["distances"] == [slots] and record["tree"] == bracketed(tree_from_slots(record["tokens"], slots))
    assert record["scored_tree"] == record["tree"]  # no token left out
    assert main(["parse", best, "A charming film."]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"[1] A charming film .\n{record['tree']}\n") and "its own tree" not in out
    assert main(["parse", best, "It doesn't", "--pretokenized", "--json"]) == 0  # split on white space alone
    assert json.loads(capsys.readouterr().out)["tokens"] == ["It", "doesn't"]


def test_the_trees_ordered_memory_induces_of_sentences_are_scored_against_the_treebank_by_hand(tmp_path,
                                                                                                monkeypatch):
    from treenets.config import build_config
    from treenets.tasks import make_task

    folder = tmp_path / "sst"
    folder.mkdir()
    for name in ("train.txt", "dev.txt", "test.txt"):  # two right-branching sentences, one left, one word
        (folder / name).write_text("(3 (2 It) (4 (4 works) (2 .)))\n(3 (2 A) (3 (3 good) (2 film)))\n"
                                   "(1 (1 (2 a) (1 bad)) (2 film))\n(3 Yes)\n")
    config = build_config({"task": "sentiment", "data": {"path": str(folder)},
                           "model": {"name": "ordered-memory", "emb_size": 6, "mem_size": 5, "slots": 3}})
    task = make_task(config, None, splits=("train", "valid"))
    model = task.build_model()
    read = model.forward_inducing
    falling = torch.tensor([[3, 3, 3, 3], [2, 2, 2, 0], [1, 1, 1, 0]])  # [T, B]: right-branching trees
    slots = OrderedMemoryOutput(None, torch.nn.functional.one_hot(falling, 4).float(), None)  # these, as argmax
    monkeypatch.setattr(model, "forward_inducing", lambda word_ids: (read(word_ids)[0], slots))
    values = task.evaluate(model, "valid").values()
    # (It (works .)) and (A (good film)) match both brackets of their own; (a (bad film)) only the whole sentence's
    # of ((a bad) film); "Yes" has no bracket to find. EVALB: 5 of 6 brackets each way; per sentence without the
    # whole one: 1, 1 and 0.
    assert values["sentences"] == 4
    assert values["tree_f1"] == pytest.approx(5 / 6)
    assert values["tree_sentence_f1"] == pytest.approx(2 / 3)
