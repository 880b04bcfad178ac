"""Whole models over sentences with given trees (Tai et al., 2015): word embeddings, a sentence encoder
(Child-Sum or N-ary Tree-LSTM, or the sequential baselines LSTM / BiLSTM) and a head — the similarity head
for relatedness (section 4.2), a softmax classifier on every node for sentiment (section 4.1). Each
model's config is declared beside it.
"""

from __future__ import annotations

from typing import Annotated, Literal, NamedTuple

import torch
import torch.nn as nn
from pydantic import Field

from treenets.nn.treelstm import ChildSumTreeLSTM, NaryTreeLSTM, SequenceLSTM, SimilarityHead, TreeBatch
from treenets.schema import PositiveInt, Probability, Section
from treenets.trees.parents import ParentTree

TreeEncoderName = Literal["childsum-treelstm", "binary-treelstm", "lstm", "bilstm"]


class States(NamedTuple):
    h: torch.Tensor  # [n, dim]
    c: torch.Tensor  # [n, dim]


class TreeModel(nn.Module):
    """Embedding and encoder: the part both models share.

    Args:
        vocab_size: rows of the embedding.
        encoder: which encoder (`TreeEncoderName`).
        emb_size: the word vectors' size.
        mem_size: the encoder's memory size (BiLSTM: per direction).
        freeze_embeddings: keep the word vectors fixed.
        emb_std: initialise the word vectors N(0, emb_std) (None: N(0, 1), torch's default).
    """

    def __init__(self, vocab_size: int, encoder: str, emb_size: int, mem_size: int, freeze_embeddings: bool,
                 emb_std: float | None = None):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, emb_size)
        if emb_std is not None:
            nn.init.normal_(self.emb.weight, 0.0, emb_std)
        if encoder == "childsum-treelstm":
            self.encoder = ChildSumTreeLSTM(emb_size, mem_size)
        elif encoder == "binary-treelstm":
            self.encoder = NaryTreeLSTM(emb_size, mem_size, 2)
        else:
            self.encoder = SequenceLSTM(emb_size, mem_size, encoder == "bilstm")
        self.out_dim = self.encoder.out_dim if self.sequential else mem_size
        if freeze_embeddings:
            self.emb.weight.requires_grad_(False)

    @property
    def sequential(self) -> bool:
        """Whether the encoder reads the words in order (LSTM, BiLSTM) rather than over the tree."""
        return isinstance(self.encoder, SequenceLSTM)

    def encode(self, trees: list[ParentTree], word_ids: list[torch.Tensor]) -> tuple[States, TreeBatch | None]:
        """States of every node of a batch of trees (`[num_nodes, dim]`, with the batch's `TreeBatch`), or for
        sequential encoders of every sentence (`[B, dim]`, and None).

        Args:
            trees: the trees (their shape; sequential encoders only count their words).
            word_ids: per tree, the ids of its words in node order, [n_words].
        """
        device = self.emb.weight.device
        if self.sequential:
            padded = nn.utils.rnn.pad_sequence(word_ids).to(device)
            return States(*self.encoder(self.emb(padded), torch.tensor([len(w) for w in word_ids]))), None
        batch = TreeBatch.build(trees, device)
        return States(*self.encoder(batch, *batch.word_inputs(torch.cat(word_ids).to(device), self.emb))), batch


class RelatednessModelConfig(Section):
    """Tree-LSTM (or LSTM) sentence encoder and the similarity head of Tai et al. (2015)."""

    name: TreeEncoderName = "childsum-treelstm"
    emb_size: PositiveInt = 300  # [input_dim] the word vectors' size
    mem_size: PositiveInt = 150  # [mem_dim]
    hidden_size: PositiveInt = 50  # [hidden_dim] of the similarity head
    num_classes: Annotated[int, Field(ge=2)] = 5  # relatedness scores 1..num_classes
    head_state: Literal["h", "c"] = "h"  # the root state the head compares: h (paper) or c (official port)
    freeze_embeddings: bool = False

    def build(self, vocab_size: int) -> RelatednessModel:
        return RelatednessModel(vocab_size, self)


class RelatednessModel(TreeModel):
    """Embedding -> encoder -> similarity head over the two sentences' vectors.

    Args:
        vocab_size: rows of the embedding.
        config: a `RelatednessModelConfig`.
    """

    def __init__(self, vocab_size: int, config: RelatednessModelConfig):
        super().__init__(vocab_size, config.name, config.emb_size, config.mem_size, config.freeze_embeddings)
        self.head_state = config.head_state
        self.similarity = SimilarityHead(self.out_dim, config.hidden_size, config.num_classes)

    def sentence_states(self, trees: list[ParentTree], word_ids: list[torch.Tensor]) -> States:
        """The sentences' vectors, `[len(trees), dim]` each: the root's h and c (the sequential encoders' last)."""
        states, batch = self.encode(trees, word_ids)
        return states if batch is None else States(states.h[batch.roots], states.c[batch.roots])

    def compare(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """The similarity head: log-probabilities [B, num_classes] of the scores from two [B, dim] vectors."""
        return self.similarity(left, right)

    def forward(self, left, right) -> torch.Tensor:
        """(trees, word ids) of the left and right sentences -> log-probabilities [B, num_classes]; the head
        compares the roots' h (paper) or c (`head_state: c`, as the official port)."""
        both = self.sentence_states(left[0] + right[0], left[1] + right[1])
        vectors = both.c if self.head_state == "c" else both.h
        half = len(left[0])
        return self.compare(vectors[:half], vectors[half:])


def expected_score(log_probs: torch.Tensor) -> torch.Tensor:
    """`sum_r r p(r)` of each row of log-probabilities [B, K] over the scores 1..K."""
    classes = torch.arange(1, log_probs.size(1) + 1, dtype=log_probs.dtype, device=log_probs.device)
    return log_probs.exp() @ classes


class SentimentModelConfig(Section):
    """Tree-LSTM (or LSTM) encoder with a softmax classifier (on every node for Tree-LSTMs)."""

    name: TreeEncoderName = "binary-treelstm"
    emb_size: PositiveInt = 300
    mem_size: PositiveInt = 150
    dropout: Probability = 0.5  # on the classifier's input
    freeze_embeddings: bool = False

    def build(self, vocab_size: int, num_classes: int) -> SentimentModel:
        return SentimentModel(vocab_size, self, num_classes)


class SentimentModel(TreeModel):
    """Embedding -> encoder -> dropout -> softmax classifier (on every node for Tree-LSTMs).

    Args:
        vocab_size: rows of the embedding.
        config: a `SentimentModelConfig`.
        num_classes: 5 (fine-grained) or 2 (binary).
    """

    def __init__(self, vocab_size: int, config: SentimentModelConfig, num_classes: int):
        super().__init__(vocab_size, config.name, config.emb_size, config.mem_size, config.freeze_embeddings,
                         emb_std=0.05)
        self.classifier = nn.Linear(self.out_dim, num_classes)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, trees: list[ParentTree], word_ids: list[torch.Tensor]):
        """Log-probabilities: for Tree-LSTMs of every node `[nodes, classes]` with the batch's `TreeBatch`;
        for sequential encoders of every sentence `[B, classes]` (and None)."""
        states, batch = self.encode(trees, word_ids)
        # float32 log-probabilities, also when the classifier's product ran in bfloat16 (treenets.nn.precision)
        return torch.log_softmax(self.classifier(self.dropout(states.h)).float(), dim=-1), batch
