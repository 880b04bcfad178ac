"""What the grammars share: the Neural and Compound PCFGs (`treenets.nn.neural_pcfg`, `treenets.nn.compound_pcfg`)
and SimplePCFG's two grammars (`treenets.nn.simple_pcfg`) import it. Their dynamic programs are `treenets.nn.chart`'s
(its C++ kernels beside it, `chart_cpu.cpp`); here:

- `PCFGOutput`, what a grammar's forward pass gives a batch;
- `ResidualLayer` and `symbol_network`, the networks that map a symbol's embedding to its rules' scores;
- `CompoundGrammar`, a compound grammar's inference network and objective (Kim, Dyer & Rush, ACL 2019, sections
  2.3 and 3.2; the official `CompPCFG.enc`), the same for the Compound PCFG and SimplePCFG's compound grammar::

    h_1..h_n = BiLSTM(E x_1, ..., E x_n)            word embeddings E [V, w_dim], hidden h_dim per direction
    [mu; log sigma^2] = W max_i(h_i) + b            max-pooled over the words, W: [2 z_dim, 2 h_dim]
    z = mu + sigma * eps,  eps ~ N(0, I)            (training: the reparameterisation; parsing: z = mu)

  The objective is the evidence lower bound: -ELBO = -log p(x | z) + KL(q(z | x) || N(0, I)), with the closed-form
  KL of two Gaussians (`gaussian_kl`); -log p(x | z) is the inside algorithm's -log Z under the grammar of z.

Padding: the official code batches sentences of one length; here a batch may mix lengths: the BiLSTM reads each
sentence alone (packed sequences) and the max-pool takes its words only, so a sentence's z does not depend on its
batch. The modules keep the official `state_dict`'s names (`enc_emb`, `enc_rnn`, `enc_params`).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from treenets.nn.chart import Grammar, inside


class PCFGOutput(NamedTuple):
    """What a grammar gives a batch of sentences: the loss is `(nll + kl).mean()` (for a compound grammar the
    negative evidence lower bound, an upper bound on -log p(sentence))."""

    nll: torch.Tensor  # [B]: -log p(sentence | z), the inside algorithm's -log Z
    kl: torch.Tensor  # [B]: KL(q(z | sentence) || N(0, I)); zeros for a grammar without z
    grammar: Grammar  # the rules each sentence was scored with


class ResidualLayer(nn.Module):
    """x + ReLU(W_2 ReLU(W_1 x + b_1) + b_2): the residual layer of the root and emission networks."""

    def __init__(self, size: int):
        super().__init__()
        self.lin1 = nn.Linear(size, size)
        self.lin2 = nn.Linear(size, size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.lin2(F.relu(self.lin1(x)))) + x


def symbol_network(in_size: int, state_dim: int, out_size: int) -> nn.Sequential:
    """f: a linear map to `state_dim`, two residual layers, and the output layer (the official `root_mlp`,
    `vocab_mlp`)."""
    return nn.Sequential(nn.Linear(in_size, state_dim), ResidualLayer(state_dim), ResidualLayer(state_dim),
                         nn.Linear(state_dim, out_size))


def gaussian_kl(mean: torch.Tensor, logvar: torch.Tensor) -> torch.Tensor:
    """KL(N(mean, exp(logvar)) || N(0, I)) per sentence: -1/2 sum(logvar - mean^2 - exp(logvar) + 1)."""
    return -0.5 * (logvar - mean.pow(2) - logvar.exp() + 1).sum(-1)


class CompoundGrammar:
    """The inference network q(z | x) and the objective of a compound grammar: mixed into a grammar network (an
    `nn.Module` with `z_dim` and `grammar(tokens, z)`, the rules of each sentence's z), before it in the bases, whose
    `__init__` calls `_build_inference`."""

    z_dim: int

    def _build_inference(self, vocab_size: int, h_dim: int, w_dim: int) -> None:
        """The BiLSTM of h_dim per direction over word embeddings of w_dim, and the map to [mu; log sigma^2]."""
        self.enc_emb = nn.Embedding(vocab_size, w_dim)
        self.enc_rnn = nn.LSTM(w_dim, h_dim, bidirectional=True, num_layers=1, batch_first=True)
        self.enc_params = nn.Linear(2 * h_dim, 2 * self.z_dim)

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
