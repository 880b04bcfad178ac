"""Ordered Memory as the encoder of the classifiers (`treenets.nn.encoders`): of formula pairs (the official
`proplog.py`), of sequences (`listops.py`) and of sentences (`sentiment.py`); in brackets those scripts' options.
It induces a tree of each input as it reads (`OrderedMemoryOutput`: its slots and trees)."""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
import torch.nn as nn

from treenets.core.schema import PositiveInt, Probability, Section
from treenets.nn.ordered_memory.model import OrderedMemory, OrderedMemoryOutput


class OrderedMemoryEncoder(OrderedMemory):
    """Ordered Memory over token sequences, tested with `test_slots` memory slots (None: those it trains with)."""

    def __init__(self, input_size: int, size: int, slots: int, dropout: float, dropout_memory: float,
                 bidirectional: bool, test_slots: int | None = None):
        super().__init__(input_size, size, slots, dropout, dropout_memory, bidirectional)
        self.test_slots = test_slots

    def encode(self, inputs: torch.Tensor, lengths: torch.Tensor,
               test: bool = False) -> tuple[torch.Tensor, OrderedMemoryOutput]:
        """The vector of each right-padded column of `inputs` [T, N, in] (`lengths` [N]), its output at the last
        token [N, output_size], and what it induced (its slots and trees); `test`: with `test_slots`."""
        run = self(inputs, lengths, self.test_slots if test else None)
        return run.output, run


class _SequenceEncoder(Section):
    name: Literal["ordered-memory"] = "ordered-memory"
    reads_trees: ClassVar[bool] = False
    induces_trees: ClassVar[bool] = True

    @property
    def out_dim(self) -> int:
        return self.hidden_size * (2 if self.bidirectional else 1)


class OrderedMemoryPairEncoderConfig(_SequenceEncoder):
    """Of each formula of a pair (`proplog.py`); tested with twice its slots unless `test_slots` says, as the
    official evaluation."""

    hidden_size: PositiveInt = 400  # [nhid] the slot size
    slots: PositiveInt = 12  # [nslot]
    test_slots: PositiveInt | None = None  # memory slots at test time (None: 2 * slots)
    dropout: Probability = 0.2  # [dropout] in the gated recursive cell
    dropout_memory: Probability = 0.2  # [dropoutm] in the slot attention
    bidirectional: bool = False  # read each formula both ways, the vectors side by side

    def build(self, in_dim: int) -> OrderedMemoryEncoder:
        return OrderedMemoryEncoder(in_dim, self.hidden_size, self.slots, self.dropout, self.dropout_memory,
                                    self.bidirectional, self.test_slots or 2 * self.slots)


class OrderedMemorySequenceEncoderConfig(_SequenceEncoder):
    """Of a ListOps sequence (`listops.py`, whose defaults these are); tested with the slots it trains with, as the
    official ListOps evaluation."""

    hidden_size: PositiveInt = 128  # [nhid] the slot size
    slots: PositiveInt = 21  # [nslot]
    dropout: Probability = 0.1  # [dropout] in the gated recursive cell
    dropout_memory: Probability = 0.3  # [dropoutm] in the slot attention
    bidirectional: bool = False  # [bidirection] read each sequence both ways, the vectors side by side

    def build(self, in_dim: int) -> OrderedMemoryEncoder:
        return OrderedMemoryEncoder(in_dim, self.hidden_size, self.slots, self.dropout, self.dropout_memory,
                                    self.bidirectional)


class OrderedMemorySentenceEncoderConfig(Section):
    """Of a sentence (`sentiment.py`); the sentence is its output at the last word. It has no memory cell apart
    from its slots: a sentence has no `c`, so it encodes sentences for sentiment only."""

    name: Literal["ordered-memory"] = "ordered-memory"
    mem_size: PositiveInt = 150  # [nhid] the slot size
    slots: PositiveInt = 15  # [nslot]
    dropout_cell: Probability = 0.2  # [dropout] in the gated recursive cell
    dropout_memory: Probability = 0.2  # [dropoutm] in the slot attention
    reads_trees: ClassVar[bool] = False
    induces_trees: ClassVar[bool] = True
    cell: ClassVar[bool] = False
    children: ClassVar[int | None] = None

    @property
    def out_dim(self) -> int:
        return self.mem_size

    def build(self, in_dim: int) -> OrderedMemorySentences:
        return OrderedMemorySentences(in_dim, self)


class OrderedMemorySentences(nn.Module):
    """Ordered Memory as a sentence encoder: `forward` as the sequential baselines', with no `c` (None)."""

    def __init__(self, in_dim: int, config: OrderedMemorySentenceEncoderConfig):
        super().__init__()
        self.memory = OrderedMemory(in_dim, config.mem_size, config.slots, config.dropout_cell, config.dropout_memory)
        self.out_dim = config.mem_size

    def forward(self, embedded: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, None]:
        """embedded [T, B, in] (right-padded), lengths [B] -> (sentence vectors [B, out_dim], None)."""
        return self.memory(embedded, lengths).output, None

    def encode(self, embedded: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, OrderedMemoryOutput]:
        """As `forward`, the sentence vectors with what it induced of them (its slots and trees)."""
        run = self.memory(embedded, lengths)
        return run.output, run
