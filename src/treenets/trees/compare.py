"""Systems side by side: a paired bootstrap of the difference between two systems' figures, the figure by
sentence length, and the agreement between systems' trees.

The paired bootstrap (Efron and Tibshirani 1993, ch. 16; Koehn 2004; Berg-Kirkpatrick et al. 2012) resamples
the sentences both systems have, with replacement, `draws` times from a fixed seed, and computes on each sample
the difference of the two figures under the convention (the mean sentence F1, or the F1 of the summed counts).
The 95 % interval is the 2.5th and 97.5th percentiles of those differences; the p-value is two-sided, from the
differences centred on the observed one (the null distribution of the difference): the share of samples where
`|d* - d| >= |d|`, counted as `(1 + k) / (1 + draws)`, so that identical systems get exactly 1 and no p-value is 0.
"""

from __future__ import annotations

import itertools

import numpy as np

from treenets.trees.conventions import ConventionScores
from treenets.trees.metrics import mean_sentence_f1

# Sentence lengths in words, as buckets: (first, last), the last one open.
LENGTH_BUCKETS = ((1, 5), (6, 10), (11, 15), (16, 20), (21, 25), (26, 30), (31, 40), (41, None))
CHUNK = 1000  # bootstrap samples drawn at a time (a chunk's weights: CHUNK x sentences numbers)


def bucket_name(bucket: tuple) -> str:
    first, last = bucket
    return f"{first}-{last}" if last is not None else f"{first}+"


def _columns(scores: ConventionScores, common: np.ndarray) -> np.ndarray:
    """What a system's figure is computed from, over the sentences `common` (sorted gold indices it has): its
    sentence F1s (one column), or its counts matched, predicted and gold (three)."""
    at = np.searchsorted(scores.index, common)
    if scores.convention.level == "sentence":
        return scores.f1[at][:, None]
    return np.stack([scores.match[at], scores.predicted[at], scores.gold[at]], axis=1).astype(np.float64)


def _figures(level: str, sums: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Figures from weighted sums of `_columns` (samples x columns, one system's), `total` the weights' sums."""
    if level == "sentence":
        return sums[:, 0] / total
    both = sums[:, 1] + sums[:, 2]
    return np.divide(2 * sums[:, 0], both, out=np.ones_like(both), where=both > 0)


def _all_figures(level: str, weights: np.ndarray, stacked: np.ndarray, systems: int) -> np.ndarray:
    """Every system's figure (samples x systems) under `weights` (samples x sentences), from their `_columns`
    side by side (`stacked`)."""
    sums, total = weights @ stacked, weights.sum(axis=1)
    width = stacked.shape[1] // systems
    return np.stack([_figures(level, sums[:, k * width:(k + 1) * width], total) for k in range(systems)], axis=1)


def _samples(rng: np.random.Generator, sentences: int, draws: int):
    """Bootstrap samples in chunks, each as counts (samples x sentences): how often each sentence was drawn."""
    for start in range(0, draws, CHUNK):
        rows = min(CHUNK, draws - start)
        picks = rng.integers(0, sentences, size=(rows, sentences)) + sentences * np.arange(rows)[:, None]
        yield np.bincount(picks.ravel(), minlength=rows * sentences).reshape(rows, sentences).astype(np.float64)


def pairwise_bootstrap(scores: list[ConventionScores], draws: int = 10_000, seed: int = 0,
                       pairs: list[tuple[int, int]] | None = None) -> list[dict]:
    """The paired bootstrap of every pair `(i, j)`, `i < j`, of `scores` (or of `pairs`), all under one
    convention: the difference `i - j` of their figures over the sentences both scored, its 95 % interval and
    two-sided p-value (see the module's doc), as `a` (i), `b` (j), `difference`, `low`, `high`, `p`, `sentences`,
    `draws` and `seed`. Pairs over the same sentences share their samples (drawn from `seed` for each set of
    sentences, so that a pair's result does not depend on the other systems)."""
    if len({s.convention for s in scores}) > 1:
        raise ValueError("pairwise_bootstrap: scores under several conventions")
    pairs = pairs if pairs is not None else list(itertools.combinations(range(len(scores)), 2))
    groups: dict[bytes, list] = {}
    for i, j in pairs:
        common = np.intersect1d(scores[i].index, scores[j].index)
        groups.setdefault(common.tobytes(), [common, []])[1].append((i, j))
    results = {}
    for common, members in groups.values():
        base = {"sentences": len(common), "draws": draws, "seed": seed}
        if not len(common):
            results.update({pair: {**base, **dict.fromkeys(("difference", "low", "high", "p"), float("nan"))}
                            for pair in members})
            continue
        level = scores[members[0][0]].convention.level
        systems = sorted({k for pair in members for k in pair})
        stacked = np.concatenate([_columns(scores[k], common) for k in systems], axis=1)
        observed = _all_figures(level, np.ones((1, len(common))), stacked, len(systems))[0]
        sampled = np.concatenate([_all_figures(level, w, stacked, len(systems))
                                  for w in _samples(np.random.default_rng(seed), len(common), draws)])
        for i, j in members:
            a, b = systems.index(i), systems.index(j)
            difference = float(observed[a] - observed[b])
            differences = sampled[:, a] - sampled[:, b]
            extreme = int(np.count_nonzero(np.abs(differences - difference) >= abs(difference)))
            low, high = np.percentile(differences, [2.5, 97.5])
            results[(i, j)] = {**base, "difference": difference, "low": float(low), "high": float(high),
                               "p": (1 + extreme) / (1 + draws)}
    return [{"a": i, "b": j, **results[(i, j)]} for i, j in pairs]


def paired_bootstrap(a: ConventionScores, b: ConventionScores, draws: int = 10_000, seed: int = 0) -> dict:
    """`pairwise_bootstrap` of one pair: the difference `a - b`."""
    result = pairwise_bootstrap([a, b], draws, seed)[0]
    return {key: value for key, value in result.items() if key not in ("a", "b")}


def by_length(scores: ConventionScores, lengths: np.ndarray) -> list[float]:
    """The figure over the sentences of each of `LENGTH_BUCKETS` (NaN where the system scored none of them);
    `lengths`: every gold sentence's number of words."""
    scored = lengths[scores.index]
    figures = []
    for first, last in LENGTH_BUCKETS:
        inside = (scored >= first) & (scored <= (last if last is not None else np.inf))
        figures.append(scores.figure(inside.astype(np.float64)) if inside.any() else float("nan"))
    return figures


def bucket_counts(lengths: np.ndarray) -> list[int]:
    """How many sentences (with words) fall in each of `LENGTH_BUCKETS`."""
    return [int(np.count_nonzero((lengths >= first) & (lengths <= (last if last is not None else np.inf))))
            for first, last in LENGTH_BUCKETS]


def agreement(span_sets: list[list]) -> list[list[float]]:
    """The mean sentence F1 between the trees of every two systems (`self_f1`, over the sentences both have),
    as a matrix, 1 on the diagonal; `span_sets`: each system's trees as their `spans` (None where it has none)."""
    return [[mean_sentence_f1(a, b) if i != j else 1.0 for j, b in enumerate(span_sets)]
            for i, a in enumerate(span_sets)]
