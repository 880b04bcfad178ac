"""A trained relatedness model: how related two sentences are, on the SICK scale."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from treenets.core.errors import TreenetsError
from treenets.nn.tree_models import expected_score
from treenets.predictors.base import PredictionInput, Predictor
from treenets.predictors.tree_sources import PARSER, sentence_tokens, tree_for
from treenets.text import NORMALIZERS, Dropped, check_text
from treenets.trees.parents import ParentTree, binarize, parse_parents


@dataclass
class Relatedness:
    score: float  # the expected score sum_r r p(r)
    scale: str  # what the score means: SICK's 1 (completely unrelated) to 5 (very related)
    distribution: list[float]  # p(1..K)
    unknown: list[str]  # words read as <unk>
    tokens: list[list[str]] | None = None  # what the model read of each sentence
    parser: str | None = None  # where the trees came from: a language model, a shape, or "given"
    dropped: list[list[Dropped]] | None = None  # what of each sentence it read no token from


def score_scale(top: int) -> str:
    """What a relatedness score from 1 to `top` means, as SICK's annotators were told (SICK: 1 to 5)."""
    return f"1 (completely unrelated) to {top} (very related)"


def chain(words: list[str]) -> ParentTree:
    """The words as a chain (for the sequential encoders only the order counts)."""
    return ParentTree(tuple(range(-1, len(words) - 1)), tuple(words))


class RelatednessPredictor(Predictor):
    """A trained relatedness model with its vocabulary (from `treenets.load`): scores sentence pairs."""

    inputs = (PredictionInput("pair", "relatedness: two sentences as typed", 2, ("A", "B")),
              PredictionInput("parents", "relatedness with a Tree-LSTM: each sentence's parents as in SICK's .parents "
                              "(dependency) or .cparents (constituency) files, over its tokens split on white space "
                              "(default for a constituency model: the trees --parser induces)", 2, ("PA", "PB")),
              PARSER)
    reads = "a relatedness model reads --pair A B (with --parents PA PB for a dependency Tree-LSTM)"

    def _tree(self, sentence: str, parents: str | None, side: str, parser: str | None,
              pretokenized: bool) -> tuple[ParentTree, str | None, list[Dropped]]:
        """The tree read of a sentence, where it came from, and what of the sentence was dropped."""
        trees = getattr(self.config.data, "trees", "dependency")
        if parents is not None:
            if self.net.sequential:
                raise TreenetsError(f"sentence {side}: an LSTM reads the words in order; it takes no parents")
            # parents count the tokens as given, split on white space
            reading = NORMALIZERS["none"].read(check_text(sentence, f"sentence {side}"))
            if not reading.words:
                raise TreenetsError(f"sentence {side} is empty")
            constituency = trees != "dependency"
            tree = parse_parents(parents, reading.words, f"parents of sentence {side}", constituency)
            return (binarize(tree) if constituency else tree), "given", reading.dropped
        tokens, dropped = sentence_tokens(self.config, sentence, pretokenized, f"sentence {side}")
        if self.net.sequential:
            return chain(tokens), None, dropped
        if trees == "dependency":
            raise TreenetsError(f"sentence {side}: this model reads dependency trees (one parent per word), which "
                                "treenets cannot induce; give its parents (--parents, as SICK's .parents files), "
                                "or use a model of constituency trees, which read any sentence")
        return (*tree_for(self.config, tokens, parser, self.device), dropped)

    @torch.no_grad()
    def predict(self, a: str, b: str, a_parents: str | None = None, b_parents: str | None = None,
                parser: str | None = None, pretokenized: bool = False) -> Relatedness:
        """Relatedness of sentences `a` and `b`.

        A sentence is normalised into SICK's tokens (Penn Treebank tokens, `treenets.text`) unless
        `pretokenized`. A Tree-LSTM of constituency trees reads it over the tree a language model induces
        (`parser`, else its config's `data.parser`, the shipped ON-LSTM by default), or over the tree its parents
        give (`a_parents`, `b_parents`: as SICK's `.cparents` or, for a dependency model, `.parents` files, over
        the sentence's tokens split on white space). A dependency model needs the parents.
        """
        (left, left_source, left_dropped), (right, _, right_dropped) = (
            self._tree(a, a_parents, "a", parser, pretokenized), self._tree(b, b_parents, "b", parser, pretokenized))
        ids, unknown = [], []
        for tree in (left, right):
            encoded, missing = self.vocab.encode(tree.words)
            ids.append(torch.tensor(encoded))
            unknown += missing
        log_probs = self.net(([left], [ids[0]]), ([right], [ids[1]])).cpu()
        return Relatedness(float(expected_score(log_probs)[0]), score_scale(log_probs.size(1)),
                           [round(p, 6) for p in log_probs[0].exp().tolist()], unknown,
                           [list(left.words), list(right.words)], left_source, [left_dropped, right_dropped])

    def _predict_inputs(self, pretokenized: bool = False, pair: list[str] | None = None,
                        parents: list[str] | None = None, parser: str | None = None) -> Relatedness:
        if not pair:
            raise TreenetsError("predict: a relatedness model needs --pair A B (and --parents for a dependency "
                                "Tree-LSTM)")
        a_parents, b_parents = parents or (None, None)
        return self.predict(pair[0], pair[1], a_parents, b_parents, parser, pretokenized)
