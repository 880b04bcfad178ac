"""Evaluation metrics: objects that aggregate over batches (and processes), report their values, and say
whether they are better than another result (SuPar's `Metric`).

A task's `evaluate` returns one; the training loop keeps the best by `score` and uses `loss` for the
NT-ASGD trigger and the learning-rate schedule.
"""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np
import torch
import torch.distributed as dist
from scipy import stats


class Metric:
    """An evaluation result.

    Subclasses set `key` (the value that selects models, e.g. `"ppl"`) and `higher_is_better`, accumulate
    with their own `add`, and give every value in `values()` (what is logged and printed); `lower_is_better` names
    the values where lower is better (the loss, a perplexity, an error), whichever value selects models: the
    reports mark them so, and `metrics --plot` draws the selection value's curve on a log scale where it spans ten
    times or more.
    """

    key: ClassVar[str]
    higher_is_better: ClassVar[bool]
    lower_is_better: ClassVar[frozenset[str]] = frozenset({"loss"})

    def values(self) -> dict:
        raise NotImplementedError

    @classmethod
    def running(cls, loss: float) -> dict:
        """What the training log shows beside a running mean training loss (perplexity, bits per character)."""
        return {}

    def breakdown(self) -> tuple[str, dict[str, float]] | None:
        """The selection value by group, for tables and plots across models (`treenets eval`): (what the
        groups are, group -> value); None for metrics without groups."""
        return None

    @property
    def score(self) -> float:
        """The value that selects models."""
        return self.values()[self.key]

    @property
    def loss(self) -> float:
        """The validation loss (lower is better whatever the metric)."""
        return self.values()["loss"]

    @classmethod
    def improves(cls, value: float, best: float | None) -> bool:
        """Whether a score `value` beats `best` (None: nothing yet); NaN or inf never does."""
        if not math.isfinite(value):
            return False
        if best is None:
            return True
        return value > best if cls.higher_is_better else value < best

    def __gt__(self, other: Metric) -> bool:
        """`a > b`: a is the better result."""
        return self.improves(self.score, other.score)

    def __repr__(self) -> str:
        values = ", ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in self.values().items())
        return f"{type(self).__name__}({values})"


class Perplexity(Metric):
    """Mean cross-entropy per token and its exponential, summed over batches and processes."""

    key, higher_is_better = "ppl", False
    lower_is_better = frozenset({"loss", "ppl"})

    def __init__(self, device=None):
        self.total = torch.zeros(2, dtype=torch.float64, device=device)  # summed cross-entropy, tokens

    def add(self, summed_xent: torch.Tensor, tokens) -> None:
        self.total[0] += summed_xent.double()
        self.total[1] += tokens

    @classmethod
    def running(cls, loss: float) -> dict:
        return {"ppl": math.exp(min(loss, 50.0))}

    def reduce(self, world: int) -> Perplexity:
        """Sum over the processes (every process must call it)."""
        if world > 1:
            dist.all_reduce(self.total)
        return self

    def values(self) -> dict:
        loss = (self.total[0] / self.total[1]).item()
        return {"loss": loss, "ppl": math.exp(loss), "tokens": int(self.total[1].item())}


class BitsPerCharacter(Perplexity):
    """Character-level language modelling: the mean cross-entropy per character in bits (`bpc`, the figure
    character-level papers report and the selection value), beside the loss in nats and the perplexity;
    accumulated as `Perplexity` (summed cross-entropy in nats, characters)."""

    key = "bpc"
    lower_is_better = frozenset({"loss", "ppl", "bpc"})

    @classmethod
    def running(cls, loss: float) -> dict:
        return {"bpc": loss / math.log(2)}

    def values(self) -> dict:
        perplexity = super().values()
        return {"loss": perplexity["loss"], "bpc": perplexity["loss"] / math.log(2), "ppl": perplexity["ppl"],
                "characters": perplexity["tokens"]}


class Correlation(Metric):
    """Relatedness: Pearson's r (the selection value), Spearman's rho and the mean squared error (the loss)."""

    key, higher_is_better = "pearson", True
    lower_is_better = frozenset({"loss", "mse"})

    def __init__(self):
        self.predicted, self.gold = [], []

    def add(self, predicted, gold) -> None:
        self.predicted.append(np.asarray(predicted, dtype=np.float64))
        self.gold.append(np.asarray(gold, dtype=np.float64))

    def values(self) -> dict:
        predicted, gold = np.concatenate(self.predicted), np.concatenate(self.gold)
        mse = float(np.mean((predicted - gold) ** 2))
        return {"pearson": float(stats.pearsonr(predicted, gold)[0]),
                "spearman": float(stats.spearmanr(predicted, gold)[0]), "mse": mse, "loss": mse,
                "pairs": int(len(gold))}


