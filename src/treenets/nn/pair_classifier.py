"""A siamese classifier of sentence pairs: one encoder reads both sides, an MLP classifies their relation from
`[a; b; a * b; |a - b|]` (the logical-inference model of the ON-LSTM paper, section 6.4, after Bowman et al.).

Encoders (one config class each below, told apart by `name`, whose `build()` makes the network):
    onlstm           ON-LSTM layers over the token sequence (brackets included); the last token's state
    lstm             LSTM layers over the same sequence (the ON-LSTM paper's baseline)
    binary-treelstm  a binary Tree-LSTM over each formula's given tree; the root's state (a model that is
                     given the trees, to show what the sequence models reach without them)
    ordered-memory   Ordered Memory over the token sequence (`treenets.nn.ordered_memory.model`); its output at the
                     last token. It induces a tree of each formula as it reads; at test time it has twice the
                     memory slots it was trained with (`test_slots`), as the official evaluation

The MLP: dropout, linear 4H -> H, ELU, dropout, linear H -> classes (as the official ON-LSTM and Ordered Memory
code; H is the encoder's output size, doubled for a bidirectional Ordered Memory).
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

import torch
import torch.nn as nn
from pydantic import Field, model_validator

from treenets.nn.lstm.model import LSTMStack
from treenets.nn.onlstm.model import ONLSTMStack
from treenets.nn.ordered_memory.model import OrderedMemory
from treenets.nn.registry import InducedTrees
from treenets.nn.tree_models import chosen_encoder, encoder_configs
from treenets.nn.treelstm.model import NaryTreeLSTM, TreeBatch
from treenets.schema import PositiveInt, Probability, Section


class _SequenceEncoderConfig(Section):
    """What both sequence encoders read (the values come from `PairClassifierConfig`). Both use the non-inverted
    DropConnect of the official logic code (its LSTM baseline is its ON-LSTM stack with standard LSTM cells)."""

    emb_size: PositiveInt
    hidden_size: PositiveInt  # every layer's size
    num_layers: PositiveInt
    dropout: Probability  # between layers
    weight_drop: Probability  # DropConnect on the hidden-to-hidden weights
    reads_trees: ClassVar[bool] = False  # it reads each formula's tokens in order

    @property
    def sizes(self) -> list[int]:
        return [self.emb_size] + [self.hidden_size] * self.num_layers


class ONLSTMPairEncoderConfig(_SequenceEncoderConfig):
    """ON-LSTM layers over the tokens."""

    name: Literal["onlstm"] = "onlstm"
    chunk_size: PositiveInt

    @model_validator(mode="after")
    def _sizes_divisible_by_chunk(self):
        if self.hidden_size % self.chunk_size:
            raise ValueError(f"hidden_size={self.hidden_size} is not divisible by chunk_size={self.chunk_size}")
        return self

    def build(self) -> ONLSTMStack:
        return ONLSTMStack(self.sizes, self.chunk_size, self.dropout, self.weight_drop)


class LSTMPairEncoderConfig(_SequenceEncoderConfig):
    """LSTM layers over the tokens."""

    name: Literal["lstm"] = "lstm"

    def build(self) -> LSTMStack:
        return LSTMStack(self.sizes, self.dropout, self.weight_drop, weight_drop_inverted=False)


class TreeLSTMPairEncoderConfig(Section):
    """A binary Tree-LSTM over each formula's tree."""

    name: Literal["binary-treelstm"] = "binary-treelstm"
    emb_size: PositiveInt
    hidden_size: PositiveInt  # the memory size
    reads_trees: ClassVar[bool] = True

    def build(self) -> NaryTreeLSTM:
        return NaryTreeLSTM(self.emb_size, self.hidden_size, 2)


class OrderedMemoryPairEncoderConfig(Section):
    """Ordered Memory over the tokens (the official `proplog.py` options in brackets)."""

    name: Literal["ordered-memory"] = "ordered-memory"
    emb_size: PositiveInt
    hidden_size: PositiveInt  # [nhid] the slot size
    slots: PositiveInt  # [nslot]
    dropout: Probability  # [dropout] in the gated recursive cell
    dropout_memory: Probability  # [dropoutm] in the slot attention
    bidirectional: bool
    reads_trees: ClassVar[bool] = False

    def build(self) -> OrderedMemory:
        return OrderedMemory(self.emb_size, self.hidden_size, self.slots, self.dropout, self.dropout_memory,
                             self.bidirectional)


# The encoders the pair classifier's `name` chooses from: a new one is a config class above, added here.
PairEncoderConfig = Annotated[ONLSTMPairEncoderConfig | LSTMPairEncoderConfig | TreeLSTMPairEncoderConfig
                              | OrderedMemoryPairEncoderConfig, Field(discriminator="name")]
PairEncoderName = Literal[tuple(encoder_configs(PairEncoderConfig))]


