"""Whole models over sentences with given trees (Tai et al., 2015): word embeddings, a sentence encoder
(Child-Sum or N-ary Tree-LSTM, or the sequential baselines LSTM / BiLSTM) and a head — the similarity head
for relatedness (section 4.2), a softmax classifier on every node for sentiment (section 4.1). Each
model's config is declared beside it. Sentiment also takes Ordered Memory (Shen et al., 2019) as a sequential
encoder, with its SST classifier: input dropout and an MLP with a hidden layer.

The encoders are chosen as the language models are: one small config per encoder, told apart by its `name`, whose
`build()` makes the network (`TreeEncoderConfig`, their union). A model config holds the encoder's fields flat
beside the head's (`model: {name: binary-treelstm, mem_size: 150, dropout: 0.5}`), and its `encoder` is the
config of the encoder that `name` names.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal, NamedTuple, get_args

import torch
import torch.nn as nn
from pydantic import Field

from treenets.nn import precision
from treenets.nn.dropout import locked_dropout
from treenets.nn.ordered_memory.model import OrderedMemory
from treenets.nn.registry import InducedTrees
from treenets.nn.treelstm.model import ChildSumTreeLSTM, NaryTreeLSTM, SequenceLSTM, SimilarityHead, TreeBatch
from treenets.schema import PositiveInt, Probability, Section
from treenets.trees.parents import ParentTree


class _EncoderSizes(Section):
    """What every encoder of the tree models reads; its model config gives the values."""

    emb_size: PositiveInt  # the word vectors' size, the encoder's input
    mem_size: PositiveInt  # the memory size (BiLSTM: per direction)
    reads_trees: ClassVar[bool] = True  # False: it reads the words in order, and of a tree only counts its words
    # the most children a node of the trees it reads may have (None: any number, as a dependency tree's nodes)
    children: ClassVar[int | None] = None


class ChildSumTreeLSTMConfig(_EncoderSizes):
    """Child-Sum Tree-LSTM (section 3.1): a node sums its children's states, so it takes any number of them
    (dependency trees)."""

    name: Literal["childsum-treelstm"] = "childsum-treelstm"

    def build(self) -> ChildSumTreeLSTM:
        return ChildSumTreeLSTM(self.emb_size, self.mem_size)


class BinaryTreeLSTMConfig(_EncoderSizes):
    """N-ary Tree-LSTM with N = 2 (section 3.2): a weight matrix per child position, so at most two children
    (binary constituency trees)."""

    name: Literal["binary-treelstm"] = "binary-treelstm"
    children: ClassVar[int | None] = 2

    def build(self) -> NaryTreeLSTM:
        return NaryTreeLSTM(self.emb_size, self.mem_size, 2)


class LSTMEncoderConfig(_EncoderSizes):
    """The paper's sequential baseline: an LSTM over the words; the sentence is its last state."""

    name: Literal["lstm"] = "lstm"
    reads_trees: ClassVar[bool] = False

    def build(self) -> SequenceLSTM:
        return SequenceLSTM(self.emb_size, self.mem_size, bidirectional=False)


class BiLSTMEncoderConfig(_EncoderSizes):
    """The bidirectional baseline: an LSTM each way; the sentence is both last states side by side."""

    name: Literal["bilstm"] = "bilstm"
    reads_trees: ClassVar[bool] = False

    def build(self) -> SequenceLSTM:
        return SequenceLSTM(self.emb_size, self.mem_size, bidirectional=True)


class OrderedMemoryEncoderConfig(_EncoderSizes):
    """Ordered Memory over the words (`treenets.nn.ordered_memory.model`); the sentence is its output at the last word
    (the official `sentiment.py`'s encoder; `mem_size` is the slot size). It has no memory cell apart from its
    slots: a sentence has no `c`, so it encodes sentences for sentiment only."""

    name: Literal["ordered-memory"] = "ordered-memory"
    slots: PositiveInt  # [nslot]
    dropout_cell: Probability  # [dropout] in the gated recursive cell
    dropout_memory: Probability  # [dropoutm] in the slot attention
    reads_trees: ClassVar[bool] = False

    def build(self) -> OrderedMemorySentences:
        return OrderedMemorySentences(self)


