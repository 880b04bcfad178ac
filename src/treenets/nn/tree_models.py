"""Whole models over sentences with given trees (Tai et al., 2015): word embeddings, a sentence encoder and a head
— the similarity head for relatedness (section 4.2), a softmax classifier on every node for sentiment (section
4.1). Sentiment also reads through an encoder of the words in order, with Ordered Memory's SST classifier: input
dropout and an MLP with a hidden layer.

The encoders are the models' (`treenets.nn.encoders`, kind "sentences": the Child-Sum and N-ary Tree-LSTMs and the
paper's sequential baselines, Ordered Memory), each in its model's folder, chosen by the `encoder:` section's
`name` (`model: {encoder: {name: binary-treelstm, mem_size: 150}, dropout: 0.5}`).
"""

from __future__ import annotations

from typing import Annotated, Literal, NamedTuple

import torch
import torch.nn as nn
from pydantic import Field

from treenets.core.schema import PositiveInt, Probability
from treenets.nn import precision
from treenets.nn.dropout import locked_dropout
from treenets.nn.encoders import ClassifierConfig
from treenets.nn.registry import InducedTrees, encoder_union
from treenets.trees.parents import ParentTree

# The encoders of sentences the models offer (`treenets.nn.registry.encoder_union`), told apart by `name`; those
# with a memory cell, which relatedness may compare (`head_state: c`), for relatedness.
SentenceEncoderConfig = encoder_union("sentences")
CellEncoderConfig = encoder_union("sentences", where=lambda config: config.cell)


class States(NamedTuple):
    h: torch.Tensor  # [n, dim]
    c: torch.Tensor | None  # [n, dim]; None for Ordered Memory


class SimilarityHead(nn.Module):
    """The distance-and-angle head for relatedness (section 4.2): from two sentence vectors,
    `p = softmax(W_p sigmoid(W_x (h_L * h_R) + W_+ |h_L - h_R| + b_h) + b_p)` over the scores 1..K.
    Parameter names follow the official port (wh, wp)."""

    def __init__(self, mem_dim: int, hidden_dim: int, num_classes: int = 5):
        super().__init__()
        self.wh = nn.Linear(2 * mem_dim, hidden_dim)
        self.wp = nn.Linear(hidden_dim, num_classes)

    def forward(self, left: torch.Tensor, right: torch.Tensor) -> torch.Tensor:
        """Log-probabilities [B, num_classes]."""
        features = torch.cat([left * right, (left - right).abs()], dim=1)
        return precision.log_softmax(self.wp(torch.sigmoid(self.wh(features))), dim=1)


