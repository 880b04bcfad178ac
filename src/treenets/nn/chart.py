"""The dynamic programs of a probabilistic context-free grammar in Chomsky normal form, batched over sentences:
the inside algorithm (log Z), Viterbi (the most probable labelled tree), marginals (as gradients of log Z) and
minimum-Bayes-risk decoding over the span marginals. Algorithms as batched functions, in the style of
harvardnlp/pytorch-struct; the grammar is that of the Compound PCFG (Kim et al. 2019) and, with independent left
and right productions, of SimplePCFG (Liu et al. 2023).

The grammar
    NT nonterminals label spans of two or more words, T preterminals label single words. The S = NT + T symbols
    are laid out nonterminals first: preterminal j is symbol NT + j (as in Kim's code). Everything is in log space
    (natural log), one grammar per sentence:

        roots[b, A]        log p(root -> A)                                     A a nonterminal
        terms[b, i, j]     log p(word i | preterminal j)
        rules[b, A, B, C]  log p(A -> B C)                                      B, C symbols
      or, for SimplePCFG,  log p(A -> B C) = left[b, A, B] + right[b, A, C]

    The width restriction: a child over one word is a preterminal, a wider child a nonterminal, so of
    rules[A, B, C] only the blocks that fit the children's widths are ever read. A sentence of one word has no
    tree (the root is a nonterminal): every function requires lengths >= 2.

The inside recursion (beta[s, t, A]: log of the total probability of the words s..t under A; t inclusive)

    beta[i, i, NT + j] = terms[i, j]
    beta[s, t, A]      = logsumexp over s <= u < t, B, C of  beta[s, u, B] + beta[u + 1, t, C] + rules[A, B, C]
    log Z              = logsumexp over A of  beta[0, n - 1, A] + roots[A]

    The chart is a list indexed by width w (tensors [B, N - w + 1, NT]: every start position at once; width 1
    holds the preterminals' terms [B, N, T]), so autograd never sees an in-place write on a saved tensor, and
    Python loops only over the widths: one width's work is batched over its cells, its split points and the
    sentences. The children of a width's split points are those of the width before plus one new span on each
    side (`_next_splits`): one concatenation per side and width, not one slice per split point.

The scaled matrix product (the log-sum-exp as a matrix product in probability space)

    logsumexp_k (x[i, k] + y[k, j]) = log(sum_k exp(x[i, k] - mx[i]) exp(y[k, j] - my[j])) + mx[i] + my[j]

    with mx, my the maxima over k (`_log_matmul`). Each cell's split points combine by the width restriction:
      * both children wider than a word (NT x NT): the outer products of the children's scaled scores summed over
        the split points k, P[B, C] = sum_k exp(beta_k[B] + beta'_k[C] - M) with M the largest
        max_B beta_k[B] + max_C beta'_k[C] (one batched product [cells, NT, K] @ [cells, K, NT]), then one
        product with exp(rules[A, :NT, :NT]) viewed [NT, NT * NT]; M and the rules' maxima go back in log space;
      * a child of one word (T x NT, NT x T): once per call and word position, the preterminal side contracted
        with its rule block, G_left[i, A, C] = logsumexp_B (terms[i, B] + rules[A, NT + B, C]) and
        G_right[i, A, B] = logsumexp_C (rules[A, B, NT + C] + terms[i, C]) (and T x T for width 2), so that per
        cell an edge split costs NT x NT, not NT x T x NT. The tables are scaled (exp(G - max over the child's
        symbol)) once per call; per width only the wider child is scaled.
    The middle and the edge contributions combine by a logaddexp of their logs.

    For SimplePCFG's productions the sums over B and C separate: for a child span, L[A] = logsumexp_B (left[A, B]
    + beta[B]) and R[A] = logsumexp_C (right[A, C] + beta[C]) are computed once per span (when its width is done),
    and a cell is beta[s, t, A] = logsumexp_k (L[s, u, A] + R[u + 1, t, A]): no NT^3 tensor at all.

Viterbi is the same recursion in max-plus: the edge tables with max for logsumexp (G_left[i, A, C] =
max_B terms[i, B] + rules[A, NT + B, C], with its first B), and the middle splits' maximum over the split points
of beta_k[B] + beta'_k[C] for each (B, C) first (with its first k), then + rules[A, B, C] and the maximum over
(B, C): NT^3 per cell, not per split. Each cell keeps a back pointer k * S * S + B * S + C (the left child of
width k + 1 and symbol B, the right child's symbol C); the trees are read back per sentence in Python at the end
(one node per span of the tree).

The marginals are gradients of log Z (the expected counts of the inside-outside algorithm): zero offsets added
to every cell beta[s, t, A] have the gradient p(span (s, t) labelled A), the terms p(word i under preterminal j).

Underflow: a scaled sum that underflows to zero would make its log -inf and the gradients of the cells below it
NaN (exp(-inf - -inf)). Every scaled sum is clamped at the smallest positive normal number of the dtype before its
log (`torch.finfo(dtype).tiny`: about 1e-38 in float32, 1e-308 in float64), and the maxima that scale are
detached and taken as 0 where not finite. So the chart holds finite numbers whenever the inputs do (rules of
-inf included: exp(-inf) = 0), a cell whose true sum is below that floor (relative to its scaling maxima) reads
the floor instead (a sentence of probability zero gets a very negative, finite log Z), and its gradient is zero,
never NaN. The dynamic programs run with autocast disabled (in the grammar's dtype: float32 or float64).

Conventions
    spans are (start, end, label) with an inclusive end; the marginals' span tensors are [B, N, N] indexed
    [start, end]. Trees list their spans as Kim's `PCFG._viterbi` does: his backtrack inserts each node at the
    front of the list in pre-order (root, left subtree, right subtree), so the list is the reverse of the
    pre-order, the whole sentence's span last. Tags are preterminal indices 0..T-1.
    Ties (Viterbi): the first maximum in the order lowest split point (left child's end ascending), then lowest
    left child symbol, then lowest right child symbol, as Kim's per-split maximum over the flattened (left,
    right) block followed by the maximum over split points; the root label's ties go to the lowest index.
    Ties (MBR): the lowest split point; labels and tags: the lowest index.
    Exact ties are exact in floating point only: the sums are associated differently from Kim's code (an edge
    split adds the word's term and the rule first), so two trees of equal score in real arithmetic may differ
    in the last bit.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from treenets.nn.backend import kernels_for

# The most elements one temporary of Viterbi's may hold (its maximum over split points and over the children's
# symbols, [sentences, cells, NT, NT * NT]); above it the cells are taken in chunks.
_VITERBI_CHUNK_ELEMENTS = 1 << 20


@dataclass
class Grammar:
    """A batch of grammars in log space (natural log); B sentences, N the longest length."""

    roots: torch.Tensor  # [B, NT]: log p(root -> A)
    terms: torch.Tensor  # [B, N, T]: log p(word i | preterminal j); positions past a sentence's length are ignored
    rules: torch.Tensor | None = None  # [B, NT, S, S]: log p(A -> B C) (Kim's layout), or
    left: torch.Tensor | None = None  # [B, NT, S]: log p(B as left child | A) and
    right: torch.Tensor | None = None  # [B, NT, S]: log p(C as right child | A); log p(A -> B C) = left + right
    # roots, rules, left and right may have a batch of 1 instead of B: one grammar for every sentence (a grammar
    # that reads no sentence), whose gradient is then summed over the batch once, not materialised per sentence

    @property
    def batch(self) -> int:
        """B, the number of sentences."""
        return self.terms.shape[0]

    def __post_init__(self):
        self.validate()

    @property
    def nt(self) -> int:
        """The number of nonterminals."""
        return self.roots.shape[1]

    @property
    def t(self) -> int:
        """The number of preterminals."""
        return self.terms.shape[2]

    @property
    def factored(self) -> bool:
        """Whether the productions are SimplePCFG's left and right (else Kim's rules)."""
        return self.rules is None

    def validate(self) -> None:
        """Raise ValueError, naming the expected shapes, unless the tensors make one batch of grammars."""
        if not isinstance(self.roots, torch.Tensor) or self.roots.dim() != 2:
            raise ValueError(f"roots must be a tensor [B, NT], got {_shape(self.roots)}")
        if not isinstance(self.terms, torch.Tensor) or self.terms.dim() != 3:
            raise ValueError(f"terms must be a tensor [B, N, T], got {_shape(self.terms)}")
        b, nt = self.terms.shape[0], self.roots.shape[1]
        t = self.terms.shape[2]
        s = nt + t
        if self.roots.shape[0] not in (1, b):
            raise ValueError(f"terms must be [B, N, T] with B = {self.roots.shape[0]} (roots is [B, NT] = "
                             f"{list(self.roots.shape)}), got {list(self.terms.shape)}")
        if nt < 1 or t < 1:
            raise ValueError(f"a grammar needs at least one nonterminal and one preterminal: roots is "
                             f"{list(self.roots.shape)} [B, NT], terms {list(self.terms.shape)} [B, N, T]")
        has_rules = self.rules is not None
        has_factors = self.left is not None or self.right is not None
        if has_rules and has_factors:
            raise ValueError("give either rules [B, NT, S, S] or left and right [B, NT, S], not both")
        if not has_rules and (self.left is None or self.right is None):
            raise ValueError(f"give rules [B, NT, S, S] = {[b, nt, s, s]} or both left and right "
                             f"[B, NT, S] = {[b, nt, s]} (S = NT + T = {nt} + {t})")
        named = {"roots": self.roots, "terms": self.terms}
        if has_rules:
            if not isinstance(self.rules, torch.Tensor) or tuple(self.rules.shape) not in ((b, nt, s, s),
                                                                                        (1, nt, s, s)):
                raise ValueError(f"rules must be [B, NT, S, S] = {[b, nt, s, s]} (S = NT + T = {nt} + {t}), "
                                 f"got {_shape(self.rules)}")
            named["rules"] = self.rules
        else:
            for name in ("left", "right"):
                value = getattr(self, name)
                if not isinstance(value, torch.Tensor) or tuple(value.shape) not in ((b, nt, s), (1, nt, s)):
                    raise ValueError(f"{name} must be [B, NT, S] = {[b, nt, s]} (S = NT + T = {nt} + {t}), "
                                     f"got {_shape(value)}")
                named[name] = value
        for name, value in named.items():
            if not value.is_floating_point():
                raise ValueError(f"{name} must be floating point (float32 or float64), got {value.dtype}")
            if value.dtype != self.roots.dtype or value.device != self.roots.device:
                raise ValueError(f"{name} is {value.dtype} on {value.device}, roots {self.roots.dtype} on "
                                 f"{self.roots.device}: all of a grammar's tensors need one dtype and device")


    def expanded(self) -> Grammar:
        """The grammar with a batch of B everywhere: the tensors of batch 1 expanded (views, no copy)."""
        b = self.batch
        return Grammar(*(None if x is None else x.expand(b, *x.shape[1:])
                         for x in (self.roots, self.terms, self.rules, self.left, self.right)))


@dataclass
class ViterbiTree:
    """A sentence's most probable labelled tree."""

    score: float  # its log probability, the root rule included
    root: int  # the root's nonterminal
    spans: list[tuple[int, int, int]]  # (start, end inclusive, nonterminal), the reverse of the pre-order
    tags: list[int]  # each word's preterminal, 0..T-1
    label_scores: list[float]  # per nonterminal A: the best score of the sentence under A, before roots[A]