class PairClassifierConfig(Section):
    """A siamese pair classifier; in brackets the official `proplog.py` options (ON-LSTM's, Ordered Memory's).
    `chunk_size` is read by the ON-LSTM only, `num_layers` and `weight_drop` by the ON-LSTM and the LSTM only,
    `slots`, `test_slots`, `dropout_memory` and `bidirectional` by Ordered Memory only (a config saved with every
    field must load for every encoder, so the others are not refused)."""

    name: PairEncoderName = "onlstm"
    emb_size: PositiveInt = 128  # [emsize]
    hidden_size: PositiveInt = 400  # [nhid] every layer's size (Ordered Memory: the slot size), the MLP's hidden
    num_layers: PositiveInt = 1  # [nlayers] (ON-LSTM, LSTM)
    chunk_size: PositiveInt = 10  # [chunk_size] (ON-LSTM)
    dropout: Probability = 0.2  # [dropout] between layers (Ordered Memory: in its cell); the two below if unset
    dropout_input: Probability | None = None  # [dropouti] on the embeddings (None: dropout)
    dropout_output: Probability | None = None  # [dropouto] in the MLP (None: dropout)
    weight_drop: Probability = 0.0  # [wdrop] DropConnect on the hidden-to-hidden weights (ON-LSTM, LSTM)
    slots: PositiveInt = 12  # [nslot] memory slots (Ordered Memory)
    test_slots: PositiveInt | None = None  # memory slots at test time (Ordered Memory; None: 2 * slots)
    dropout_memory: Probability = 0.2  # [dropoutm] in the slot attention (Ordered Memory)
    bidirectional: bool = False  # read each formula both ways (Ordered Memory)

    @model_validator(mode="after")
    def _encoder_accepts(self):
        chosen_encoder(PairEncoderConfig, self)  # the chosen encoder's own checks (the ON-LSTM's chunks) run here
        return self

    @property
    def encoder(self) -> PairEncoderConfig:
        """The config of the encoder `name` names."""
        return chosen_encoder(PairEncoderConfig, self)

    def build(self, vocab_size: int, num_classes: int) -> PairClassifier:
        return PairClassifier(vocab_size, self, num_classes)


class PairClassifier(nn.Module):
    """Embedding -> encoder (both sides) -> MLP over the pair's features.

    Args:
        vocab_size: rows of the embedding.
        config: a `PairClassifierConfig`.
        num_classes: relations to tell apart.
    """

    def __init__(self, vocab_size: int, config: PairClassifierConfig, num_classes: int):
        super().__init__()
        hidden = config.hidden_size
        self.embedding = nn.Embedding(vocab_size, config.emb_size)
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        self.dropout = nn.Dropout(_unless_none(config.dropout_input, config.dropout))
        self.encoder = config.encoder.build()
        # whether the encoder reads each formula's tree (the Tree-LSTM) rather than its tokens in order
        self.reads_trees = config.encoder.reads_trees
        self.test_slots = config.test_slots or 2 * config.slots  # Ordered Memory's at test time
        size = self.encoder.output_size if isinstance(self.encoder, OrderedMemory) else hidden
        drop_output = _unless_none(config.dropout_output, config.dropout)
        self.mlp = nn.Sequential(nn.Dropout(drop_output), nn.Linear(4 * size, hidden), nn.ELU(),
                                 nn.Dropout(drop_output), nn.Linear(hidden, num_classes))

    @property
    def induces_trees(self) -> bool:
        """Whether the encoder induces a tree of each formula as it reads (Ordered Memory)."""
        return isinstance(self.encoder, OrderedMemory)

    def encode(self, tokens: torch.Tensor, lengths: torch.Tensor, trees, leaf_ids,
               test: bool = False) -> torch.Tensor:
        """One vector per formula, [N, hidden]: the sequence encoders' state at the last token of each
        right-padded column of `tokens` [T, N] (`lengths` [N]); the Tree-LSTM's root state over `trees` (with
        their leaves' ids `leaf_ids`). `test`: as the model is tested (Ordered Memory with `test_slots`)."""
        return self.encode_inducing(tokens, lengths, trees, leaf_ids, test)[0]

    def encode_inducing(self, tokens: torch.Tensor, lengths: torch.Tensor, trees, leaf_ids,
                        test: bool = False) -> tuple[torch.Tensor, InducedTrees | None]:
        """`encode`'s vectors, and where the encoder induces trees what it declares of them (`InducedTrees`:
        their distances [T, N] and the trees; None for the other encoders)."""
        device = self.embedding.weight.device
        if self.reads_trees:
            batch = TreeBatch.build(trees, device)
            inputs, rows = batch.word_inputs(torch.cat(leaf_ids).to(device), self.embedding)
            h, _ = self.encoder(batch, self.dropout(inputs), rows)
            return h[batch.roots], None
        tokens = tokens.to(device)
        inputs = self.dropout(self.embedding(tokens))
        if self.induces_trees:
            run = self.encoder(inputs, lengths, self.test_slots if test else None)
            return run.output, run
        last_layer = self.encoder(inputs).outputs[-1]
        # Padding comes after the last token and the encoders read left to right, so it changes nothing before it.
        return last_layer[lengths.to(device) - 1, torch.arange(tokens.size(1), device=device)], None

    def forward(self, tokens, lengths, trees, leaf_ids, test: bool = False) -> torch.Tensor:
        """Logits [B, num_classes] for B pairs given as 2B formulas (premises first, then hypotheses); the
        arguments as in `encode`."""
        return self.classify(self.encode(tokens, lengths, trees, leaf_ids, test))

    def classify(self, vectors: torch.Tensor) -> torch.Tensor:
        """Logits [B, num_classes] from the vectors [2B, size] of B premises, then their B hypotheses."""
        a, b = vectors.chunk(2)
        return self.mlp(torch.cat([a, b, a * b, (a - b).abs()], dim=1))


def _unless_none(value: float | None, default: float) -> float:
    return default if value is None else value
