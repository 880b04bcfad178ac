"""SimplePCFG (Liu, Yang, Kim & Tu, Findings of EMNLP 2023, "Simple Hardware-Efficient PCFGs with Independent
Left and Right Productions"): a PCFG in Chomsky normal form whose binary rules choose the left and the right child
independently given the parent (section 2 of the paper),

    pi_{A -> B C} = pi_{B <~ A} * pi_{A ~> C}                       a left production times a right production

so that the inside algorithm sums over each child on its own side,

    beta[i, j, A] = sum_k (sum_B pi_{B <~ A} beta[i, k, B]) (sum_C pi_{A ~> C} beta[k + 1, j, C])

and no NT x S x S rule tensor is ever built: O(n^3 NT + n^2 NT S) per sentence instead of O(n^3 NT S^2), which is
what lets the grammar have thousands of symbols (NT 4096 and T 8192 for the neural grammar on the PTB). The
dynamic programs are `treenets.nn.chart`'s, given the productions as `Grammar(left=..., right=...)`.

Symbols: NT nonterminals (the root's children and every node over two or more words) and T preterminals (over one
word each), S = NT + T, nonterminals first (preterminal j is symbol NT + j). The neural parameterisation (the
released code of the paper, TN-PCFG's SN-PCFG and SC-PCFG, read to settle it): one embedding w_A of size D per
symbol, shared by every role the symbol plays (parent, left child, right child, root's child, preterminal), and
an embedding w_S of the start symbol::

    pi_{S -> A}   = softmax_{A in NT}(w_S^T w_A)                                       roots      [NT]
    p_A           = ReLU(W_p w_A + b_p) + w_A                      A in NT            the parents
    l_B           = ReLU(W_l w_B + b_l) + w_B                      B in S             the left children
    r_C           = ReLU(W_r w_C + b_r) + w_C                      C in S             the right children
    pi_{B <~ A}   = softmax_{B in S}(l_B^T p_A)                                        left       [NT, S]
    pi_{A ~> C}   = softmax_{C in S}(r_C^T p_A)                                        right      [NT, S]
    e_T           = g(w_T) + w_T                                   T a preterminal
    pi_{T -> x}   = softmax_{x in V}(u_x^T e_T)                                        emissions  [T, V]

where g is a linear map to D followed by three residual layers (`ResidualLayer`: x + ReLU(W_2 ReLU(W_1 x))) and
u_x the output embedding of word x. The left and the right productions share the parents' representation p_A
but not the children's (l_B, r_C): two distributions over all S symbols per parent. A child over one word must
be a preterminal and a wider child a nonterminal, as in the Neural PCFG: the inside algorithm reads the entries
its widths allow.

The compound variant (SC-PCFG; the Compound PCFG's latent vector, Kim et al. 2019, `treenets.nn.compound_pcfg`):
a sentence's z ~ q(z | sentence) enters the parents and the emissions, as released::

    p_A           = ReLU(W_p [w_A; z] + b_p) + w_A
    pi_{T -> x}   = softmax_{x in V}(f([w_T; z]))_x                f: linear to D, two residual layers, linear to V

(the emissions are then the Neural PCFG's network, `symbol_network`, without the outer residual or the output
embeddings), while the roots and the children's representations do not depend on z. The inference network q is
the Compound PCFG's (a BiLSTM over word embeddings, max-pooled, a linear map to the mean and the log-variance) and
the loss its negative evidence lower bound, -log p(x | z) + KL(q(z | x) || N(0, I)).

Speed: the neural grammar depends on no sentence, so its productions and its [T, V] emission table are computed
once per batch and the words' rows of the table gathered (the compound grammar's once per sentence: z).
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn as nn
import torch.nn.functional as F

from treenets.core.schema import PositiveInt, Section
from treenets.nn.chart import Grammar, inside
from treenets.nn.grammars import CompoundGrammar, PCFGOutput, ResidualLayer, symbol_network


class SimpleNeuralPCFGConfig(Section):
    """SimplePCFG's neural grammar (SN-PCFG); the released configs' options in brackets (the defaults: the PTB
    config of the paper, `simple_npcfg_nt4096_t8192`)."""

    name: Literal["simple-neural-pcfg"] = "simple-neural-pcfg"
    nonterminals: PositiveInt = 4096  # [NT]
    preterminals: PositiveInt = 8192  # [T]
    state_dim: PositiveInt = 512  # [s_dim] the symbols' embeddings and the networks' width

    def build(self, vocab_size: int) -> SimpleNeuralPCFG:
        """The grammar of this config, freshly initialised (`SimpleNeuralPCFG.reset_parameters`)."""
        return SimpleNeuralPCFG(vocab_size, self.nonterminals, self.preterminals, self.state_dim).reset_parameters()


class SimpleCompoundPCFGConfig(SimpleNeuralPCFGConfig):
    """SimplePCFG's compound grammar (SC-PCFG); the released configs' options in brackets (the defaults: the larger
    of its two PTB configs, `simple_cpcfg_nt2048_t4096`)."""

    name: Literal["simple-compound-pcfg"] = "simple-compound-pcfg"
    nonterminals: PositiveInt = 2048  # [NT]
    preterminals: PositiveInt = 4096  # [T]
    z_dim: PositiveInt = 64  # [z_dim] the latent vector
    h_dim: PositiveInt = 512  # the inference BiLSTM's hidden size, per direction (512 in the released code)
    w_dim: PositiveInt = 512  # the inference network's word embeddings (512 in the released code)

    def build(self, vocab_size: int) -> SimpleCompoundPCFG:
        return SimpleCompoundPCFG(vocab_size, self.nonterminals, self.preterminals, self.state_dim, self.z_dim,
                                  self.h_dim, self.w_dim).reset_parameters()


def _with_z(embeddings: torch.Tensor, z: torch.Tensor | None) -> torch.Tensor:
    """[K, D] embeddings -> [B, K, D + z_dim] with each sentence's z appended ([1, K, D] without z)."""
    if z is None:
        return embeddings.unsqueeze(0)
    return torch.cat([embeddings.expand(z.size(0), -1, -1), z.unsqueeze(1).expand(-1, embeddings.size(0), -1)],
                     dim=-1)


