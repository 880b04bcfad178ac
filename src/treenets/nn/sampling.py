"""Drawing sentences with their trees from a probabilistic context-free grammar, top-down: the generative story of
the grammars of `treenets.nn.chart` (Kim's rules, or SimplePCFG's independent left and right productions)::

    A ~ roots                                     the root's nonterminal
    (B, C) ~ rules[A]                             each nonterminal's two children, any of the S = NT + T symbols, or
    B ~ left[A],  C ~ right[A]                    (SimplePCFG) the left and the right child independently
    w ~ emissions[j]                              each preterminal's word

so that a tree's probability is the product of the roots, rules (or left and right productions) and emissions its
draw went through: log p(words, tree) is the score `chart` gives the tree, and summed over the trees of one
sentence, p(sentence) = exp(chart.inside). A nonterminal's children each cover at least one word, so it covers two
or more, and a preterminal one: every tree drawn respects the chart's width restriction.

The grammar is in log space (natural log), one grammar (no batch), symbols as `chart` lays them out (nonterminals
first: preterminal j is symbol NT + j)::

    roots[A]            log p(root -> A)                       [NT]
    rules[A, B, C]      log p(A -> B C)                        [NT, S, S]      or, for SimplePCFG,
    left[A, B]          log p(B as A's left child)             [NT, S]
    right[A, C]         log p(C as A's right child)            [NT, S]         (log p(A -> B C) = left + right)
    emissions[j, w]     log p(word w | preterminal j)          [T, V]

Speed: the trees are drawn level by level, every nonterminal of one depth in every tree at once, each draw by
inverse transform sampling: u ~ U[0, 1) looked up in its row's cumulative probabilities (`_Rows`). The cumulative
sums are computed once per grammar (in float64, on the CPU) and laid end to end, row r shifted into [r, r + 1], so
that the draws of a whole level from any rows are one `torch.searchsorted` of r + u: a few tensor operations per
level of the trees, not per node.

Length: a PCFG may give very long sentences (an inconsistent one, infinite ones with positive probability). A tree
is abandoned as soon as it must exceed `max_length` words (its preterminals so far, plus two for each nonterminal
still to expand: a nonterminal covers at least two words) and drawn again; its sentence is then a draw from the
grammar's distribution given length <= max_length, p(sentence) / p(length <= max_length). After `max_draws` trees
in a row too long for one sentence, the grammar is taken to have no short sentences to give: an error naming the
limit.

Conventions (those of `chart.viterbi`'s `ViterbiTree`): spans are (start, end inclusive, nonterminal) in the reverse
of the pre-order (the whole sentence's span last), tags preterminal indices 0..T-1, words ids 0..V-1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from treenets.core.errors import TreenetsError


@dataclass
class SampledTree:
    """A sentence drawn from a grammar, with the tree it was drawn with."""

    words: list[int]  # word ids, 0..V-1
    spans: list[tuple[int, int, int]]  # (start, end inclusive, nonterminal), the reverse of the pre-order
    tags: list[int]  # each word's preterminal, 0..T-1
    log_prob: float  # log p(words, tree): the root's, every node's rule and every word's emission, summed
    redraws: int  # how many trees longer than max_length were drawn for this sentence and thrown away


class _Rows:
    """Categorical distributions, one per row of log-probabilities [R, X], to draw from by inverse transform.

    Each row's cumulative sum, divided by its last element (so that it ends at exactly 1: a row need not be
    normalised), shifted by the row's index r into [r, r + 1] and laid end to end: one ascending sequence [R * X].
    A draw from row r is the first position whose cumulative sum exceeds r + u, u ~ U[0, 1) (`searchsorted`, right):
    entry x with probability p[r, x] / sum p[r], and never an entry of probability zero (its cumulative sum equals
    the one before it)."""

    def __init__(self, log_probs: torch.Tensor, name: str):
        probs = log_probs.detach().to("cpu", torch.float64).exp()  # [R, X]
        cumulative = probs.cumsum(-1)
        totals = cumulative[:, -1]
        bad = ~(torch.isfinite(totals) & (totals > 0))
        if bad.any():
            row = int(bad.nonzero()[0])
            raise ValueError(f"{name}: row {row} has no distribution to draw from (its log-probabilities sum to "
                             f"{totals[row].log().item()}: all -inf, NaN or +inf)")
        rows, self.width = probs.shape
        self.sequence = (cumulative / totals[:, None] + torch.arange(rows, dtype=torch.float64)[:, None]).flatten()
        # the last entry of positive probability of each row: r + u rounded up to r + 1 (u close to 1, r large)
        # would find the next row's first
        self.last = self.width - 1 - (probs > 0).flip(-1).long().argmax(-1)

    def draw(self, rows: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """One draw from each of `rows` [k] (row indices, repeats allowed): the entries [k]."""
        u = torch.rand(rows.shape[0], generator=generator, dtype=torch.float64)
        found = torch.searchsorted(self.sequence, rows.to(torch.float64) + u, right=True) - rows * self.width
        return torch.minimum(found, self.last[rows])


def _check(roots, emissions, rules, left, right) -> tuple[int, int]:
    """NT and T, after checking the tables' shapes (ValueError naming the expected ones)."""

    def shape(x) -> str:
        return str(list(x.shape)) if isinstance(x, torch.Tensor) else type(x).__name__

    if not isinstance(roots, torch.Tensor) or roots.dim() != 1:
        raise ValueError(f"roots must be a tensor [NT], got {shape(roots)}")
    if not isinstance(emissions, torch.Tensor) or emissions.dim() != 2:
        raise ValueError(f"emissions must be a tensor [T, V], got {shape(emissions)}")
    nt, t = roots.shape[0], emissions.shape[0]
    s = nt + t
    factored = left is not None or right is not None
    if (rules is not None) == factored or (factored and (left is None or right is None)):
        raise ValueError(f"give either rules [NT, S, S] = {[nt, s, s]} or both left and right [NT, S] = {[nt, s]} "
                         f"(S = NT + T = {nt} + {t})")
    if rules is not None and (not isinstance(rules, torch.Tensor) or tuple(rules.shape) != (nt, s, s)):
        raise ValueError(f"rules must be [NT, S, S] = {[nt, s, s]} (S = NT + T = {nt} + {t}), got {shape(rules)}")
    for name, table in (("left", left), ("right", right)):
        if rules is None and (not isinstance(table, torch.Tensor) or tuple(table.shape) != (nt, s)):
            raise ValueError(f"{name} must be [NT, S] = {[nt, s]} (S = NT + T = {nt} + {t}), got {shape(table)}")
    return nt, t


