"""Trees batched for the Tree-LSTMs: one node array, tree after tree, scheduled by height (the nodes of one height
are computed together), and how a batch runs its levels (`level_schedule`).

On a GPU the level loop is a few small kernels per level launched from Python, and every batch has other shapes
(how many levels, how many nodes and edges in each), so no CUDA graph or compiled loop could serve two batches.
There, under the `auto` backend, batches are built with padded levels (`TreeBatch.build(padded=True)`): as many
levels as the tallest tree's, each as wide as the widest level plus one, with as many edges as nodes, the node
arrays two rows longer than the nodes, all rounded up to the sizes of `padded_size`. Padding nodes write their
states to a row nothing reads, padding edges carry a row nothing writes (zeros) into padding nodes: no real
node's values or gradients change. A few shapes then cover all batches, and the level loop runs as CUDA graphs
replayed per shape (`GraphedLevels`): the forward, and in training the backward, which runs the loop again under
autograd for the gradients. `level_schedule` says which way a batch runs its levels.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from itertools import chain

import numpy as np
import torch
import torch.nn as nn

from treenets.core.errors import TreenetsError
from treenets.nn.graphs import capture_refusal
from treenets.trees.parents import ParentTree


@dataclass
class Level:
    """One height of a batch (padded: with padding nodes and edges after the real ones)."""

    nodes: torch.Tensor  # [n] the nodes of this height (indices into the batch's node array)
    child: torch.Tensor  # [e] child node of each edge into these nodes
    slot: torch.Tensor  # [e] which of `nodes` the edge goes into (its position in `nodes`)
    order: torch.Tensor  # [e] the child's position among its siblings (0-based, sentence order)


def padded_size(n: int) -> int:
    """The least of 1, 2, 3, 4, 6, 8, 12, 16, 24, ... (2^k and 3 * 2^k) that holds `n`: the sizes of padded
    levels, at most 1.5 times what they hold."""
    if n <= 1:
        return 1
    power = 1 << (n - 1).bit_length()
    return power * 3 // 4 if power >= 4 and power * 3 // 4 >= n else power


@dataclass
class TreeBatch:
    """Trees flattened into one node array (tree after tree) and scheduled by height."""

    num_nodes: int
    offsets: list[int]  # first node of each tree
    roots: torch.Tensor  # [trees] root node of each tree
    word_nodes: torch.Tensor  # [w] the nodes that carry a word (dependency: all; constituency: the leaves)
    levels: list[Level]
    max_children: int
    parent: torch.Tensor  # [num_nodes] parent of every node, -1 for roots
    # Rows of the node arrays the level loop fills: the nodes, then with padded levels the row padding nodes write,
    # the row padding edges read, and rows that round the count up.
    num_rows: int
    # Padded levels, stacked: their nodes, and their edges' child, slot and order, each [levels, width] (`levels`
    # are views of them); None: each level its own size.
    stacked: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None

    def schedule(self) -> tuple[list, list, list, list]:
        """The levels' nodes, children, slots and orders as lists (for the compiled kernels)."""
        return tuple([getattr(level, name) for level in self.levels] for name in ("nodes", "child", "slot", "order"))

    @classmethod
    def build(cls, trees: list[ParentTree], device=None, padded: bool | None = None) -> TreeBatch:
        """The batch of `trees` on `device`; `padded`: its levels padded to a few shapes (module docstring), None:
        where `level_schedule` says so."""
        if padded is None:
            padded = level_schedule(torch.device(device or "cpu")) != "exact"
        sizes = np.array([t.size for t in trees])
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        shift = np.repeat(offsets, sizes)

        def joined(field):  # a per-node field of every tree, tree after tree (tuples: one pass, no arrays each)
            return np.fromiter(chain.from_iterable(getattr(t, field) for t in trees), np.int64, int(sizes.sum()))

        local_parent, height, sibling = joined("parents"), joined("height"), joined("sibling")
        parent = np.where(local_parent >= 0, local_parent + shift, -1)
        # Nodes grouped by height (stable: tree order within a level); each node's position in its level.
        nodes = np.argsort(height, kind="stable")
        starts = np.searchsorted(height[nodes], np.arange(height.max() + 2))
        position = np.empty_like(nodes)
        position[nodes] = np.arange(len(nodes)) - starts[height[nodes]]
        # Edges grouped by the height of their parent.
        child = np.nonzero(parent >= 0)[0]
        child = child[np.argsort(height[parent[child]], kind="stable")]
        edge_starts = np.searchsorted(height[parent[child]], np.arange(height.max() + 2))

        def tensor(x):
            return torch.from_numpy(np.ascontiguousarray(x)).to(device)

        num_nodes, stacked = int(sizes.sum()), None
        if padded:
            num_rows = padded_size(num_nodes + 2)
            written, zeros = num_nodes, num_nodes + 1  # the rows padding nodes write and padding edges read
            # Every level has a padding node at least (the last: where the padding edges go), and as many edges as
            # nodes: no level has more edges than the batch has leaves (a level's children head disjoint subtrees,
            # each with a leaf), and the leaves (height 0) are the widest level.
            shape = padded_size(int(height.max()) + 1), padded_size(int(np.diff(starts).max()) + 1)
            level_nodes = np.full(shape, written)
            level_nodes[height, position] = np.arange(num_nodes)
            child_height = height[parent[child]]
            at = child_height, np.arange(len(child)) - edge_starts[child_height]
            child_nodes, slot, order = (np.full(shape, fill) for fill in (zeros, shape[1] - 1, 0))
            child_nodes[at], slot[at], order[at] = child, position[parent[child]], sibling[child]
            stacked = tuple(tensor(x) for x in (level_nodes, child_nodes, slot, order))
            levels = [Level(*parts) for parts in zip(*stacked)]
        else:
            num_rows, levels = num_nodes, []
            for h in range(height.max() + 1):
                edges = child[edge_starts[h] : edge_starts[h + 1]]
                levels.append(Level(tensor(nodes[starts[h] : starts[h + 1]]), tensor(edges),
                                    tensor(position[parent[edges]]), tensor(sibling[edges])))
        word_counts = np.array([len(t.words) for t in trees])
        words = np.arange(word_counts.sum()) + np.repeat(offsets - (np.cumsum(word_counts) - word_counts), word_counts)
        roots = offsets + np.array([t.root for t in trees])
        max_children = int(np.bincount(parent[parent >= 0]).max()) if (parent >= 0).any() else 0
        return cls(num_nodes, offsets.tolist(), tensor(roots), tensor(words), levels, max_children, tensor(parent),
                   num_rows, stacked)

    def node_inputs(self, embedded_words: torch.Tensor) -> torch.Tensor:
        """`[num_rows, dim]` inputs: the embedded words at their nodes, zeros at phrases (and padding rows)."""
        x = embedded_words.new_zeros(self.num_rows, embedded_words.size(-1))
        return x.index_copy(0, self.word_nodes, embedded_words)

    def word_inputs(self, word_ids: torch.Tensor, embedding: nn.Embedding) -> tuple[torch.Tensor, torch.Tensor]:
        """Inputs of the cells from the words of the batch (ids in node order), as `(inputs, rows)`: the vectors
        of the distinct words plus a zero row (for phrases and padding rows), `[R + 1, dim]`, and each node's row
        `[num_rows]`. A word repeated across the batch is then embedded and projected once (on SICK batches of 25
        pairs, 15 % of the words are distinct)."""
        distinct, inverse = torch.unique(word_ids, return_inverse=True)
        vectors = embedding(distinct)
        rows = torch.full((self.num_rows,), len(distinct), dtype=torch.long, device=word_ids.device)
        rows[self.word_nodes] = inverse
        return torch.cat([vectors, vectors.new_zeros(1, vectors.size(1))]), rows


