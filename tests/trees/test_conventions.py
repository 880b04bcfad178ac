"""The conventions of the literature (`treenets.trees.conventions`), each checked on cases computed by hand from
its definition: ordinary trees, unary chains (at the root and inside), sentences of one word, sentences without a
gold span to find, punctuation dropped from the gold trees; and properties that hold for any trees."""

from __future__ import annotations

import random

import nltk
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from treenets.trees import ParseScores, random_tree, sentence_prf, spans
from treenets.trees.conventions import CONVENTIONS, ConventionScores
from treenets.trees.metrics import node_spans, official_prf
from treenets.trees.ptb import WORD_RULES, collapse, load_gold, phrases, tree_words
from treenets.trees.walk import leaves

NAMES = list(CONVENTIONS)


def scored(name: str, pairs: list[tuple]) -> ConventionScores:
    """`pairs` of (predicted, gold) nested-list trees scored under convention `name`."""
    preds, golds = zip(*pairs)
    return ConventionScores.score(CONVENTIONS[name], [node_spans(p) for p in preds], [node_spans(g) for g in golds])


def sentence(name: str, pred, gold) -> tuple:
    """(match, predicted, gold, F1) of one sentence, or None when the convention skips it."""
    s = scored(name, [(pred, gold)])
    return (int(s.match[0]), int(s.predicted[0]), int(s.gold[0]), float(s.f1[0])) if len(s.f1) else None


GOLD = [["the", "cat"], ["sat", ["on", ["the", "mat"]]]]  # spans (0,2) (2,6) (3,6) (4,6), root (0,6)
PRED = ["the", ["cat", ["sat", ["on", ["the", "mat"]]]]]  # spans (1,6) (2,6) (3,6) (4,6), root (0,6)


def test_ordinary_binary_trees():
    for name in ("official", "kim", "li-macro", "li-micro"):  # 3 of 4 spans match, the root out
        match, predicted, gold, f1 = sentence(name, PRED, GOLD)
        assert (match, predicted, gold) == (3, 4, 4) and f1 == pytest.approx(0.75, abs=1e-7)
    # EVALB counts the whole sentence too: 4 of 5
    assert sentence("evalb", PRED, GOLD) == (4, 5, 5, pytest.approx(0.8))


def test_a_unary_chain_at_the_root_keeps_the_whole_sentence_in_kims_convention():
    gold = [["a", ["b", "c"]]]  # (S (VP a (X b c))): the root spans the sentence twice
    right = ["a", ["b", "c"]]
    # official, Li: the whole sentence is never a span: (1,3) found, 1 of 1
    assert sentence("official", right, gold)[:3] == (1, 1, 1)
    assert sentence("li-macro", right, gold) == (1, 1, 1, 1.0)
    # compare_trees.py drops one span over the sentence (the last closed): the VP's stays in the gold set, and no
    # binary tree has it: precision 1, recall 1/2
    assert sentence("kim", right, gold) == (1, 1, 2, pytest.approx(2 / 3, abs=1e-7))
    # A predicted tree with a unary root gets it back
    assert sentence("kim", [["a", ["b", "c"]]], gold) == (2, 2, 2, pytest.approx(1.0, abs=1e-7))
    # EVALB: every bracket, each node of the chain: gold (1,3) (0,3) (0,3); predicted (1,3) (0,3)
    assert sentence("evalb", right, gold) == (2, 2, 3, pytest.approx(0.8))


def test_a_two_word_sentence_with_a_unary_root_scores_zero_in_kims_convention():
    # `is 1990-style` after its empty subject and punctuation are dropped: (S (VP (VBZ is) (ADJP (JJ ...))))
    tree = nltk.Tree.fromstring("( (S (NP-SBJ (-NONE- *) ) (VP (VBZ is) (ADJP-PRD (JJ 1990-style) ) ) (. .) ))")
    gold = phrases(tree)
    assert gold == [["is", ["N-style"]]] and collapse(tree) == ["is", "N-style"]
    pred = ["is", "N-style"]
    assert sentence("official", pred, gold)[3] == pytest.approx(1.0, abs=1e-7)  # nothing to find: 100
    assert sentence("kim", pred, gold) == (0, 0, 1, 0.0)  # the VP's span over both words, never predicted
    assert sentence("li-macro", pred, gold) == (0, 0, 0, 1.0)


def test_unary_chains_inside_count_once_per_node_in_li_and_evalb():
    gold = [["a", "b"], "c"]
    pred = [[["a", "b"]], "c"]  # (0,2) twice
    assert sentence("official", pred, gold)[:3] == (1, 1, 1)
    assert sentence("kim", pred, gold)[:3] == (1, 1, 1)
    assert sentence("li-macro", pred, gold) == (1, 2, 1, pytest.approx(2 / 3))  # multiset: one of two matched
    assert sentence("evalb", pred, gold) == (2, 3, 2, pytest.approx(0.8))


