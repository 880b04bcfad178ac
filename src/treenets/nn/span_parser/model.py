"""A span-based tree-CRF parser: the student that learns an ensemble's trees (Shayegh, Cao, Zhu, Cheung & Mou,
ICLR 2024, section 3.2: distillation into URNNG's inference network, Kim, Rush, Yu, Kuncoro, Dyer & Melis, NAACL
2019, section 2.2).

Each word is read from its embedding and its characters (so that a word it never saw still has a representation):

    x_i   = [E w_i ; max over positions of ReLU(Conv(C c_i))]        word embedding, character CNN (bytes of UTF-8)
    f, b  = BiLSTM(x_0, ..., x_{n+1})                                <s> and </s> around the sentence

A span (i, j) of the words i..j (inclusive) is read from the states at its two ends, as the differences of the
forward and backward states across it (Stern, Andreas & Klein, ACL 2017; URNNG's inference network reads the same
ends):

    h_ij  = [f_{j+1} - f_i ; b_{i+1} - b_{j+2}]                      positions shifted by the <s> at 0
    s_ij  = w^T ReLU(W h_ij + c) + d                                 a span's score

and the tree CRF gives a binary tree T of the sentence the probability

    p(T)  = exp(sum over (i, j) in T of s_ij) / Z                    spans of two words or more, the root's included

Z by the inside algorithm (`treenets.nn.chart.tree_crf_log_z`). Training maximises log p(T*) of the teacher's tree
T* (made binary where it is not); parsing takes the highest-scoring tree (CKY over the span scores, `viterbi`) or
the tree of the largest summed span marginals (`mbr`).

Speed: W h_ij is linear in the states, W h_ij = (W_f f_{j+1} + W_b' b_{i+1}) - (W_f f_i + W_b' b_{j+2}), so the
first layer is two products per word, broadcast over the spans, not one per span; a batch of sentences of one
length runs its LSTM unpacked.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from treenets.core.schema import NonNegativeFloat, PositiveInt, Section

BYTES = 256  # the character inventory: the bytes of a word's UTF-8 (no vocabulary of characters to keep)
PAD_BYTE, BOUNDARY_BYTE = 256, 257  # padding, and the one character of <s> and </s>
MAX_WORD_BYTES = 20  # a word's first bytes read by the character CNN


class SpanParserConfig(Section):
    """The span parser's sizes."""

    name: Literal["span-parser"] = "span-parser"
    word_dim: PositiveInt = 200  # E: word embeddings
    char_dim: PositiveInt = 32  # C: byte embeddings
    char_channels: PositiveInt = 100  # the character CNN's filters (width 3)
    hidden_dim: PositiveInt = 256  # the BiLSTM's, per direction
    layers: PositiveInt = 2  # the BiLSTM's
    mlp_dim: PositiveInt = 256  # W: the span scorer's hidden layer
    dropout: NonNegativeFloat = 0.3  # on the word representations and between the BiLSTM's layers

    def build(self, vocab_size: int) -> SpanParser:
        return SpanParser(vocab_size, self.word_dim, self.char_dim, self.char_channels, self.hidden_dim, self.layers,
                          self.mlp_dim, self.dropout)


def char_ids(sentences: list[list[str]], longest: int) -> torch.Tensor:
    """[B, longest + 2, MAX_WORD_BYTES] the character ids of each word (its first `MAX_WORD_BYTES` bytes of UTF-8),
    <s> and </s> around each sentence, padded."""
    ids = np.full((len(sentences), longest + 2, MAX_WORD_BYTES), PAD_BYTE, dtype=np.int64)
    for b, words in enumerate(sentences):
        ids[b, 0, 0] = ids[b, len(words) + 1, 0] = BOUNDARY_BYTE
        for i, word in enumerate(words, start=1):
            found = word.encode("utf-8")[:MAX_WORD_BYTES]
            ids[b, i, : len(found)] = np.frombuffer(found, dtype=np.uint8)
    return torch.from_numpy(ids)


