"""Unlabelled constituency scores of induced trees: the official (ON-LSTM/PRPN) figures, side by side, and the
span and F1 arithmetic that the conventions of the literature (`treenets.trees.conventions`) share.

- **sentence F1** (the ON-LSTM/PRPN code): per sentence, precision/recall/F1 between the span *sets* of the
  two trees, spans of two or more words, the whole-sentence span excluded; a gold tree without such a span
  has recall 1, and precision 1 too when the prediction has none; the mean over sentences.
- **corpus F1**: the same spans, matches and counts summed over the corpus before dividing.
- **evalb F1**: corpus F1 of the same span sets with the whole-sentence span counted (EVALB's own rules, which
  also count each node of a unary chain and phrases of one word, are the `evalb` convention).

Also: recall of gold phrases per label (NP, VP, PP, ...), average depth of the words in the predicted trees,
and the numbers of sentences scored and of sentences left empty by the preprocessing.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

LABELS = ("NP", "VP", "PP", "ADJP", "SBAR", "ADVP", "S", "QP", "WHNP", "PRN")


def node_spans(tree) -> tuple[Counter, int]:
    """Every node of a nested-list tree as its span `(start, end)` over the words, with multiplicity (a unary
    chain, `[["a", "b"]]`, gives its span once per node; a list of one word, `["a"]`, a one-word span), and the
    number of words. A word alone has no node."""
    if not isinstance(tree, list):
        return Counter(), 1
    # Without recursion (a tree nests as deep as its sentence is long), and without `walk.fold`'s generality: this walk
    # runs for every tree of every system under every convention.
    found, words, starts, stack = [], 0, [0], [iter(tree)]
    while stack:
        for child in stack[-1]:
            if isinstance(child, list):
                stack.append(iter(child))
                starts.append(words)
                break
            words += 1
        else:
            stack.pop()
            start = starts.pop()
            if start < words:  # (an empty list covers no word: no node)
                found.append((start, words))
    return Counter(found), words


def spans(tree, include_root: bool = False) -> set[tuple[int, int]]:
    """Spans `(start, end)` of the nodes of a nested-list tree that cover two or more words.

    The whole-sentence span is left out unless `include_root` (the official `get_brackets` leaves it out).
    """
    nodes, words = node_spans(tree)
    return phrase_spans(nodes) if include_root else official_spans(nodes, words)


def official_spans(nodes: Counter, words: int) -> set[tuple[int, int]]:
    """`spans` from a tree's `node_spans`: those of two or more words but the whole sentence's."""
    return phrase_spans(nodes) - {(0, words)}


def phrase_spans(nodes: Counter) -> set[tuple[int, int]]:
    """The spans of two or more words among `node_spans`."""
    return {span for span in nodes if span[1] - span[0] > 1}


def official_prf(overlap: int, predicted: int, gold: int) -> tuple[float, float, float]:
    """Precision, recall and F1 of one sentence from its counts of spans, exactly as the official code computes
    them (with its 1e-8s): a sentence without gold spans has recall 1, and precision 1 too when nothing is
    predicted."""
    prec = overlap / (predicted + 1e-8)
    reca = overlap / (gold + 1e-8)
    if not gold:
        reca = 1.0
        if not predicted:
            prec = 1.0
    return prec, reca, 2 * prec * reca / (prec + reca + 1e-8)


def sentence_prf(pred: set, gold: set) -> tuple[float, float, float]:
    """Precision, recall and F1 of one sentence exactly as the official code computes them (with its 1e-8s)."""
    return official_prf(len(pred & gold), len(pred), len(gold))


def f1(match: int, predicted: int, gold: int) -> float:
    """F1 from counts, `2 match / (predicted + gold)` (the harmonic mean of precision and recall, 0 when nothing
    matches); 1 when there is nothing to predict and nothing predicted."""
    return 2 * match / (predicted + gold) if predicted + gold else 1.0


def average_depth(tree) -> float:
    """Mean depth of the words: the number of nodes above each word, the root included (0 for one word)."""
    if not isinstance(tree, list):
        return 0.0
    total, words, stack = 0, 0, [iter(tree)]
    while stack:
        for child in stack[-1]:
            if isinstance(child, list):
                stack.append(iter(child))
                break
            total += len(stack)
            words += 1
        else:
            stack.pop()
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
    missing: int = 0

    def add(self, pred, gold, gold_labeled: list[tuple[int, int, str]] | None = None,
            nodes: tuple | None = None) -> tuple[float, float, float]:
        """Score one sentence; `pred` and `gold` are nested lists (`[]` for an empty sentence, which is counted
        in `empty` and not scored; `pred` None where a system has no tree for it, counted in `missing`); `nodes`,
        their `node_spans` when known already. Returns the sentence's (prec, reca, f1)."""
        if gold == [] or (pred is not None and pred == []):
            self.empty += 1
            return float("nan"), float("nan"), float("nan")
        if pred is None:
            self.missing += 1
            return float("nan"), float("nan"), float("nan")
        (pred_nodes, words), (gold_nodes, _) = nodes or (node_spans(pred), node_spans(gold))
        pe, ge = phrase_spans(pred_nodes), phrase_spans(gold_nodes)
        p, g = pe - {(0, words)}, ge - {(0, words)}
        result = sentence_prf(p, g)
        self.sentence.append(result)
        self.match += len(p & g)
        self.predicted += len(p)
        self.gold += len(g)
        self.evalb_match += len(pe & ge)
        self.evalb_predicted += len(pe)
        self.evalb_gold += len(ge)
        if gold_labeled:
            for start, end, label in gold_labeled:
                self.label_total[label] += 1
                self.label_correct[label] += (start, end) in pe
        self.depths.append(average_depth(pred))
        return result

    def summary(self) -> dict:
        """`n`, `empty`, `missing`, `sentence_f1` (and its prec/reca), `corpus_f1`, `evalb_f1`, `depth`,
        `recall_<LABEL>`."""
        n = len(self.sentence)
        mean = (lambda i: sum(s[i] for s in self.sentence) / n) if n else (lambda i: float("nan"))
        result = {
            "n": n, "empty": self.empty, "missing": self.missing,
            "sentence_prec": mean(0), "sentence_reca": mean(1), "sentence_f1": mean(2),
            "corpus_f1": f1(self.match, self.predicted, self.gold),
            "evalb_f1": f1(self.evalb_match, self.evalb_predicted, self.evalb_gold),
            "depth": statistics.fmean(self.depths) if self.depths else float("nan"),
        }
        for label, total in sorted(self.label_total.items()):
            if label:
                result[f"recall_{label}"] = self.label_correct[label] / total
        return result


def self_f1(trees_a: list, trees_b: list) -> float:
    """Mean sentence F1 between two sets of predictions for the same sentences (agreement between runs), over the
    sentences both have (a tree None or `[]`: none)."""
    return mean_sentence_f1([spans(t) if t is not None and t != [] else None for t in trees_a],
                            [spans(t) if t is not None and t != [] else None for t in trees_b])


def mean_sentence_f1(spans_a: list, spans_b: list) -> float:
    """`self_f1` from the trees' span sets (`spans`; None where a system has no tree)."""
    scores = [sentence_prf(a, b)[2] for a, b in zip(spans_a, spans_b, strict=True) if a is not None and b is not None]
    return sum(scores) / len(scores) if scores else float("nan")


def multi_run(values: list[float]) -> dict:
    """Mean, standard deviation (sample) and maximum of one score over runs (seeds)."""
    return {"mean": statistics.fmean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "max": max(values), "runs": len(values)}
