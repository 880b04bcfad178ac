"""ListOps (Nangia & Bowman 2018; Ordered Memory's paper, section 4.2): the value of nested prefix-arithmetic
lists, a digit of ten classes (`treenets.data.listops`).

Ordered Memory reads each sequence's tokens (its brackets `( )` left out) and an MLP classifies its vector
(`treenets.nn.sequence_classifier`). Trained on `train.tsv`, every 10th sequence of it held out for model
selection (`data.valid_every`; the official code selects on the test file) and the training sequences longer than
`data.max_train_length` tokens left out (the official `--seq_len`); tested on `test.tsv`. The metric reports the
accuracy by how deeply a sequence's lists nest, and how well the trees Ordered Memory induces match the lists'
trees (`tree_f1`, as the official code scores them).
"""

from __future__ import annotations

from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from treenets.config import TrainConfig
from treenets.core.optim import AdamConfig, OptimConfig
from treenets.core.schema import PositiveInt, Section
from treenets.data.batching import ShuffledBatches
from treenets.data.listops import ListOpsBatch, gold_tree, listops_vocab, read_listops_splits
from treenets.nn.ordered_memory.encoders import OrderedMemorySequenceEncoderConfig
from treenets.nn.sequence_classifier import SequenceClassifier, SequenceClassifierConfig, SequenceEncoderConfig
from treenets.predictors.listops import ListOpsClassifier
from treenets.tasks import register
from treenets.tasks.base import Task, evaluating
from treenets.tasks.metrics import AccuracyByDepth

CLASSES = 10  # the values 0..9


class ListOpsDataConfig(Section):
    path: str = "listops"  # folder with train.tsv and test.tsv (`treenets data listops` writes them)
    valid_every: Annotated[int, Field(ge=2)] = 10  # every k-th training sequence (file order) held out for validation
    # training sequences of more tokens are left out (None: none); validation and test keep every length
    max_train_length: PositiveInt | None = None
    batch_size: PositiveInt = 128
    eval_batch_size: PositiveInt = 128


class ListOpsModelSection(SequenceClassifierConfig):
    """The task's model: Ordered Memory (its paper's ListOps model) unless `encoder` names another."""

    encoder: SequenceEncoderConfig = OrderedMemorySequenceEncoderConfig()


class ListOpsConfig(Section):
    task: Literal["listops"]
    data: ListOpsDataConfig = ListOpsDataConfig()
    model: ListOpsModelSection = ListOpsModelSection()
    # The official listops.py: Adam with betas (0, 0.999), lr halved when the accuracy stops improving.
    optim: OptimConfig = AdamConfig(lr=0.001, betas=(0.0, 0.999), eps=1e-9, weight_decay=1.2e-6, clip=1.0,
                                    lr_plateau_factor=0.5, lr_plateau_patience=2, lr_plateau_on="score")
    train: TrainConfig = TrainConfig(epochs=50, log_interval=100, seed=1111)


@register
class ListOpsTask(Task):
    """ListOps."""

    name = "listops"
    Config = ListOpsConfig
    Metric = AccuracyByDepth
    Predictor = ListOpsClassifier
    units = "sequences"

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        cfg = config.data
        folder = self.data_folder("ListOps sequences, train.tsv and test.tsv (`treenets data listops` writes them)")
        self.examples = read_listops_splits(folder, cfg.valid_every, cfg.max_train_length, self.splits)
        if self.vocab is None:
            self.vocab = listops_vocab()
        if "train" in self.splits:
            self.batches = ShuffledBatches(len(self.examples["train"]), cfg.batch_size, config.train.seed,
                                           rank=self.rank, world=self.world,
                                           lengths=[len(e.tokens) for e in self.examples["train"]])

    @classmethod
    def build_net(cls, config, vocab_size: int) -> SequenceClassifier:
        return config.model.build(vocab_size, CLASSES)

    def next_batch(self) -> ListOpsBatch | None:
        rows = self.batches.next_rows()
        return None if rows is None else ListOpsBatch.build([self.examples["train"][i] for i in rows], self.vocab)

    def train_loss(self, model, batch: ListOpsBatch) -> tuple[torch.Tensor, float]:
        """Mean cross-entropy of the values."""
        logits, _ = model(batch.tokens, batch.lengths)
        loss = F.cross_entropy(logits, batch.labels.to(logits.device))
        return loss, loss.item() * batch.size

    def eval_units(self, split: str, batch_size: int | None = None) -> int:
        return len(self.examples[split])

    def keep_every(self, split: str, every: int) -> None:
        self.examples[split] = self.examples[split][::every]

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None, progress=None) -> AccuracyByDepth:
        size = batch_size or self.config.data.eval_batch_size
        examples = sorted(self.examples[split], key=lambda e: len(e.tokens))  # less padding
        metric = AccuracyByDepth()
        with evaluating(model) as net:
            for start in range(0, len(examples), size):
                batch = ListOpsBatch.build(examples[start : start + size], self.vocab)
                logits, induced = net(batch.tokens, batch.lengths)
                metric.add(logits, batch.labels, batch.depths)
                metric.add_trees(induced.trees(batch.words), [gold_tree(words) for words in batch.words])
                if progress is not None:
                    progress(batch.size)
        return metric