@dataclass
class Marginals:
    """Posterior marginals of a batch of sentences (zero past a sentence's length)."""

    spans: torch.Tensor  # [B, N, N]: p(span (s, t) is a constituent), t > s (inclusive end); zero elsewhere
    labels: torch.Tensor  # [B, N, N, NT]: p(span (s, t) is a constituent labelled A)
    tags: torch.Tensor  # [B, N, T]: p(word i has preterminal j)
    log_z: torch.Tensor  # [B]: log of each sentence's total probability


@dataclass
class MBRTree:
    """A sentence's minimum-Bayes-risk tree: the binary tree whose spans have the largest summed marginal."""

    spans: list[tuple[int, int, int]]  # (start, end inclusive, most probable nonterminal), the reverse pre-order
    tags: list[int]  # each word's most probable preterminal
    score: float  # the sum of the chosen spans' marginals (the whole sentence's included)


# --- checks ----------------------------------------------------------------------------------------------------
def _shape(value) -> str:
    return str(list(value.shape)) if isinstance(value, torch.Tensor) else type(value).__name__


def _check_lengths(lengths, batch: int, longest: int) -> list[int]:
    """The lengths as Python ints, after checking 2 <= length <= N for each of the B sentences."""
    if isinstance(lengths, torch.Tensor):
        if lengths.is_floating_point() or lengths.is_complex() or lengths.dtype == torch.bool:
            raise ValueError(f"lengths must be integers (a LongTensor [B]), got {lengths.dtype}")
        if lengths.dim() != 1:
            raise ValueError(f"lengths must be [B] = [{batch}], got {list(lengths.shape)}")
        values = [int(v) for v in lengths.tolist()]
    elif isinstance(lengths, Sequence):
        values = [int(v) for v in lengths]
    else:
        raise ValueError(f"lengths must be a LongTensor [B] = [{batch}], got {type(lengths).__name__}")
    if len(values) != batch:
        raise ValueError(f"lengths must be [B] = [{batch}] (one per sentence), got [{len(values)}]")
    for b, n in enumerate(values):
        if n < 2:
            raise ValueError(f"sentence {b} has length {n}: a PCFG parses sentences of at least 2 words "
                             "(the root is a nonterminal, which spans two or more)")
        if n > longest:
            raise ValueError(f"sentence {b} has length {n}, more than the N = {longest} positions of its tensors")
    return values


def _prepare(grammar: Grammar, lengths) -> tuple[list[int], int, torch.Tensor]:
    """Validate; return the lengths as ints, the longest, and the terms cut to it with the padding set to 0 (by
    `torch.where`, so that NaN or -inf there reach neither the values nor the gradients)."""
    if not isinstance(grammar, Grammar):
        raise ValueError(f"grammar must be a Grammar, got {type(grammar).__name__}")
    grammar.validate()
    values = _check_lengths(lengths, grammar.batch, grammar.terms.shape[1])
    longest = max(values)
    terms = grammar.terms[:, :longest]
    positions = torch.arange(longest, device=terms.device)
    inside = positions[None, :] < torch.tensor(values, device=terms.device)[:, None]  # [B, n]
    terms = torch.where(inside[:, :, None], terms, terms.new_zeros(()))
    return values, longest, terms


# --- the scaled products ----------------------------------------------------------------------------------------
def _finite_max(x: torch.Tensor, dim, keepdim: bool = True) -> torch.Tensor:
    """The maximum over dim, detached (the scaling is a constant: log-sum-exp's gradient is the same), 0 where it
    is not finite (a row of -inf), so that x - max is never NaN."""
    m = x.detach().amax(dim=dim, keepdim=keepdim)
    return torch.where(torch.isfinite(m), m, m.new_zeros(()))