def test_li_counts_a_gold_unary_chain_once_as_its_preprocessing_collapses_it():
    # The issue's sentence: SBAR over S over `the cat sat` is one span in Li et al.'s gold trees
    tree = nltk.Tree.fromstring("(S (NP (PRP he)) (VP (VBD said) (SBAR (S (NP (DT the) (NN cat)) (VP (VBD sat))))))")
    gold = phrases(tree)
    assert gold == [["he"], ["said", [[["the", "cat"], ["sat"]]]]]
    pred = ["he", ["said", ["the", ["cat", "sat"]]]]  # (1,5) (2,5) (3,5)
    # gold spans (1,5) (2,5) (2,4), the chain's (2,5) once: 2 matched of 3 and 3
    for name in ("li-micro", "li-macro"):
        assert sentence(name, pred, gold) == (2, 3, 3, pytest.approx(2 / 3))
    assert sentence("official", pred, gold)[:3] == sentence("kim", pred, gold)[:3] == (2, 3, 3)
    # EVALB counts each node: he, said-VP, SBAR, S, the-cat, sat, the root: 7; predicted 4, matched 3
    assert sentence("evalb", pred, gold) == (3, 4, 7, pytest.approx(6 / 11))
    # A predicted unary chain counts twice, as Li et al.'s evaluate.py takes the predicted trees as they are
    assert sentence("li-micro", ["he", ["said", [["the", ["cat", "sat"]]]]], gold) == (2, 4, 3, pytest.approx(4 / 7))


def test_sentences_of_one_word():
    for gold in ("yes", ["yes"]):  # a word alone, or a phrase over one word (NP (NN Yes))
        assert sentence("kim", "yes", gold) is None  # skipped, and counted as such
        assert sentence("official", "yes", gold) == (0, 0, 0, pytest.approx(1.0, abs=1e-7))
        assert sentence("li-macro", "yes", gold) == (0, 0, 0, 1.0)
        assert sentence("evalb", "yes", gold) == (1, 1, 1, 1.0)  # the whole sentence, one bracket on each side
    assert scored("kim", [("yes", "yes"), (PRED, GOLD)]).skipped == 1
    # A one-word phrase under a one-word phrase: EVALB counts both brackets
    assert sentence("evalb", "yes", [["yes"]]) == (1, 1, 2, pytest.approx(2 / 3))


def test_sentences_without_a_gold_span_to_find():
    flat, binary = ["a", "b", "c"], [["a", "b"], "c"]
    # official and Kim (the PRPN formula): recall 1, precision 0 when something is predicted; 1 when nothing is
    assert sentence("official", binary, flat) == (0, 1, 0, 0.0)
    assert sentence("kim", binary, flat) == (0, 1, 0, 0.0)
    assert sentence("official", flat, flat)[3] == pytest.approx(1.0, abs=1e-7)
    # Li: 100 when nothing is predicted, 0 otherwise
    assert sentence("li-macro", binary, flat) == (0, 1, 0, 0.0)
    assert sentence("li-macro", flat, flat) == (0, 0, 0, 1.0)
    # EVALB: the whole sentence is a bracket to find
    assert sentence("evalb", binary, flat) == (1, 2, 1, pytest.approx(2 / 3))
    # two words: no span but the whole sentence's, under every convention but EVALB
    for name in ("official", "kim", "li-macro"):
        assert sentence(name, ["a", "b"], ["a", "b"])[3] == pytest.approx(1.0, abs=1e-7)


def test_punctuation_is_dropped_from_the_gold_tree_before_any_convention():
    tree = nltk.Tree.fromstring("(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (. !)) (, ,) (ADVP (RB too)) (. .)))")
    assert tree_words(tree) == ["the", "cat", "sat", "too"]
    gold = phrases(tree)  # the wrapper TOP dropped; VP and ADVP left over one word each
    assert gold == [["the", "cat"], ["sat"], ["too"]]
    assert spans(gold) == spans(collapse(tree)) == {(0, 2)}
    pred = [["the", "cat"], ["sat", "too"]]
    assert sentence("official", pred, gold) == (1, 2, 1, pytest.approx(2 / 3, abs=1e-7))
    # EVALB: (0,2), (2,3), (3,4) and the sentence (0,4) in gold; (0,2), (2,4), (0,4) predicted
    assert sentence("evalb", pred, gold) == (2, 3, 4, pytest.approx(4 / 7))


def test_sentence_and_corpus_figures():
    flat, binary = ["a", "b", "c"], [["a", "b"], "c"]
    pairs = [(PRED, GOLD), ([[["a", "b"]], "c"], [["a", "b"], "c"]), (binary, flat)]
    micro = scored("li-micro", pairs)  # counts: (3, 4, 4), (1, 2, 1), (0, 1, 0)
    assert micro.figure() == pytest.approx(2 * 4 / (7 + 5))
    macro = scored("li-macro", pairs)
    assert macro.figure() == pytest.approx((0.75 + 2 / 3 + 0.0) / 3)
    evalb = scored("evalb", pairs)  # (4, 5, 5), (2, 3, 2), (1, 2, 1)
    assert evalb.figure() == pytest.approx(2 * 7 / (10 + 8))
    summary = evalb.summary()
    assert summary["precision"] == pytest.approx(7 / 10) and summary["recall"] == pytest.approx(7 / 8)
    assert summary["n"] == 3 and summary["skipped"] == 0
    # Weighted: the second sentence twice, the third not at all
    assert macro.figure(weights=np.array([1.0, 2.0, 0.0])) == \
        pytest.approx((0.75 + 2 * 2 / 3) / 3)


