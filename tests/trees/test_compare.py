"""Systems side by side (`treenets.trees.compare`): the paired bootstrap on constructed pairs whose outcome is
known, the figure by sentence length, and agreement."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treenets.trees import right_branching
from treenets.trees.compare import (
    LENGTH_BUCKETS,
    agreement,
    bucket_counts,
    by_length,
    paired_bootstrap,
    pairwise_bootstrap,
)
from treenets.trees.conventions import CONVENTIONS, ConventionScores
from treenets.trees.metrics import spans


def sentence_scores(f1: list[float], index: list[int] | None = None, name: str = "official") -> ConventionScores:
    """Scores whose sentences have the F1s given (counts that give them under a corpus-level convention too)."""
    n = len(f1)
    index = np.arange(n) if index is None else np.array(index)
    match = np.array([round(v * 10) for v in f1])
    return ConventionScores(CONVENTIONS[name], index, match, np.full(n, 10), np.full(n, 10), np.array(f1, float), 0)


def test_identical_systems_differ_by_nothing_with_p_one():
    a = sentence_scores(list(np.random.default_rng(1).random(200)))
    result = paired_bootstrap(a, a, draws=2000)
    assert result["difference"] == 0.0 and result["low"] == 0.0 and result["high"] == 0.0 and result["p"] == 1.0
    assert result["sentences"] == 200 and result["draws"] == 2000 and result["seed"] == 0


def test_a_system_better_on_every_sentence_by_the_same_amount():
    base = list(np.random.default_rng(2).random(100) * 0.5)
    better, worse = sentence_scores([v + 0.25 for v in base]), sentence_scores(base)
    result = paired_bootstrap(better, worse, draws=1000)
    # Every sample gives the same difference: the interval is that point, and no sample is as far from it as 0
    assert result["difference"] == pytest.approx(0.25)
    assert result["low"] == pytest.approx(0.25) and result["high"] == pytest.approx(0.25)
    assert result["p"] == pytest.approx(1 / 1001)


def test_one_sentence_of_fifty_better_gives_the_binomial_p_value():
    # A wins one sentence (F1 1 against 0) and ties on the others: the difference of a sample is K/50, K the number
    # of times that sentence is drawn, Binomial(50, 1/50); the observed one is 1/50, and |K/50 - 1/50| >= 1/50
    # unless K = 1: p = 1 - (49/50)^49 = 0.6284.
    n = 50
    a, b = sentence_scores([1.0] + [0.5] * (n - 1)), sentence_scores([0.0] + [0.5] * (n - 1))
    result = paired_bootstrap(a, b, draws=10_000, seed=3)
    assert result["difference"] == pytest.approx(1 / n)
    assert result["p"] == pytest.approx(1 - (1 - 1 / n) ** (n - 1), abs=0.02)
    assert result["low"] == 0.0 and result["high"] == pytest.approx(3 / n)  # K of 0 to 3 in the middle 95 %
    # The other way round: the difference and the interval change sign, the p-value stays
    back = paired_bootstrap(b, a, draws=10_000, seed=3)
    assert back["difference"] == -result["difference"] and back["p"] == result["p"]
    assert (back["low"], back["high"]) == (-result["high"], -result["low"])
    # A fixed seed gives the same samples; another seed, others
    assert paired_bootstrap(a, b, draws=10_000, seed=3) == result
    assert paired_bootstrap(a, b, draws=10_000, seed=4)["p"] != result["p"]


def test_only_the_sentences_both_systems_have_are_compared():
    a = sentence_scores([1.0, 0.0, 1.0, 0.0], index=[0, 1, 2, 3])
    b = sentence_scores([1.0, 1.0], index=[1, 3])  # a has 0 there: b is better by 1 on both
    result = paired_bootstrap(a, b, draws=500)
    assert result["sentences"] == 2 and result["difference"] == pytest.approx(-1.0)
    assert paired_bootstrap(a, sentence_scores([], index=[]), draws=10)["sentences"] == 0


def test_corpus_level_conventions_resample_the_counts():
    # li-micro: the figure is 2 matched / (predicted + gold) of the summed counts
    a = sentence_scores([0.2, 0.4, 0.6, 0.8], name="li-micro")
    b = sentence_scores([0.2, 0.4, 0.6, 0.8], name="li-micro")
    assert a.figure() == pytest.approx(2 * 20 / 80) and paired_bootstrap(a, b, draws=200)["p"] == 1.0
    better = sentence_scores([0.4, 0.6, 0.8, 1.0], name="li-micro")
    result = paired_bootstrap(better, a, draws=200)
    assert result["difference"] == pytest.approx(0.2) and result["low"] == pytest.approx(0.2)


def test_pairs_over_the_same_sentences_share_their_samples():
    rng = np.random.default_rng(5)
    systems = [sentence_scores(list(rng.random(80))) for _ in range(4)]
    together = pairwise_bootstrap(systems, draws=3000, seed=7)
    assert [(r["a"], r["b"]) for r in together] == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    for r in together:  # the same as each pair alone (up to the rounding of sums taken in another order)
        alone = paired_bootstrap(systems[r["a"]], systems[r["b"]], draws=3000, seed=7)
        assert alone == pytest.approx({k: v for k, v in r.items() if k not in ("a", "b")}, abs=1e-12)
    with pytest.raises(ValueError, match="several conventions"):
        pairwise_bootstrap([systems[0], sentence_scores([0.5] * 80, name="kim")])


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=40), st.integers(0, 2**32 - 1))
def test_a_system_against_itself_has_p_one(f1, seed):
    a = sentence_scores(f1)
    result = paired_bootstrap(a, a, draws=200, seed=seed)
    assert result["p"] == 1.0 and result["difference"] == 0.0


def test_figure_by_sentence_length():
    lengths = np.array([3, 4, 8, 12, 50, 0])  # the last sentence empty
    scores = sentence_scores([1.0, 0.5, 0.25, 0.0, 1.0], index=[0, 1, 2, 3, 4])
    figures = by_length(scores, lengths)
    assert [b for b in LENGTH_BUCKETS][:3] == [(1, 5), (6, 10), (11, 15)] and LENGTH_BUCKETS[-1] == (41, None)
    assert figures[0] == pytest.approx(0.75) and figures[1] == 0.25 and figures[2] == 0.0 and figures[-1] == 1.0
    assert all(np.isnan(v) for v in figures[3:-1])
    assert bucket_counts(lengths[lengths > 0]) == [2, 1, 1, 0, 0, 0, 0, 1]


def test_agreement_is_the_self_f1_of_every_pair():
    words = ["a", "b", "c", "d"]
    right, left = right_branching(words), [[["a", "b"], "c"], "d"]
    matrix = agreement([[spans(right), None], [spans(left), spans(["x", ["y", "z"]])], [spans(right), None]])
    assert matrix[0][0] == 1.0 and matrix[0][2] == pytest.approx(1.0, abs=1e-7)
    assert matrix[0][1] == matrix[1][0] == pytest.approx(0.0)  # (1,4) (2,4) against (0,2) (0,3)
