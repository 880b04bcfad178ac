"""A siamese classifier of sentence pairs: one encoder reads both sides, an MLP classifies their relation from
`[a; b; a * b; |a - b|]` (the logical-inference model of the ON-LSTM paper, section 6.4, after Bowman et al.).

The encoders are the models' (`treenets.nn.encoders`, kind "pairs", each in its model's folder, chosen by the
`encoder:` section's `name`): ON-LSTM or LSTM layers over the token sequence (brackets included), the last token's
state; a binary Tree-LSTM over each formula's given tree, the root's state (a model given the trees, to show what
the sequence models reach without them); Ordered Memory over the tokens, which induces a tree of each formula as
it reads.

The MLP: dropout, linear 4S -> H, ELU, dropout, linear H -> classes (as the official ON-LSTM and Ordered Memory
code; S is the encoder's output size, twice H for a bidirectional Ordered Memory, H its hidden size).
"""

from __future__ import annotations

import torch
import torch.nn as nn

from treenets.core.schema import PositiveInt, Probability
from treenets.nn.encoders import ClassifierConfig
from treenets.nn.registry import InducedTrees, encoder_union

# The encoders of formulas the models offer (`treenets.nn.registry.encoder_union`), told apart by `name`.
PairEncoderConfig = encoder_union("pairs")


class PairClassifierConfig(ClassifierConfig):
    """A siamese pair classifier; in brackets the official `proplog.py` options (ON-LSTM's, Ordered Memory's)."""

    encoder: PairEncoderConfig  # its `hidden_size` is also the MLP's hidden layer's
    emb_size: PositiveInt = 128  # [emsize]
    dropout: Probability = 0.2  # [dropout] on the embeddings and in the MLP, where the two below are unset
    dropout_input: Probability | None = None  # [dropouti] on the embeddings (None: dropout)
    dropout_output: Probability | None = None  # [dropouto] in the MLP (None: dropout)

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
        hidden = config.encoder.hidden_size
        self.embedding = nn.Embedding(vocab_size, config.emb_size)
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        self.dropout = nn.Dropout(_unless_none(config.dropout_input, config.dropout))
        self.encoder = config.encoder.build(config.emb_size)
        # whether the encoder reads each formula's tree (a Tree-LSTM) rather than its tokens in order, and whether
        # it induces a tree of each formula as it reads (Ordered Memory): its config declares both
        self.reads_trees, self.induces_trees = config.encoder.reads_trees, config.encoder.induces_trees
        size = config.encoder.out_dim
        drop_output = _unless_none(config.dropout_output, config.dropout)
        self.mlp = nn.Sequential(nn.Dropout(drop_output), nn.Linear(4 * size, hidden), nn.ELU(),
                                 nn.Dropout(drop_output), nn.Linear(hidden, num_classes))

    def encode(self, tokens: torch.Tensor, lengths: torch.Tensor, trees, leaf_ids,
               test: bool = False) -> torch.Tensor:
        """One vector per formula, [N, size]: a sequence encoder's of each right-padded column of `tokens` [T, N]
        (`lengths` [N]); a tree reader's root state over `trees` (with their leaves' ids `leaf_ids`). `test`: as
        the model is tested (Ordered Memory with its test slots)."""
        return self.encode_inducing(tokens, lengths, trees, leaf_ids, test)[0]

    def encode_inducing(self, tokens: torch.Tensor, lengths: torch.Tensor, trees, leaf_ids,
                        test: bool = False) -> tuple[torch.Tensor, InducedTrees | None]:
        """`encode`'s vectors, and where the encoder induces trees what it declares of them (`InducedTrees`:
        their distances [T, N] and the trees; None for the other encoders)."""
        device = self.embedding.weight.device
        if self.reads_trees:
            batch = self.encoder.batch(trees, device)
            inputs, rows = batch.word_inputs(torch.cat(leaf_ids).to(device), self.embedding)
            h, _ = self.encoder(batch, self.dropout(inputs), rows)
            return h[batch.roots], None
        return self.encoder.encode(self.dropout(self.embedding(tokens.to(device))), lengths, test)

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
