"""A classifier of token sequences (the ListOps model of Ordered Memory's official `listops.py`): embedding,
dropout, an encoder of sequences (`treenets.nn.encoders`, kind "sequences": Ordered Memory), and an MLP of dropout
and one linear map over the sequence's vector, the encoder's output at the last token. The encoder induces a tree
of each sequence as it reads; `forward` returns what it declares of them (`InducedTrees`) beside the logits.
"""

from __future__ import annotations

import torch
import torch.nn as nn

from treenets.core.schema import PositiveInt, Probability
from treenets.nn.encoders import ClassifierConfig
from treenets.nn.registry import InducedTrees, encoder_union

# The encoders of sequences the models offer (`treenets.nn.registry.encoder_union`), told apart by `name`.
SequenceEncoderConfig = encoder_union("sequences")


class SequenceClassifierConfig(ClassifierConfig):
    """The sizes and dropouts; in brackets the official `listops.py` options, whose defaults these are."""

    encoder: SequenceEncoderConfig
    emb_size: PositiveInt = 128  # [emsize]
    dropout_input: Probability = 0.1  # [dropouti] on the token vectors
    dropout_output: Probability = 0.2  # [dropouto] before the classifier

    def build(self, vocab_size: int, num_classes: int) -> SequenceClassifier:
        return SequenceClassifier(vocab_size, self, num_classes)


class SequenceClassifier(nn.Module):
    """Embedding -> dropout -> encoder -> dropout -> linear.

    Args:
        vocab_size: rows of the embedding (initialised N(0, 1), torch's default, as the official code).
        config: a `SequenceClassifierConfig`.
        num_classes: the classes.
    """

    def __init__(self, vocab_size: int, config: SequenceClassifierConfig, num_classes: int):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, config.emb_size)
        self.dropout = nn.Dropout(config.dropout_input)
        self.encoder = config.encoder.build(config.emb_size)
        self.mlp = nn.Sequential(nn.Dropout(config.dropout_output), nn.Linear(config.encoder.out_dim, num_classes))

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, InducedTrees]:
        """Logits [B, num_classes] of the right-padded sequences `tokens` [T, B] of `lengths` [B], and the trees
        the encoder induced of them (`InducedTrees`: Ordered Memory's forward direction's slots [T, B] and the
        trees)."""
        tokens = tokens.to(self.embedding.weight.device)
        vectors, induced = self.encoder.encode(self.dropout(self.embedding(tokens)), lengths)
        return self.mlp(vectors), induced
