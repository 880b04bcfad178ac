"""Dependencies scored by `parse-eval`: the gold from head rules or a CoNLL file, systems' CoNLL files (over the
kept words or every token), the baselines, and the errors of files that do not fit the treebank."""

from __future__ import annotations

import json

import pytest

from treenets.cli import main
from treenets.errors import TreenetsError
from treenets.trees.dependencies import DependencySentence, conll_text
from treenets.trees.dependency_scoring import (
    dependency_rows,
    gold_dependencies,
    is_conll_file,
    read_system_heads,
    score_heads,
)
from treenets.trees.ptb import PTB, load_gold

TREES = """\
(ROOT (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)))
(ROOT (S (NP-SBJ (PRP He)) (VP (VBD said) (, ,) (`` ``) (S (NP-SBJ (-NONE- *)) (VP (VB go))) ('' '')) (. .)))
(ROOT (S (NP-SBJ (NNS Prices)) (VP (VBD rose) (NP (CD 3) (NN %)))))
"""


@pytest.fixture
def treebank(tmp_path):
    path = tmp_path / "tiny.mrg"
    path.write_text(TREES)
    return path, load_gold(path)


def test_head_rule_gold_scores_itself_perfectly_over_kept_words_or_all_tokens(treebank, tmp_path):
    path, sentences = treebank
    gold = gold_dependencies(sentences, PTB)
    assert [len(t.kept(PTB)) for t in gold.trees] == [len(s.words) for s in sentences]
    kept = [t.kept_heads(PTB) for t in gold.trees]
    assert score_heads(kept, gold).summary() == {"sentences": 3, "words": 13, "dda": 1.0, "uda": 1.0}
    # a system's CoNLL file with every token (punctuation too), and one with the kept words only
    every = tmp_path / "every.conll"
    every.write_text(conll_text(gold.trees))
    assert read_system_heads(str(every), sentences, gold) == kept
    only = tmp_path / "only.conllu"
    only.write_text(conll_text([DependencySentence(s.words, ["NN"] * len(s.words), h)
                                for s, h in zip(sentences, kept)]))
    assert read_system_heads(str(only), sentences, gold) == kept
    assert is_conll_file(str(every)) and is_conll_file(str(only)) and not is_conll_file(str(path))


def test_reversed_arcs_are_wrong_directed_and_right_undirected(treebank):
    _, sentences = treebank
    gold = gold_dependencies(sentences, PTB)
    # "The cat sat on the mat": heads the->cat, cat->sat, sat root, on->sat, the->mat, mat->on (Collins: PP head IN)
    assert gold.trees[0].kept_heads(PTB) == [2, 3, 0, 3, 6, 4]
    flipped = [[2, 3, 0, 6, 6, 0]] + [t.kept_heads(PTB) for t in gold.trees[1:]]  # on<-mat reversed; mat a root
    scores = score_heads(flipped, gold)
    assert scores.directed == 13 - 2 and scores.undirected == 13 - 1  # on->mat counts undirected, mat->root does not


def test_a_gold_conll_file_replaces_the_head_rules_and_must_fit_the_treebank(treebank, tmp_path):
    _, sentences = treebank
    rules = gold_dependencies(sentences, PTB)
    given = tmp_path / "gold.conllx"
    given.write_text(conll_text(rules.trees))
    from_file = gold_dependencies(sentences, PTB, str(given))
    assert [t.heads for t in from_file.trees] == [t.heads for t in rules.trees] and str(given) in from_file.origin
    given.write_text(conll_text(rules.trees[:2]))
    with pytest.raises(TreenetsError, match="2 sentences, but the treebank has 3 with words to score"):
        gold_dependencies(sentences, PTB, str(given))


def test_a_system_file_that_does_not_fit_is_named(treebank, tmp_path):
    _, sentences = treebank
    gold = gold_dependencies(sentences, PTB)
    short = tmp_path / "short.conll"
    short.write_text(conll_text([DependencySentence(["a", "b"], ["DT", "NN"], [2, 0])] * 3))
    with pytest.raises(TreenetsError, match=r"short.conll:1: 2 tokens, but .*tiny.mrg:1 has 6 words to score "
                                            r"\(7 tokens with punctuation\)"):
        read_system_heads(str(short), sentences, gold)


def test_baselines_beside_the_systems(treebank):
    _, sentences = treebank
    gold = gold_dependencies(sentences, PTB)
    rows = dependency_rows([("perfect", [t.kept_heads(PTB) for t in gold.trees])], sentences, gold, draws=3)
    assert [r["system"] for r in rows] == ["perfect", "left chain", "right chain", "random projective (3 draws)"]
    assert rows[0]["dda"] == 1.0 and all(0.0 <= r["dda"] <= r["uda"] <= 1.0 for r in rows)
    right = [[0, 1, 2, 3, 4, 5], [0, 1, 2], [0, 1, 2, 3]]  # each word's head the previous word
    assert score_heads(right, gold).directed == round(rows[2]["dda"] * 13)


def test_parse_eval_scores_a_conll_system_and_writes_its_figures(treebank, tmp_path, capsys):
    path, sentences = treebank
    gold = gold_dependencies(sentences, PTB)
    system = tmp_path / "system.conll"
    system.write_text(conll_text(gold.trees))
    out = tmp_path / "out"
    assert main(["parse-eval", str(system), "--treebank", str(path), "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "dependencies against the gold trees converted by Collins (1999)'s head rules" in printed
    assert printed.splitlines()[-6].split()[-2:] == ["100.0", "100.0"]  # the system's row, first under the header
    rows = json.loads((out / "summary.json").read_text())["dependencies"]["rows"]
    assert rows[0] == {"system": str(system), "kind": "system", "sentences": 3, "words": 13, "dda": 1.0, "uda": 1.0}
