"""Unlabelled constituency scores of induced trees, under the conventions in use, side by side.

- **sentence F1** (the ON-LSTM/PRPN code): per sentence, precision/recall/F1 between the span *sets* of the
  two trees, spans of two or more words, the whole-sentence span excluded; a gold tree without such a span
  has recall 1, and precision 1 too when the prediction has none; the mean over sentences.
- **corpus F1**: the same spans, matches and counts summed over the corpus before dividing.
- **evalb F1**: corpus F1 with the whole-sentence span counted (as EVALB does, on the same filtered words).

Also: recall of gold phrases per label (NP, VP, PP, ...), average depth of the words in the predicted trees,
and the numbers of sentences scored and of sentences left empty by the preprocessing.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

from treenets.trees.walk import fold

LABELS = ("NP", "VP", "PP", "ADJP", "SBAR", "ADVP", "S", "QP", "WHNP", "PRN")


def spans(tree, include_root: bool = False) -> set[tuple[int, int]]:
    """Spans `(start, end)` of the nodes of a nested-list tree that cover two or more words.

    The whole-sentence span is left out unless `include_root` (the official `get_brackets` leaves it out).
    """
    found: set[tuple[int, int]] = set()
    words = 0

    def leaf(_) -> tuple[int, int]:
        nonlocal words
        words += 1
        return words - 1, words

    def node(_, children: list) -> tuple[int, int]:
        start, end = (children[0][0], children[-1][1]) if children else (words, words)
        if end - start > 1:
            found.add((start, end))
        return start, end

    fold(tree, leaf, node)
    if not include_root:
        found.discard((0, words))
    return found


def sentence_prf(pred: set, gold: set) -> tuple[float, float, float]:
    """Precision, recall and F1 of one sentence exactly as the official code computes them (with its 1e-8s)."""
    overlap = len(pred & gold)
    prec = overlap / (len(pred) + 1e-8)
    reca = overlap / (len(gold) + 1e-8)
    if not gold:
        reca = 1.0
        if not pred:
            prec = 1.0
    return prec, reca, 2 * prec * reca / (prec + reca + 1e-8)


def average_depth(tree) -> float:
    """Mean depth of the words: the number of nodes above each word, the root included (0 for one word)."""
    # Each node's value: (the sum of its words' depths below it, its number of words).
    total, words = fold(tree, lambda _: (0, 1),
                        lambda _, children: (sum(d + n for d, n in children), sum(n for _, n in children)))
    return total / words


@dataclass
class ParseScores:
    """Accumulates the scores of predicted trees against gold trees, sentence by sentence."""

    sentence: list = field(default_factory=list)  # (prec, reca, f1) per scored sentence
    match: int = 0
    predicted: int = 0
    gold: int = 0
    evalb_match: int = 0
    evalb_predicted: int = 0
    evalb_gold: int = 0
    label_correct: Counter = field(default_factory=Counter)
    label_total: Counter = field(default_factory=Counter)
    depths: list = field(default_factory=list)
    empty: int = 0

    def add(self, pred, gold, gold_labeled: list[tuple[int, int, str]] | None = None) -> tuple[float, float, float]:
        """Score one sentence; `pred` and `gold` are nested lists (`[]` for an empty sentence, which is counted
        in `empty` and not scored). Returns the sentence's (prec, reca, f1)."""
        if pred == [] or gold == []:
            self.empty += 1
            return float("nan"), float("nan"), float("nan")
        p, g = spans(pred), spans(gold)
        result = sentence_prf(p, g)
        self.sentence.append(result)
        self.match += len(p & g)
        self.predicted += len(p)
        self.gold += len(g)
        pe, ge = spans(pred, include_root=True), spans(gold, include_root=True)
        self.evalb_match += len(pe & ge)
        self.evalb_predicted += len(pe)
        self.evalb_gold += len(ge)
        if gold_labeled:
            for start, end, label in gold_labeled:
                self.label_total[label] += 1
                self.label_correct[label] += (start, end) in pe
        self.depths.append(average_depth(pred))
        return result

    @staticmethod
    def _f1(match: int, predicted: int, gold: int) -> float:
        prec = match / predicted if predicted else 1.0
        reca = match / gold if gold else 1.0
        return 2 * prec * reca / (prec + reca) if prec + reca else 0.0

    def summary(self) -> dict:
        """`n`, `empty`, `sentence_f1` (and its prec/reca), `corpus_f1`, `evalb_f1`, `depth`, `recall_<LABEL>`."""
        n = len(self.sentence)
        mean = (lambda i: sum(s[i] for s in self.sentence) / n) if n else (lambda i: float("nan"))
        result = {
            "n": n, "empty": self.empty,
            "sentence_prec": mean(0), "sentence_reca": mean(1), "sentence_f1": mean(2),
            "corpus_f1": self._f1(self.match, self.predicted, self.gold),
            "evalb_f1": self._f1(self.evalb_match, self.evalb_predicted, self.evalb_gold),
            "depth": statistics.fmean(self.depths) if self.depths else float("nan"),
        }
        for label, total in sorted(self.label_total.items()):
            if label:
                result[f"recall_{label}"] = self.label_correct[label] / total
        return result


def self_f1(trees_a: list, trees_b: list) -> float:
    """Mean sentence F1 between two sets of predictions for the same sentences (agreement between runs)."""
    scores = [sentence_prf(spans(a), spans(b))[2] for a, b in zip(trees_a, trees_b, strict=True)
              if a != [] and b != []]
    return sum(scores) / len(scores) if scores else float("nan")


def multi_run(values: list[float]) -> dict:
    """Mean, standard deviation (sample) and maximum of one score over runs (seeds)."""
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "max": max(values), "runs": len(values)}