class OrderedMemorySentences(nn.Module):
    """Ordered Memory as a sentence encoder: `forward` as `SequenceLSTM`'s, with no `c` (None)."""

    def __init__(self, config: OrderedMemoryEncoderConfig):
        super().__init__()
        self.memory = OrderedMemory(config.emb_size, config.mem_size, config.slots, config.dropout_cell,
                                    config.dropout_memory)
        self.out_dim = config.mem_size

    def forward(self, embedded: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, None]:
        """embedded [T, B, in] (right-padded), lengths [B] -> (sentence vectors [B, out_dim], None)."""
        return self.memory(embedded, lengths).output, None


# The encoders a tree model's `name` chooses from: a new one is a config class above, added here (sentiment's
# alone, for an encoder without a memory cell, which relatedness may compare).
TreeEncoderConfig = Annotated[ChildSumTreeLSTMConfig | BinaryTreeLSTMConfig | LSTMEncoderConfig | BiLSTMEncoderConfig,
                              Field(discriminator="name")]
SentenceEncoderConfig = Annotated[ChildSumTreeLSTMConfig | BinaryTreeLSTMConfig | LSTMEncoderConfig
                                  | BiLSTMEncoderConfig | OrderedMemoryEncoderConfig, Field(discriminator="name")]


def encoder_configs(encoders) -> dict[str, type[Section]]:
    """The configs of a union of encoders (`Annotated[A | B, Field(discriminator="name")]`) by their `name`."""
    return {member.model_fields["name"].default: member for member in get_args(get_args(encoders)[0])}


def chosen_encoder(encoders, config: Section) -> Section:
    """The config of the encoder that `config.name` names among the union `encoders`, holding those of `config`'s
    fields that it declares (a model config also holds its head's, and for saved configs other encoders')."""
    encoder = encoder_configs(encoders)[config.name]
    return encoder(**config.model_dump(include=set(encoder.model_fields)))


TreeEncoderName = Literal[tuple(encoder_configs(TreeEncoderConfig))]
SentenceEncoderName = Literal[tuple(encoder_configs(SentenceEncoderConfig))]


class States(NamedTuple):
    h: torch.Tensor  # [n, dim]
    c: torch.Tensor | None  # [n, dim]; None for Ordered Memory


