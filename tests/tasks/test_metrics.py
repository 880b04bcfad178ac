"""Metric objects: values computed by hand, aggregation over batches, comparison by the selection value."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy import stats

from treenets.tasks.metrics import Correlation, Perplexity, SentimentAccuracy


def test_perplexity_aggregates_tokens_over_batches():
    metric = Perplexity()
    metric.add(torch.tensor(6.0), 3)
    metric.add(torch.tensor(2.0), 1)
    values = metric.values()
    assert values["loss"] == pytest.approx(2.0) and values["ppl"] == pytest.approx(math.exp(2.0))
    assert values["tokens"] == 4 and metric.score == values["ppl"] and metric.loss == values["loss"]


def test_lower_perplexity_and_higher_correlation_are_better():
    low, high = Perplexity(), Perplexity()
    low.add(torch.tensor(1.0), 1)
    high.add(torch.tensor(3.0), 1)
    assert low > high and not high > low
    assert Perplexity.improves(50.0, 60.0) and not Perplexity.improves(70.0, 60.0) and Perplexity.improves(1e9, None)
    assert Correlation.improves(0.8, 0.7) and not Correlation.improves(0.6, 0.7)


def test_correlation_by_hand_and_over_batches():
    predicted, gold = np.array([1.0, 2.0, 3.0, 4.5]), np.array([1.5, 2.0, 3.5, 4.0])
    metric = Correlation()
    metric.add(predicted[:1], gold[:1])
    metric.add(predicted[1:], gold[1:])
    values = metric.values()
    assert values["pearson"] == pytest.approx(stats.pearsonr(predicted, gold)[0])
    assert values["spearman"] == pytest.approx(1.0)  # same order
    assert values["mse"] == values["loss"] == pytest.approx((0.25 + 0 + 0.25 + 0.25) / 4)
    assert values["pairs"] == 4 and metric.score == values["pearson"]


def test_sentiment_accuracy_counts_roots_and_phrases():
    # Two trees: nodes 0-2 (root 2) and 3-4 (root 4); node 1 has no label.
    log_probs = torch.log(torch.tensor([[0.9, 0.1], [0.2, 0.8], [0.3, 0.7], [0.6, 0.4], [0.4, 0.6]]))
    labels = torch.tensor([0, -1, 1, 1, 0])
    metric = SentimentAccuracy(phrases=True)
    metric.add(log_probs, labels, torch.tensor([2, 4]))
    values = metric.values()
    assert values["root_accuracy"] == 0.5 and values["sentences"] == 2
    assert values["phrase_accuracy"] == pytest.approx(2 / 4)  # nodes 0 and 2 right, 3 and 4 wrong
    assert values["loss"] == pytest.approx(-(math.log(0.7) + math.log(0.4)) / 2)
    sentences_only = SentimentAccuracy(phrases=False)  # sequential models: one output per sentence
    sentences_only.add(log_probs[[2, 4]], labels[[2, 4]], torch.tensor([0, 1]))
    assert sentences_only.values() == {"root_accuracy": 0.5, "loss": values["loss"], "sentences": 2}


def test_every_task_declares_which_of_its_values_are_lower_better():
    """The loss always; a selection value where lower is better (a perplexity, bits per character) among them; the
    report marks exactly those lower-better (relatedness: its mean squared error too, not its correlations)."""
    from treenets.report import eval_document
    from treenets.tasks import all_tasks

    for task in all_tasks().values():
        metric = task.Metric
        assert "loss" in metric.lower_is_better, task.name
        if not metric.higher_is_better and isinstance(getattr(metric, "key", None), str):
            assert metric.key in metric.lower_is_better, task.name
    correlation = Correlation()
    correlation.add(np.array([1.0, 2.0, 3.0]), np.array([1.5, 2.0, 2.5]))
    document = eval_document("test", ["best.pt"], [correlation.values()], correlation, {}, None)
    assert document["better"] == {"pearson": "higher", "spearman": "higher", "mse": "lower", "loss": "lower"}
