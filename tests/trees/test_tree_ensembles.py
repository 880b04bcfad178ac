"""Ensembles of trees: the generative search against a brute force over every binary tree of short sentences (with
hypothesis), the selective choice against its definition, and teachers built from a treebank whose ensemble is
known."""

from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treenets.trees import left_branching, random_tree, right_branching, spans
from treenets.trees.ensemble import (
    agreement,
    best_binary_tree,
    best_binary_trees,
    combine,
    nested_from_spans,
    span_scores,
)
from treenets.trees.metrics import node_spans, official_prf


def all_binary_trees(start: int, end: int):
    """Every binary tree over positions start..end-1, as nested lists."""
    if end - start == 1:
        yield start
        return
    for middle in range(start + 1, end):
        for left in all_binary_trees(start, middle):
            for right in all_binary_trees(middle, end):
                yield [left, right]


def objective(tree, teachers, weights) -> float:
    """sum_k w_k F1(tree, T_k), the official sentence F1, over the teachers with a tree."""
    return agreement(spans(tree), [None if t is None else spans(t) for t in teachers], weights)


def trees_of(n: int, seed: int):
    """A random binary or n-ary tree over positions 0..n-1."""
    rng = random.Random(seed)
    tree = random_tree(list(range(n)), rng)
    if rng.random() < 0.3 and isinstance(tree, list):  # flatten one node: a teacher need not be binary
        flat = []
        for child in tree:
            flat += child if isinstance(child, list) else [child]
        tree = flat
    return tree


@settings(max_examples=150, deadline=None)
@given(n=st.integers(1, 7), teachers=st.integers(1, 5), seed=st.integers(0, 10_000),
       weights=st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0]), min_size=5, max_size=5),
       missing=st.integers(0, 4))
def test_the_generative_tree_is_the_best_binary_tree(n, teachers, seed, weights, missing):
    """No binary tree of the sentence agrees more with the teachers than the generative one (the brute force over
    all of them), whatever the teachers' shapes, weights, or missing trees."""
    systems = [trees_of(n, seed + k) if n > 1 else 0 for k in range(teachers)]
    if missing < teachers and teachers > 1:
        systems[missing] = None  # a system without a tree for the sentence
    weights = weights[:teachers]
    tree, agree = combine(list(range(n)), systems, weights)
    if all(t is None for t in systems):
        assert tree is None
        return
    best = max(objective(candidate, systems, weights) for candidate in all_binary_trees(0, n))
    # (to the official F1's 1e-8s, which the search, on the exact F1, does not see: they only reorder exact ties)
    assert objective(tree, systems, weights) == pytest.approx(best, abs=1e-7)
    assert sorted(n for n in _flat(tree)) == list(range(n))  # a tree over every position
    assert [a is None for a in agree] == [t is None for t in systems]
    if n > 1:
        assert all(isinstance(node, list) and len(node) == 2 for node in _nodes(tree))  # binary


def _flat(tree):
    return [leaf for child in tree for leaf in _flat(child)] if isinstance(tree, list) else [tree]


def _nodes(tree):
    return [tree, *[n for child in tree for n in _nodes(child)]] if isinstance(tree, list) else []


@settings(max_examples=80, deadline=None)
@given(n=st.integers(2, 8), teachers=st.integers(2, 5), seed=st.integers(0, 10_000))
def test_the_selective_tree_is_the_teacher_that_agrees_most_with_the_others(n, teachers, seed):
    systems = [trees_of(n, seed + k) for k in range(teachers)]
    tree, _ = combine(list(range(n)), systems, mode="selective")
    totals = [objective(t, [o if j != k else None for j, o in enumerate(systems)], [1.0] * teachers)
              for k, t in enumerate(systems)]
    assert tree is systems[totals.index(max(totals))]  # the first of the best


