"""Parent-pointer trees: SICK's `.parents`/`.cparents` lines, bracketed SST trees, binarisation."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treenets.core.errors import TreenetsError
from treenets.trees.build import attach_dropped, random_tree, right_branching
from treenets.trees.metrics import spans
from treenets.trees.parents import (
    ParentTree,
    binarize,
    from_nested,
    from_spans,
    labels_from,
    node_spans,
    parse_bracketed,
    parse_parents,
    to_nested,
)


def test_parents_lines():
    tree = parse_parents("2 0 2", ["a", "b", "c"], "x:1")
    assert tree.parents == (1, -1, 1) and tree.root == 1 and tree.children[1] == (0, 2)
    assert tree.height == (0, 1, 0)


@pytest.mark.parametrize("line,words,message", [
    ("2 1 2", ["a", "b", "c"], "0 roots"),
    ("0 0 2", ["a", "b", "c"], "2 roots"),
    ("2 0 3", ["a", "b", "c"], "node 3 has parent 3"),
    ("3 1 2 0", ["a", "b", "c", "d"], "cycle"),
    ("2 0", ["a", "b", "c"], "2 parents for 3 words"),
    ("2 x 0", ["a", "b", "c"], "expected integers"),
    ("7 0 2", ["a", "b", "c"], "node 1 has parent 7"),
])
def test_malformed_parents(line, words, message):
    with pytest.raises(TreenetsError, match=message) as info:
        parse_parents(line, words, "a.parents:7")
    assert "a.parents:7" in str(info.value)


def test_constituency_parents_and_word_order():
    # words 1..3, then phrases 4 (= [w2 w3]) and 5 (root = [w1 4])
    tree = parse_parents("5 4 4 5 0", ["a", "b", "c"], "x:1", constituency=True)
    assert tree.children[4] == (0, 3) and tree.children[3] == (1, 2)
    with pytest.raises(TreenetsError, match="only phrases"):
        parse_parents("0 1 1", ["a", "b", "c"], "x:1", constituency=True)


def test_bracketed_sst_tree_keeps_order_and_labels():
    tree = parse_bracketed("(3 (2 It) (4 (4 works) (2 .)))", "x:1")
    assert tree.words == ("It", "works", ".")
    assert tree.labels[:3] == (2, 4, 2) and tree.labels[tree.root] == 3
    assert tree.children[tree.root][0] == 0  # "It" first, then the phrase "works ."
    with pytest.raises(TreenetsError, match="unbalanced"):
        parse_bracketed("(3 (2 It) (4 works)", "x:1")
    with pytest.raises(TreenetsError, match="not an integer"):
        parse_bracketed("(S (NP It))", "x:1")
    assert parse_bracketed("(S (NP It) (VP works))", "x:1", require_labels=False).words == ("It", "works")


def test_binarize_right_factors_wide_nodes():
    tree = ParentTree((4, 4, 4, 4, -1), ("a", "b", "c", "d"))  # one phrase over four words
    binary = binarize(tree)
    assert max(len(k) for k in binary.children) == 2
    root = binary.root
    assert binary.children[root][0] == 0  # [a, [b, [c, d]]]
    middle = binary.children[root][1]
    assert binary.children[middle][0] == 1
    assert binary.children[binary.children[middle][1]] == (2, 3)


# --- trees over a Tree-LSTM's tokens from a tree over the words a language model kept --------------------------


def test_dropped_tokens_join_a_neighbouring_word_and_a_final_one_the_whole_sentence():
    tokens = ["``", "It", "works", ",", "he", "said", "-LRB-", "twice", "-RRB-", ".", "''"]
    kept = [1, 2, 4, 5, 7]
    tree = attach_dropped(right_branching(kept), kept, tokens)
    # `` opens: joins It; the comma joins works; -LRB- opens: joins twice; -RRB- . '' come after the last word:
    # each closes the whole sentence.
    assert tree == [[[[[0, 1], [[2, 3], [4, [5, [6, 7]]]]], 8], 9], 10]
    # Before the first word, every dropped token waits for it.
    assert attach_dropped(3, [3], ["(", "-", ",", "a", "!"]) == [[0, [1, [2, 3]]], 4]


def test_a_lone_word_with_punctuation_around_it():
    assert attach_dropped(1, [1], ["``", "yes", "''"]) == [[0, 1], 2]
    assert attach_dropped(0, [0], ["yes"]) == 0
    with pytest.raises(ValueError, match="at least one kept token"):
        attach_dropped(0, [], ["!"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["w", ",", "``", "-LRB-", "."]), min_size=1, max_size=14), st.integers(0, 10**6))
def test_attached_trees_are_binary_cover_every_token_and_keep_the_words_phrases(kinds, seed):
    kinds[len(kinds) // 2] = "w"  # at least one word
    tokens = [f"{kind}{i}" if kind == "w" else kind for i, kind in enumerate(kinds)]
    kept = [i for i, kind in enumerate(kinds) if kind == "w"]
    words_tree = random_tree(kept, random.Random(seed)) if len(kept) > 1 else kept[0]
    tree = from_nested(attach_dropped(words_tree, kept, tokens), tokens)
    assert all(len(children) in (0, 2) for children in tree.children)  # binary
    assert sorted(node_spans(tree).values())[0][0] == 0 and node_spans(tree)[tree.root] == (0, len(tokens))
    # Every phrase of the words' tree is, restricted to the words, the words of a phrase of the full tree.
    full = {tuple(p for p in kept if s <= p < e) for s, e in node_spans(tree).values()}
    index = {position: i for i, position in enumerate(kept)}
    for start, end in spans(words_tree if isinstance(words_tree, list) else [words_tree], include_root=True):
        assert tuple(kept[start:end]) in full or end - start == 1, (start, end, index)


def test_from_nested_numbers_words_first_and_checks_coverage():
    tree = from_nested([[0, 1], 2], ["a", "b", "c"])
    assert tree.parents == (3, 3, 4, 4, -1) and tree.words == ("a", "b", "c")
    with pytest.raises(ValueError, match="cover the 3 words once each, in order"):
        from_nested([[0, 1], 1], ["a", "b", "c"])


def test_labels_come_from_the_gold_phrase_over_the_same_words():
    gold = parse_bracketed("(3 (2 (2 a) (1 b)) (4 c))", "x")
    other = from_nested([0, [1, 2]], ["a", "b", "c"])
    labelled = labels_from(other, gold)
    assert labelled.labels[:3] == (2, 1, 4)  # the words keep theirs
    assert labelled.labels[labelled.root] == 3  # the sentence keeps its label
    assert sorted(labelled.labels[3:]) == [-1, 3]  # [b c] is no gold phrase
    with pytest.raises(ValueError, match="different words"):
        labels_from(from_nested([0, 1], ["a", "x"]), parse_bracketed("(1 (1 a) (1 b))", "x"))


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 14), st.integers(0, 10**6))
def test_a_tree_is_rebuilt_from_the_spans_of_its_nodes(n, seed):
    words = [f"w{i}" for i in range(n)]
    tree = from_nested(random_tree(list(range(n)), random.Random(seed)) if n > 1 else 0, words)
    rebuilt = from_spans(list(node_spans(tree).values()), words)
    assert to_nested(rebuilt) == to_nested(tree)