def _safe_log(x: torch.Tensor) -> torch.Tensor:
    """log of a scaled sum, clamped at the dtype's smallest positive normal so that an underflow reads a very
    negative finite number (and a zero gradient), never -inf (whose neighbours' gradients would be NaN)."""
    return torch.log(x.clamp_min(torch.finfo(x.dtype).tiny))


def _log_matmul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """logsumexp_k (x[..., i, k] + y[..., k, j]) as a scaled matrix product: exp(x - mx) @ exp(y - my) with the
    maxima mx over k per row of x and my over k per column of y, added back after the log."""
    mx = _finite_max(x, -1)
    my = _finite_max(y, -2)
    return _safe_log(torch.exp(x - mx) @ torch.exp(y - my)) + mx + my


class _ScaledProduct:
    """y [b, k, j] in log space, scaled once for `_log_matmul`'s products with it (exp(y - my), my its maxima over
    k), so that a product with the same y at every width does not take its exponential again; one 2-D product
    when every sentence shares y (a batch of one grammar, expanded: stride 0)."""

    def __init__(self, y: torch.Tensor):
        self.my = _finite_max(y, -2)
        self.shared = y.size(0) == 1 or y.stride(0) == 0
        scaled = torch.exp((y - self.my)[:1] if self.shared else y - self.my)
        self.scaled = scaled[0] if self.shared else scaled

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """logsumexp_k (x[b, ..., i, k] + y[b, k, j])."""
        mx = _finite_max(x, -1)
        if self.shared:
            product = torch.exp(x - mx) @ self.scaled
        else:
            flat = torch.exp(x - mx).flatten(1, -2)
            product = (flat @ self.scaled).view(*x.shape[:-1], self.scaled.size(-1))
        return _safe_log(product) + mx + (self.my if self.shared else self.my.view(self.my.size(0),
                                                                                 *[1] * (x.dim() - 2), -1))


def _edge_tables(rules: torch.Tensor, terms: torch.Tensor, nt: int, longest: int):
    """The preterminal side of the edge splits contracted with its rule block, once per word position:
    G_left[b, i, A, C] = logsumexp_B (terms[b, i, B] + rules[b, A, NT + B, C]) for C a nonterminal,
    G_tt[b, i, A, C] the same for C a preterminal (width 2), G_right[b, i, A, B] = logsumexp_C (rules[b, A, B,
    NT + C] + terms[b, i, C]) for B a nonterminal. Each is one batched scaled product [n, T] @ [T, NT * X]."""
    batch, _, s, _ = rules.shape
    t = s - nt
    # rules[b, A, NT + B, :] as [b, B, (A, C)]: the preterminal B to contract with the word's terms
    left_block = rules[:, :, nt:, :].permute(0, 2, 1, 3)  # [b, T, NT, S]
    g_left_all = _log_matmul(terms, left_block.reshape(batch, t, nt * s)).view(batch, longest, nt, s)
    g_left, g_tt = g_left_all[..., :nt], g_left_all[..., nt:]
    g_right = None
    if longest >= 3:
        right_block = rules[:, :, :nt, nt:].permute(0, 3, 1, 2)  # [b, C (T), A, B (NT)]
        g_right = _log_matmul(terms, right_block.reshape(batch, t, nt * nt)).view(batch, longest, nt, nt)
    return g_left, g_tt, g_right


def _no_autocast(device: torch.device):
    """A block without autocast (the dynamic programs run in the grammar's dtype: a bfloat16 product would lose
    the chart's precision), on the devices that have one."""
    if device.type in ("cpu", "cuda"):
        return torch.autocast(device_type=device.type, enabled=False)
    return contextlib.nullcontext()


# --- inside ---------------------------------------------------------------------------------------------------
def _inside(grammar: Grammar, lengths, label_offsets: torch.Tensor | None = None, terms: torch.Tensor | None = None):
    """log Z [B] (and the lengths as ints). label_offsets [B, n, n, NT] (n the longest length) is added to every
    chart cell beta[s, t, :] (the marginals differentiate log Z with respect to it, at zero); terms replaces
    grammar.terms (the marginals' leaf)."""
    values, longest, sane_terms = _prepare(grammar, lengths)
    if terms is not None:
        sane_terms = _prepare(Grammar(grammar.roots, terms, grammar.rules, grammar.left, grammar.right), values)[2]
    with _no_autocast(grammar.roots.device):
        if grammar.factored:
            # the sums over split points compiled, the backward written by hand (`_FactoredInside`) where the
            # backend runs the kernels; the PyTorch code below is its specification
            kernels = kernels_for("pcfg_chart", sane_terms, grammar.left, grammar.right)
            if kernels is not None:
                return _FactoredInside.apply(grammar.roots, sane_terms, grammar.left, grammar.right, label_offsets,
                                             values, kernels), values
            tops = _inside_factored(grammar.expanded(), sane_terms, longest, label_offsets)
        else:
            tops = _inside_rules(grammar.expanded(), sane_terms, longest, label_offsets)
        # tops[w - 2] = beta[0, w - 1, :]: the cell of the whole sentence for the sentences of length w
        index = torch.tensor(values, device=grammar.roots.device) - 2
        batch = torch.arange(len(values), device=grammar.roots.device)
        whole = torch.stack(tops)[index, batch]  # [B, NT]
        return torch.logsumexp(whole + grammar.roots, dim=-1), values


def _offsets(label_offsets, width: int, cells: int):
    """The offsets of the cells (s, s + width - 1), s = 0..cells-1: [B, cells, NT]."""
    return torch.diagonal(label_offsets, offset=width - 1, dim1=1, dim2=2)[..., :cells].transpose(1, 2)


