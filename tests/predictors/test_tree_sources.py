"""Trees for sentences that come without one: induced by a shipped language model, or a fixed shape; the
shipped Tree-LSTMs on sentences as typed."""

from __future__ import annotations

import json

import pytest

import treenets
from treenets.cli import main
from treenets.core.errors import TreenetsError
from treenets.core.folders import cache_dir
from treenets.predictors.tree_sources import InducedTrees, ShapeTrees, cached_trees
from treenets.trees import spans
from treenets.trees.parents import node_spans

TOKENS = ["``", "The", "U.S.", "economy", "grew", "3.5", "%", "in", "1987", ",", "analysts", "said", ".", "''"]


def test_induced_trees_are_the_trees_treenets_parse_draws_with_the_dropped_tokens_attached():
    tree = InducedTrees("onlstm-ptb-small").trees([TOKENS])[0]
    assert tree.words == tuple(TOKENS) and all(len(children) in (0, 2) for children in tree.children)
    lm = treenets.load("onlstm-ptb-small")
    parse = lm.parse('"The U.S. economy grew 3.5% in 1987, analysts said."')  # its normaliser drops `` , . ''
    kept = [i for i, token in enumerate(TOKENS) if token not in ("``", ",", ".", "''")]
    assert len(parse.words) == len(kept)
    restricted = {tuple(p for p in kept if start <= p < end) for start, end in node_spans(tree).values()}
    for start, end in spans(parse.nested, include_root=True):
        assert tuple(kept[start:end]) in restricted
    # The closing tokens after the last word close the whole sentence; `` joins the word after it.
    root_children = tree.children[tree.root]
    assert tree.words[root_children[1]] == "''" and (0, 2) in node_spans(tree).values()


def test_induced_trees_are_kept_in_the_cache_and_read_back(monkeypatch):
    source = InducedTrees("onlstm-ptb-small")
    sentences = [TOKENS, ["It", "works", "."]]
    first = cached_trees(source, sentences, "two sentences", log=lambda line: None)
    files = list((cache_dir() / "trees").glob("*.json"))  # the test's own cache, empty before
    assert len(files) == 1
    monkeypatch.setattr(source, "trees", lambda *args: pytest.fail("parsed again instead of reading the cache"))
    assert cached_trees(source, sentences, "two sentences") == first
    files[0].write_text("[[0, 1")  # damaged: parsed again and replaced
    monkeypatch.undo()
    lines = []
    assert cached_trees(source, sentences, "two sentences", log=lines.append) == first
    assert "2 sentences of two sentences parsed by onlstm-ptb-small" in lines[0]
    for row in ([-1], [3, 4, 3, 4, -1] + [0] * 24):  # a tree of other words; a tree whose branches cross
        files[0].write_text(json.dumps([row, list(first[1].parents)]))
        lines.clear()
        assert cached_trees(source, sentences, "two sentences", log=lines.append) == first and lines  # parsed again
    assert ShapeTrees("balanced").trees([["a", "b", "c"]])[0].parents == (4, 3, 3, 4, -1)  # [a [b c]]


@pytest.mark.parametrize("parser,message", [
    ("lstm-ptb-small", "parser lstm-ptb-small: LSTMLanguageModel gives no syntactic distances"),
    ("no-such-model", "parser no-such-model: no-such-model: no such checkpoint file or model folder"),
])
def test_a_parser_that_induces_no_trees_is_named(parser, message):
    with pytest.raises(TreenetsError, match=message):
        InducedTrees(parser)


def test_the_shipped_sentiment_tree_lstm_reads_a_typed_sentence(capsys):
    assert main(["predict", "treelstm-sst", "--sentence", "It is a moving film."]) == 0
    moving = json.loads(capsys.readouterr().out)
    assert moving["tokens"] == ["It", "is", "a", "moving", "film", "."] and moving["parser"] == "onlstm-ptb-small"
    assert moving["label"] >= 3 and moving["tree"].startswith(f"({moving['label']} ")
    assert main(["predict", "treelstm-sst", "--sentence", "A dull, lifeless film.", "--parser", "prpn-ptb-small"]) == 0
    dull = json.loads(capsys.readouterr().out)
    assert dull["label"] <= 1 and dull["parser"] == "prpn-ptb-small"


@pytest.mark.parametrize("args,message", [
    (["--sentence", ""], "sentence: empty sentence ''"),
    (["--sentence", "\u200b\ufeff"], "sentence: empty sentence ''"),  # invisible characters only
    (["--sentence", "?!"], "the parser onlstm-ptb-small finds no word in it"),
    (["--sentence", "bad \udcff bytes"], "sentence: not text (bytes that are not UTF-8, or a lone surrogate)"),
    (["--sentence", "a\x00b"], "sentence: not text (the control character U+0000)"),
    (["--sentence", "a", "--tree", "(X a)"], "give --sentence or --tree, not both"),
    (["--pair", "a", "b"], "reads --sentence (or --tree), not --pair"),
    (["--sentence", "fine", "--parser", "treelstm-sick"],
     "parser treelstm-sick: treelstm-sick: a relatedness model, not for LanguageModel"),
])
def test_bad_sentences_get_one_clear_line(capsys, args, message):
    assert main(["predict", "treelstm-sst", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_sentence_of_five_thousand_words_is_classified(capsys):
    assert main(["predict", "treelstm-sst", "--sentence", " ".join(["good"] * 5000)]) == 0
    assert len(json.loads(capsys.readouterr().out)["tokens"]) == 5000
