"""The Compound PCFG (Kim, Dyer & Rush, ACL 2019, section 2.3): a Neural PCFG (`treenets.nn.neural_pcfg`) whose
rules also depend on a per-sentence latent vector z ~ N(0, I), concatenated to every symbol embedding, so that the
grammar is a mixture of PCFGs (a "compound" distribution); trained by amortised variational inference.

The inference network q(z | x) (section 3.2; the official `CompPCFG.enc`)::

    h_1..h_n = BiLSTM(E x_1, ..., E x_n)            word embeddings E [V, w_dim], hidden h_dim per direction
    [mu; log sigma^2] = W max_i(h_i) + b            max-pooled over the words, W: [2 z_dim, 2 h_dim]
    z = mu + sigma * eps,  eps ~ N(0, I)            (training: the reparameterisation; parsing: z = mu)

The objective is the evidence lower bound: -ELBO = -log p(x | z) + KL(q(z | x) || N(0, I)), with the closed-form
KL of two Gaussians, `-1/2 sum(log sigma^2 - mu^2 - sigma^2 + 1)`. -log p(x | z) is the inside algorithm's -log Z
under the grammar of z. Perplexity reported with it is an upper bound (exp(-ELBO / words)), as the paper reports it.

Padding: the official code batches sentences of one length; here a batch may mix lengths: the BiLSTM reads each
sentence alone (packed sequences) and the max-pool takes its words only, so a sentence's z does not depend on its
batch.

Parameter names are the official `state_dict`'s (the Neural PCFG's, and `enc_emb`, `enc_rnn`, `enc_params`).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn as nn

from treenets.nn.chart import inside
from treenets.nn.neural_pcfg.model import NeuralPCFG, NeuralPCFGConfig, PCFGOutput
from treenets.schema import PositiveInt


class CompoundPCFGConfig(NeuralPCFGConfig):
    """The Compound PCFG; the official `train.py` options in brackets (the paper's sizes are the defaults)."""

    name: Literal["compound-pcfg"] = "compound-pcfg"
    z_dim: PositiveInt = 64  # [z_dim] the latent vector
    h_dim: PositiveInt = 512  # [h_dim] the inference BiLSTM's hidden size, per direction
    w_dim: PositiveInt = 512  # [w_dim] the inference network's word embeddings

    def build(self, vocab_size: int) -> CompoundPCFG:
        return CompoundPCFG(vocab_size, self.nonterminals, self.preterminals, self.state_dim, self.z_dim,
                            self.h_dim, self.w_dim).reset_parameters()


def gaussian_kl(mean: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """KL(N(mean, exp(logvar)) || N(0, I)) per sentence: -1/2 sum(logvar - mean^2 - exp(logvar) + 1)."""
    return -0.5 * (logvar - mean.pow(2) - logvar.exp() + 1).sum(-1)


class CompoundPCFG(NeuralPCFG):
    """The Neural PCFG's rules from symbol embeddings and z, and the inference network of z.

    Args (beyond `NeuralPCFG`'s):
        z_dim: the latent vector's size.
        h_dim, w_dim: the inference BiLSTM's hidden size (per direction) and word embedding size.
    """

    def __init__(self, vocab_size: int, nonterminals: int = 30, preterminals: int = 60, state_dim: int = 256,
                 z_dim: int = 64, h_dim: int = 512, w_dim: int = 512):
        super().__init__(vocab_size, nonterminals, preterminals, state_dim, z_dim)
        self.enc_emb = nn.Embedding(vocab_size, w_dim)
        self.enc_rnn = nn.LSTM(w_dim, h_dim, bidirectional=True, num_layers=1, batch_first=True)
        self.enc_params = nn.Linear(2 * h_dim, 2 * z_dim)

    def encode(self, tokens: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """q(z | sentence): (mean, log-variance), each [B, z_dim], of `tokens` [B, N] with `lengths` [B]."""
        embedded = self.enc_emb(tokens)
        lengths = lengths.to(tokens.device)
        if bool((lengths == tokens.size(1)).all()):  # one length: the batch as the official code reads it
            states, _ = self.enc_rnn(embedded)
        else:
            packed = nn.utils.rnn.pack_padded_sequence(embedded, lengths.cpu(), batch_first=True,
                                                       enforce_sorted=False)
            states, _ = nn.utils.rnn.pad_packed_sequence(self.enc_rnn(packed)[0], batch_first=True,
                                                         total_length=tokens.size(1))
            past = torch.arange(tokens.size(1), device=tokens.device) >= lengths.unsqueeze(1)
            states = states.masked_fill(past.unsqueeze(-1), float("-inf"))  # the max-pool reads the words only
        params = self.enc_params(states.max(1).values)
        return params[:, : self.z_dim], params[:, self.z_dim :]

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor, use_mean: bool = False,
                noise: torch.Tensor | None = None) -> PCFGOutput:
        """-log p(sentence | z) and the KL of each sentence of `tokens` [B, N] with `lengths` [B] (each at least
        2), z drawn from q(z | sentence) (`noise`: the standard normal draw eps [B, z_dim], by default drawn
        here), or its mean with `use_mean` (parsing)."""
        mean, logvar = self.encode(tokens, lengths)
        kl = gaussian_kl(mean, logvar)
        if use_mean:
            z = mean
        else:
            noise = torch.randn_like(mean) if noise is None else noise
            z = mean + (0.5 * logvar).exp() * noise
        grammar = self.grammar(tokens, z)
        return PCFGOutput(-inside(grammar, lengths), kl, grammar)