LEVEL_SCHEDULES = ("exact", "padded", "captured")
_schedule: str | None = None  # set by `use_levels`; None: each device's default


def level_schedule(device: torch.device) -> str:
    """How tree batches on `device` run their levels: `exact` (each level its own size: the compiled kernels on
    the CPU, the PyTorch loop elsewhere), `padded` (`TreeBatch.build(padded=True)`, the PyTorch loop) or
    `captured` (padded, the loop replayed as CUDA graphs: `GraphedLevels`). `captured` where language-model
    windows are captured (`graphs.capture_refusal`: CUDA under the `auto` backend), else `exact`; inside a
    `use_levels` block what it says."""
    if _schedule is not None:
        return _schedule
    return "captured" if capture_refusal(device) is None else "exact"


@contextlib.contextmanager
def use_levels(schedule: str):
    """Tree batches run their levels as `schedule` (one of `LEVEL_SCHEDULES`) says inside a `with` block, on every
    device (benchmarks and tests compare the three)."""
    global _schedule
    if schedule not in LEVEL_SCHEDULES:
        raise TreenetsError(f"unknown level schedule {schedule!r} (expected one of: {', '.join(LEVEL_SCHEDULES)})")
    previous, _schedule = _schedule, schedule
    try:
        yield
    finally:
        _schedule = previous
