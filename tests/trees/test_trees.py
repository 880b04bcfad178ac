"""Tree toolkit: reading, preprocessing, trees from distances, and the scoring conventions."""

from __future__ import annotations

import random

import nltk
import pytest
from hypothesis import given
from hypothesis import strategies as st

from treenets.core.errors import TreenetsError
from treenets.trees import (
    ParseScores,
    average_depth,
    balanced,
    collapse,
    labeled_spans,
    left_branching,
    parse_trees,
    random_tree,
    read_treebank,
    right_branching,
    self_f1,
    sentence_prf,
    spans,
    tree_from_distances,
    tree_words,
)
from treenets.trees.draw import ascii_art, bracketed

MRG = """
( (S
    (NP-SBJ (NNP Pierre) (NNP Vinken) )
    (, ,)
    (VP (MD will)
      (VP (VB join) (NP (DT the) (NN board) ) (NP-TMP (NNP Nov.) (CD 29) )))
    (. .) ))
( (S (NP-SBJ (-NONE- *) ) (VP (VBZ is) (ADJP-PRD (JJ 1990-style) ) ) (. .) ))
"""


def test_reads_multi_line_mrg_and_preprocesses():
    (first, src1), (second, src2) = parse_trees(MRG, "sample.mrg")
    assert (src1.line, src2.line) == (2, 8)
    assert tree_words(first) == ["pierre", "vinken", "will", "join", "the", "board", "nov.", "N"]
    # Punctuation dropped, unary VP over "will join ..." kept as one node, (NP (DT the) (NN board)) a pair.
    assert collapse(first) == [["pierre", "vinken"], ["will", ["join", ["the", "board"], ["nov.", "N"]]]]
    # -NONE- and punctuation leave "is 1990-style" -> the empty NP-SBJ and the unary ADJP disappear.
    assert tree_words(second) == ["is", "N-style"]
    assert collapse(second) == ["is", "N-style"]


def test_reads_one_tree_per_line_with_top(tmp_path):
    path = tmp_path / "dev.trees"
    path.write_text("(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat)) (. .)))\n(TOP (NP (NN Yes)))\n")
    trees = read_treebank(path)
    assert [tree_words(t) for t, _ in trees] == [["the", "cat", "sat"], ["yes"]]
    assert collapse(trees[1][0]) == "yes"


@pytest.mark.parametrize("text,message", [
    ("(S (NP the cat)\n(VP sat", ":1: tree opened here is never closed"),
    ("(S (NP the))\n)", r":2: unexpected '\)'"),
    ("(S (NP the))\nstray words", ":2: unexpected text"),
    ("(S (NP the) ) ( )", "tree without words"),
])
def test_malformed_treebanks_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.mrg"
    path.write_text(text)
    with pytest.raises(TreenetsError, match=message) as info:
        read_treebank(path)
    assert str(path) in str(info.value)


def test_missing_treebank(tmp_path):
    with pytest.raises(TreenetsError, match="not found"):
        read_treebank(tmp_path / "absent.mrg")
    with pytest.raises(TreenetsError, match="no .mrg files"):
        read_treebank(tmp_path)


def test_labeled_spans_strip_function_tags_and_keep_unary_chains():
    tree = nltk.Tree.fromstring("(S (NP-SBJ-1 (DT the) (NN cat)) (VP (VP=2 (VBD sat) (RB down))) (. .))")
    assert sorted(labeled_spans(tree)) == [(0, 2, "NP"), (0, 4, "S"), (2, 4, "VP"), (2, 4, "VP")]


def test_tree_from_distances_official_split():
    words = ["a", "b", "c", "d"]
    # arg-max at 1: left [a], right [b, tree(c d)]; then c d split at the max of their distances
    assert tree_from_distances(words, [0.1, 0.9, 0.3, 0.2]) == ["a", ["b", ["c", "d"]]]
    assert tree_from_distances(words, [0.9, 0.1, 0.5, 0.2]) == ["a", ["b", ["c", "d"]]]
    assert tree_from_distances(words, [0.2, 0.1, 0.9, 0.3]) == [["a", "b"], ["c", "d"]]
    assert tree_from_distances(words, [0.1, 0.2, 0.3, 0.9]) == [[["a", "b"], "c"], "d"]
    assert tree_from_distances(words, [0.5, 0.5, 0.1, 0.1]) == ["a", ["b", ["c", "d"]]]  # first arg-max wins
    assert tree_from_distances(["x"], [0.3]) == "x"
    assert tree_from_distances([], []) == []


def test_tree_from_distances_split_before():
    words = ["a", "b", "c", "d"]
    # arg-max over positions 1..3 is 2 ("c"): [tree(a b), tree(c d)]
    assert tree_from_distances(words, [0.9, 0.1, 0.8, 0.3], split="before") == [["a", "b"], ["c", "d"]]
    assert tree_from_distances(words, [0.0, 0.9, 0.1, 0.2], split="before") == ["a", [["b", "c"], "d"]]


def _leaves(tree):
    return [tree] if not isinstance(tree, list) else [w for child in tree for w in _leaves(child)]


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.sampled_from(["official", "before"]))
def test_built_tree_spans_every_word_once_in_order(distances, split):
    words = [f"w{i}" for i in range(len(distances))]
    tree = tree_from_distances(words, distances, split)
    assert _leaves(tree) == words
    assert len(spans(tree, include_root=True)) == max(len(words) - 1, 0)  # binary: n - 1 internal nodes


