"""Binary trees from syntactic distances, and the baseline trees, as nested lists of words."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np

from treenets.trees.walk import fold

SPLITS = ("official", "before", "after")


def tree_from_distances(words: Sequence[str], distances: Sequence[float], split: str = "official"):
    """The greedy top-down tree of ON-LSTM/PRPN: split the span at the largest distance, recursively.

    Args:
        words: the sentence.
        distances: one distance per word.
        split: `"official"` (the ON-LSTM/PRPN code): at the first arg-max `k`, the tree is
            `[tree(words[:k]), [words[k], tree(words[k+1:])]]` (parts dropped when empty);
            `"before"` (later work): split between `k - 1` and `k`, with `k` the arg-max over positions 1..n-1,
            giving `[tree(words[:k]), tree(words[k:])]`;
            `"after"` (StructFormer's `build_tree`, whose distance `k` is that of the gap after word `k`): split
            after every word `k` < n-1 of the largest distance, `[tree(words[:k+1]), tree(words[k+1:])]`, one
            node of several parts when several gaps share it (the last word's distance is never read).

    Returns:
        a word (one-word sentence) or nested lists of words; `[]` for an empty sentence.
    """
    if len(words) != len(distances):
        raise ValueError(f"{len(words)} words but {len(distances)} distances")
    if split not in SPLITS:
        raise ValueError(f"split={split!r}: expected one of {SPLITS}")
    distances = np.asarray(distances, dtype=np.float64)
    words = list(words)

    def official(lo: int, hi: int):
        k = lo + int(np.argmax(distances[lo:hi]))
        right = words[k] if k == hi - 1 else [words[k], range(k + 1, hi)]
        return right if k == lo else [range(lo, k), right]

    def before(lo: int, hi: int):
        k = lo + 1 + int(np.argmax(distances[lo + 1 : hi]))
        return [range(lo, k), range(k, hi)]

    def after(lo: int, hi: int):
        gaps = distances[lo : hi - 1]
        ends = [lo + 1 + k for k in np.flatnonzero(gaps == gaps.max())] + [hi]
        return [range(start, end) for start, end in zip([lo, *ends[:-1]], ends)]

    return _top_down(words, {"official": official, "before": before, "after": after}[split])


def without(tree, dropped: set[str]):
    """`tree` without the words in `dropped`, a node left with one child replaced by it (the official
    `remove_bracket`, which scores Ordered Memory's trees of formulas without their brackets); `[]` if no word
    is left."""
    def node(_, children: list):
        kept = [child for child in children if child is not None]
        return None if not kept else kept[0] if len(kept) == 1 else kept

    result = fold(tree, lambda word: None if word in dropped else word, node)
    return [] if result is None else result


def _top_down(words: list, split):
    """The tree over `words`, built from the top without recursion (a monotone run of distances or a
    right-branching tree nests as deep as the sentence is long).

    `split(lo, hi)` gives the node over `words[lo:hi]` (two or more words) as a list whose items are words,
    `range`s of words still to split, or such lists; a range of one word becomes that word.
    """
    if not words:
        return []
    root = [range(len(words))]
    stack = [root]
    while stack:
        node = stack.pop()
        for i, item in enumerate(node):
            if isinstance(item, range):
                node[i] = item = words[item.start] if len(item) == 1 else split(item.start, item.stop)
            if isinstance(item, list):
                stack.append(item)
    return root[0]


def right_branching(words: Sequence[str]):
    """`[w1, [w2, [w3, ...]]]`"""
    words = list(words)
    return _top_down(words, lambda lo, hi: [words[lo], range(lo + 1, hi)])


def left_branching(words: Sequence[str]):
    """`[[[w1, w2], w3], ...]`"""
    words = list(words)
    return _top_down(words, lambda lo, hi: [range(lo, hi - 1), words[hi - 1]])


def balanced(words: Sequence[str]):
    """The balanced baseline of the official `parse_comparison.py`: the right part holds the largest power of
    two below the length (half of it rounded up to a power of two), recursively."""

    def split(lo: int, hi: int):
        middle = hi - 2 ** math.ceil(math.log2(hi - lo)) // 2
        return [range(lo, middle), range(middle, hi)]

    return _top_down(list(words), split)


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


# Tokens that open something (a quotation, a bracket): a dropped one joins the word after it, not before.
OPENING = frozenset({"``", "`", "-LRB-", "-LSB-", "-LCB-", "(", "[", "{"})


def attach_dropped(tree, kept: Sequence[int], tokens: Sequence[str]):
    """A binary tree over all of `tokens` (as positions 0..n-1) from `tree`, a binary tree over the positions
    `kept` (e.g. the words a language model parsed, its normaliser having dropped punctuation).

    Each dropped token joins a neighbouring word as a two-leaf phrase, the way a treebank attaches
    punctuation low: to the word before it (`(Schwarzenegger ,)`), or after it when it opens something or
    comes first (`(`` Conan)`), and so does every dropped token between an opening one and the next word; the
    dropped tokens after the last word join the whole sentence, so a final period closes the root
    (`((It works) .)`).

    Args:
        tree: nested lists of positions (a lone position for one word), over `kept`.
        kept: the positions the tree covers, increasing, at least one.
        tokens: the sentence's tokens (for the rule on opening tokens).

    Returns:
        nested lists of positions 0..len(tokens)-1.
    """
    if not kept:
        raise ValueError("attach_dropped needs at least one kept token")
    before: dict[int, list[int]] = {p: [] for p in kept}  # dropped tokens that join the word from the left
    after: dict[int, list[int]] = {p: [] for p in kept}
    previous = None
    waiting: list[int] = []  # dropped opening tokens (or leading ones) waiting for the next word
    for position in range(kept[-1] + 1):
        if position in before:
            before[position] = waiting
            waiting, previous = [], position
        elif previous is None or waiting or tokens[position] in OPENING:
            waiting.append(position)  # after an opening token, the rest wait too: the tokens stay in order
        else:
            after[previous].append(position)

    def leaf(position: int):
        node = position
        for dropped in after[position]:
            node = [node, dropped]
        for dropped in reversed(before[position]):
            node = [dropped, node]
        return node

    def rebuild(item):  # a node of `tree` with its leaves replaced, without recursion
        return fold(item, leaf, lambda _, children: children)

    root = rebuild(tree)
    for dropped in range(kept[-1] + 1, len(tokens)):
        root = [root, dropped]
    return root
