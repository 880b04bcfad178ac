"""A trained relatedness model: how related two sentences are, on the SICK scale."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from treenets.errors import TreenetsError
from treenets.predictors.base import Predictor
from treenets.trees.parents import ParentTree, binarize, parse_parents


@dataclass
class Relatedness:
    score: float  # the expected score sum_r r p(r)
    distribution: list[float]  # p(1..K)
    unknown: list[str]  # words read as <unk>


def chain(words: list[str]) -> ParentTree:
    """The words as a chain (for the sequential encoders only the order counts)."""
    return ParentTree(tuple(range(-1, len(words) - 1)), tuple(words))


class RelatednessPredictor(Predictor):
    """A trained relatedness model with its vocabulary (from `treenets.load`): scores sentence pairs."""

    def _tree(self, sentence: str, parents: str | None, side: str) -> ParentTree:
        words = sentence.split()
        if not words:
            raise TreenetsError(f"sentence {side} is empty")
        if self.net.sequential:
            return chain(words)
        if parents is None:
            kind = "dependency (one parent per word)" if self.config.data.trees == "dependency" else \
                "constituency (cparents: the words, then the phrases)"
            raise TreenetsError(f"sentence {side}: this model reads {kind} trees; give its parents")
        constituency = self.config.data.trees == "constituency"
        tree = parse_parents(parents, words, f"parents of sentence {side}", constituency)
        return binarize(tree) if constituency else tree

    @torch.no_grad()
    def predict(self, a: str, b: str, a_parents: str | None = None, b_parents: str | None = None) -> Relatedness:
        """Relatedness of sentences `a` and `b` (tokens separated by spaces; parents as in SICK's `.parents`
        (dependency) or `.cparents` (constituency) files, needed by Tree-LSTMs)."""
        from treenets.tasks.relatedness import expected_score

        left, right = self._tree(a, a_parents, "a"), self._tree(b, b_parents, "b")
        ids, unknown = [], []
        for tree in (left, right):
            encoded, missing = self.vocab.encode(tree.words)
            ids.append(torch.tensor(encoded))
            unknown += missing
        log_probs = self.net(([left], [ids[0]]), ([right], [ids[1]])).cpu()
        return Relatedness(float(expected_score(log_probs)[0]), [round(p, 6) for p in log_probs[0].exp().tolist()],
                           unknown)

    def predict_command(self, args) -> Relatedness:
        if not args.pair:
            raise TreenetsError("predict: a relatedness model needs --pair A B (and --parents for a Tree-LSTM)")
        parents = args.parents or (None, None)
        return self.predict(args.pair[0], args.pair[1], parents[0], parents[1])