@torch.no_grad()
def sample_trees(roots: torch.Tensor, emissions: torch.Tensor, generator: torch.Generator, count: int = 1,
                 rules: torch.Tensor | None = None, left: torch.Tensor | None = None,
                 right: torch.Tensor | None = None, max_length: int = 100, max_draws: int = 1000) -> list[SampledTree]:
    """`count` sentences drawn from one grammar, each with its tree and log p(words, tree).

    Args:
        roots: [NT] log p(root -> A).
        emissions: [T, V] log p(word | preterminal).
        generator: a CPU `torch.Generator`, the source of every draw: the same generator state and arguments give
            the same trees.
        rules: [NT, S, S] log p(A -> B C) (Kim's layout), or
        left, right: [NT, S] each (SimplePCFG's productions: the left child drawn from left[A], the right one from
            right[A]).
        max_length: the longest sentence (at least 2); a longer tree is drawn again.
        max_draws: how many trees in a row may be too long for one sentence before the grammar is given up on.

    Returns:
        one `SampledTree` per sentence, in order (the draws are made in rounds: all the sentences' trees, then
        again those of the sentences whose tree was too long, and so on).

    Raises:
        ValueError: on tables of the wrong shapes, a row with no probability, `count` < 1 or `max_length` < 2.
        TreenetsError: when `max_draws` trees in a row were all longer than `max_length` words.
    """
    nt, t = _check(roots, emissions, rules, left, right)
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    if max_length < 2:
        raise ValueError(f"max_length must be at least 2 (a tree's root is a nonterminal, over two or more words), "
                         f"got {max_length}")
    s = nt + t
    logs = {"roots": roots.detach().to("cpu", torch.float64), "emissions": emissions.detach().to("cpu", torch.float64)}
    if rules is not None:
        logs["rules"] = rules.detach().to("cpu", torch.float64).reshape(nt, s * s)  # child pair B * S + C
    else:
        logs["left"], logs["right"] = left.detach().to("cpu", torch.float64), right.detach().to("cpu", torch.float64)
    tables = {name: _Rows(table[None] if name == "roots" else table, name) for name, table in logs.items()}
    found: list[SampledTree | None] = [None] * count
    redraws = [0] * count
    waiting = list(range(count))  # the sentences without a tree yet
    while waiting:
        trees = _draw(tables, logs, nt, len(waiting), max_length, generator)
        still = []
        for slot, tree in zip(waiting, trees):
            if tree is None:
                redraws[slot] += 1
                still.append(slot)
            else:
                tree.redraws = redraws[slot]
                found[slot] = tree
        if still and redraws[still[0]] >= max_draws:  # (every sentence still waiting has failed as often)
            raise TreenetsError(f"max_length {max_length}: {max_draws} trees drawn in a row were all longer than "
                                f"{max_length} words (this grammar's sentences are longer: raise the limit)")
        waiting = still
    return found


