"""Logical inference on propositional logic (Bowman et al. 2015; the ON-LSTM paper, section 6.4).

Pairs of formulas labelled with one of seven relations; a siamese encoder (ON-LSTM, LSTM, Ordered Memory, or a
binary Tree-LSTM given the formulas' trees) and an MLP classify each pair (`treenets.nn.pair_classifier`). Trained on
the pairs with at most `data.max_train_operators` operators (the paper: 6) with every 10th of them held out for
model selection; the test split holds every file, and the metric reports accuracy by the number of operators
(0..12, 12 meaning 12 or more), which shows how a model generalises to longer formulas than it was trained on.
An encoder that induces trees (Ordered Memory) is tested with its test-time slots and has its trees of the
formulas scored against their bracketing.
"""

from __future__ import annotations

from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from treenets.config import TrainConfig
from treenets.core.optim import AdamConfig, OptimConfig
from treenets.core.schema import PositiveInt, Section
from treenets.core.vocab import Vocab
from treenets.data.batching import ShuffledBatches
from treenets.data.logic import LABELS, MAX_FILE, LogicBatch, logic_vocab, read_logic_splits
from treenets.nn.onlstm.encoders import ONLSTMPairEncoderConfig
from treenets.nn.pair_classifier import PairClassifier, PairClassifierConfig, PairEncoderConfig
from treenets.nn.registry import InducedTrees
from treenets.predictors.logic import LogicClassifier
from treenets.tasks import register
from treenets.tasks.base import Task, evaluating
from treenets.tasks.metrics import AccuracyByOperators
from treenets.trees.build import without
from treenets.trees.parents import nested_words


class LogicDataConfig(Section):
    path: str = "logic"  # folder with train0..train12, test0..test12
    max_train_operators: Annotated[int, Field(ge=0, le=MAX_FILE)] = 6  # train on train0..trainN
    valid_every: Annotated[int, Field(ge=2)] = 10  # every k-th training pair (file order) held out for validation
    batch_size: PositiveInt = 128
    eval_batch_size: PositiveInt = 256


class LogicModelSection(PairClassifierConfig):
    """The task's model: ON-LSTM layers (the ON-LSTM paper's model) unless `encoder` names another."""

    encoder: PairEncoderConfig = ONLSTMPairEncoderConfig()


class LogicConfig(Section):
    task: Literal["logic"]
    data: LogicDataConfig = LogicDataConfig()
    model: LogicModelSection = LogicModelSection()
    # The official ON-LSTM logic recipe: Adam (eps 1e-9), lr halved when validation accuracy stops improving.
    optim: OptimConfig = AdamConfig(lr=0.001, eps=1e-9, weight_decay=1.2e-6, clip=1.0, lr_plateau_factor=0.5,
                                    lr_plateau_patience=2, lr_plateau_on="score")
    train: TrainConfig = TrainConfig(epochs=50, log_interval=200, seed=1111)


@register
class LogicTask(Task):
    """Propositional-logic inference."""

    name = "logic"
    Config = LogicConfig
    Metric = AccuracyByOperators
    Predictor = LogicClassifier
    units = "pairs"

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        cfg = config.data
        folder = self.data_folder("Bowman's propositional-logic files train0..train12, test0..test12")
        self.pairs = read_logic_splits(folder, cfg.max_train_operators, cfg.valid_every, self.splits)
        if self.vocab is None:
            self.vocab = logic_vocab()
        if "train" in self.splits:
            self.batches = ShuffledBatches(len(self.pairs["train"]), cfg.batch_size, config.train.seed,
                                           rank=self.rank, world=self.world, lengths=self._lengths("train"))

    def _lengths(self, split: str) -> list[int]:
        """The longer formula's tokens of each pair (what a padded batch's length is)."""
        return [max(len(p.premise.tokens), len(p.hypothesis.tokens)) for p in self.pairs[split]]

    @classmethod
    def build_net(cls, config, vocab_size: int) -> PairClassifier:
        return config.model.build(vocab_size, len(LABELS))

    def next_batch(self) -> LogicBatch | None:
        rows = self.batches.next_rows()
        return None if rows is None else LogicBatch.build([self.pairs["train"][i] for i in rows], self.vocab)

    def train_loss(self, model, batch: LogicBatch) -> tuple[torch.Tensor, float]:
        """Mean cross-entropy of the relations."""
        logits = model(batch.tokens, batch.lengths, batch.trees, batch.leaf_ids)
        loss = F.cross_entropy(logits, batch.labels.to(logits.device))
        return loss, loss.item() * batch.size

    def eval_units(self, split: str, batch_size: int | None = None) -> int:
        return len(self.pairs[split])

    def keep_every(self, split: str, every: int) -> None:
        self.pairs[split] = self.pairs[split][::every]

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None,
                 progress=None) -> AccuracyByOperators:
        size = batch_size or self.config.data.eval_batch_size
        lengths = self._lengths(split)
        pairs = [self.pairs[split][i] for i in sorted(range(len(lengths)), key=lengths.__getitem__)]  # less padding
        metric = AccuracyByOperators(MAX_FILE)
        with evaluating(model) as net:
            for start in range(0, len(pairs), size):
                batch = LogicBatch.build(pairs[start : start + size], self.vocab)
                vectors, induced = net.encode_inducing(batch.tokens, batch.lengths, batch.trees, batch.leaf_ids,
                                                       test=split == "test")
                metric.add(net.classify(vectors), batch.labels, batch.operators)
                if induced is not None:
                    metric.add_trees(*induced_trees(batch, induced, self.vocab))
                if progress is not None:
                    progress(batch.size)
        return metric


def induced_trees(batch: LogicBatch, induced: InducedTrees, vocab: Vocab) -> tuple[list, list]:
    """The trees an encoder induced of a batch's formulas (what it declares of them: `InducedTrees`), brackets
    left out, and the formulas' own trees: nested lists of their words."""
    tokens = [[vocab.words[i] for i in batch.tokens[:length, j].tolist()] for j, length in
              enumerate(batch.lengths.tolist())]
    return ([without(tree, {"(", ")"}) for tree in induced.trees(tokens)],
            [nested_words(tree) for tree in batch.trees])
