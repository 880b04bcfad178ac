"""A trained logical-inference model: the relation between two propositional-logic formulas, and for an Ordered
Memory encoder the trees it induces of formulas (`treenets parse`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from treenets.core.errors import TreenetsError
from treenets.data.logic import LABELS, RELATIONS, LogicBatch, LogicPair, formula_inputs, parse_formula
from treenets.nn.registry import InducedTrees
from treenets.predictors.base import PredictionInput, Predictor
from treenets.predictors.induced import InducedTreeParser
from treenets.trees.parents import nested_words


@dataclass
class Relation:
    relation: str  # one of `<`, `>`, `=`, `^`, `|`, `#`, `v`
    name: str  # e.g. "forward entailment"
    probabilities: dict[str, float]  # every relation's probability


class LogicClassifier(InducedTreeParser, Predictor):
    """A trained logic model with its vocabulary (from `treenets.load`): classifies formula pairs; with an Ordered
    Memory encoder, `parse` gives the trees it induces of formulas (`treenets.predictors.induced`), brackets included,
    and scored without them."""

    inputs = (PredictionInput("pair", "logic: two bracketed formulas (premise, hypothesis)", 2, ("A", "B")),)
    reads = "a logic model reads --pair PREMISE HYPOTHESIS (bracketed formulas)"

    @torch.no_grad()
    def predict(self, premise: str, hypothesis: str) -> Relation:
        """The relation of `premise` to `hypothesis`, each a bracketed formula such as `( a ( and ( not b ) ) )`,
        typed as a person types it: `(A (and (not B)))` reads the same (`typed_formula`)."""
        pair = LogicPair(0, parse_formula(typed_formula(premise), "premise"),
                         parse_formula(typed_formula(hypothesis), "hypothesis"))
        batch = LogicBatch.build([pair], self.vocab)
        # as the model is tested (Ordered Memory with its test slots): formulas of any size
        logits = self.net(batch.tokens, batch.lengths, batch.trees, batch.leaf_ids, test=True)
        probs = torch.softmax(logits, dim=-1)[0].cpu()
        best = LABELS[int(probs.argmax())]
        return Relation(best, RELATIONS[best], {label: round(float(p), 6) for label, p in zip(LABELS, probs)})

    left_out = frozenset(("(", ")"))

    def _read_input(self, text: str, where: str | None, pretokenized: bool) -> tuple[list[str], list | str]:
        formula = parse_formula(typed_formula(text), where)
        return list(formula.tokens), nested_words(formula.tree)

    def _induce(self, tokens: list[list[str]]) -> InducedTrees:
        formulas = [parse_formula(" ".join(t)) for t in tokens]  # read by `_read_input` already
        return self.net.encode_inducing(*formula_inputs(formulas, self.vocab), test=True)[1]

    def _no_trees(self) -> str | None:
        if self.net.induces_trees:
            return None
        return (f"this logic model's encoder ({self.config.model.name}) induces no trees: only Ordered Memory "
                "(ordered-memory) does")

    def _predict_inputs(self, pretokenized: bool = False, pair: list[str] | None = None) -> Relation:
        if not pair:
            raise TreenetsError("predict: a logic model needs --pair PREMISE HYPOTHESIS (bracketed formulas)")
        return self.predict(*pair)  # formulas are tokenised already: `pretokenized` changes nothing


def typed_formula(text: str) -> str:
    """A formula typed by a person in the tokens of the data files: brackets need no spaces around them, and
    capitals read as lower case (`(A (and B))` is `( a ( and b ) )`). What is left is checked by `parse_formula`."""
    return " ".join(re.sub(r"([()])", r" \1 ", text).lower().split())
