"""Ensembles of parsers' trees (Shayegh, Cao, Zhu, Cheung & Mou, ICLR 2024, "Ensemble Distillation for Unsupervised
Constituency Parsing", section 3.1): for each sentence, the tree that agrees most with the systems' trees.

Agreement is the sentence-level F1 of the `official` convention (the spans of two or more words, the whole
sentence's left out; `treenets.trees.metrics`), weighted per system:

    generative   argmax over the binary trees T of the sentence of  sum_k w_k F1(T, T_k)
    selective    argmax over the systems' own trees T_j of  sum_{k != j} w_k F1(T_j, T_k)

A binary tree over n words has n - 2 spans that count, whatever its shape, so F1(T, T_k) = 2 |T & T_k| / (n - 2 +
|T_k|) and the generative objective is a sum over T's spans of their scores, score(s, e) = sum_k 2 w_k [(s, e) in
T_k] / (n - 2 + |T_k|): a CKY over span scores finds the best tree (the root's span, in every tree, adds the same to
all). A system without a tree for the sentence (a file that lacks it) takes no part in it; a sentence no system
parsed has no ensemble tree.

Ties are broken deterministically: the generative search takes, in each span, the split point with the left child
shortest among the best (and so, with no agreement at all, the right-branching tree); the selective one takes the
first system in the given order among the best.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from treenets.trees.metrics import official_prf, spans


def span_scores(trees: Sequence[set | None], weights: Sequence[float], n: int) -> np.ndarray:
    """[n + 1, n + 1] the generative objective's score of each span (start, end exclusive): the weighted F1 share
    of each system's tree that holds it."""
    scores = np.zeros((n + 1, n + 1))
    size = max(n - 2, 0)
    for found, weight in zip(trees, weights):
        if found is None or not found and not size:
            continue
        for start, end in found:
            scores[start, end] += 2.0 * weight / (size + len(found))
    return scores


def best_binary_tree(scores: np.ndarray, n: int) -> tuple[list[tuple[int, int]], float]:
    """The binary tree over n words with the largest sum of `scores` over its spans of two or more words (the
    whole sentence's included), by CKY over the widths: its spans (start, end exclusive) and that sum. Ties: the
    split point with the shortest left child."""
    return best_binary_trees(scores[None], n)[0]


def best_binary_trees(scores: np.ndarray, n: int) -> list[tuple[list[tuple[int, int]], float]]:
    """`best_binary_tree` of each sentence of a batch of one length: scores [B, n + 1, n + 1] (spans [start, end
    exclusive]), one CKY over the widths for all of them."""
    batch = np.arange(len(scores))[:, None, None]
    best = np.zeros(scores.shape)
    split = np.zeros(scores.shape, dtype=np.int64)
    for width in range(2, n + 1):
        starts = np.arange(0, n - width + 1)
        ends = starts + width
        # candidates[b, c, k]: the split after k + 1 words of the cell starting at starts[c]
        lefts = starts[:, None] + np.arange(1, width)[None, :]
        candidates = best[batch, starts[:, None], lefts] + best[batch, lefts, ends[:, None]]
        choice = candidates.argmax(axis=2)  # the first maximum: the shortest left child
        cells = np.arange(len(starts))
        best[:, starts, ends] = np.take_along_axis(candidates, choice[..., None], axis=2)[..., 0] + \
            scores[:, starts, ends]
        split[:, starts, ends] = lefts[cells[None, :], choice]
    trees = []
    for b in range(len(scores)):
        found, stack = [], [(0, n)] if n >= 2 else []
        while stack:
            start, end = stack.pop()
            found.append((start, end))
            middle = split[b, start, end]
            stack += [(s, e) for s, e in ((start, middle), (middle, end)) if e - s >= 2]
        trees.append((sorted(found), float(best[b, 0, n]) if n >= 2 else 0.0))
    return trees


def nested_from_spans(words: Sequence, found: list[tuple[int, int]]):
    """The tree whose nodes over two or more words are `found` (start, end exclusive; nested, the whole sentence's
    among them), as nested lists of `words` (a lone word for one). One pass over the spans sorted parents first,
    each one's parent the innermost open span that holds it."""
    if len(words) <= 1:
        return words[0] if words else []
    root: list = [0, len(words), []]  # [start, end, children]
    open_spans = [root]
    inner = {(start, end) for start, end in found if end - start >= 2} - {(0, len(words))}
    for start, end in sorted(inner, key=lambda span: (span[0], -span[1])):
        while not (open_spans[-1][0] <= start and end <= open_spans[-1][1]):
            open_spans.pop()
        node = [start, end, []]
        open_spans[-1][2].append(node)
        open_spans.append(node)

    def nested(node):
        items, position = [], node[0]
        for child in node[2]:
            items += words[position : child[0]]
            items.append(nested(child))
            position = child[1]
        return items + list(words[position : node[1]])

    return nested(root)


def agreement(tree: set, others: Sequence[set | None], weights: Sequence[float]) -> float:
    """sum_k w_k F1(tree, T_k) over the systems that have a tree (the official sentence F1)."""
    return sum(weight * official_prf(len(tree & other), len(tree), len(other))[2]
               for other, weight in zip(others, weights) if other is not None)


def combine(words: Sequence, systems: Sequence, weights: Sequence[float] | None = None, mode: str = "generative"):
    """The ensemble tree of one sentence from the systems' trees (nested lists over its words, None where a
    system has none), as nested lists of `words`; None when no system has a tree.

    Returns:
        (the tree, each system's agreement with it: its official sentence F1, None where it has no tree).
    """
    weights = list(weights) if weights is not None else [1.0] * len(systems)
    sets = [None if tree is None else spans(tree) for tree in systems]
    if all(found is None for found in sets):
        return None, [None] * len(systems)
    n = len(words)
    if mode == "generative":
        found, _ = best_binary_tree(span_scores(sets, weights, n), n)
        tree = nested_from_spans(words, found)
    elif mode == "selective":
        scored = [(agreement(found, [o if j != k else None for j, o in enumerate(sets)], weights), -k)
                  for k, found in enumerate(sets) if found is not None]
        k = -max(scored)[1]
        tree = systems[k]
    else:
        raise ValueError(f"mode {mode!r}: expected 'generative' or 'selective'")
    chosen = spans(tree)
    return tree, [None if found is None else official_prf(len(chosen & found), len(chosen), len(found))[2]
                  for found in sets]