class SimpleNeuralPCFG(nn.Module):
    """SimplePCFG's neural parameterisation of the roots, the left and right productions and the emissions.

    Args:
        vocab_size: V, the words the emissions are normalised over.
        nonterminals, preterminals: NT and T.
        state_dim: D, the symbols' embedding size.
        z_dim: the size of the latent vector the parents read (0: the neural grammar; `SimpleCompoundPCFG`).
    """

    factored_rules = True  # left and right productions: no NT x S x S tensor (`treenets.nn.chart.decode_bytes`)

    def __init__(self, vocab_size: int, nonterminals: int = 4096, preterminals: int = 8192, state_dim: int = 512,
                 z_dim: int = 0):
        super().__init__()
        self.vocab_size, self.nonterminals, self.preterminals = vocab_size, nonterminals, preterminals
        self.state_dim, self.z_dim = state_dim, z_dim
        self.symbol_emb = nn.Parameter(torch.randn(nonterminals + preterminals, state_dim))  # w_A, NT first
        self.start_emb = nn.Parameter(torch.randn(1, state_dim))  # w_S
        self.parent_net = nn.Linear(state_dim + z_dim, state_dim)  # W_p, b_p
        self.left_net = nn.Linear(state_dim, state_dim)  # W_l, b_l
        self.right_net = nn.Linear(state_dim, state_dim)  # W_r, b_r
        self._build_emissions()

    def _build_emissions(self) -> None:
        """g (a linear map and three residual layers) and the output word embeddings u [D, V]."""
        d = self.state_dim
        self.preterminal_net = nn.Sequential(nn.Linear(d, d), ResidualLayer(d), ResidualLayer(d), ResidualLayer(d))
        self.word_emb = nn.Parameter(torch.randn(d, self.vocab_size))

    def reset_parameters(self) -> SimpleNeuralPCFG:
        """The released initialisation: every matrix Xavier-uniform (the embeddings and the encoder's too), the
        vectors as built."""
        for param in self.parameters():
            if param.dim() > 1:
                nn.init.xavier_uniform_(param)
        return self

    def productions(self, z: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The log-probabilities of the roots [1, NT], the left productions [B', NT, S] (log pi_{B <~ A} at [A, B])
        and the right productions [B', NT, S] (log pi_{A ~> C} at [A, C]), B' = z's batch (1 without z)."""
        nt = self.nonterminals
        w = self.symbol_emb
        roots = F.log_softmax(self.start_emb @ w[:nt].T, dim=-1)  # softmax_A(w_S^T w_A)
        parents = F.relu(self.parent_net(_with_z(w[:nt], z))) + w[:nt]  # p_A [B', NT, D]
        left_children = F.relu(self.left_net(w)) + w  # l_B [S, D]
        right_children = F.relu(self.right_net(w)) + w  # r_C [S, D]
        left = F.log_softmax(parents @ left_children.T, dim=-1)  # softmax_B(l_B^T p_A)
        right = F.log_softmax(parents @ right_children.T, dim=-1)  # softmax_C(r_C^T p_A)
        return roots, left, right

    def emissions(self, z: torch.Tensor | None = None) -> torch.Tensor:
        """log pi_{T -> x}: [B', T, V] (B' = 1 here: the neural grammar reads no z)."""
        w = self.symbol_emb[self.nonterminals :]
        states = self.preterminal_net(w) + w  # e_T = g(w_T) + w_T
        return F.log_softmax(states @ self.word_emb, dim=-1).unsqueeze(0)  # softmax_x(u_x^T e_T)

    def grammar(self, tokens: torch.Tensor, z: torch.Tensor | None = None) -> Grammar:
        """The grammar of each sentence of `tokens` [B, N] (word ids; padding past a sentence's end is read as any
        word), for `treenets.nn.chart`: roots [B, NT], left and right [B, NT, S], terms [B, N, T] (log p(word i |
        preterminal j))."""
        batch = tokens.size(0)
        roots, left, right = self.productions(z)
        table = self.emissions(z).transpose(1, 2)  # [B', V, T]
        if table.size(0) == 1:  # one table for the batch: its words' rows (no [B, T, V] copy, nor in the gradient)
            terms = table[0][tokens]
        else:
            terms = table[torch.arange(batch, device=tokens.device)[:, None], tokens]
        # the roots and productions as computed, [1, ...] where every sentence shares them: the chart sums their
        # gradient over the batch once (`treenets.nn.chart.Grammar`)
        return Grammar(roots=roots, terms=terms, left=left, right=right)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor, use_mean: bool = False,
                noise: torch.Tensor | None = None) -> PCFGOutput:
        """-log p(sentence) of each sentence of `tokens` [B, N] with `lengths` [B] (each at least 2), by the inside
        algorithm; `use_mean` and `noise` are the compound grammar's (here nothing to choose or draw)."""
        grammar = self.grammar(tokens)
        nll = -inside(grammar, lengths)
        return PCFGOutput(nll, torch.zeros_like(nll), grammar)


class SimpleCompoundPCFG(CompoundGrammar, SimpleNeuralPCFG):
    """SimplePCFG's compound grammar: the parents and the emissions read a per-sentence z, inferred by the compound
    grammars' inference network (`CompoundGrammar`: `encode`, and `forward`, -log p(sentence | z) and the KL).

    Args (beyond `SimpleNeuralPCFG`'s):
        z_dim: the latent vector's size.
        h_dim, w_dim: the inference BiLSTM's hidden size (per direction) and word embedding size.
    """

    def __init__(self, vocab_size: int, nonterminals: int = 2048, preterminals: int = 4096, state_dim: int = 512,
                 z_dim: int = 64, h_dim: int = 512, w_dim: int = 512):
        super().__init__(vocab_size, nonterminals, preterminals, state_dim, z_dim)
        self._build_inference(vocab_size, h_dim, w_dim)

    def _build_emissions(self) -> None:
        """f: a linear map of [w_T; z] to D, two residual layers, and the output layer to V."""
        self.preterminal_net = symbol_network(self.state_dim + self.z_dim, self.state_dim, self.vocab_size)

    def emissions(self, z: torch.Tensor | None = None) -> torch.Tensor:
        """log pi_{T -> x}: [B, T, V], one table per sentence's z [B, z_dim]."""
        if z is None:
            raise ValueError("the compound grammar's emissions depend on z [B, z_dim] (`encode`)")
        return F.log_softmax(self.preterminal_net(_with_z(self.symbol_emb[self.nonterminals :], z)), dim=-1)