@given(st.integers(1, 40), st.integers(0, 1000))
def test_baselines_are_binary_trees_over_the_words(n, seed):
    words = [f"w{i}" for i in range(n)]
    for tree in (right_branching(words), left_branching(words), balanced(words),
                 random_tree(words, random.Random(seed))):
        assert _leaves(tree) == words
        assert len(spans(tree, include_root=True)) == n - 1


def test_baseline_shapes():
    words = ["a", "b", "c", "d", "e"]
    assert right_branching(words) == ["a", ["b", ["c", ["d", "e"]]]]
    assert left_branching(words) == [[[["a", "b"], "c"], "d"], "e"]
    assert balanced(words) == ["a", [["b", "c"], ["d", "e"]]]  # right part: 4 = largest power of 2 < 5


def test_spans_exclude_the_whole_sentence_and_single_words():
    tree = [["the", "cat"], ["sat", ["on", ["the", "mat"]]]]
    assert spans(tree) == {(0, 2), (2, 6), (3, 6), (4, 6)}
    assert spans(tree, include_root=True) == {(0, 2), (2, 6), (3, 6), (4, 6), (0, 6)}


def test_sentence_scores_hand_computed():
    gold = [["the", "cat"], ["sat", ["on", ["the", "mat"]]]]  # spans (0,2) (2,6) (3,6) (4,6)
    pred = ["the", ["cat", ["sat", ["on", ["the", "mat"]]]]]  # spans (1,6) (2,6) (3,6) (4,6)
    prec, reca, f1 = sentence_prf(spans(pred), spans(gold))
    assert prec == pytest.approx(0.75) and reca == pytest.approx(0.75) and f1 == pytest.approx(0.75)


def test_empty_gold_rule_and_two_word_sentences():
    # Two words: no span but the whole sentence, so both sets are empty: precision and recall are 1.
    assert sentence_prf(spans(["a", "b"]), spans(["a", "b"])) == pytest.approx((1.0, 1.0, 1.0), abs=1e-7)
    # Flat gold over three words (no span), binary prediction with one span: recall 1, precision 0.
    prec, reca, f1 = sentence_prf(spans([["a", "b"], "c"]), spans(["a", "b", "c"]))
    assert (prec, reca) == (0.0, 1.0) and f1 == pytest.approx(0.0, abs=1e-7)


def test_parse_scores_conventions_side_by_side():
    scores = ParseScores()
    gold1 = [["the", "cat"], ["sat", ["on", ["the", "mat"]]]]
    pred1 = ["the", ["cat", ["sat", ["on", ["the", "mat"]]]]]  # 3 of 4 spans (root excluded)
    gold2 = [["a", "b"], "c"]
    pred2 = ["a", ["b", "c"]]  # 0 of 1
    scores.add(pred1, gold1, [(0, 2, "NP"), (2, 6, "VP"), (0, 6, "S")])
    scores.add(pred2, gold2)
    scores.add([], [])  # a sentence left empty by the preprocessing is counted, not scored
    s = scores.summary()
    assert s["n"] == 2 and s["empty"] == 1
    assert s["sentence_f1"] == pytest.approx((0.75 + 0.0) / 2, abs=1e-7)
    assert s["corpus_f1"] == pytest.approx(3 / 5)  # 3 matches, 5 predicted, 5 gold
    assert s["evalb_f1"] == pytest.approx(5 / 7)  # + the two whole-sentence spans
    assert s["recall_NP"] == 0.0 and s["recall_VP"] == 1.0 and s["recall_S"] == 1.0
    assert s["depth"] == pytest.approx((average_depth(pred1) + average_depth(pred2)) / 2)


def test_average_depth():
    assert average_depth(["a", ["b", "c"]]) == pytest.approx((1 + 2 + 2) / 3)
    assert average_depth("a") == 0


def test_self_f1_is_one_for_identical_runs_and_symmetric_for_binary_trees():
    trees_a = [["a", ["b", ["c", "d"]]], [["a", "b"], "c"]]
    trees_b = [[["a", "b"], ["c", "d"]], ["a", ["b", "c"]]]
    assert self_f1(trees_a, trees_a) == pytest.approx(1.0, abs=1e-7)
    assert self_f1(trees_a, trees_b) == pytest.approx(self_f1(trees_b, trees_a))


def test_drawing_keeps_word_order():
    tree = [["the", "cat"], "sat"]
    assert bracketed(tree) == "(X (X the cat) sat)"
    art = ascii_art(tree, ["the", "cat", "sat"])
    bottom = art.strip().splitlines()[-1].split()
    assert bottom == ["the", "cat", "sat"]


def test_a_parses_nltk_tree_draws_its_words_in_order(capsys):
    """`parse(...).tree.pretty_print()` (the README's first example): nltk's own drawing of a tree of words put
    `economy` before `the u.s.` (nltk 3.10); a `WordTree` draws them in order, subtrees and labels as nltk's."""
    import io

    from treenets.trees.draw import WordTree, to_nltk

    words = ["the", "u.s.", "economy", "grew", "N", "N", "in", "N", "mr.", "smith", "said"]
    tree = [[[["the", "u.s."], "economy"], [["grew", ["N", "N"]], ["in", "N"]]], [["mr.", "smith"], "said"]]
    drawn = to_nltk(tree)
    assert isinstance(drawn, WordTree) and drawn.leaves() == words and str(drawn).startswith("(X\n  (X (X (X the")
    drawn.pretty_print()
    assert capsys.readouterr().out.strip().splitlines()[-1].split() == words
    stream = io.StringIO()
    drawn[1].pretty_print(stream=stream, unicodelines=True)  # a subtree, nltk's options
    assert stream.getvalue().strip().splitlines()[-1].split() == ["mr.", "smith", "said"] and "─" in stream.getvalue()