class TreeModel(nn.Module):
    """Embedding and encoder: the part both models share.

    Args:
        vocab_size: rows of the embedding.
        emb_size: the word vectors' size, the encoder's input.
        encoder: the encoder's config (`SentenceEncoderConfig`).
        freeze_embeddings: keep the word vectors fixed.
        emb_std: initialise the word vectors N(0, emb_std) (None: N(0, 1), torch's default).
        dropout_input: dropout on the word vectors a sequential encoder reads, one mask per sentence (locked over
            its words, as Ordered Memory's SST code).
    """

    def __init__(self, vocab_size: int, emb_size: int, encoder: SentenceEncoderConfig, freeze_embeddings: bool,
                 emb_std: float | None = None, dropout_input: float = 0.0):
        super().__init__()
        self.dropout_input = dropout_input
        self.emb = nn.Embedding(vocab_size, emb_size)
        if emb_std is not None:
            nn.init.normal_(self.emb.weight, 0.0, emb_std)
        self.encoder = encoder.build(emb_size)
        # whether the encoder reads the words in order (LSTM, BiLSTM) rather than over the tree, and whether it
        # induces a tree of each sentence as it reads (Ordered Memory): its config declares both
        self.sequential, self.induces_trees = not encoder.reads_trees, encoder.induces_trees
        self.out_dim = encoder.out_dim
        if freeze_embeddings:
            self.emb.weight.requires_grad_(False)

    def sequence_inputs(self, word_ids: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """What a sequential encoder reads of sentences of these word ids: their word vectors right-padded [T, B,
        emb] (with input dropout in training) and their lengths [B]."""
        padded = nn.utils.rnn.pad_sequence(word_ids).to(self.emb.weight.device)
        return (locked_dropout(self.emb(padded), self.dropout_input, self.training),
                torch.tensor([len(w) for w in word_ids]))

    def encode(self, trees: list[ParentTree], word_ids: list[torch.Tensor]) -> tuple[States, object | None]:
        """States of every node of a batch of trees (`[num_nodes, dim]`, with the encoder's batch of them), or for
        sequential encoders of every sentence (`[B, dim]`, and None).

        Args:
            trees: the trees (their shape; sequential encoders only count their words).
            word_ids: per tree, the ids of its words in node order, [n_words].
        """
        if self.sequential:
            return States(*self.encoder(*self.sequence_inputs(word_ids))), None
        device = self.emb.weight.device
        batch = self.encoder.batch(trees, device)
        return States(*self.encoder(batch, *batch.word_inputs(torch.cat(word_ids).to(device), self.emb))), batch


class RelatednessModelConfig(ClassifierConfig):
    """A sentence encoder with a memory cell and the similarity head of Tai et al. (2015)."""

    encoder: CellEncoderConfig
    emb_size: PositiveInt = 300  # [input_dim] the word vectors' size
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
        super().__init__(vocab_size, config.emb_size, config.encoder, config.freeze_embeddings)
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


class SentimentModelConfig(ClassifierConfig):
    """A sentence encoder with a softmax classifier (on every node for the encoders that read trees).
    `dropout_input` is read by the sequential encoders only (in brackets the official Ordered Memory `sentiment.py`
    options)."""

    encoder: SentenceEncoderConfig
    emb_size: PositiveInt = 300
    dropout: Probability = 0.5  # [dropouto] on the classifier's input (and its hidden layer's)
    dropout_input: Probability = 0.0  # [dropouti] on the word vectors, one mask per sentence (sequential encoders)
    # [nhid] a hidden ReLU layer of this size before the classifier (Ordered Memory's SST classifier); None: none
    mlp_hidden: PositiveInt | None = None
    freeze_embeddings: bool = False

    def build(self, vocab_size: int, num_classes: int) -> SentimentModel:
        return SentimentModel(vocab_size, self, num_classes)


class SentimentModel(TreeModel):
    """Embedding -> (input dropout) -> encoder -> dropout -> (hidden ReLU layer -> dropout) -> softmax classifier
    (on every node for Tree-LSTMs).

    Args:
        vocab_size: rows of the embedding.
        config: a `SentimentModelConfig`.
        num_classes: 5 (fine-grained) or 2 (binary).
    """

    def __init__(self, vocab_size: int, config: SentimentModelConfig, num_classes: int):
        super().__init__(vocab_size, config.emb_size, config.encoder, config.freeze_embeddings, emb_std=0.05,
                         dropout_input=config.dropout_input)
        self.hidden = None if config.mlp_hidden is None else nn.Linear(self.out_dim, config.mlp_hidden)
        self.classifier = nn.Linear(config.mlp_hidden or self.out_dim, num_classes)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, trees: list[ParentTree], word_ids: list[torch.Tensor]):
        """Log-probabilities: for Tree-LSTMs of every node `[nodes, classes]` with the batch's `TreeBatch`;
        for sequential encoders of every sentence `[B, classes]` (and None)."""
        states, batch = self.encode(trees, word_ids)
        return self.classify(states.h), batch

    def classify(self, vectors: torch.Tensor) -> torch.Tensor:
        """The head: log-probabilities [n, classes] of the classes of n vectors [n, dim] (nodes or sentences)."""
        features = self.dropout(vectors)
        if self.hidden is not None:
            features = self.dropout(torch.relu(self.hidden(features)))
        return precision.log_softmax(self.classifier(features), dim=-1)

    def forward_inducing(self, word_ids: list[torch.Tensor]) -> tuple[torch.Tensor, InducedTrees]:
        """An encoder that induces trees only (`induces_trees`): as `forward` over sentences of these word ids,
        their log-probabilities [B, classes], with the trees it induced of them (`InducedTrees`: Ordered Memory's
        memory slot of each word [T, B], 0 past a sentence's end, and the trees built from them)."""
        vectors, induced = self.encoder.encode(*self.sequence_inputs(word_ids))
        return self.classify(vectors), induced
