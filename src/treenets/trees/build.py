"""Binary trees from syntactic distances, and the baseline trees, as nested lists of words."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np

SPLITS = ("official", "before")


def tree_from_distances(words: Sequence[str], distances: Sequence[float], split: str = "official"):
    """The greedy top-down tree of ON-LSTM/PRPN: split the span at the largest distance, recursively.

    Args:
        words: the sentence.
        distances: one distance per word.
        split: `"official"` (the ON-LSTM/PRPN code): at the first arg-max `k`, the tree is
            `[tree(words[:k]), [words[k], tree(words[k+1:])]]` (parts dropped when empty);
            `"before"` (later work): split between `k - 1` and `k`, with `k` the arg-max over positions 1..n-1,
            giving `[tree(words[:k]), tree(words[k:])]`.

    Returns:
        a word (one-word sentence) or nested lists of words; `[]` for an empty sentence.
    """
    if len(words) != len(distances):
        raise ValueError(f"{len(words)} words but {len(distances)} distances")
    if split not in SPLITS:
        raise ValueError(f"split={split!r}: expected one of {SPLITS}")
    distances = np.asarray(distances, dtype=np.float64)
    build = _official if split == "official" else _before
    return build(list(words), distances) if words else []


def _official(words, distances):
    if len(words) == 1:
        return words[0]
    k = int(np.argmax(distances))
    right = words[k] if k == len(words) - 1 else [words[k], _official(words[k + 1 :], distances[k + 1 :])]
    return right if k == 0 else [_official(words[:k], distances[:k]), right]


def _before(words, distances):
    if len(words) == 1:
        return words[0]
    k = int(np.argmax(distances[1:])) + 1
    return [_before(words[:k], distances[:k]), _before(words[k:], distances[k:])]


def right_branching(words: Sequence[str]):
    """`[w1, [w2, [w3, ...]]]`"""
    words = list(words)
    if len(words) <= 1:
        return words[0] if words else []
    return [words[0], right_branching(words[1:])]


def left_branching(words: Sequence[str]):
    """`[[[w1, w2], w3], ...]`"""
    words = list(words)
    if len(words) <= 1:
        return words[0] if words else []
    return [left_branching(words[:-1]), words[-1]]


def balanced(words: Sequence[str]):
    """The balanced baseline of the official `parse_comparison.py`: the right part holds the largest power of
    two below the length (half of it rounded up to a power of two), recursively."""
    words = list(words)
    if len(words) <= 1:
        return words[0] if words else []
    right = 2 ** math.ceil(math.log2(len(words))) // 2
    return [balanced(words[: len(words) - right]), balanced(words[len(words) - right :])]


def random_tree(words: Sequence[str], rng: random.Random):
    """A random binary tree: merge a uniformly chosen adjacent pair until one node is left (official
    `randomize`)."""
    nodes = list(words)
    if not nodes:
        return []
    while len(nodes) > 1:
        i = rng.randrange(len(nodes) - 1)
        nodes[i : i + 2] = [[nodes[i], nodes[i + 1]]]
    return nodes[0]
