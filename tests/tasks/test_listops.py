"""The ListOps task: its metric and tree scores by hand, and the CLI from a generated data set to training,
evaluation by depth, prediction and the induced trees."""

from __future__ import annotations

import json

import pytest
import torch
import yaml

from treenets.cli import main
from treenets.config import build_config
from treenets.data.listops import generate, gold_tree
from treenets.nn.ordered_memory.model import OrderedMemoryOutput
from treenets.nn.ordered_memory.trees import tree_from_slots
from treenets.tasks import make_task
from treenets.tasks.metrics import AccuracyByDepth
from treenets.trees.draw import bracketed


def test_accuracy_by_depth_by_hand():
    metric = AccuracyByDepth(max_depth=2)
    logits = torch.tensor([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0], [0.0, 3.0]])
    metric.add(logits, torch.tensor([0, 0, 0, 1]), torch.tensor([0, 1, 3, 5]))  # 3 and 5 count as "2+"
    values = metric.values()
    assert values["accuracy"] == 0.75 and values["sequences"] == 4
    assert (values["accuracy_depth_0"], values["accuracy_depth_1"], values["accuracy_depth_2+"]) == (1.0, 0.0, 1.0)
    assert metric.breakdown() == ("depth", {"0": 1.0, "1": 0.0, "2+": 1.0})


class FixedSlots(torch.nn.Module):
    """A stand-in network whose Ordered Memory writes every token of every sequence at the slots `pattern` gives."""

    def __init__(self, pattern, slots: int = 8):
        super().__init__()
        self.pattern, self.slots = pattern, slots

    def forward(self, tokens, lengths):
        steps, batch = tokens.shape
        probs = torch.zeros(steps, batch, self.slots)
        for t in range(steps):
            probs[t, :, self.pattern(t)] = 1.0
        return torch.zeros(batch, 10), OrderedMemoryOutput(torch.zeros(batch, 4), probs, None)


def test_the_induced_trees_are_scored_against_the_trees_of_the_lists(tmp_path):
    folder = tmp_path / "listops"
    folder.mkdir()
    (folder / "train.tsv").write_text("3\t[MIN 3 4 ]\n" * 10)
    (folder / "test.tsv").write_text("3\t[MIN 3 4 ]\n1\t[SM 5 7 9 ]\n5\t5\n")  # a lone digit has no bracket
    config = build_config({"task": "listops", "data": {"path": str(folder)}})
    task = make_task(config, None, splits=("test",))
    # a list of digits is left-branching: one merge before each token, so the slots stay level
    level = task.evaluate(FixedSlots(lambda t: 4), "test").values()
    assert tree_from_slots(["[MIN", "3", "4", "]"], [4, 4, 4, 4]) == gold_tree(["[MIN", "3", "4", "]"])
    assert level["tree_f1"] == 1.0 and level["tree_sentence_f1"] == pytest.approx(1.0)
    falling = task.evaluate(FixedSlots(lambda t: 7 - t), "test").values()  # right-branching: no merge
    assert falling["tree_f1"] < 0.5
    assert level["sequences"] == 3 and level["accuracy_depth_0"] == 0.0  # logits all 0: the answer 0 everywhere


@pytest.fixture(scope="module")
def listops_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("listops")
    generate(root / "listops", train=240, test=40, seed=2)
    config = {"task": "listops", "data": {"path": str(root / "listops"), "batch_size": 16, "max_train_length": 30},
              "model": {"emb_size": 8, "hidden_size": 8, "slots": 5},
              "train": {"epochs": 1, "log_interval": 4, "threads": 1}}
    (root / "listops.yaml").write_text(yaml.safe_dump(config))
    assert main(["train", str(root / "listops.yaml"), "--out", str(root / "run"), "--no-progress"]) == 0
    return root


def test_the_cli_trains_a_listops_model_and_reports_accuracy_by_depth_and_tree_f1(listops_run, capsys):
    best = listops_run / "run" / "best.pt"
    capsys.readouterr()
    assert main(["eval", str(best), "--split", "test"]) == 0
    lines = capsys.readouterr().out.splitlines()
    record = json.loads(lines[0])
    assert record["sequences"] == 40 and 0 <= record["accuracy"] <= 1 and 0 <= record["tree_f1"] <= 1
    assert any(key.startswith("accuracy_depth_") for key in record)
    assert lines[2].split() == ["depth", "[1]"]  # the table by depth


def test_a_listops_model_predicts_a_value_and_draws_its_tree(listops_run, capsys):
    best = str(listops_run / "run" / "best.pt")
    capsys.readouterr()
    assert main(["predict", best, "--sentence", "[max 2 9 [MIN 4 7] 0]"]) == 0  # typed: spacing and case free
    out = json.loads(capsys.readouterr().out)
    assert out["answer"] == 9 and 0 <= out["value"] <= 9 and len(out["probabilities"]) == 10
    assert out["tokens"] == ["[MAX", "2", "9", "[MIN", "4", "7", "]", "0", "]"]
    assert main(["parse", best, "[MAX 2 9 [MIN 4 7 ] 0 ]", "--json", "--distances"]) == 0
    record = json.loads(capsys.readouterr().out)
    tokens = record["tokens"]
    assert record["gold_tree"] == "(X (X (X (X (X [MAX 2) 9) (X (X (X [MIN 4) 7) ])) 0) ])"
    assert record["scored_tree"] == record["tree"]  # nothing left out of a ListOps sequence
    (slots,) = record["distances"]
    assert len(slots) == len(tokens) == 9 and all(isinstance(s, int) and 0 <= s < 5 for s in slots)
    assert record["tree"] == bracketed(tree_from_slots(tokens, slots))
    assert main(["parse", best, "[MAX 2 9 ]", "--distances"]) == 0
    out = capsys.readouterr().out
    assert "[1] [MAX 2 9 ]" in out and "its own tree: (X (X (X [MAX 2) 9) ])" in out and "slots: [MAX=" in out
    assert main(["parse", best, "[MAX 2 9"]) == 2
    assert capsys.readouterr().err == ("treenets: error: sequence '[MAX 2 9': ends at token 3; expected a digit, an "
                                       "operator or ']' closing the list opened at token 1\n")
    assert main(["predict", best, "--sentence", "[max 2] 3"]) == 2  # two sequences (typed: `]` spaced, upper case)
    assert capsys.readouterr() == ("", "treenets: error: sequence '[MAX 2 ] 3': '3' at token 4; expected the end of "
                                       "the sequence (it is whole after token 3)\n")
