"""A trained ListOps model: the value of a sequence such as `[MAX 2 9 [MIN 4 7 ] 0 ]`, and the tree its Ordered
Memory induces of it (`treenets parse`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from treenets.core.errors import TreenetsError
from treenets.data.listops import ListOpsBatch, ListOpsExample, gold_tree, read_sequence
from treenets.nn.registry import InducedTrees
from treenets.predictors.base import PredictionInput, Predictor
from treenets.predictors.induced import InducedTreeParser


@dataclass
class ListOpsValue:
    value: int  # the model's answer, 0..9
    probabilities: list[float]  # of each value 0..9
    tokens: list[str]  # what the model read
    answer: int  # the sequence's value by the operators' definitions


def typed_sequence(text: str) -> list[str]:
    """The tokens of a sequence typed by a person: `]` and brackets need no spaces around them, and operators read
    in any case (`[max 2 9]` is `[MAX 2 9 ]`). What is left is checked by `read_sequence`."""
    return re.sub(r"([()\]])", r" \1 ", text).upper().split()


class ListOpsClassifier(InducedTreeParser, Predictor):
    """A trained ListOps model with its vocabulary (from `treenets.load`): the value of sequences; `parse` gives the
    trees its Ordered Memory induces (`treenets.predictors.induced`), scored against the tree of the lists
    (`treenets.data.listops.gold_tree`)."""

    inputs = (PredictionInput("sentence", "listops: a sequence such as '[MAX 2 9 [MIN 4 7 ] 0 ]'"),)
    reads = "a ListOps model reads --sentence SEQUENCE (such as '[MAX 2 9 [MIN 4 7 ] 0 ]')"

    @torch.no_grad()
    def predict(self, sequence: str) -> ListOpsValue:
        """The value of `sequence`, typed as a person types it (`typed_sequence`)."""
        tokens, answer, depth = read_sequence(typed_sequence(sequence))
        batch = ListOpsBatch.build([ListOpsExample(answer, tokens, depth)], self.vocab)
        logits, _ = self.net(batch.tokens, batch.lengths)
        probs = torch.softmax(logits, dim=-1)[0].cpu()
        return ListOpsValue(int(probs.argmax()), [round(float(p), 6) for p in probs], list(tokens), answer)

    def _predict_inputs(self, pretokenized: bool = False, sentence: str | None = None) -> ListOpsValue:
        if sentence is None:
            raise TreenetsError(f"predict: {self.reads}")
        return self.predict(sentence)  # sequences are tokens already: `pretokenized` changes nothing

    def _read_input(self, text: str, where: str | None, pretokenized: bool) -> tuple[list[str], list | str]:
        tokens, _, _ = read_sequence(typed_sequence(text), where)
        return list(tokens), gold_tree(tokens)

    def _induce(self, tokens: list[list[str]]) -> InducedTrees:
        batch = ListOpsBatch.build([ListOpsExample(0, tuple(t), 0) for t in tokens], self.vocab)
        return self.net(batch.tokens, batch.lengths)[1]