def test_known_ensembles_of_teachers_built_from_a_tree():
    words = list(range(9))
    gold = [[0, [1, 2]], [[3, [4, 5]], [6, [7, 8]]]]
    right, left = right_branching(words), left_branching(words)
    # A majority of copies of the gold tree wins against the baselines; alone, a teacher is its own ensemble.
    assert combine(words, [gold, gold, right, left])[0] == gold
    assert spans(combine(words, [right])[0]) == spans(right)
    # Two right-branching teachers and a left-branching one: right-branching; weighting the left one: left.
    assert spans(combine(words, [right, right, left])[0]) == spans(right)
    assert spans(combine(words, [right, right, left], [1.0, 1.0, 3.0])[0]) == spans(left)
    # Selective picks the gold among three of its corruptions that each share most of its spans with it.
    corrupt = [[[0, [1, 2]], [[3, [4, 5]], [[6, 7], 8]]], [[[0, 1], 2], [[3, [4, 5]], [6, [7, 8]]]]]
    chosen, agree = combine(words, [corrupt[0], gold, corrupt[1]], mode="selective")
    assert chosen == gold and agree[1] == pytest.approx(1.0)  # (the official F1's 1e-8s)
    # No agreement at all (every teacher without a span): the right-branching tree (the shortest left children).
    assert spans(combine(words[:4], [[0, 1, 2, 3]] * 2)[0]) == spans(right_branching(list(range(4))))


@given(n=st.integers(1, 6), batch=st.integers(1, 4), seed=st.integers(0, 10_000))
def test_a_batchs_cky_is_each_sentences_alone_and_the_best_tree(n, batch, seed):
    """`best_binary_trees` over a batch: each sentence's tree is the one of the largest sum (brute force), and the
    one `best_binary_tree` finds alone, ties included (scores of few values: many ties)."""
    grids = np.random.default_rng(seed).integers(0, 3, size=(batch, n + 1, n + 1)).astype(float)
    for grid, (found, total) in zip(grids, best_binary_trees(grids, n)):
        assert (found, total) == best_binary_tree(grid, n)
        sums = [sum(grid[s, e] for s, e in spans(tree, True) if e - s >= 2) for tree in all_binary_trees(0, n)]
        assert total == max(sums) and sum(grid[s, e] for s, e in found) == total


@given(n=st.integers(1, 9), seed=st.integers(0, 10_000))
def test_the_tree_of_a_trees_spans_is_the_tree(n, seed):
    """`nested_from_spans` of a tree's spans (binary or n-ary, in any order, one-word spans among them) gives the
    tree back, its words in order."""
    tree = trees_of(n, seed) if n > 1 else 0
    found = [*node_spans(tree)[0], (0, 1)]
    random.Random(seed).shuffle(found)
    assert nested_from_spans(list(range(n)), found) == tree


def test_a_cky_over_span_scores_by_hand():
    scores = span_scores([{(0, 2)}, {(0, 2)}, {(1, 3)}], [1.0, 1.0, 1.0], 3)
    assert scores[0, 2] == pytest.approx(2 * 2 / (1 + 1)) and scores[1, 3] == pytest.approx(2 / 2)
    assert best_binary_tree(scores, 3) == ([(0, 2), (0, 3)], pytest.approx(2.0))
    assert nested_from_spans(["a", "b", "c"], [(0, 2), (0, 3)]) == [["a", "b"], "c"]
    assert nested_from_spans(["a", "b", "c", "d"], [(0, 4), (1, 3)]) == ["a", ["b", "c"], "d"]  # n-ary kept
    assert official_prf(1, 1, 1)[2] == pytest.approx(1.0)


def test_every_binary_tree_enumerated_is_distinct_and_catalan_many():
    trees = list(all_binary_trees(0, 6))
    assert len(trees) == 42 and len({str(t) for t in trees}) == 42
    assert list(itertools.islice(all_binary_trees(0, 3), 2)) == [[0, [1, 2]], [[0, 1], 2]]
