"""Parent-pointer trees: SICK's `.parents`/`.cparents` lines, bracketed SST trees, binarisation."""

from __future__ import annotations

import pytest

from treenets.errors import TreenetsError
from treenets.trees.parents import ParentTree, binarize, parse_bracketed, parse_parents


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
