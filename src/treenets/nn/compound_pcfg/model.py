"""The Compound PCFG (Kim, Dyer & Rush, ACL 2019, section 2.3): a Neural PCFG (`treenets.nn.neural_pcfg`) whose
rules also depend on a per-sentence latent vector z ~ N(0, I), concatenated to every symbol embedding, so that the
grammar is a mixture of PCFGs (a "compound" distribution); trained by amortised variational inference.

The inference network q(z | x) (section 3.2; the official `CompPCFG.enc`: a BiLSTM over word embeddings, max-pooled,
a linear map to the mean and log-variance of z) and the objective, the evidence lower bound, are every compound
grammar's (`treenets.nn.grammars.CompoundGrammar`). Perplexity reported with it is an upper bound (exp(-ELBO /
words)), as the paper reports it.

Parameter names are the official `state_dict`'s (the Neural PCFG's, and `enc_emb`, `enc_rnn`, `enc_params`).
"""

from __future__ import annotations

from typing import Literal

from treenets.core.schema import PositiveInt
from treenets.nn.grammars import CompoundGrammar
from treenets.nn.neural_pcfg.model import NeuralPCFG, NeuralPCFGConfig


class CompoundPCFGConfig(NeuralPCFGConfig):
    """The Compound PCFG; the official `train.py` options in brackets (the paper's sizes are the defaults)."""

    name: Literal["compound-pcfg"] = "compound-pcfg"
    z_dim: PositiveInt = 64  # [z_dim] the latent vector
    h_dim: PositiveInt = 512  # [h_dim] the inference BiLSTM's hidden size, per direction
    w_dim: PositiveInt = 512  # [w_dim] the inference network's word embeddings

    def build(self, vocab_size: int) -> CompoundPCFG:
        return CompoundPCFG(vocab_size, self.nonterminals, self.preterminals, self.state_dim, self.z_dim,
                            self.h_dim, self.w_dim).reset_parameters()


class CompoundPCFG(CompoundGrammar, NeuralPCFG):
    """The Neural PCFG's rules from symbol embeddings and z, and the inference network of z (`CompoundGrammar`).

    Args (beyond `NeuralPCFG`'s):
        z_dim: the latent vector's size.
        h_dim, w_dim: the inference BiLSTM's hidden size (per direction) and word embedding size.
    """

    def __init__(self, vocab_size: int, nonterminals: int = 30, preterminals: int = 60, state_dim: int = 256,
                 z_dim: int = 64, h_dim: int = 512, w_dim: int = 512):
        super().__init__(vocab_size, nonterminals, preterminals, state_dim, z_dim)
        self._build_inference(vocab_size, h_dim, w_dim)