class SpanParser(nn.Module):
    """Span scores of sentences from word ids and their characters.

    Args:
        vocab_size: the words with embeddings (ids 0..vocab_size-1; the vocabulary's <unk> among them, and the
            <s> / </s> boundaries read as ids `vocab_size` and `vocab_size + 1`).
        word_dim, char_dim, char_channels, hidden_dim, layers, mlp_dim, dropout: `SpanParserConfig`'s.
    """

    def __init__(self, vocab_size: int, word_dim: int = 200, char_dim: int = 32, char_channels: int = 100,
                 hidden_dim: int = 256, layers: int = 2, mlp_dim: int = 256, dropout: float = 0.3):
        super().__init__()
        self.vocab_size = vocab_size
        self.word_emb = nn.Embedding(vocab_size + 2, word_dim)  # the words, then <s> and </s>
        self.char_emb = nn.Embedding(BYTES + 2, char_dim, padding_idx=PAD_BYTE)
        self.char_conv = nn.Conv1d(char_dim, char_channels, kernel_size=3, padding=1)
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(word_dim + char_channels, hidden_dim, num_layers=layers, bidirectional=True,
                            batch_first=True, dropout=dropout if layers > 1 else 0.0)
        self.hidden_dim = hidden_dim
        self.span_hidden = nn.Linear(2 * hidden_dim, mlp_dim)  # W, c
        self.span_out = nn.Linear(mlp_dim, 1)  # w, d

    def states(self, tokens: torch.Tensor, chars: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The BiLSTM's states [B, N + 2, 2H] over <s> w_1 .. w_n </s> (tokens [B, N] word ids, chars [B, N + 2,
        MAX_WORD_BYTES], lengths [B]); past a sentence's </s> padding."""
        batch, longest = tokens.shape
        positions = torch.arange(longest + 2, device=tokens.device)
        ids = torch.cat([tokens.new_full((batch, 1), self.vocab_size), tokens, tokens.new_zeros(batch, 1)], dim=1)
        ids[torch.arange(batch), lengths.to(tokens.device) + 1] = self.vocab_size + 1  # </s> after each sentence
        ids = ids.masked_fill(positions[None, :] > (lengths.to(tokens.device) + 1)[:, None], 0)
        characters = self.char_emb(chars).view(batch * (longest + 2), chars.size(2), -1).transpose(1, 2)
        char_features = F.relu(self.char_conv(characters)).amax(dim=2).view(batch, longest + 2, -1)
        x = self.dropout(torch.cat([self.word_emb(ids), char_features], dim=-1))
        if bool((lengths == longest).all()):  # one length (as `TreeCRFParser` batches): nothing to pack, and
            out, _ = self.lstm(x)  # the LSTM runs whole (oneDNN's on a CPU: 1.3-1.6 times the packed one's speed)
        else:
            packed = nn.utils.rnn.pack_padded_sequence(x, (lengths + 2).cpu(), batch_first=True,
                                                       enforce_sorted=False)
            out, _ = self.lstm(packed)
            out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=longest + 2)
        return self.dropout(out)

    def floats_per_sentence(self, length: int) -> int:
        """The floats of its largest layer for a sentence of `length` words: the span layer's [n, n, mlp]."""
        return length * length * self.span_hidden.out_features

    def forward(self, tokens: torch.Tensor, words: list[list[str]], lengths: torch.Tensor) -> torch.Tensor:
        """Span scores [B, N, N] of the sentences `words` (their word ids `tokens` [B, N], right-padded; their
        lengths [B]): s_ij at [b, i, j] (i <= j, words 0-based, j inclusive); below the diagonal 0, past a
        sentence's end what the tree CRF does not read. The network reads the words' characters itself
        (`char_ids`), so that the task and the predictor need not know it does."""
        h = self.states(tokens, char_ids(words, tokens.size(1)).to(tokens.device), lengths)
        forward, backward = h[..., : self.hidden_dim], h[..., self.hidden_dim :]
        n = tokens.size(1)
        # h_ij = [f_{j+1} - f_i ; b_{i+1} - b_{j+2}]: W h_ij = (W_f f_{j+1} - W_b b_{j+2}) - (W_f f_i - W_b b_{i+1})
        # with W = [W_f, W_b]: an "end" term per j and a "start" term per i
        weight = self.span_hidden.weight  # [mlp, 2H]: W_f then W_b
        w_f, w_b = weight[:, : self.hidden_dim], weight[:, self.hidden_dim :]
        end = forward[:, 1 : n + 1] @ w_f.T - backward[:, 2 : n + 2] @ w_b.T  # [B, n, mlp], j = 0..n-1
        start = forward[:, 0:n] @ w_f.T - backward[:, 1 : n + 1] @ w_b.T  # [B, n, mlp], i = 0..n-1
        # every (i, j) of [n, n] at once by broadcasting, the half i > j then zeroed: twice the arithmetic of the
        # spans i <= j alone, yet 2 to 5 times faster on a CPU than gathering them (10 to 60 words)
        hidden = end.unsqueeze(1) - start.unsqueeze(2)  # [B, i, j, mlp]: end term of j minus start term of i
        hidden += self.span_hidden.bias
        return self.span_out(hidden.relu_()).squeeze(-1).triu()
