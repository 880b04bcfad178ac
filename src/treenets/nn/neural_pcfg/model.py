"""The Neural PCFG (Kim, Dyer & Rush, ACL 2019, "Compound Probabilistic Context-Free Grammars for Grammar
Induction", section 2.2): a probabilistic context-free grammar in Chomsky normal form whose rule probabilities are
computed by neural networks from symbol embeddings, trained by maximising the sentences' likelihood, summed over all
trees by the inside algorithm.

Symbols: NT nonterminals (the root's children and every node over two or more words) and T preterminals (over one
word each), with embeddings w_A of size D; nonterminals come first, as in the official code (preterminal j is
symbol NT + j). Rules (eq. 4 of the paper; the official `models.py`)::

    pi_{S -> A}    = softmax_A(u_A^T f_1(w_S))                    roots    [NT]       root_mlp
    pi_{A -> B C}  = softmax_{BC}(u_{BC}^T w_A)                   binary   [NT, S*S]  rule_mlp (one linear map)
    pi_{T -> w}    = softmax_w(u_w^T f_2(w_T))                    emission [T, V]     vocab_mlp

where f_1, f_2 are a linear map to D followed by two residual layers (`treenets.nn.grammars.ResidualLayer`: x +
ReLU(W_2 ReLU(W_1 x))) and the output layer. The Compound PCFG (`treenets.nn.compound_pcfg`) concatenates a
sentence's latent vector z to every symbol embedding; this network takes it as an argument (`z`, None for the
Neural PCFG).

A child over one word must be a preterminal and a wider child a nonterminal; the rule table has every pair, and
the inside algorithm reads the entries its widths allow (`treenets.nn.chart`). Log p(sentence) is the inside
algorithm's log Z; the loss is -log Z per sentence.

Speed: the rules and emissions depend on the sentence only through z, so they are computed once per batch (once
per sentence for the Compound PCFG): the official code applies the emission network to every symbol at every
position of every sentence ([B, n, T, D] rows, n times the work), here to the T symbols only, and the words' rows
are gathered from the [B, T, V] log-probabilities.

Parameter names are the official `state_dict`'s (`t_emb`, `nt_emb`, `root_emb`, `rule_mlp`, `root_mlp.{0..3}`,
`vocab_mlp.{0..3}`), so an official checkpoint's `state_dict` loads as it is (`convert.py`).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn as nn
import torch.nn.functional as F

from treenets.core.schema import PositiveInt, Section
from treenets.nn.chart import Grammar, inside
from treenets.nn.grammars import PCFGOutput, symbol_network


class NeuralPCFGConfig(Section):
    """The Neural PCFG; the official `train.py` options in brackets (the paper's sizes are the defaults)."""

    name: Literal["neural-pcfg"] = "neural-pcfg"
    nonterminals: PositiveInt = 30  # [nt_states]
    preterminals: PositiveInt = 60  # [t_states]
    state_dim: PositiveInt = 256  # [state_dim] the symbols' embeddings and the networks' width

    def build(self, vocab_size: int) -> NeuralPCFG:
        """The grammar of this config, freshly initialised (`NeuralPCFG.reset_parameters`)."""
        return NeuralPCFG(vocab_size, self.nonterminals, self.preterminals, self.state_dim).reset_parameters()


class NeuralPCFG(nn.Module):
    """The neural parameterisation of a PCFG's root, binary and emission rules.

    Args:
        vocab_size: V, the words the emissions are normalised over.
        nonterminals, preterminals: NT and T.
        state_dim: D, the symbols' embedding size.
        z_dim: the size of the latent vector concatenated to every embedding (0: the Neural PCFG).
    """

    factored_rules = False  # binary rules as an NT x S x S tensor (`treenets.nn.chart.decode_bytes`)

    def __init__(self, vocab_size: int, nonterminals: int = 30, preterminals: int = 60, state_dim: int = 256,
                 z_dim: int = 0):
        super().__init__()
        self.vocab_size, self.nonterminals, self.preterminals = vocab_size, nonterminals, preterminals
        self.state_dim, self.z_dim = state_dim, z_dim
        symbols = nonterminals + preterminals
        self.t_emb = nn.Parameter(torch.randn(preterminals, state_dim))
        self.nt_emb = nn.Parameter(torch.randn(nonterminals, state_dim))
        self.root_emb = nn.Parameter(torch.randn(1, state_dim))
        self.rule_mlp = nn.Linear(state_dim + z_dim, symbols * symbols)
        self.root_mlp = symbol_network(state_dim + z_dim, state_dim, nonterminals)
        self.vocab_mlp = symbol_network(state_dim + z_dim, state_dim, vocab_size)

    def reset_parameters(self) -> NeuralPCFG:
        """The official initialisation (`train.py`): every matrix Xavier-uniform, the vectors as built."""
        for param in self.parameters():
            if param.dim() > 1:
                nn.init.xavier_uniform_(param)
        return self

    @staticmethod
    def _with_z(embeddings: torch.Tensor, z: torch.Tensor | None) -> torch.Tensor:
        """[K, D] embeddings -> [B, K, D + z_dim] with each sentence's z appended ([1, K, D] without z)."""
        if z is None:
            return embeddings.unsqueeze(0)
        return torch.cat([embeddings.expand(z.size(0), -1, -1), z.unsqueeze(1).expand(-1, embeddings.size(0), -1)],
                         dim=-1)

    def rule_tables(self, z: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The log-probabilities of the rules: roots [B', NT], binary rules [B', NT, S, S] and emissions
        [B', T, V], with B' = z's batch (1 without z: one grammar for every sentence)."""
        symbols = self.nonterminals + self.preterminals
        roots = F.log_softmax(self.root_mlp(self._with_z(self.root_emb, z)).squeeze(1), dim=-1)
        binary = F.log_softmax(self.rule_mlp(self._with_z(self.nt_emb, z)), dim=-1)
        emissions = F.log_softmax(self.vocab_mlp(self._with_z(self.t_emb, z)), dim=-1)
        return roots, binary.view(-1, self.nonterminals, symbols, symbols), emissions

    def grammar(self, tokens: torch.Tensor, z: torch.Tensor | None = None) -> Grammar:
        """The grammar of each sentence of `tokens` [B, N] (word ids; padding past a sentence's end is read as any
        word), for `treenets.nn.chart`: roots [B, NT], rules [B, NT, S, S], terms [B, N, T] (log p(word i |
        preterminal j))."""
        batch = tokens.size(0)
        roots, rules, emissions = self.rule_tables(z)
        terms = emissions.expand(batch, -1, -1).gather(2, tokens.unsqueeze(1).expand(-1, self.preterminals, -1))
        return Grammar(roots=roots.expand(batch, -1), terms=terms.transpose(1, 2),
                       rules=rules.expand(batch, -1, -1, -1))

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor, use_mean: bool = False) -> PCFGOutput:
        """-log p(sentence) of each sentence of `tokens` [B, N] with `lengths` [B] (each at least 2: a one-word
        sentence has no tree under a grammar whose root is a nonterminal), by the inside algorithm; `use_mean` is
        the Compound PCFG's (here nothing to choose)."""
        grammar = self.grammar(tokens)
        nll = -inside(grammar, lengths)
        return PCFGOutput(nll, torch.zeros_like(nll), grammar)