def _scaled(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """exp(x - m) and m, the maximum over the last dimension (detached, finite): x = log(exp(x - m)) + m."""
    m = _finite_max(x, -1)
    return torch.exp(x - m), m


def _next_splits(lefts, rights, left: torch.Tensor, right: torch.Tensor, cells: int):
    """The children of every split point of a width w, from those of width w - 1: one concatenation on each side
    (not one slice per split point), so that the Python loop stays one step per width, forward and backward.

    lefts[:, s, j] is the j-th split's left child in the cell starting at s, rights[:, s, j] its right child, the
    narrowest left child first. At width w the left children are those of width w - 1 (their first `cells`
    starts) and then the new widest, `left[:, s]`; the right children are first the new widest, `right` at the
    start s + (w - width of `right`) (its last `cells` starts), then those of width w - 1 one cell on (the same
    spans: the cell starting at s + 1 ended where this one ends). Returns [b, cells, K, X] each."""
    left = left[:, :cells, None]
    right = right[:, -cells:, None]
    if lefts is None:
        return left, right
    return torch.cat([lefts[:, :cells], left], dim=2), torch.cat([right, rights[:, 1:]], dim=2)


def _inside_rules(grammar: Grammar, terms: torch.Tensor, longest: int, label_offsets) -> list[torch.Tensor]:
    rules, nt = grammar.rules, grammar.nt
    batch = rules.shape[0]
    # the edge tables, scaled once per row (a word position and a parent) rather than once per width
    g_left, g_tt, g_right = _edge_tables(rules, terms, nt, longest)
    left_exp, left_max = _scaled(g_left)  # [b, n, NT, NT], [b, n, NT, 1]
    if longest >= 3:
        right_exp, right_max = _scaled(g_right)
    # the NT x NT block scaled per parent A: exp(rules[A, :NT, :NT] - m[A]) as [b, (B, C), A] for the product
    middle_exp, middle_max = _scaled(rules[:, :, :nt, :nt].reshape(batch, nt, nt * nt))
    middle_exp, middle_max = middle_exp.transpose(1, 2), middle_max.transpose(1, 2)  # [b, NT * NT, NT], [b, 1, NT]

    beta: list[torch.Tensor | None] = [None, terms]  # beta[w]: [b, n - w + 1, NT] (width 1: the terms, [b, n, T])
    tops = []
    lefts = rights = None  # the children of the NT x NT splits (`_next_splits`)
    for w in range(2, longest + 1):
        cells = longest - w + 1
        if w == 2:
            # T x T: beta[s, s + 1, A] = logsumexp_C (G_tt[s, A, C] + terms[s + 1, C])
            cell = _log_matmul(g_tt[:, :cells], terms[:, 1:, :, None]).squeeze(-1)
        else:
            # the edge splits, as products of the scaled tables with the scaled children: the children are padded
            # to the tables' n rows (not the tables cut to the cells: the gradient of a cut of a table would be a
            # table-sized tensor per width), and the products cut to the cells after
            children, children_max = _scaled(beta[w - 1])  # [b, cells + 1, NT], [b, cells + 1, 1]
            # a preterminal on the left: G_left[s, A, :] @ beta[s + 1, t, :], one row per start s
            on_left = left_exp @ torch.nn.functional.pad(children[:, 1:], (0, 0, 0, w - 1))[..., None]
            on_left = _safe_log(on_left[:, :cells, :, 0]) + left_max[:, :cells, :, 0] + children_max[:, 1:]
            # a preterminal on the right: G_right[t, A, :] @ beta[s, t - 1, :], one row per end t = s + w - 1
            on_right = right_exp @ torch.nn.functional.pad(children[:, :cells], (0, 0, w - 1, 0))[..., None]
            on_right = _safe_log(on_right[:, w - 1:, :, 0]) + right_max[:, w - 1:, :, 0] + children_max[:, :cells]
            cell = torch.logaddexp(on_left, on_right)
            if w >= 4:
                # NT x NT splits u = s + k - 1, k = 2..w-2 (the left child's width): the new ones are beta[w - 2]
                # on the left (k = w - 2) and on the right (k = 2)
                lefts, rights = _next_splits(lefts, rights, beta[w - 2], beta[w - 2], cells)  # [b, cells, K, NT]
                left_scaled, lefts_max = _scaled(lefts)
                right_scaled, rights_max = _scaled(rights)
                pair_max = lefts_max + rights_max  # [b, cells, K, 1]: the largest outer-product entry per split
                top = pair_max.amax(dim=2, keepdim=True)  # [b, cells, 1, 1]
                # P[B, C] = sum_k exp(beta_k[B] + beta'_k[C] - top): one product over the split points
                outer = left_scaled.transpose(-1, -2) @ (right_scaled * torch.exp(pair_max - top))
                summed = outer.reshape(batch, cells, nt * nt) @ middle_exp  # [b, cells, NT]
                cell = torch.logaddexp(cell, _safe_log(summed) + top.squeeze(-1) + middle_max)
        if label_offsets is not None:
            cell = cell + _offsets(label_offsets, w, cells)
        beta.append(cell)
        tops.append(cell[:, 0])
    return tops


def _inside_factored(grammar: Grammar, terms: torch.Tensor, longest: int, label_offsets) -> list[torch.Tensor]:
    nt = grammar.nt
    # [b, symbol, A]: the productions transposed for x @ y, x the children's scores over the symbol; the
    # nonterminal blocks scaled once for every width (`_ScaledProduct`)
    left_t, right_t = grammar.left[:, :, nt:].transpose(1, 2), grammar.right[:, :, nt:].transpose(1, 2)
    left_nt = _ScaledProduct(grammar.left[:, :, :nt].transpose(1, 2))
    right_nt = _ScaledProduct(grammar.right[:, :, :nt].transpose(1, 2))
    # as_left[w][b, s, A] = logsumexp_B (left[A, B] + beta[s, s + w - 1, B]); as_right likewise with right
    as_left: list[torch.Tensor | None] = [None, _log_matmul(terms, left_t)]
    as_right: list[torch.Tensor | None] = [None, _log_matmul(terms, right_t)]
    tops = []
    lefts = rights = None
    for w in range(2, longest + 1):
        cells = longest - w + 1
        # beta[s, t, A] = logsumexp_k (as_left[k][s, A] + as_right[w - k][s + k, A]), k = 1..w-1
        lefts, rights = _next_splits(lefts, rights, as_left[w - 1], as_right[w - 1], cells)  # [b, cells, K, NT]
        cell = torch.logsumexp(lefts + rights, dim=2)
        if label_offsets is not None:
            cell = cell + _offsets(label_offsets, w, cells)
        tops.append(cell[:, 0])
        if w < longest:
            as_left.append(left_nt(cell))
            as_right.append(right_nt(cell))
    return tops


def _chart_row(batch: int, n: int, width: int) -> int:
    """The first row of `width` in a flat chart [rows, X] of `batch` sentences of n positions: each width's cells
    [batch, n - width + 1] one after the other, the narrowest first (`_FactoredInside`; the kernels' `chart_row`)."""
    return batch * ((width - 1) * (n + 1) - (width - 1) * width // 2)


def _products(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """x [b, c, X] @ y[b'].T for y [b', NT, X] with b' = b, or b' = 1 for every sentence (one 2-D product)."""
    if y.size(0) == 1:
        return (x.reshape(-1, x.size(-1)) @ y[0].T).view(*x.shape[:-1], y.size(1))
    return torch.bmm(x, y.transpose(1, 2))


def _scaled_block(production: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """exp(production - m) and m [b', NT, 1], the maximum of each parent's row (`_ScaledProduct`'s my)."""
    m = _finite_max(production, -1)
    return torch.exp(production - m), m


class _FactoredInside(torch.autograd.Function):
    """log Z of SimplePCFG's factored grammar (`_inside_factored`, its specification: the same sums, the same
    floats to rounding) with a hand-written backward (the outside pass), the sums over split points compiled
    (`split_logsumexp` of the pcfg_chart kernels): no [cells, K, NT] stripe is copied, forward or backward, and the
    productions' gradients are one matrix product over every width's cells.

    The chart is flat (`_chart_row`): per width w the cells beta_w [b, n - w + 1, NT] and the children's terms
    as_left_w = log(exp(beta_w - mb_w) @ exp(left_NT - ml).T) + mb_w + ml (as_right with right), mb_w each cell's
    maximum over A and ml each parent's over B (width 1: the terms and the preterminal block). Backward, widths
    from the widest: a cell's gradient is the root's (where it is a sentence's whole span) plus its projections',
    P_w * (dQ_left @ E_left + dQ_right @ E_right) with dQ = d(as_left) / Q (zero where Q was clamped); then the split
    points' gradients exp(as_left + as_right - sum) * d(beta) reach the narrower children, `sum` the cell before its
    label offset (the marginals' zeros; a tree CRF's span scores, `tree_crf_log_z`), whose gradient is the cell's."""

    @staticmethod
    def forward(ctx, roots, terms, left, right, label_offsets, values, kernels):
        batch, n, t = terms.shape
        nt = roots.shape[1]
        rows = _chart_row(batch, n, n + 1)
        charts = {name: terms.new_empty(rows, nt) for name in ("as_left", "as_right", "cells", "scaled", "q_left",
                                                               "q_right")}
        charts["sums"] = terms.new_empty(rows, nt) if label_offsets is not None else charts["cells"]
        # width 1: the preterminals' terms projected by the preterminal blocks
        e_left_t, m_left_t = _scaled_block(left[:, :, nt:])
        e_right_t, m_right_t = _scaled_block(right[:, :, nt:])
        e_left, m_left = _scaled_block(left[:, :, :nt])
        e_right, m_right = _scaled_block(right[:, :, :nt])
        term_max = _finite_max(terms, -1)
        term_scaled = torch.exp(terms - term_max)  # [b, n, T]
        for name, e, m, out in (("q_left", e_left_t, m_left_t, "as_left"), ("q_right", e_right_t, m_right_t,
                                                                              "as_right")):
            q = charts[name][:batch * n].view(batch, n, nt)
            q.copy_(_products(term_scaled, e))
            charts[out][:batch * n].view(batch, n, nt).copy_(_safe_log(q) + term_max + m.transpose(1, 2))
        for w in range(2, n + 1):
            first, cells = _chart_row(batch, n, w), n - w + 1
            kernels.split_logsumexp(charts["as_left"], charts["as_right"], charts["cells"], batch, n, w)
            cell = charts["cells"][first:first + batch * cells].view(batch, cells, nt)
            if label_offsets is not None:  # (the sums before the offsets kept: the split points' gradients read them)
                charts["sums"][first:first + batch * cells] = charts["cells"][first:first + batch * cells]
                cell += _offsets(label_offsets, w, cells)
            if w < n:
                cell_max = _finite_max(cell, -1)
                scaled = charts["scaled"][first:first + batch * cells].view(batch, cells, nt)
                torch.exp(cell - cell_max, out=scaled)
                for name, e, m, out in (("q_left", e_left, m_left, "as_left"), ("q_right", e_right, m_right,
                                                                                  "as_right")):
                    q = charts[name][first:first + batch * cells].view(batch, cells, nt)
                    q.copy_(_products(scaled, e))
                    charts[out][first:first + batch * cells].view(batch, cells, nt).copy_(
                        _safe_log(q) + cell_max + m.transpose(1, 2))
        whole_rows = torch.tensor([_chart_row(batch, n, v) + b * (n - v + 1) for b, v in enumerate(values)],
                                  device=terms.device)
        scores = charts["cells"][whole_rows] + roots  # [B, NT]: the whole sentence's cell and its root
        log_z = torch.logsumexp(scores, dim=-1)
        ctx.charts, ctx.whole_rows, ctx.kernels = charts, whole_rows, kernels
        ctx.blocks = (e_left_t, e_right_t, e_left, e_right, term_scaled)
        ctx.shapes = (batch, n, nt, roots.shape[0], left.shape[0], label_offsets is not None)
        ctx.save_for_backward(scores, log_z)
        return log_z

    @staticmethod
    def backward(ctx, grad_log_z):
        scores, log_z = ctx.saved_tensors
        charts, kernels = ctx.charts, ctx.kernels
        e_left_t, e_right_t, e_left, e_right, term_scaled = ctx.blocks
        batch, n, nt, root_batch, production_batch, has_offsets = ctx.shapes
        tiny = torch.finfo(scores.dtype).tiny
        grad_whole = torch.exp(scores - log_z[:, None]) * grad_log_z[:, None]  # [B, NT]: softmax over the roots
        grad_roots = grad_whole.sum(0, keepdim=True) if root_batch == 1 else grad_whole
        grads = {name: torch.zeros_like(charts["cells"]) for name in ("cells", "as_left", "as_right")}
        grads["cells"].index_put_((ctx.whole_rows,), grad_whole, accumulate=True)
        dq = {"q_left": torch.zeros_like(charts["cells"]), "q_right": torch.zeros_like(charts["cells"])}

        def to_q(name: str, out: str, first: int, count: int) -> torch.Tensor:
            # dQ = d(as_*) / Q where Q reached the clamp's floor (else 0, as clamp_min's gradient)
            q = charts[name][first:first + count]
            g = dq[name][first:first + count]
            torch.where(q >= tiny, grads[out][first:first + count] / q, q.new_zeros(()), out=g)
            return g

        for w in range(n, 1, -1):
            first, cells = _chart_row(batch, n, w), n - w + 1
            count = batch * cells
            if w < n:
                g_left = to_q("q_left", "as_left", first, count).view(batch, cells, nt)
                g_right = to_q("q_right", "as_right", first, count).view(batch, cells, nt)
                scaled = charts["scaled"][first:first + count].view(batch, cells, nt)
                back = _back_products(g_left, e_left) + _back_products(g_right, e_right)
                grads["cells"][first:first + count].view(batch, cells, nt).addcmul_(scaled, back)
            kernels.split_logsumexp_backward(charts["as_left"], charts["as_right"], charts["sums"], grads["cells"],
                                             grads["as_left"], grads["as_right"], batch, n, w)
        g_left_t = to_q("q_left", "as_left", 0, batch * n).view(batch, n, nt)
        g_right_t = to_q("q_right", "as_right", 0, batch * n).view(batch, n, nt)
        grad_terms = term_scaled * (_back_products(g_left_t, e_left_t) + _back_products(g_right_t, e_right_t))
        # the productions: d prod[A, B] = E[A, B] * sum over the chart's cells of dQ[A] * P[B], one product over
        # every width (widths 2..n-1; width 1 with the preterminal block)
        middle = slice(_chart_row(batch, n, 2), _chart_row(batch, n, n))
        grad_left = torch.cat([_weight_products(dq["q_left"][middle], charts["scaled"][middle], batch, n,
                                                production_batch) * e_left,
                               _weight_products(g_left_t, term_scaled, batch, n, production_batch, width_one=True)
                               * e_left_t], dim=-1)
        grad_right = torch.cat([_weight_products(dq["q_right"][middle], charts["scaled"][middle], batch, n,
                                                 production_batch) * e_right,
                                _weight_products(g_right_t, term_scaled, batch, n, production_batch, width_one=True)
                                * e_right_t], dim=-1)
        grad_offsets = None
        if has_offsets:
            grad_offsets = grads["cells"].new_zeros(batch, n, n, nt)
            for w in range(2, n + 1):
                first, cells = _chart_row(batch, n, w), n - w + 1
                _offsets(grad_offsets, w, cells).copy_(grads["cells"][first:first + batch * cells]
                                                       .view(batch, cells, nt))
        return grad_roots, grad_terms, grad_left, grad_right, grad_offsets, None, None


def _back_products(dq: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
    """dq [b, c, NT] @ e[b'] for e [b', NT, X] (b' = b, or 1 for every sentence): the gradient reaching the
    scaled children."""
    if e.size(0) == 1:
        return (dq.reshape(-1, dq.size(-1)) @ e[0]).view(*dq.shape[:-1], e.size(-1))
    return torch.bmm(dq, e)


def _weight_products(dq: torch.Tensor, scaled: torch.Tensor, batch: int, n: int, production_batch: int,
                     width_one: bool = False) -> torch.Tensor:
    """sum over cells of dq[cell, A] * scaled[cell, B]: [b', NT, X]. dq and scaled are the flat chart's rows of
    widths 2..n-1 ([rows, X]), or width 1's [b, n, X] (`width_one`); b' = 1: one product over every row."""
    if production_batch == 1:
        return (dq.reshape(-1, dq.size(-1)).T @ scaled.reshape(-1, scaled.size(-1))).unsqueeze(0)
    if width_one:
        return torch.bmm(dq.transpose(1, 2), scaled)
    total = dq.new_zeros(batch, dq.size(-1), scaled.size(-1))
    for w in range(2, n):  # per width: the rows of each sentence are [b, cells] there
        first, cells = _chart_row(batch, n, w) - _chart_row(batch, n, 2), n - w + 1
        total.baddbmm_(dq[first:first + batch * cells].view(batch, cells, -1).transpose(1, 2),
                       scaled[first:first + batch * cells].view(batch, cells, -1))
    return total


def inside(grammar: Grammar, lengths) -> torch.Tensor:
    """log Z [B]: the log of each sentence's total probability, the sum over all its labelled trees.

    Differentiable (by autograd) with respect to every tensor of the grammar. lengths: LongTensor [B], each
    2 <= length <= N."""
    return _inside(grammar, lengths)[0]


def decode_bytes(longest: int, nonterminals: int, factored: bool, decode: str) -> int:
    """About the memory decoding one sentence of `longest` words takes at its peak: its chart's cells (about 40
    bytes a cell and nonterminal: values, children's symbols, pointers; MBR's inside and outside), and for MBR under
    an NT x S x S rule tensor what its backward keeps of every width, each cell's children at every split point
    ([cells, K, NT] stripes: measured 2.2-2.4 bytes per n^3 NT for Kim's grammars at 100 and 140 words; 3 here)."""
    cells = longest * (longest + 1) // 2 * nonterminals * 40
    return cells + (3 * longest**3 * nonterminals if decode == "mbr" and not factored else 0)


# --- marginals --------------------------------------------------------------------------------------------------
def marginals(grammar: Grammar, lengths) -> Marginals:
    """The posterior marginals, as gradients of log Z: zero-valued offsets added to every chart cell (their
    gradient is p(span labelled A)) and the terms (their gradient is p(word i under preterminal j)). Detached;
    works under torch.no_grad too."""
    values, longest, _ = _prepare(grammar, lengths)
    batch, nt = grammar.batch, grammar.nt
    n = grammar.terms.shape[1]
    detached = Grammar(*(None if x is None else x.detach()
                         for x in (grammar.roots, grammar.terms, grammar.rules, grammar.left, grammar.right)))
    with torch.enable_grad():
        offsets = grammar.roots.new_zeros(batch, longest, longest, nt, requires_grad=True)
        terms = detached.terms.clone().requires_grad_(True)
        log_z, _ = _inside(detached, values, offsets, terms)
        label_grad, tag_grad = torch.autograd.grad(log_z.sum(), [offsets, terms])
    labels = grammar.roots.new_zeros(batch, n, n, nt)
    labels[:, :longest, :longest] = label_grad
    tags = grammar.roots.new_zeros(batch, n, grammar.t)
    tags[:, :longest] = tag_grad[:, :longest]
    return Marginals(spans=labels.sum(-1), labels=labels, tags=tags, log_z=log_z.detach())


# --- Viterbi ----------------------------------------------------------------------------------------------------
def _best_and_key(values: torch.Tensor, keys: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The maximum over the last dimension and, among the entries that reach it, the smallest key (keys
    broadcast against values): the first maximum in the keys' order."""
    best = values.amax(dim=-1)
    tied = values == best.unsqueeze(-1)
    biggest = torch.iinfo(torch.int64).max
    return best, torch.where(tied, keys, torch.full((), biggest, dtype=torch.int64, device=keys.device)).amin(-1)


def _max_plus(x: torch.Tensor, y: torch.Tensor, kernels=None) -> tuple[torch.Tensor, torch.Tensor]:
    """max_k x[b, i, k] + y[b, k, m] and its first argmax k ([b, n, M] each), in chunks of positions (or by the
    compiled `kernels`, the same sums and ties)."""
    if kernels is not None:
        return kernels.max_plus(x, y)
    batch, n, k = x.shape
    rows = max(1, _VITERBI_CHUNK_ELEMENTS // max(1, batch * k * y.shape[-1]))
    parts = [(x[:, i:i + rows, :, None] + y[:, None]).max(dim=2) for i in range(0, n, rows)]
    return torch.cat([p.values for p in parts], dim=1), torch.cat([p.indices for p in parts], dim=1)


@torch.no_grad()
def viterbi(grammar: Grammar, lengths) -> list[ViterbiTree]:
    """Each sentence's most probable labelled tree (max-plus inside, then a backtrack per sentence).

    Ties go to the lowest split point, then the lowest left child symbol, then the lowest right child symbol
    (Kim's order); the root's to the lowest nonterminal."""
    values, longest, terms = _prepare(grammar, lengths)
    nt, t = grammar.nt, grammar.t
    s = nt + t
    with _no_autocast(grammar.roots.device):
        # the max-plus products compiled (nn/chart_cpu.cpp) where the backend runs kernels: the
        # PyTorch code below is their specification
        tables = (grammar.left, grammar.right) if grammar.factored else (grammar.rules,)
        kernels = kernels_for("pcfg_chart", terms, *tables)
        if grammar.factored and kernels is not None:  # each cell's split points read where they lie
            chart, pointers = _viterbi_factored_compiled(grammar, terms, longest, kernels)
        elif grammar.factored:
            chart, pointers = _viterbi_factored(grammar.expanded(), terms, longest)
        else:
            chart, pointers = _viterbi_rules(grammar.expanded(), terms, longest, kernels)
    roots = grammar.roots.detach()
    pointers = [None, None] + [p.cpu().numpy() for p in pointers[2:]]
    trees = []
    # the whole sentence's cell per sentence (chart[n][b, 0]) and the best root label, the first maximum
    index = torch.tensor(values, device=roots.device) - 2
    whole = torch.stack([cell[:, 0] for cell in chart[2:]])[index, torch.arange(len(values), device=roots.device)]
    scores, best_roots = (whole + roots).max(dim=-1)
    for b, (n, label_scores, score, root) in enumerate(zip(values, whole.tolist(), scores.tolist(),
                                                           best_roots.tolist())):
        spans, tags = _backtrack(pointers, b, n, root, nt, s)
        trees.append(ViterbiTree(score=score, root=root, spans=spans, tags=tags, label_scores=label_scores))
    return trees


def _backtrack(pointers, b: int, n: int, root: int, nt: int, s: int):
    """The spans (reverse pre-order, as Kim's backtrack builds them) and the tags of sentence b. A pointer is
    key = k * S * S + B * S + C: the left child has width k + 1 and symbol B, the right child symbol C."""
    spans, tags = [], [0] * n
    stack = [(0, n - 1, root)]
    while stack:
        start, end, symbol = stack.pop()
        if start == end:
            tags[start] = symbol - nt
            continue
        spans.append((start, end, symbol))
        key = int(pointers[end - start + 1][b, start, symbol])
        k, left, right = key // (s * s), key % (s * s) // s, key % s
        split = start + k  # the left child is start..split (k + 1 words)
        stack.append((split + 1, end, right))  # popped after the left subtree: pre-order
        stack.append((start, split, left))
    spans.reverse()
    return spans, tags


def _viterbi_rules(grammar: Grammar, terms: torch.Tensor, longest: int, kernels=None):
    rules, nt = grammar.rules.detach(), grammar.nt
    batch, _, s, _ = rules.shape
    t = s - nt
    device = rules.device
    # the edge tables in max-plus: G_left[i, A, C] = max_B terms[i, B] + rules[A, NT + B, C] with its first B,
    # over every C (NT, then T for width 2); G_right[i, A, B] = max_C rules[A, B, NT + C] + terms[i, C]
    g_left, first_b = _max_plus(terms, rules[:, :, nt:, :].permute(0, 2, 1, 3).reshape(batch, t, nt * s), kernels)
    g_left, first_b = g_left.view(batch, longest, nt, s), first_b.view(batch, longest, nt, s)
    g_right, first_c = _max_plus(terms, rules[:, :, :nt, nt:].permute(0, 3, 1, 2).reshape(batch, t, nt * nt),
                                 kernels)
    g_right, first_c = g_right.view(batch, longest, nt, nt), first_c.view(batch, longest, nt, nt)
    middle = rules[:, None, :, :nt, :nt].reshape(batch, 1, nt, nt * nt)  # [b, 1, A, (B, C)]
    symbols = torch.arange(nt, device=device)
    pair_keys = (symbols[:, None] * s + symbols[None, :]).reshape(nt * nt)  # B * S + C over NT x NT

    chart: list[torch.Tensor | None] = [None, terms]
    pointers: list[torch.Tensor | None] = [None, None]
    lefts = rights = None  # the children of the NT x NT splits (`_next_splits`)
    for w in range(2, longest + 1):
        cells = longest - w + 1
        if w == 2:
            # T x T: max_C G_left[s, A, NT + C] + terms[s + 1, C]; ties: lowest B, then lowest C
            found = g_left[:, :cells, :, nt:] + terms[:, 1:, None, :]
            keys = (nt + first_b[:, :cells, :, nt:]) * s + nt + torch.arange(t, device=device)
            best, key = _best_and_key(found, keys)
            chart.append(best)
            pointers.append(key)
            continue
        shorter = chart[w - 1]
        # split k = 0 (a preterminal on the left): G_left[s, A, C] + best[s + 1, t, C]
        found = g_left[:, :cells, :, :nt] + shorter[:, 1:, None, :]
        groups = [_best_and_key(found, (nt + first_b[:, :cells, :, :nt]) * s + symbols)]
        if w >= 4:
            lefts, rights = _next_splits(lefts, rights, chart[w - 2], chart[w - 2], cells)
            groups.append(kernels.viterbi_middle(lefts, rights, middle[:, 0], s) if kernels is not None
                          else _viterbi_middle(lefts, rights, w, cells, middle, pair_keys, s))
        # split k = w - 2 (a preterminal on the right): G_right[t, A, B] + best[s, t - 1, B]
        found = g_right[:, w - 1:] + shorter[:, :cells, None, :]
        groups.append(_best_and_key(found, (w - 2) * s * s + symbols * s + nt + first_c[:, w - 1:]))
        # the groups are in split order and their keys' ranges too: the first group reaching the maximum wins
        best, which = torch.stack([g[0] for g in groups], dim=-1).max(dim=-1)
        key = torch.stack([g[1] for g in groups], dim=-1).gather(-1, which[..., None]).squeeze(-1)
        chart.append(best)
        pointers.append(key)
    return chart, pointers


def _viterbi_middle(lefts, rights, w: int, cells: int, middle: torch.Tensor, pair_keys: torch.Tensor, s: int):
    """The NT x NT splits of width w in max-plus: max over k of left + right for each (B, C) first (its first k),
    then + rules[A, B, C] and the maximum over (B, C), the smallest key (k, B, C) among ties. In chunks of cells.

    The (B, C) pairs are put in the order of their keys (per cell: the first split k, then B, then C) before the
    rules are added, so that one torch.max (whose ties go to the first entry) takes the smallest key: three passes
    over the [cells, NT, NT * NT] scores (gather, add, max) instead of a masked minimum over int64 keys."""
    batch, _, nt, _ = middle.shape
    step = max(1, _VITERBI_CHUNK_ELEMENTS // max(1, batch * nt * nt * max(nt, w)))
    bests, keys = [], []
    for c in range(0, cells, step):
        stop = min(cells, c + step)
        pairs, first_k = (lefts[:, c:stop, :, :, None] + rights[:, c:stop, :, None, :]).max(dim=2)  # [b, c, NT, NT]
        # the left child's width is k + 2 for the k-th of these splits: the split index k + 1 in the key
        key_of = (first_k.reshape(batch, stop - c, 1, nt * nt) + 1) * s * s + pair_keys  # [b, c, 1, (B, C)]
        sorted_keys, order = key_of.sort(dim=-1)
        shape = (batch, stop - c, nt, nt * nt)
        # (B, C) in key order: pairs + rules[A, B, C] (the same sum, only permuted)
        found = pairs.reshape(batch, stop - c, 1, nt * nt).gather(-1, order) + middle.expand(shape).gather(
            -1, order.expand(shape))  # [b, c, A, (B, C) sorted]
        best, position = found.max(dim=-1)  # the first maximum: the smallest key
        bests.append(best)
        keys.append(sorted_keys.expand(shape).gather(-1, position[..., None]).squeeze(-1))
    return torch.cat(bests, dim=1), torch.cat(keys, dim=1)


def _viterbi_factored(grammar: Grammar, terms: torch.Tensor, longest: int):
    nt = grammar.nt
    s = nt + grammar.t
    left, right = grammar.left.detach(), grammar.right.detach()

    def best_child(production: torch.Tensor, cell: torch.Tensor, offset: int):
        # max_B cell[s, B] + production[A, B] and its first B (as a symbol): [b, cells, NT] each
        found, index = _max_plus(cell, production.transpose(1, 2))
        return found, index + offset

    as_left = [None, best_child(left[:, :, nt:], terms, nt)]
    as_right = [None, best_child(right[:, :, nt:], terms, nt)]
    chart: list[torch.Tensor | None] = [None, terms]
    pointers: list[torch.Tensor | None] = [None, None]
    lefts = rights = left_symbols = right_symbols = None  # the splits' children (`_next_splits`)
    for w in range(2, longest + 1):
        cells = longest - w + 1
        lefts, rights = _next_splits(lefts, rights, as_left[w - 1][0], as_right[w - 1][0], cells)
        left_symbols, right_symbols = _next_splits(left_symbols, right_symbols, as_left[w - 1][1],
                                                   as_right[w - 1][1], cells)
        best, k = (lefts + rights).max(dim=2)  # the first split among ties; per split B and C are each the first
        left_symbol = left_symbols.gather(2, k[:, :, None]).squeeze(2)
        right_symbol = right_symbols.gather(2, k[:, :, None]).squeeze(2)
        chart.append(best)
        pointers.append(k * s * s + left_symbol * s + right_symbol)
        if w < longest:
            as_left.append(best_child(left[:, :, :nt], best, 0))
            as_right.append(best_child(right[:, :, :nt], best, 0))
    return chart, pointers


def _viterbi_factored_compiled(grammar: Grammar, terms: torch.Tensor, longest: int, kernels):
    """`_viterbi_factored` (its specification: the same sums, maxima and ties) over a flat chart (`_chart_row`): per
    width the best children of each span as a left and as a right child (`max_plus`, the productions of batch 1
    read in place) and each cell's best split point (`split_max`, read where the children lie), so that memory is
    the chart's, O(B n^2 NT), not a width's [cells, K, NT] stripes of values and symbols (the PyTorch code's peak
    at 64 sentences of 140 words and 512 nonterminals is tens of GiB)."""
    nt = grammar.nt
    s = nt + grammar.t
    left, right = grammar.left.detach(), grammar.right.detach()
    batch, n = terms.shape[:2]
    rows = _chart_row(batch, n, n + 1)
    values = {side: terms.new_empty(rows, nt) for side in ("left", "right")}
    symbols = {side: torch.empty(rows, nt, dtype=torch.long, device=terms.device) for side in ("left", "right")}
    best = terms.new_empty(rows, nt)
    keys = torch.empty(rows, nt, dtype=torch.long, device=terms.device)

    def as_child(width: int, cell: torch.Tensor, offset: int) -> None:
        # max_B cell[s, B] + production[A, B] and its first B (as a symbol), as each side's child
        first, count = _chart_row(batch, n, width), cell.shape[0] * cell.shape[1]
        block = slice(nt, None) if offset else slice(None, nt)
        for side, production in (("left", left), ("right", right)):
            found, index = kernels.max_plus(cell, production[:, :, block].transpose(1, 2))
            values[side][first:first + count] = found.reshape(count, nt)
            symbols[side][first:first + count] = index.reshape(count, nt) + offset

    as_child(1, terms, nt)
    chart: list[torch.Tensor | None] = [None, terms]
    pointers: list[torch.Tensor | None] = [None, None]
    for w in range(2, longest + 1):
        first, cells = _chart_row(batch, n, w), n - w + 1
        kernels.split_max(values["left"], values["right"], symbols["left"], symbols["right"], best, keys, batch, n, w,
                          s)
        cell = best[first:first + batch * cells].view(batch, cells, nt)
        chart.append(cell)
        pointers.append(keys[first:first + batch * cells].view(batch, cells, nt))
        if w < longest:
            as_child(w, cell, 0)
    return chart, pointers


# --- a tree CRF over span scores -----------------------------------------------------------------------------------
def _span_grammar(scores: torch.Tensor) -> Grammar:
    """The grammar of one nonterminal and one preterminal whose every rule has probability 1 (log 0): its trees are
    the binary trees of a sentence, each of score 0, so that the span scores, added to its cells as offsets, make
    log Z = log of the sum over binary trees of exp(the sum of their spans' scores)."""
    zeros = scores.new_zeros(())
    return Grammar(roots=zeros.expand(1, 1), terms=zeros.expand(*scores.shape[:2], 1), left=zeros.expand(1, 1, 2),
                   right=zeros.expand(1, 1, 2))


def _check_span_scores(scores) -> None:
    if not isinstance(scores, torch.Tensor) or scores.dim() != 3 or scores.shape[1] != scores.shape[2] or \
            not scores.is_floating_point():
        raise ValueError(f"span scores must be a floating-point tensor [B, N, N] (start, end inclusive), got "
                         f"{_shape(scores)}")


def tree_crf_log_z(scores: torch.Tensor, lengths) -> torch.Tensor:
    """The log-partition of a tree CRF over the binary trees of each sentence (the parser of URNNG's inference
    network, Kim et al. 2019; the students of `treenets distill`): p(tree) = exp(sum of scores[s, t] over its spans
    of two or more words, the whole sentence's included) / Z. scores [B, N, N] (start, end inclusive; the entries
    of spans of one word, past a sentence's end or below the diagonal are not read), lengths [B], each >= 2.
    Returns log Z [B], differentiable: its gradient for the scores is each span's marginal probability.

    It is the inside algorithm of a grammar of one symbol whose rules all have probability 1, the scores added to
    its cells (`_inside`'s label offsets: the same code, kernels included, as the grammars')."""
    _check_span_scores(scores)
    values = _check_lengths(lengths, scores.shape[0], scores.shape[1])
    longest = max(values)  # (the offsets are the chart's: [B, n, n] for the longest sentence)
    return _inside(_span_grammar(scores), values, label_offsets=scores[:, :longest, :longest, None])[0]


def tree_crf_marginals(scores: torch.Tensor, lengths) -> torch.Tensor:
    """[B, N, N] p(span (s, t) is in the tree) under the tree CRF of `scores` (`tree_crf_log_z`), zero where no
    span of two words or more lies; detached, works under torch.no_grad too."""
    _check_span_scores(scores)
    with torch.enable_grad():
        leaf = scores.detach().requires_grad_(True)
        log_z = tree_crf_log_z(leaf, lengths)
        (grad,) = torch.autograd.grad(log_z.sum(), [leaf])
    return grad


def tree_crf_score(scores: torch.Tensor, spans_of: list) -> torch.Tensor:
    """[B] the score of one tree per sentence: the sum of `scores[b, s, t]` over `spans_of[b]`, its spans (start,
    end inclusive) of two words or more. Differentiable (the tree CRF's log-likelihood is this less log Z)."""
    _check_span_scores(scores)
    rows = [(b, s, t) for b, spans in enumerate(spans_of) for s, t in spans]
    total = scores.new_zeros(scores.shape[0])
    if rows:
        index = torch.tensor(rows, device=scores.device)
        total = total.index_add(0, index[:, 0], scores[index[:, 0], index[:, 1], index[:, 2]])
    return total


# --- minimum Bayes risk -----------------------------------------------------------------------------------------
@torch.no_grad()
def mbr(marginals: Marginals, lengths) -> list[MBRTree]:
    """Each sentence's minimum-Bayes-risk tree (as TN-PCFG decodes): the unlabelled binary tree maximising the sum
    of its spans' marginals (a CKY over span scores; ties to the lowest split point), each span labelled by its
    most probable nonterminal and each word tagged by its most probable preterminal (ties to the lowest index)."""
    if not isinstance(marginals, Marginals):
        raise ValueError(f"marginals must be a Marginals, got {type(marginals).__name__}")
    spans = marginals.spans
    if spans.dim() != 3 or spans.shape[1] != spans.shape[2]:
        raise ValueError(f"marginals.spans must be [B, N, N], got {_shape(spans)}")
    batch, n_max, _ = spans.shape
    if marginals.labels.dim() != 4 or tuple(marginals.labels.shape[:3]) != (batch, n_max, n_max):
        raise ValueError(f"marginals.labels must be [B, N, N, NT] with [B, N, N] = {[batch, n_max, n_max]}, got "
                         f"{_shape(marginals.labels)}")
    if marginals.tags.dim() != 3 or tuple(marginals.tags.shape[:2]) != (batch, n_max):
        raise ValueError(f"marginals.tags must be [B, N, T] with [B, N] = {[batch, n_max]}, got "
                         f"{_shape(marginals.tags)}")
    values = _check_lengths(lengths, batch, n_max)
    longest = max(values)
    # best[w][b, s]: the largest sum over the binary trees of the words s..s+w-1 (width 1: no span, 0)
    best = [None, spans.new_zeros(batch, longest)]
    splits: list = [None, None]
    lefts = rights = None  # the splits' children (`_next_splits`)
    for w in range(2, longest + 1):
        cells = longest - w + 1
        lefts, rights = _next_splits(lefts, rights, best[w - 1][..., None], best[w - 1][..., None], cells)
        top, k = (lefts + rights)[..., 0].max(dim=-1)  # the first maximum: the lowest split point
        best.append(torch.diagonal(spans, offset=w - 1, dim1=1, dim2=2)[:, :cells] + top)
        splits.append(k.cpu().numpy())
    labels = marginals.labels.argmax(dim=-1).cpu().numpy()  # [B, N, N]
    tags = marginals.tags.argmax(dim=-1).cpu().numpy()  # [B, N]
    trees = []
    for b, n in enumerate(values):
        chosen = []
        stack = [(0, n - 1)]
        while stack:
            start, end = stack.pop()
            if start == end:
                continue
            chosen.append((start, end, int(labels[b, start, end])))
            split = start + int(splits[end - start + 1][b, start])  # the left child is start..split
            stack.append((split + 1, end))
            stack.append((start, split))
        chosen.reverse()
        trees.append(MBRTree(spans=chosen, tags=[int(v) for v in tags[b, :n]], score=float(best[n][b, 0])))
    return trees


__all__ = ["Grammar", "MBRTree", "Marginals", "ViterbiTree", "inside", "marginals", "mbr", "tree_crf_log_z",
           "tree_crf_marginals", "tree_crf_score", "viterbi"]