class TreeModel(nn.Module):
    """Embedding and encoder: the part both models share.

    Args:
        vocab_size: rows of the embedding.
        encoder: the encoder's config (`SentenceEncoderConfig`), with the word vectors' size.
        freeze_embeddings: keep the word vectors fixed.
        emb_std: initialise the word vectors N(0, emb_std) (None: N(0, 1), torch's default).
        dropout_input: dropout on the word vectors a sequential encoder reads, one mask per sentence (locked over
            its words, as Ordered Memory's SST code).
    """

    def __init__(self, vocab_size: int, encoder: SentenceEncoderConfig, freeze_embeddings: bool,
                 emb_std: float | None = None, dropout_input: float = 0.0):
        super().__init__()
        self.dropout_input = dropout_input
        self.emb = nn.Embedding(vocab_size, encoder.emb_size)
        if emb_std is not None:
            nn.init.normal_(self.emb.weight, 0.0, emb_std)
        self.encoder = encoder.build()
        # whether the encoder reads the words in order (LSTM, BiLSTM) rather than over the tree: its config says
        self.sequential = not encoder.reads_trees
        self.out_dim = self.encoder.out_dim if self.sequential else encoder.mem_size
        if freeze_embeddings:
            self.emb.weight.requires_grad_(False)

    def sequence_inputs(self, word_ids: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """What a sequential encoder reads of sentences of these word ids: their word vectors right-padded [T, B,
        emb] (with input dropout in training) and their lengths [B]."""
        padded = nn.utils.rnn.pad_sequence(word_ids).to(self.emb.weight.device)
        return (locked_dropout(self.emb(padded), self.dropout_input, self.training),
                torch.tensor([len(w) for w in word_ids]))

    def encode(self, trees: list[ParentTree], word_ids: list[torch.Tensor]) -> tuple[States, TreeBatch | None]:
        """States of every node of a batch of trees (`[num_nodes, dim]`, with the batch's `TreeBatch`), or for
        sequential encoders of every sentence (`[B, dim]`, and None).

        Args:
            trees: the trees (their shape; sequential encoders only count their words).
            word_ids: per tree, the ids of its words in node order, [n_words].
        """
        if self.sequential:
            return States(*self.encoder(*self.sequence_inputs(word_ids))), None
        device = self.emb.weight.device
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

    @property
    def encoder(self) -> TreeEncoderConfig:
        """The config of the encoder `name` names."""
        return chosen_encoder(TreeEncoderConfig, self)

    def build(self, vocab_size: int) -> RelatednessModel:
        return RelatednessModel(vocab_size, self)


class RelatednessModel(TreeModel):
    """Embedding -> encoder -> similarity head over the two sentences' vectors.

    Args:
        vocab_size: rows of the embedding.
        config: a `RelatednessModelConfig`.
    """

    def __init__(self, vocab_size: int, config: RelatednessModelConfig):
        super().__init__(vocab_size, config.encoder, config.freeze_embeddings)
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
    """Tree-LSTM (or LSTM, or Ordered Memory) encoder with a softmax classifier (on every node for Tree-LSTMs).
    `slots`, `dropout_cell` and `dropout_memory` are read by Ordered Memory only, `dropout_input` by the sequential
    encoders only (in brackets the official Ordered Memory `sentiment.py` options)."""

    name: SentenceEncoderName = "binary-treelstm"
    emb_size: PositiveInt = 300
    mem_size: PositiveInt = 150  # [nhid] (Ordered Memory: the slot size)
    dropout: Probability = 0.5  # [dropouto] on the classifier's input (and its hidden layer's)
    dropout_input: Probability = 0.0  # [dropouti] on the word vectors, one mask per sentence (sequential encoders)
    # [nhid] a hidden ReLU layer of this size before the classifier (Ordered Memory's SST classifier); None: none
    mlp_hidden: PositiveInt | None = None
    slots: PositiveInt = 15  # [nslot] (Ordered Memory)
    dropout_cell: Probability = 0.2  # [dropout] in the gated recursive cell (Ordered Memory)
    dropout_memory: Probability = 0.2  # [dropoutm] in the slot attention (Ordered Memory)
    freeze_embeddings: bool = False

    @property
    def encoder(self) -> SentenceEncoderConfig:
        """The config of the encoder `name` names."""
        return chosen_encoder(SentenceEncoderConfig, self)

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
        super().__init__(vocab_size, config.encoder, config.freeze_embeddings, emb_std=0.05,
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

    @property
    def induces_trees(self) -> bool:
        """Whether the encoder induces a tree of each sentence it reads (Ordered Memory)."""
        return isinstance(self.encoder, OrderedMemorySentences)

    def forward_inducing(self, word_ids: list[torch.Tensor]) -> tuple[torch.Tensor, InducedTrees]:
        """An encoder that induces trees only (`induces_trees`): as `forward` over sentences of these word ids,
        their log-probabilities [B, classes], with the trees it induced of them (`InducedTrees`: Ordered Memory's
        memory slot of each word [T, B], 0 past a sentence's end, and the trees built from them)."""
        memory = self.encoder.memory(*self.sequence_inputs(word_ids))
        return self.classify(memory.output), memory
