"""The conventions of the literature for scoring unlabelled trees, by name, each written from its definition
(docs/parsing.md gives the rules and the papers; tests/trees/test_conventions.py checks each by hand-computed
cases). A convention says which spans of a tree count (a set, or a multiset where unary chains count once per
node), which sentences it scores, how one sentence's F1 is computed, and whether its figure is the mean of the
sentences' F1 (`sentence`) or the F1 of the counts summed over the corpus (`corpus`).

- `official`: the ON-LSTM/PRPN code (`test_phrase_grammar.py`): the set of spans of two or more words, the
  whole sentence's left out; every sentence; the official per-sentence formula with its 1e-8s (`official_prf`);
  the mean over sentences.
- `kim`: Kim et al. (2019), compound-pcfg's `compare_trees.py` (and `eval.py`): the set of spans of two or more
  words with the whole-sentence span taken out once (the last span closed, the root), so that it stays when
  a unary chain at the root spans the sentence twice; sentences of one word skipped; the official formula.
- `evalb`: EVALB (Sekine and Collins 1997) unlabelled: every bracket, as a multiset (each node of a unary chain,
  phrases of one word and the whole sentence each count; preterminals are words, not brackets), each gold
  bracket matched once; the F1 of the corpus's counts.
- `li-micro` and `li-macro`: Li et al. (2020), UnsupConstParseEval's `evaluate.py`: the multiset of spans of two
  or more words, every whole-sentence span left out, on the gold tree with its unary chains collapsed (as their
  `preprocess.py` writes it: one span a chain) and the predicted tree as it is; every sentence; F1 = 2 matched /
  (predicted + gold), 100 when a sentence has no gold span and none predicted, 0 when it has none and some are
  predicted; micro is the corpus's counts, macro the mean over sentences.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from treenets.trees.metrics import f1, node_spans, official_prf, official_spans


# Each rule: a tree's `node_spans` -> the spans that count, with how many times (a set: each once).
def _official_spans(nodes: Counter, words: int) -> dict:
    return dict.fromkeys(official_spans(nodes, words), 1)


def _kim_spans(nodes: Counter, words: int) -> dict:
    # compare_trees.py drops the last span of its list, the root's; a second node over the whole sentence stays.
    return {span: 1 for span, count in nodes.items() if span[1] - span[0] > 1 and (span != (0, words) or count > 1)}


def _li_spans(nodes: Counter, words: int) -> dict:
    return {span: count for span, count in nodes.items() if span[1] - span[0] > 1 and span != (0, words)}


def _li_gold_spans(nodes: Counter, words: int) -> dict:
    # preprocess.py collapses the gold tree's unary chains: the nodes of a chain, one span, are one node. (Two
    # nodes of a treebank tree over the same words are always a chain: the empty phrases are gone.)
    return dict.fromkeys(_li_spans(nodes, words), 1)


def _evalb_spans(nodes: Counter, words: int) -> dict:
    # Every tree is one bracket over the whole sentence at least (a word alone too: EVALB reads `(S word)`).
    return {**nodes, (0, words): max(nodes[(0, words)], 1)}


def _official_f1(match: int, predicted: int, gold: int) -> float:
    return official_prf(match, predicted, gold)[2]


@dataclass(frozen=True)
class Convention:
    """One way of scoring: `counted(tree)` the spans of a tree that count (with multiplicity; `gold_rule`, where
    the gold tree's are taken otherwise), `min_words` the shortest sentence scored, `sentence_f1(match, predicted,
    gold)` one sentence's F1, `level` which F1 is its figure (`sentence`: the mean of the sentences'; `corpus`: of
    the summed counts)."""

    name: str
    title: str  # whose convention it is, and where it is defined
    level: str
    span_rule: Callable[[Counter, int], dict] = field(repr=False)
    sentence_f1: Callable[[int, int, int], float] = field(repr=False)
    min_words: int = 1
    gold_rule: Callable[[Counter, int], dict] | None = field(default=None, repr=False)

    def counted(self, tree, gold: bool = False) -> dict:
        """The spans of `tree` that count (`gold`: as the gold tree), each with how many times."""
        rule = self.gold_rule if gold and self.gold_rule else self.span_rule
        return rule(*node_spans(tree))

    def record(self) -> dict:
        """The convention as `summary.json` and the report name it: `name`, `title`, `level`."""
        return {"name": self.name, "title": self.title, "level": self.level}


CONVENTIONS = {c.name: c for c in (
    Convention("official", "Shen et al. 2018, 2019 (PRPN, ON-LSTM): test_phrase_grammar.py", "sentence",
               _official_spans, _official_f1),
    Convention("kim", "Kim et al. 2019 (compound PCFG): compare_trees.py", "sentence", _kim_spans, _official_f1,
               min_words=2),
    Convention("evalb", "EVALB (Sekine and Collins 1997), unlabelled", "corpus", _evalb_spans, f1),
    Convention("li-micro", "Li et al. 2020: evaluate.py, micro (corpus) F1", "corpus", _li_spans, f1,
               gold_rule=_li_gold_spans),
    Convention("li-macro", "Li et al. 2020: evaluate.py, macro (sentence) F1", "sentence", _li_spans, f1,
               gold_rule=_li_gold_spans),
)}


@dataclass
class ConventionScores:
    """One system's trees scored under one convention, sentence by sentence: `index` (the gold sentence of each
    scored one), the counts `match`, `predicted`, `gold` and each sentence's `f1`; `skipped` counts the sentences
    the convention does not score (`kim`: those of one word)."""

    convention: Convention
    index: np.ndarray
    match: np.ndarray
    predicted: np.ndarray
    gold: np.ndarray
    f1: np.ndarray
    skipped: int

    @classmethod
    def score(cls, convention: Convention, pred_nodes: list, gold_nodes: list) -> ConventionScores:
        """Score a system's trees against the gold trees, both given as their `node_spans` (computed once for
        every convention; None for a sentence without a tree, or empty)."""
        rows, skipped = [], 0
        for i, (pred, gold) in enumerate(zip(pred_nodes, gold_nodes, strict=True)):
            if pred is None or gold is None:
                continue
            if gold[1] < convention.min_words:
                skipped += 1
                continue
            gold_spans = (convention.gold_rule or convention.span_rule)(*gold)
            pred_spans = convention.span_rule(*pred)
            match = sum(min(count, gold_spans[span]) for span, count in pred_spans.items() if span in gold_spans)
            predicted, total = sum(pred_spans.values()), sum(gold_spans.values())
            rows.append((i, match, predicted, total, convention.sentence_f1(match, predicted, total)))
        columns = list(zip(*rows)) if rows else [()] * 5
        index, match, predicted, gold = (np.array(c, dtype=np.int64) for c in columns[:4])
        return cls(convention, index, match, predicted, gold, np.array(columns[4], dtype=np.float64), skipped)

    def figure(self, weights: np.ndarray | None = None) -> float:
        """The convention's figure over the scored sentences, each counted `weights` times (all once by default):
        the mean sentence F1, or the F1 of the summed counts."""
        w = np.ones(len(self.f1)) if weights is None else weights
        if self.convention.level == "sentence":
            return float(w @ self.f1 / w.sum()) if w.sum() else float("nan")
        return f1(float(w @ self.match), float(w @ self.predicted), float(w @ self.gold))

    def summary(self) -> dict:
        """`f1` (the figure), `sentence_f1`, `corpus_f1`, corpus `precision` and `recall`, `n` scored, `skipped`."""
        match, predicted, gold = int(self.match.sum()), int(self.predicted.sum()), int(self.gold.sum())
        return {"f1": self.figure(), "sentence_f1": float(self.f1.mean()) if len(self.f1) else float("nan"),
                "corpus_f1": f1(match, predicted, gold),
                "precision": match / predicted if predicted else float("nan"),
                "recall": match / gold if gold else float("nan"), "n": len(self.f1), "skipped": self.skipped}
