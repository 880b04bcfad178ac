"""Dependencies scored by `parse-eval`: the gold from head rules or a CoNLL file, systems' CoNLL files (over the
kept words or every token), the baselines, and the errors of files that do not fit the treebank."""

from __future__ import annotations

import json

import pytest

from treenets.cli import main
from treenets.core.errors import TreenetsError
from treenets.trees.dependencies import DependencySentence, conll_text, heads_among
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
    assert read_system_heads(str(every), sentences).heads == kept
    only = tmp_path / "only.conllu"
    only.write_text(conll_text([DependencySentence(s.words, ["NN"] * len(s.words), h)
                                for s, h in zip(sentences, kept)]))
    assert read_system_heads(str(only), sentences).heads == kept
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
    with pytest.raises(TreenetsError, match=r"gold.conllx: no dependency tree for 1 of the treebank's 3 sentences with "
                                            r"words to score \(the first: .*tiny.mrg:3 'prices rose N %'\)"):
        gold_dependencies(sentences, PTB, str(given))


def test_a_sentence_of_a_system_file_that_fits_none_is_named(treebank, tmp_path):
    _, sentences = treebank
    gold = gold_dependencies(sentences, PTB)
    short = tmp_path / "short.conll"
    short.write_text(conll_text([gold.trees[2], DependencySentence(["a", "b"], ["DT", "NN"], [2, 0]), gold.trees[0]]))
    with pytest.raises(TreenetsError, match=r"short.conll:6: no sentence of the treebank without a tree yet has its "
                                            r"words: 'a b' \(2 words\); expected \(after the tree of line 1, the "
                                            r"closest sentence without a tree\): .*tiny.mrg:1 'The cat sat on the mat"):
        read_system_heads(str(short), sentences)


def test_conll_sentences_are_matched_with_the_treebanks_in_any_order(treebank, tmp_path):
    # Before: read position by position, the sentences of a file in another order were scored against others' heads
    path, sentences = treebank
    gold = gold_dependencies(sentences, PTB)
    kept = [t.kept_heads(PTB) for t in gold.trees]
    swapped = tmp_path / "swapped.conll"
    swapped.write_text(conll_text([gold.trees[2], gold.trees[0], gold.trees[1]]))
    reading = read_system_heads(str(swapped), sentences)
    assert reading.heads == kept and score_heads(reading.heads, gold).dda == 1.0
    assert reading.matching.summary() == "1 sentence matched exactly, 2 after dropping punctuation; words matched " \
                                         "only by a normalisation or placeholder: 5 punctuation dropped"
    # the gold file too, in its own order
    from_file = gold_dependencies(sentences, PTB, str(swapped))
    assert [t.heads for t in from_file.trees] == [t.heads for t in gold.trees]
    assert score_heads(kept, from_file).dda == 1.0 and from_file.reading.lines == 3
    # a sentence keeping some of its punctuation (the quotes, not the comma or the period): its heads over the words
    second = gold.trees[1]
    some = [p for p, word in enumerate(second.words) if word not in {",", "."}]
    partial = DependencySentence([second.words[p] for p in some], [second.tags[p] for p in some],
                                 heads_among(second.heads, some))
    swapped.write_text(conll_text([partial]))
    reading = read_system_heads(str(swapped), sentences)
    assert reading.heads[1] == kept[1] and reading.missing == [0, 2]


def test_conll_sentences_longer_than_the_limit_are_skipped_and_counted(treebank, tmp_path, capsys):
    path, sentences = treebank
    gold = gold_dependencies(sentences, PTB)
    system = tmp_path / "system.conll"
    system.write_text(conll_text(gold.trees))
    # Before: "3 sentences, but the treebank has 2 with words", the length limit unsaid
    assert main(["parse-eval", str(system), "--treebank", str(path), "--max-length", "4"]) == 0
    captured = capsys.readouterr()
    assert "system.conll: trees for 2 of 2 sentences; 1 lines of more than 4 words skipped" in captured.out
    assert "system.conll: CoNLL dependency trees; 1 sentence matched exactly, 1 after dropping punctuation" in \
        captured.err
    assert main(["parse-eval", str(system), "--treebank", str(path), "--max-length", "4", "--gold-dependencies",
                 str(system)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-6].startswith(f"dependencies against {system}") and printed[-4].split()[-2:] == ["100.0", "100.0"]


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