def _draw(tables: dict[str, _Rows], logs: dict[str, torch.Tensor], nt: int, count: int, max_length: int,
          generator: torch.Generator) -> list[SampledTree | None]:
    """One round: `count` trees drawn level by level, None for each tree abandoned as longer than `max_length`.

    The nodes of one level are tensors: symbol, tree (which of the `count`), parent (its index in the level above);
    a level's nodes are its parents' children in pairs, left then right."""
    symbols = nt + logs["emissions"].shape[0]  # S
    tree = torch.arange(count)
    symbol = tables["roots"].draw(torch.zeros(count, dtype=torch.long), generator)
    log_prob = logs["roots"][symbol]  # [count]: log p(words, tree), summed as the nodes are drawn
    levels = [(symbol, tree, None)]
    words_at_least = torch.zeros(count, dtype=torch.long)  # the preterminals drawn so far
    alive = torch.ones(count, dtype=torch.bool)
    parents = (symbol < nt).nonzero().squeeze(1)  # the nonterminals of the level to expand
    while parents.numel():
        symbol_above, tree_above = levels[-1][0][parents], levels[-1][1][parents]
        if "rules" in tables:
            pair = tables["rules"].draw(symbol_above, generator)  # B * S + C
            log_prob.index_add_(0, tree_above, logs["rules"][symbol_above, pair])
            children = torch.stack([pair // symbols, pair % symbols], dim=1)
        else:
            left = tables["left"].draw(symbol_above, generator)
            right = tables["right"].draw(symbol_above, generator)
            log_prob.index_add_(0, tree_above, logs["left"][symbol_above, left] + logs["right"][symbol_above, right])
            children = torch.stack([left, right], dim=1)
        symbol, tree, parent = children.flatten(), tree_above.repeat_interleave(2), parents.repeat_interleave(2)
        levels.append((symbol, tree, parent))
        # the words the tree will have at least: its preterminals, and two for each nonterminal left to expand
        words_at_least += torch.bincount(tree[symbol >= nt], minlength=count)
        pending = torch.bincount(tree[symbol < nt], minlength=count)
        alive &= words_at_least + 2 * pending <= max_length
        parents = ((symbol < nt) & alive[tree]).nonzero().squeeze(1)
    return _assemble(levels, tables, logs, nt, alive, log_prob, generator)


def _assemble(levels, tables, logs, nt: int, alive: torch.Tensor, log_prob: torch.Tensor,
              generator: torch.Generator) -> list[SampledTree | None]:
    """The words, spans and tags of the trees drawn whole (`alive`): each node's width bottom-up (a preterminal 1,
    a nonterminal the sum of its children's), its start top-down (a left child's is its parent's, a right child's
    its parent's plus its left sibling's width), then each preterminal's word."""
    widths = [None] * len(levels)
    for depth in reversed(range(len(levels))):
        widths[depth] = (levels[depth][0] >= nt).long()
        if depth + 1 < len(levels):
            widths[depth].index_add_(0, levels[depth + 1][2], widths[depth + 1])
    starts = [torch.zeros_like(levels[0][0])]
    for depth in range(1, len(levels)):
        left_widths = widths[depth][0::2]
        offsets = torch.stack([torch.zeros_like(left_widths), left_widths], dim=1).flatten()
        starts.append(starts[depth - 1][levels[depth][2]] + offsets)
    symbol = torch.cat([level[0] for level in levels])
    tree = torch.cat([level[1] for level in levels])
    start, width = torch.cat(starts), torch.cat(widths)
    kept = alive[tree]
    symbol, tree, start, width = symbol[kept], tree[kept], start[kept], width[kept]

    preterminal = symbol >= nt
    tags = symbol[preterminal] - nt
    words = tables["emissions"].draw(tags, generator)
    log_prob.index_add_(0, tree[preterminal], logs["emissions"][tags, words])

    # each tree's words in order (by tree, then start), and its nonterminals in pre-order (by tree, then start,
    # then the widest first: an ancestor before its descendants, a left subtree before the right one)
    leaves = np.lexsort((start[preterminal].numpy(), tree[preterminal].numpy()))
    nodes = np.lexsort((-width[~preterminal].numpy(), start[~preterminal].numpy(), tree[~preterminal].numpy()))
    leaf_words, leaf_tags = words.numpy()[leaves].tolist(), tags.numpy()[leaves].tolist()
    node_spans = list(zip(start[~preterminal].numpy()[nodes].tolist(),
                          (start + width - 1)[~preterminal].numpy()[nodes].tolist(),
                          symbol[~preterminal].numpy()[nodes].tolist()))
    lengths = torch.bincount(tree[preterminal], minlength=alive.numel()).tolist()
    result, word_at, span_at = [], 0, 0
    for whole, n, score in zip(alive.tolist(), lengths, log_prob.tolist()):
        if not whole:
            result.append(None)
            continue
        spans = node_spans[span_at : span_at + n - 1]  # a binary tree over n words has n - 1 nonterminals
        spans.reverse()
        result.append(SampledTree(words=leaf_words[word_at : word_at + n], spans=spans,
                                  tags=leaf_tags[word_at : word_at + n], log_prob=score, redraws=0))
        word_at, span_at = word_at + n, span_at + n - 1
    return result


__all__ = ["SampledTree", "sample_trees"]