def test_official_convention_is_the_official_table():
    pairs = [(PRED, GOLD), (["a", ["b", "c"]], [["a", "b"], "c"]), ("x", "x"), (["a", "b", "c"], [["a", "b"], "c"])]
    official = ParseScores()
    for pred, gold in pairs:
        official.add(pred, gold)
    s = scored("official", pairs)
    assert s.figure() == pytest.approx(official.summary()["sentence_f1"], abs=1e-12)
    assert s.summary()["corpus_f1"] == pytest.approx(official.summary()["corpus_f1"], abs=1e-12)


# Trees with unary chains and flat nodes: a list of one to three children, words numbered in order.
def _trees(max_leaves: int = 12):
    def build(children):
        return st.lists(children, min_size=1, max_size=3)

    return st.recursive(st.just("w"), build, max_leaves=max_leaves)


def _numbered(tree):
    counter = iter(range(10_000))

    def walk(node):
        return [walk(child) for child in node] if isinstance(node, list) else f"w{next(counter)}"

    return walk(tree)


def _words(tree) -> int:
    return node_spans(tree)[1]


def _collapsed(tree):
    """`tree` with each unary chain one node (a list whose one child is a list is that child), as Li et al.'s
    preprocess.py writes the gold trees."""
    while isinstance(tree, list) and len(tree) == 1 and isinstance(tree[0], list):
        tree = tree[0]
    return [_collapsed(child) for child in tree] if isinstance(tree, list) else tree


@given(_trees(), st.sampled_from(NAMES))
def test_a_tree_against_itself_scores_one(tree, name):
    tree = _numbered(tree)
    # Li et al. score the predicted tree as it is against the gold tree collapsed: a tree scores 1 against
    # itself once its chains are collapsed
    s = scored(name, [(_collapsed(tree) if name.startswith("li-") else tree, tree)])
    if name == "kim" and _words(tree) == 1:
        assert s.skipped == 1 and len(s.f1) == 0
    else:
        assert s.figure() == pytest.approx(1.0, abs=1e-7)


def _reshaped(words: list[str], rng: random.Random):
    """Another tree over `words`: a random binary tree, some of its nodes wrapped in a unary node, some flattened."""

    def walk(node):
        if not isinstance(node, list):
            return node
        children = [walk(child) for child in node]
        if rng.random() < 0.2 and all(isinstance(c, str) for c in children[0:1]) and isinstance(children[-1], list):
            children = children[:-1] + children[-1]  # flattened one level
        return [children] if rng.random() < 0.2 else children

    return walk(random_tree(words, rng)) if len(words) > 1 else words[0]


@given(_trees(), st.integers(0, 10_000), st.sampled_from(NAMES))
def test_f1_is_symmetric(tree, seed, name):
    a = _numbered(tree)
    b = _reshaped(leaves(a), random.Random(seed))
    if name.startswith("li-"):  # symmetric between trees without unary chains (the gold side is collapsed)
        a, b = _collapsed(a), _collapsed(b)
    ab, ba = sentence(name, a, b), sentence(name, b, a)
    if ab is None:
        assert ba is None
    else:
        assert ab[0] == ba[0] and (ab[1], ab[2]) == (ba[2], ba[1]) and ab[3] == pytest.approx(ba[3], abs=1e-12)


@given(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6))
def test_the_official_formula_from_counts(overlap, extra_pred, extra_gold):
    pred = {(k, k + 2) for k in range(overlap + extra_pred)}
    gold = {(k, k + 2) for k in range(overlap)} | {(100 + k, 102 + k) for k in range(extra_gold)}
    assert sentence_prf(pred, gold) == official_prf(overlap, overlap + extra_pred, overlap + extra_gold)


def test_li_et_al_drop_a_list_markers_phrase_whatever_the_tags_of_its_words(tmp_path):
    # WSJ 22 with predicted tags (22.auto.clean, line 1089): the markers `A.` `B.` `C.` tagged JJ and NNP. Li et al.'s
    # preprocess.py removes every subtree labelled LST; the official rule keeps words by their tags alone.
    path = tmp_path / "list.trees"
    path.write_text("(TOP (NP (NP (LST (JJ A.)) (JJ manual) (NNS typewriters)) (, ,) (NP (LST (NNP B.)) (JJ "
                    "black-and-white) (NNS snapshots)) (, ,) (NP (LST (NNP C.)) (NN radio) (NN adventure) (NNS "
                    "shows)) (. .)))\n")
    for name in ("li", "li-punct"):
        (sentence,) = load_gold(path, rule=WORD_RULES[name])
        assert sentence.words[:2] == ["manual", "typewriters"] and "a." not in sentence.words
        assert sentence.gold[0] == ["manual", "typewriters"]
    (official,) = load_gold(path)
    assert official.words[:3] == ["a.", "manual", "typewriters"] and len(official.words) == 10
