"""Semantic relatedness on SICK (Tai et al. 2015, section 4.2): two sentences, each encoded by a Tree-LSTM
over its dependency (Child-Sum) or binarised constituency (N-ary) tree, or by an LSTM; the similarity head
predicts a distribution over the scores 1..5, trained with the KL divergence to the sparse target of the
paper; the prediction is the expected score. Metrics: Pearson, Spearman, MSE; model selection on the dev
split (SICK trial), never on test.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from pydantic import model_validator

from treenets import data
from treenets.config import TrainConfig
from treenets.core.optim import AdagradConfig, OptimConfig
from treenets.core.schema import PositiveInt, Section
from treenets.data.batching import ShuffledBatches
from treenets.data.embeddings import load_embeddings
from treenets.data.sick import SPLIT_FOLDERS, Pair, PairBatch, read_split, read_vocab
from treenets.nn.registry import encoder_configs
from treenets.nn.tree_models import CellEncoderConfig, RelatednessModel, RelatednessModelConfig, expected_score
from treenets.nn.treelstm.encoders import ChildSumTreeLSTMConfig
from treenets.predictors.relatedness import RelatednessPredictor
from treenets.predictors.tree_sources import DEFAULT_PARSER, cached_trees, tree_source
from treenets.tasks import register
from treenets.tasks.base import Task, evaluating
from treenets.tasks.metrics import Correlation
from treenets.text import NormalizerName

# The optimisation of Tai et al. (2015) for both Tree-LSTM tasks.
ADAGRAD_OPTIM = AdagradConfig(lr=0.05, weight_decay=1e-4, decay_embeddings=False, clip=0.0)


class SICKDataConfig(Section):
    path: str = "sick"  # folder with train/, dev/ (SICK trial), test/ and the vocabulary
    vocab: str = "sick.vocab"  # one word per line, under `path`; 4 special tokens go in front
    # The trees the Tree-LSTM reads: the files' (*.parents, or *.cparents binarised), those `parser` induces,
    # or a fixed shape (`treenets.predictors.tree_sources`).
    trees: Literal["dependency", "constituency", "induced", "right-branching", "balanced"] = "dependency"
    parser: str = DEFAULT_PARSER  # the language model that induces trees: for `trees: induced`, and for
    # sentences typed without a tree by a model of constituency trees
    normalizer: NormalizerName = "tokens"  # how a typed sentence becomes SICK's tokens (`treenets.text`)
    embeddings: str | None = "sick/sick_embed.pth"  # a [vocab, emb] matrix in vocabulary order, or GloVe text
    batch_size: PositiveInt = 25
    eval_batch_size: PositiveInt = 100


class RelatednessModelSection(RelatednessModelConfig):
    """The task's model: the Child-Sum Tree-LSTM (over dependency trees) unless `encoder` names another."""

    encoder: CellEncoderConfig = ChildSumTreeLSTMConfig()


class RelatednessConfig(Section):
    task: Literal["relatedness"]
    data: SICKDataConfig = SICKDataConfig()
    model: RelatednessModelSection = RelatednessModelSection()
    optim: OptimConfig = ADAGRAD_OPTIM
    train: TrainConfig = TrainConfig(epochs=10, log_interval=20, seed=123)

    @model_validator(mode="after")
    def _trees_fit_the_encoder(self):
        encoder = self.model.encoder
        if encoder.reads_trees and encoder.children is not None and self.data.trees == "dependency":
            takes_any = [name for name, c in encoder_configs("sentences", lambda c: c.cell).items()
                         if c.reads_trees and c.children is None]
            raise ValueError(f"model.encoder.name {self.model.name} needs data.trees: constituency (dependency "
                             f"trees have any number of children, it reads at most {encoder.children}; use "
                             f"{' or '.join(takes_any)})")
        return self


def sparse_target(score: torch.Tensor, num_classes: int) -> torch.Tensor:
    """The paper's target distribution p for a score y in [1, K]: p_{floor(y)} = floor(y) - y + 1,
    p_{floor(y)+1} = y - floor(y), zero elsewhere, so that sum_i i p_i = y."""
    floor = score.floor().clamp(1, num_classes)
    upper = (floor + 1).clamp(max=num_classes)
    target = score.new_zeros(score.numel(), num_classes)
    frac = score - floor
    rows = torch.arange(score.numel())
    target[rows, (floor - 1).long()] += 1 - frac
    target[rows, (upper - 1).long()] += frac
    return target


def pair_log_probs(model, batch: PairBatch) -> torch.Tensor:
    """The model's log-probabilities [B, K] for the pairs of a batch."""
    return model(([p.left for p in batch.pairs], batch.left_ids), ([p.right for p in batch.pairs], batch.right_ids))


@register
class RelatednessTask(Task):
    """SICK relatedness."""

    name = "relatedness"
    Config = RelatednessConfig
    Metric = Correlation
    Predictor = RelatednessPredictor
    units = "pairs"

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        cfg = config.data
        folder = self.data_folder("SICK with train/, dev/, test/")
        if self.vocab is None:
            self.vocab = read_vocab(folder / cfg.vocab)
        build = None
        if cfg.trees not in ("dependency", "constituency") and config.model.encoder.reads_trees:
            source = tree_source(cfg.trees, cfg.parser)
            build = lambda sentences, what: cached_trees(source, sentences, what)  # noqa: E731
        self.pairs = {split: read_split(folder / SPLIT_FOLDERS[split], cfg.trees, build) for split in self.splits}
        if "train" in self.splits:
            self.batches = ShuffledBatches(len(self.pairs["train"]), cfg.batch_size, config.train.seed,
                                           rank=self.rank, world=self.world)

    @classmethod
    def build_net(cls, config, vocab_size: int) -> RelatednessModel:
        return config.model.build(vocab_size)

    def build_model(self) -> RelatednessModel:
        model = self.build_net(self.config, len(self.vocab))
        path = self.config.data.embeddings
        if path:
            matrix, _ = load_embeddings(data.resolve(path, self.root), self.vocab, self.config.model.emb_size)
            model.emb.weight.data.copy_(matrix)
        return model

    def next_batch(self) -> PairBatch | None:
        rows = self.batches.next_rows()
        return None if rows is None else PairBatch.build([self.pairs["train"][i] for i in rows], self.vocab)

    def train_loss(self, model, batch: PairBatch) -> tuple[torch.Tensor, float]:
        """KL divergence from the sparse target (summed over classes, averaged over the batch)."""
        log_probs = pair_log_probs(model, batch)
        target = sparse_target(batch.scores, log_probs.size(1)).to(log_probs.device)
        loss = F.kl_div(log_probs, target, reduction="batchmean")
        return loss, loss.item() * batch.size

    def predict(self, model, pairs: list[Pair], batch_size: int = 100) -> np.ndarray:
        """Expected scores for the pairs (an array)."""
        scores = []
        with evaluating(model, inference=True) as net:
            for start in range(0, len(pairs), batch_size):
                log_probs = pair_log_probs(net, PairBatch.build(pairs[start : start + batch_size], self.vocab))
                scores.append(expected_score(log_probs).cpu())
        return torch.cat(scores).numpy()

    def eval_units(self, split: str, batch_size: int | None = None) -> int:
        return len(self.pairs[split])

    def keep_every(self, split: str, every: int) -> None:
        self.pairs[split] = self.pairs[split][::every]

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None, progress=None) -> Correlation:
        pairs = self.pairs[split]
        metric = Correlation()
        metric.add(self.predict(model, pairs, batch_size or self.config.data.eval_batch_size),
                   [p.score for p in pairs])
        if progress is not None:
            progress(len(pairs))
        return metric
