"""A classifier of token sequences with Ordered Memory as its encoder (the ListOps model of Ordered Memory's
official `listops.py`): embedding, dropout, Ordered Memory (`treenets.nn.ordered_memory.model`), and an MLP of dropout
and one linear map over the sequence's vector, its output at the last token. Ordered Memory induces a tree of each
sequence as it reads; `forward` returns what it declares of them (`InducedTrees`) beside the logits.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn as nn

from treenets.nn.ordered_memory.model import OrderedMemory
from treenets.nn.registry import InducedTrees
from treenets.schema import PositiveInt, Probability, Section


class SequenceClassifierConfig(Section):
    """The sizes and dropouts; in brackets the official `listops.py` options, whose defaults these are."""

    name: Literal["ordered-memory"] = "ordered-memory"  # the encoder
    emb_size: PositiveInt = 128  # [emsize]
    hidden_size: PositiveInt = 128  # [nhid] the slot size
    slots: PositiveInt = 21  # [nslot] memory slots (also at test time, as the official ListOps evaluation)
    dropout: Probability = 0.1  # [dropout] in the gated recursive cell
    dropout_input: Probability = 0.1  # [dropouti] on the token vectors
    dropout_output: Probability = 0.2  # [dropouto] before the classifier
    dropout_memory: Probability = 0.3  # [dropoutm] in the slot attention
    bidirectional: bool = False  # [bidirection] read each sequence both ways, the vectors side by side

    def build(self, vocab_size: int, num_classes: int) -> SequenceClassifier:
        return SequenceClassifier(vocab_size, self, num_classes)


class SequenceClassifier(nn.Module):
    """Embedding -> dropout -> Ordered Memory -> dropout -> linear.

    Args:
        vocab_size: rows of the embedding (initialised N(0, 1), torch's default, as the official code).
        config: a `SequenceClassifierConfig`.
        num_classes: the classes.
    """

    def __init__(self, vocab_size: int, config: SequenceClassifierConfig, num_classes: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, config.emb_size)
        self.dropout = nn.Dropout(config.dropout_input)
        self.encoder = OrderedMemory(config.emb_size, config.hidden_size, config.slots, config.dropout,
                                     config.dropout_memory, config.bidirectional)
        self.mlp = nn.Sequential(nn.Dropout(config.dropout_output), nn.Linear(self.encoder.output_size, num_classes))

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, InducedTrees]:
        """Logits [B, num_classes] of the right-padded sequences `tokens` [T, B] of `lengths` [B], and the trees
        the encoder induced of them (`InducedTrees`: the forward direction's slots [T, B] and the trees)."""
        tokens = tokens.to(self.embedding.weight.device)
        run = self.encoder(self.dropout(self.embedding(tokens)), lengths)
        return self.mlp(run.output), run