class InducedTreeScores:
    """What a metric adds for a model that induces trees of its inputs (Ordered Memory): how well they match the
    inputs' own trees, `tree_f1`, EVALB's F1 (over all inputs, the whole input's bracket counted), which the
    official code reports, and `tree_sentence_f1`, the mean per input (the ON-LSTM's parsing convention,
    `treenets.trees.metrics`); neither until trees are added."""

    trees = None  # a treenets.trees.ParseScores once induced trees are added

    def add_trees(self, predicted: list, gold: list) -> None:
        """Induced trees against the inputs' own, both nested lists of the inputs' words (a formula's brackets left
        out). Inputs of one word have no bracket to find and are left out, as the official code leaves them."""
        from treenets.trees import ParseScores

        if self.trees is None:
            self.trees = ParseScores()
        for pred, tree in zip(predicted, gold, strict=True):
            if isinstance(tree, list):
                self.trees.add(pred, tree)

    def tree_values(self) -> dict:
        """`tree_f1` and `tree_sentence_f1` once trees of more than one word are added; else nothing."""
        if self.trees is None or not self.trees.sentence:
            return {}
        summary = self.trees.summary()
        return {"tree_f1": summary["evalb_f1"], "tree_sentence_f1": summary["sentence_f1"]}


class SentimentAccuracy(InducedTreeScores, Metric):
    """Sentiment: accuracy at the roots (the paper's figure, the selection value), over all labelled phrases
    (tree models), and the roots' negative log-likelihood as the loss; for a model that induces trees of the
    sentences (Ordered Memory), how well they match the treebank's (`InducedTreeScores`)."""

    key, higher_is_better = "root_accuracy", True

    def __init__(self, phrases: bool):
        self.phrases = phrases
        self.counts = torch.zeros(5, dtype=torch.float64)  # root correct, roots, phrase correct, phrases, root nll

    def add(self, log_probs: torch.Tensor, labels: torch.Tensor, roots: torch.Tensor) -> None:
        """log_probs [nodes, classes], labels [nodes] (-1: none), roots [B] (positions of the roots)."""
        predicted = log_probs.argmax(-1)
        labelled = labels >= 0
        self.counts += torch.tensor([
            (predicted[roots] == labels[roots]).sum().item(), len(roots),
            (predicted[labelled] == labels[labelled]).sum().item(), labelled.sum().item(),
            torch.nn.functional.nll_loss(log_probs[roots], labels[roots], reduction="sum").item()],
            dtype=torch.float64)

    def values(self) -> dict:
        c = self.counts
        result = {"root_accuracy": (c[0] / c[1]).item(), "loss": (c[4] / c[1]).item(), "sentences": int(c[1].item())}
        if self.phrases:
            result["phrase_accuracy"] = (c[2] / c[3]).item()
        return result | self.tree_values()


class AccuracyByOperators(InducedTreeScores, Metric):
    """Logical inference: accuracy over all pairs (the selection value) and by the number of operators of the
    pair's larger formula (the ON-LSTM paper's figure; `max_operators` collects that many or more), with the
    mean cross-entropy as the loss. For a model that induces trees of the formulas (Ordered Memory), also how
    well they match the formulas' bracketing (`InducedTreeScores`).

    A subclass counts other groups: `group` names them (in `breakdown`), `prefix` in the keys of `values`."""

    key, higher_is_better = "accuracy", True
    group, prefix, units = "operators", "ops", "pairs"

    def __init__(self, max_operators: int = 12):
        self.max_operators = max_operators
        self.correct = torch.zeros(max_operators + 1, dtype=torch.float64)
        self.total = torch.zeros(max_operators + 1, dtype=torch.float64)
        self.summed_xent = 0.0

    def add(self, logits: torch.Tensor, labels: torch.Tensor, operators: torch.Tensor) -> None:
        """logits [B, classes], labels [B], operators (the group of each example) [B]."""
        logits, labels = logits.detach().cpu(), labels.cpu()
        buckets = operators.cpu().clamp(max=self.max_operators)
        hits = (logits.argmax(-1) == labels).double()
        self.correct.index_add_(0, buckets, hits)
        self.total.index_add_(0, buckets, torch.ones_like(hits))
        self.summed_xent += torch.nn.functional.cross_entropy(logits.double(), labels, reduction="sum").item()

    def _label(self, n: int) -> str:
        return f"{n}+" if n == self.max_operators else str(n)

    def values(self) -> dict:
        count = self.total.sum().item()
        result = {"accuracy": self.correct.sum().item() / count, "loss": self.summed_xent / count,
                  self.units: int(count)}
        result.update({f"accuracy_{self.prefix}_{self._label(n)}": (self.correct[n] / self.total[n]).item()
                       for n in range(self.max_operators + 1) if self.total[n] > 0})
        return result | self.tree_values()

    def breakdown(self) -> tuple[str, dict[str, float]]:
        return self.group, {self._label(n): (self.correct[n] / self.total[n]).item()
                            for n in range(self.max_operators + 1) if self.total[n] > 0}


class AccuracyByDepth(AccuracyByOperators):
    """ListOps: accuracy over all sequences (the selection value) and by how deeply their lists nest (0: a lone
    digit; `max_depth` collects that deep or deeper), the loss and the induced trees' F1 as `AccuracyByOperators`."""

    group, prefix, units = "depth", "depth", "sequences"

    def __init__(self, max_depth: int = 20):
        super().__init__(max_depth)
