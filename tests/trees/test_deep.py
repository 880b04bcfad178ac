"""Deep and huge inputs: trees thousands of levels deep are read, built, scored, batched and written without
recursion, or refused with a clear error where a library recurses; a line of 10 MB is refused by every reader."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import torch
from helpers import WORDS as VOCAB
from helpers import tiny_config, write_corpus

from treenets.config import build_config
from treenets.core.errors import TreenetsError
from treenets.core.limits import MAX_TREE_DEPTH
from treenets.data.lm import read_lm_file
from treenets.data.logic import read_logic_file
from treenets.data.sick import read_split
from treenets.data.sst import read_trees
from treenets.nn.backend import use_backend
from treenets.nn.treelstm.batch import TreeBatch
from treenets.nn.treelstm.model import NaryTreeLSTM
from treenets.predictors import LanguageModel
from treenets.predictors.parse import Parse
from treenets.tasks import make_task
from treenets.trees import (
    ParseScores,
    average_depth,
    balanced,
    collapse,
    labeled_spans,
    left_branching,
    read_treebank,
    right_branching,
    spans,
    tree_from_distances,
    tree_words,
)
from treenets.trees.draw import ascii_art, bracketed, to_nltk, write_svg
from treenets.trees.evaluation import SystemResult, write_outputs
from treenets.trees.ptb import GoldSentence, TreeSource

DEEP = 5000
WORDS = [f"w{i}" for i in range(2000)]


def nested_depth(tree) -> int:
    levels = 0
    while isinstance(tree, list):
        tree, levels = tree[-1] if isinstance(tree[-1], list) else tree[0], levels + 1
    return levels


def same(a, b) -> bool:
    """Tree equality without recursion (`==` on nested lists recurses once per level)."""
    return bracketed(a) == bracketed(b)


def test_treebank_trees_deeper_than_the_limit_are_refused_naming_file_and_line(tmp_path):
    path = tmp_path / "deep.mrg"
    path.write_text("(TOP (NN a))\n" + "(S " * DEEP + "(NN a)" + ")" * DEEP + "\n")
    with pytest.raises(TreenetsError, match=rf"deep.mrg:2: tree deeper than {MAX_TREE_DEPTH} levels"):
        read_treebank(path)
    depth = MAX_TREE_DEPTH - 1  # the preterminal is the last level
    path.write_text("(S (NN z) " * depth + "(NN a)" + ")" * depth + "\n")
    (tree, _), = read_treebank(path)
    assert tree_words(tree) == ["z"] * depth + ["a"]
    assert nested_depth(collapse(tree)) == depth
    assert len(labeled_spans(tree)) == depth


def test_an_sst_line_nested_5000_deep_is_read_batched_and_run(tmp_path):
    path = tmp_path / "deep.txt"
    path.write_text("".join(f"(3 w{i} " for i in range(DEEP)) + "(1 end)" + ")" * DEEP + "\n")
    (tree,) = read_trees(path, "fine")
    assert tree.words[-1] == "end" and tree.size == 2 * DEEP + 1 and max(tree.height) == DEEP
    batch = TreeBatch.build([tree])
    assert len(batch.levels) == DEEP + 1
    with use_backend("torch"), torch.no_grad():  # the PyTorch level loop (no kernel build in the tests)
        h, _ = NaryTreeLSTM(2, 3)(batch, torch.randn(batch.num_nodes, 2))
    assert torch.isfinite(h[batch.roots]).all()


def test_trees_from_monotone_distances_nest_as_deep_as_the_sentence():
    falling = np.arange(DEEP, 0, -1.0)
    words = [f"w{i}" for i in range(DEEP)]
    official = tree_from_distances(words, falling)
    assert same(official, right_branching(words)) and nested_depth(official) == DEEP - 1
    assert same(tree_from_distances(words, -falling, split="before"), left_branching(words))
    assert nested_depth(balanced(WORDS)) == 11


def test_a_2000_word_sentence_is_parsed_by_a_language_model_and_its_deep_trees_scored(tmp_path):
    config = build_config(tiny_config(write_corpus(tmp_path / "corpus")))
    task = make_task(config)
    lm = LanguageModel(task.build_model(), task.vocab, config)  # untrained: any distances will do
    words = [VOCAB[i % 40] for i in range(2000)]
    with use_backend("torch"):  # no kernel build in the tests
        parse = lm.parse(" ".join(words))
    assert parse.words == words and spans(parse.nested, include_root=True) >= {(0, 2000)}
    # Falling distances: the official split then draws the right-branching tree, 1,999 levels deep.
    right = Parse(words, torch.arange(2000, 0, -1.0)[None], 1, "official", []).nested
    assert same(right, right_branching(words)) and nested_depth(right) == 1999
    assert to_nltk(right)[1][1][0] == words[2]  # an nltk.Tree, built without recursion
    scores = ParseScores()
    assert 0.0 <= scores.add(right, parse.nested)[2] <= 1.0
    assert scores.add(right, right)[2] == pytest.approx(1.0)
    assert len(spans(right)) == 1998
    assert average_depth(right) == pytest.approx((sum(range(1, 2000)) + 1999) / 2000)
    assert bracketed(right).startswith(f"(X {words[0]} (X {words[1]} ") and bracketed(right).endswith(")" * 1999)


def test_deep_trees_are_written_by_the_parsing_evaluation(tmp_path):
    right, left = right_branching(WORDS), left_branching(WORDS)
    scores = ParseScores()
    scores.add(right, left)
    sentence = GoldSentence(WORDS, left, [], None, TreeSource("deep.mrg", 1))
    result = SystemResult("run/best.pt", "1", scores, [right])
    write_outputs(tmp_path, [sentence], [result], {"run/best.pt": [np.zeros((1, len(WORDS)))]})
    assert (tmp_path / "trees-run-best-layer1.txt").read_text() == bracketed(right) + "\n"
    line = (tmp_path / "sentences.jsonl").read_text()
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)  # only to read the record back here: json.loads recurses once per level
    try:
        record = json.loads(line)
    finally:
        sys.setrecursionlimit(limit)
    assert same(record["gold"], left) and same(record["models"]["run-best-layer1"]["tree"], right)


def test_drawing_refuses_trees_deeper_than_the_limit_and_brackets_any(tmp_path):
    deep = right_branching(WORDS[: MAX_TREE_DEPTH + 2])
    with pytest.raises(TreenetsError, match=rf"tree deeper than {MAX_TREE_DEPTH} levels \({MAX_TREE_DEPTH + 1}\)"):
        ascii_art(deep, WORDS[: MAX_TREE_DEPTH + 2])
    with pytest.raises(TreenetsError, match=f"tree deeper than {MAX_TREE_DEPTH} levels"):
        write_svg(deep, tmp_path / "deep.svg")
    assert bracketed(right_branching(WORDS)).count("(X ") == len(WORDS) - 1


HUGE = "a " * 5_000_000  # one line of 10,000,000 characters


def _huge_lm(tmp_path):
    path = tmp_path / "ptb.train.txt"
    path.write_text(" a b\n" + HUGE + "\n")
    return lambda: read_lm_file(path)


def _huge_treebank(tmp_path):
    path = tmp_path / "huge.mrg"
    path.write_text("(TOP (NN a))\n" + HUGE + "\n")
    return lambda: read_treebank(path)


def _huge_sst(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("(2 (2 a) (2 b))\n" + HUGE + "\n")
    return lambda: read_trees(path, "fine")


def _huge_sick(tmp_path):
    folder = tmp_path / "train"
    folder.mkdir()
    for side in ("a", "b"):
        (folder / f"{side}.toks").write_text("A dog\n" + HUGE + "\n")
        (folder / f"{side}.parents").write_text("2 0\n0\n")
    (folder / "sim.txt").write_text("4.5\n3\n")
    return lambda: read_split(folder, "dependency")


def _huge_logic(tmp_path):
    path = tmp_path / "train0"
    path.write_text("=\ta\ta\n=\ta\t" + HUGE + "\n")
    return lambda: read_logic_file(path)


@pytest.mark.parametrize("make", [_huge_lm, _huge_treebank, _huge_sst, _huge_sick, _huge_logic],
                         ids=["text", "treebank", "sst", "sick", "logic"])
def test_a_line_of_10_mb_is_refused_naming_file_and_line(tmp_path, make):
    read = make(tmp_path)
    with pytest.raises(TreenetsError, match=r":2: line of 10,00\d,\d{3} characters; lines are limited to 1,000,000"):
        read()


def test_treenets_parse_prints_a_tree_too_deep_to_draw_bracketed_alone(capsys, monkeypatch):
    """Falling distances over 400 words give a tree 399 levels deep: printed bracketed, with a note instead of the
    drawing, and a short sentence in the same call is still drawn."""
    from treenets.cli import main

    def falling(self, sentences, layer=None, split="official", batch_size=64, pretokenized=False):
        return [Parse(s.split(), torch.arange(len(s.split()), 0, -1.0).repeat(3, 1), layer or 2, split, [])
                for s in sentences]

    monkeypatch.setattr(LanguageModel, "parse", falling)
    long_sentence = " ".join(VOCAB[i % 40] for i in range(400))
    assert main(["parse", "onlstm-ptb-small", long_sentence, "the cat sat"]) == 0
    out = capsys.readouterr().out
    assert f"(not drawn: 399 levels deep, drawings stop at {MAX_TREE_DEPTH})" in out
    assert out.count("(X ") == 399 + 2  # both trees bracketed
    assert "cat" in out.split("[2]")[1].splitlines()[-2]  # the short tree drawn: its words along the bottom line
