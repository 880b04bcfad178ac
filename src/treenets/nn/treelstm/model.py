"""Tree-LSTMs (Tai, Socher & Manning, ACL 2015), run over a batch of trees level by level.

Child-Sum Tree-LSTM (section 3.1), for trees whose children are unordered (dependency trees)::

    h~_j  = sum_{k in C(j)} h_k
    i_j   = s(W_i x_j + U_i h~_j + b_i),   o_j = s(W_o x_j + U_o h~_j + b_o),   u_j = tanh(W_u x_j + U_u h~_j + b_u)
    f_jk  = s(W_f x_j + U_f h_k + b_f)                                   one forget gate per child
    c_j   = i_j * u_j + sum_k f_jk * c_k,   h_j = o_j * tanh(c_j)

N-ary Tree-LSTM (section 3.2), for trees with at most N ordered children (binary constituency trees)::

    i_j   = s(W_i x_j + sum_l U_i^l h_jl + b_i)        (o_j, u_j alike)
    f_jk  = s(W_f x_j + sum_l U_f^kl h_jl + b_f)       a forget gate per child, each reading all children
    c_j   = i_j * u_j + sum_l f_jl * c_jl,   h_j = o_j * tanh(c_j)

x_j is the word of node j; nodes without a word (phrases) have x_j = 0. Missing children are zero states.

Speed: the official implementations visit one node at a time. Here a batch of trees is one node array and
every step of the loop computes all the nodes of one height (all whose children are done, across all trees)
with batched matrix products and index sums; the input projections of all nodes are computed at once. Where
the compiled kernels apply (`treenets.nn.backend`: CPU, float32/float64) the level loop runs in C++
(treelstm_cpu.cpp in this folder): per level the matrix products, and the gathers, activations and sums fused into
loops over the level's edges and nodes; in training a hand-derived backward forms the weight gradients once
for all nodes, in inference nothing is kept for it. With more than one thread the kernels cut the batch into
runs of whole trees (`parallel_parts`), one per thread, each running the level loop on its own: a level's
products are too small to split across threads. The PyTorch loops below are the specification and run
everywhere else.

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
import weakref
from dataclasses import dataclass
from itertools import chain

import numpy as np
import torch
import torch.nn as nn

from treenets.core.errors import TreenetsError
from treenets.nn import precision
from treenets.nn.backend import kernels_for
from treenets.nn.graphs import GraphedWindows, capture_refusal, cuda_capture
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


# Nodes per thread below which a batch is not cut into parts (see `parallel_parts`). Measured on SICK batches with
# 2 threads, the Child-Sum forward on two parts against one: 1.03x as fast at 42 nodes, 1.10x at 62, 1.25x at 84,
# 1.35x from 185 on.
MIN_PART_NODES = 32


def parallel_parts(kernels, batch: TreeBatch) -> int:
    """Into how many runs of whole trees the compiled `kernels` cut `batch`, to compute them on as many threads
    at once: one per intra-op thread, with at least `MIN_PART_NODES` nodes per thread on average. One (the whole
    batch, its products on all threads) when the kernels were built without OpenMP, or when one tree holds
    more than three quarters of the nodes: cuts fall between trees, so the parts could not be near equal."""
    parts = min(torch.get_num_threads(), batch.num_nodes // MIN_PART_NODES)
    if parts < 2 or not kernels.parts_on_threads():
        return 1
    largest = max(np.diff(batch.offsets + [batch.num_nodes]))
    return 1 if 4 * largest > 3 * batch.num_nodes else parts


class _ChildSumLevels(torch.autograd.Function):
    """`ChildSumTreeLSTM`'s level loop in C++, with its hand-derived backward (weight gradients at once);
    the batch cut into `parts` runs of trees that threads compute at the same time."""

    @staticmethod
    def run(kernels, iou_x, f_x, w_iouh, b_iouh, w_fh, b_fh, batch, parts: int, keep: bool):
        """h, c (and with `keep` what the backward needs: act, f, h_sum) of every node."""
        nodes, child, slot, _ = batch.schedule()
        return kernels.childsum_forward(iou_x.contiguous(), f_x.contiguous(), w_iouh, b_iouh, w_fh, b_fh, nodes,
                                        child, slot, batch.offsets, parts, keep)

    @staticmethod
    def forward(ctx, kernels, iou_x, f_x, w_iouh, b_iouh, w_fh, b_fh, batch, parts):
        h, c, act, f_all, h_sum = _ChildSumLevels.run(kernels, iou_x, f_x, w_iouh, b_iouh, w_fh, b_fh, batch,
                                                      parts, True)
        ctx.kernels, ctx.batch, ctx.parts = kernels, batch, parts
        ctx.save_for_backward(w_iouh, w_fh, h, c, act, f_all, h_sum)
        ctx.set_materialize_grads(False)
        return h, c

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_h, grad_c):
        batch = ctx.batch
        nodes, child, slot, _ = batch.schedule()
        grads = ctx.kernels.childsum_backward(grad_h, grad_c, *ctx.saved_tensors, batch.parent, nodes, child, slot,
                                              batch.offsets, ctx.parts)
        return (None, *grads, None, None)


class _NaryLevels(torch.autograd.Function):
    """`NaryTreeLSTM`'s level loop in C++, with its hand-derived backward (weight gradients at once); the batch
    cut into `parts` runs of trees that threads compute at the same time."""

    @staticmethod
    def run(kernels, x_iou, x_f, u_w, u_b, n_ary, batch, parts: int, keep: bool):
        """h, c (and with `keep` what the backward needs: the children's h in place, the gates) of every node."""
        nodes, child, slot, order = batch.schedule()
        return kernels.nary_forward(x_iou.contiguous(), x_f.contiguous(), u_w, u_b, n_ary, nodes, child, slot,
                                    order, batch.offsets, parts, keep)

    @staticmethod
    def forward(ctx, kernels, x_iou, x_f, u_w, u_b, n_ary, batch, parts):
        h, c, kids, gates = _NaryLevels.run(kernels, x_iou, x_f, u_w, u_b, n_ary, batch, parts, True)
        ctx.kernels, ctx.batch, ctx.n_ary, ctx.parts = kernels, batch, n_ary, parts
        ctx.save_for_backward(u_w, c, kids, gates)
        ctx.set_materialize_grads(False)
        return h, c

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_h, grad_c):
        batch = ctx.batch
        nodes, child, slot, order = batch.schedule()
        u_w, c, kids, gates = ctx.saved_tensors
        grads = ctx.kernels.nary_backward(grad_h, grad_c, u_w, ctx.n_ary, c, kids, gates, nodes, child, slot, order,
                                          batch.offsets, ctx.parts)
        return (None, *grads, None, None, None)


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


class GraphedLevels:
    """A Tree-LSTM cell's level loop over padded batches as CUDA graphs, one per padded shape, captured at a
    shape's second batch (`treenets.nn.graphs.GraphedWindows`, whose graphs share a memory pool): the forward, and
    in training the backward, which runs the loop again under autograd and returns the gradients of the input
    projections and the recurrent weights. Nothing passes between the two graphs but their inputs, so the
    backward needs no tensor of the forward's graph, whose memory the next batch reuses."""

    def __init__(self, cell, capture=cuda_capture):
        self.cell = weakref.ref(cell)  # (the cell's registry entry must not keep it alive)
        self.weights = cell.recurrent_weights()
        self.forward = GraphedWindows(self._forward, "Tree-LSTM level loops", self.weights, capture)
        self.backward = GraphedWindows(self._backward, "Tree-LSTM level loops' gradients", self.weights, capture)

    def _forward(self, iou_x, f_x, *stacked):
        return self.cell().run_levels(iou_x, f_x, [Level(*parts) for parts in zip(*stacked)])

    def _backward(self, grad_h, grad_c, iou_x, f_x, *stacked):
        with torch.enable_grad():
            inputs = (iou_x.detach().requires_grad_(), f_x.detach().requires_grad_())
            states = self._forward(*inputs, *stacked)
            return torch.autograd.grad(states, (*inputs, *self.weights), (grad_h, grad_c))

    def states(self, iou_x, f_x, stacked) -> tuple[torch.Tensor, torch.Tensor]:
        """The forward's replay: (h, c) of every row, valid until the next replay."""
        # (a graph captured in inference mode holds inference tensors, which no other mode may write)
        return self.forward(iou_x, f_x, *stacked, extra=(torch.is_inference_mode_enabled(),))

    def __call__(self, batch: TreeBatch, iou_x: torch.Tensor, f_x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(h, c) of every row of `batch`'s node arrays, `[num_rows, mem_dim]` each (tensors of their own)."""
        if _records_graph(iou_x, f_x, *self.weights):
            return _ReplayedLevels.apply(self, iou_x, f_x, *batch.stacked, *self.weights)
        return tuple(s.clone() for s in self.states(iou_x, f_x, batch.stacked))


class _ReplayedLevels(torch.autograd.Function):
    """`GraphedLevels` under autograd: the states from the forward graph, the gradients from the backward one."""

    @staticmethod
    def forward(ctx, graphed, iou_x, f_x, nodes, child, slot, order, *weights):
        ctx.graphed, ctx.products = graphed, precision.product_dtype(iou_x.device.type)
        ctx.save_for_backward(iou_x, f_x, nodes, child, slot, order)
        return tuple(s.clone() for s in graphed.states(iou_x, f_x, (nodes, child, slot, order)))

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_h, grad_c):
        # The backward runs on autograd's thread, outside the forward's autocast block: the loop runs again in it.
        products = ctx.products
        with torch.autocast(grad_h.device.type, products) if products else contextlib.nullcontext():
            grads = ctx.graphed.backward(grad_h, grad_c, *ctx.saved_tensors)
        grad_iou_x, grad_f_x, *grad_weights = (g.clone() for g in grads)  # the replay rewrites its outputs
        return (None, grad_iou_x, grad_f_x, None, None, None, None, *grad_weights)


_graphed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # cell -> its GraphedLevels


def capture_levels(cell, capture=cuda_capture) -> GraphedLevels:
    """Run `cell`'s level loop over padded batches as CUDA graphs captured by `capture` (tests pass a stand-in)
    wherever `level_schedule` says `captured`, from now on (else the cell's first such batch makes them)."""
    _graphed[cell] = GraphedLevels(cell, capture)
    return _graphed[cell]


def graphed_levels(cell) -> GraphedLevels | None:
    """The CUDA graphs of `cell`'s level loop, None before its first captured batch."""
    return _graphed.get(cell)


def _level_states(cell, batch: TreeBatch, iou_x: torch.Tensor, f_x: torch.Tensor):
    """(h, c) of `batch`'s nodes from the PyTorch level loop, for padded batches replayed as CUDA graphs where
    `level_schedule` says `captured`."""
    if batch.stacked is not None and level_schedule(iou_x.device) == "captured":
        graphed = graphed_levels(cell) or capture_levels(cell)
        h, c = graphed(batch, iou_x, f_x)
    else:
        h, c = cell.run_levels(iou_x, f_x, batch.levels)
    return h[: batch.num_nodes], c[: batch.num_nodes]


def _records_graph(*tensors: torch.Tensor) -> bool:
    """Whether autograd records a graph through any of `tensors`."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)


class TreeReader(nn.Module):
    """What the classifiers read trees through (`treenets.nn.encoders`): the batch of their trees."""

    @staticmethod
    def batch(trees: list[ParentTree], device=None) -> TreeBatch:
        """The trees flattened into one node array and scheduled by height (`TreeBatch.build`)."""
        return TreeBatch.build(trees, device)


class ChildSumTreeLSTM(TreeReader):
    """Child-Sum Tree-LSTM; parameter names follow the official PyTorch port (ioux, iouh, fx, fh)."""

    def __init__(self, in_dim: int, mem_dim: int):
        super().__init__()
        self.ioux = nn.Linear(in_dim, 3 * mem_dim)  # W_i, W_o, W_u (rows in that order)
        self.iouh = nn.Linear(mem_dim, 3 * mem_dim)  # U_i, U_o, U_u
        self.fx = nn.Linear(in_dim, mem_dim)  # W_f
        self.fh = nn.Linear(mem_dim, mem_dim)  # U_f
        self.mem_dim = mem_dim

    def forward(self, batch: TreeBatch, inputs: torch.Tensor, rows: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """inputs [num_rows, in_dim] (`TreeBatch.node_inputs`; or, with `rows` [num_rows], distinct vectors
        [R, in_dim] and each row's: see `TreeBatch.word_inputs`) -> (h, c) of every node, each [num_nodes, mem_dim].
        `num_rows` is `num_nodes` unless the levels are padded."""
        iou_x, f_x = _node_rows(rows, self.ioux(inputs), self.fx(inputs))  # all input projections at once
        weights = self.recurrent_weights()
        # (the kernels take levels of their own sizes)
        kernels = None if batch.stacked is not None else kernels_for("treelstm", iou_x, *weights)
        if kernels is not None:
            parts = parallel_parts(kernels, batch)
            if _records_graph(iou_x, f_x, *weights):
                return _ChildSumLevels.apply(kernels, iou_x, f_x, *weights, batch, parts)
            return tuple(_ChildSumLevels.run(kernels, iou_x, f_x, *weights, batch, parts, keep=False)[:2])
        return _level_states(self, batch, iou_x, f_x)

    def recurrent_weights(self) -> tuple[torch.Tensor, ...]:
        """The weights the level loop reads besides the input projections."""
        return self.iouh.weight, self.iouh.bias, self.fh.weight, self.fh.bias

    def run_levels(self, iou_x: torch.Tensor, f_x: torch.Tensor, levels: list[Level]
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        """The PyTorch level loop: (h, c) of every row of the node arrays from their input projections."""
        h = self.fh.weight.new_zeros(iou_x.size(0), self.mem_dim)
        c = self.fh.weight.new_zeros(iou_x.size(0), self.mem_dim)
        # Rows gathered by `index_select`, whose backward adds them with `index_add`: that of advanced indexing
        # (`index_put_` accumulating, on CUDA by sorting) could not be captured in CUDA graphs (pytorch/pytorch#105439).
        for level in levels:
            n = level.nodes.numel()
            child_h, child_c = h.index_select(0, level.child), c.index_select(0, level.child)
            h_sum = child_h.new_zeros(n, self.mem_dim).index_add(0, level.slot, child_h)
            f = torch.sigmoid(f_x.index_select(0, level.nodes[level.slot]) + self.fh(child_h))  # a gate per child
            fc = child_c.new_zeros(n, self.mem_dim).index_add(0, level.slot, f * child_c)
            i, o, u = (iou_x.index_select(0, level.nodes) + self.iouh(h_sum)).chunk(3, dim=1)
            c_level = torch.sigmoid(i) * torch.tanh(u) + fc
            h_level = torch.sigmoid(o) * torch.tanh(c_level)
            h, c = _write(h, c, level.nodes, h_level, c_level)
        return h, c


def _node_rows(rows, *projections):
    """The projections of every node, from those of the distinct inputs when `rows` is given."""
    return projections if rows is None else tuple(p.index_select(0, rows) for p in projections)


def _write(h, c, nodes, h_level, c_level):
    """The level's states into the node arrays: in place when no graph is recorded, else as new tensors
    (autograd needs the earlier versions)."""
    if torch.is_grad_enabled():
        return h.index_copy(0, nodes, h_level), c.index_copy(0, nodes, c_level)
    return h.index_copy_(0, nodes, h_level), c.index_copy_(0, nodes, c_level)


class NaryTreeLSTM(TreeReader):
    """N-ary Tree-LSTM over trees with at most `n_ary` ordered children per node (binary: `n_ary=2`)."""

    def __init__(self, in_dim: int, mem_dim: int, n_ary: int = 2):
        super().__init__()
        self.iou_x = nn.Linear(in_dim, 3 * mem_dim)  # W_i, W_o, W_u
        self.f_x = nn.Linear(in_dim, mem_dim, bias=False)  # W_f (b_f is in `children`)
        # [h_1 ... h_N] -> U_i, U_o, U_u (summed over children) and U_f^{kl} for each of the N forget gates
        self.children_proj = nn.Linear(n_ary * mem_dim, (3 + n_ary) * mem_dim)
        self.mem_dim, self.n_ary = mem_dim, n_ary

    def forward(self, batch: TreeBatch, inputs: torch.Tensor, rows: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """inputs [num_nodes, in_dim] (or distinct vectors and `rows`, as `ChildSumTreeLSTM`) -> (h, c) of every
        node, each [num_nodes, mem_dim]."""
        if batch.max_children > self.n_ary:
            raise TreenetsError(f"a node has {batch.max_children} children; this {self.n_ary}-ary Tree-LSTM takes "
                                f"at most {self.n_ary} (binarize the trees)")
        iou_x, f_x = _node_rows(rows, self.iou_x(inputs), self.f_x(inputs))
        weights = self.recurrent_weights()
        kernels = None if batch.stacked is not None else kernels_for("treelstm", iou_x, *weights)
        if kernels is not None:
            parts = parallel_parts(kernels, batch)
            if _records_graph(iou_x, f_x, *weights):
                return _NaryLevels.apply(kernels, iou_x, f_x, *weights, self.n_ary, batch, parts)
            return tuple(_NaryLevels.run(kernels, iou_x, f_x, *weights, self.n_ary, batch, parts, keep=False)[:2])
        return _level_states(self, batch, iou_x, f_x)

    def recurrent_weights(self) -> tuple[torch.Tensor, ...]:
        """The weights the level loop reads besides the input projections."""
        return self.children_proj.weight, self.children_proj.bias

    def run_levels(self, iou_x: torch.Tensor, f_x: torch.Tensor, levels: list[Level]
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        """The PyTorch level loop: (h, c) of every row of the node arrays from their input projections."""
        mem, n_ary = self.mem_dim, self.n_ary
        h = self.children_proj.weight.new_zeros(iou_x.size(0), mem)
        c = self.children_proj.weight.new_zeros(iou_x.size(0), mem)
        for level in levels:  # (rows gathered as in `ChildSumTreeLSTM.run_levels`)
            n = level.nodes.numel()
            # Children in their positions; absent ones stay zero.
            position = level.slot, level.order
            kids_h = h.new_zeros(n, n_ary, mem).index_put(position, h.index_select(0, level.child))
            kids_c = c.new_zeros(n, n_ary, mem).index_put(position, c.index_select(0, level.child))
            gates = self.children_proj(kids_h.view(n, n_ary * mem))
            i, o, u = (iou_x.index_select(0, level.nodes) + gates[:, : 3 * mem]).chunk(3, dim=1)
            f = torch.sigmoid(f_x.index_select(0, level.nodes).unsqueeze(1) + gates[:, 3 * mem :].view(n, n_ary, mem))
            c_level = torch.sigmoid(i) * torch.tanh(u) + (f * kids_c).sum(1)
            h_level = torch.sigmoid(o) * torch.tanh(c_level)
            h, c = _write(h, c, level.nodes, h_level, c_level)
        return h, c


class SequenceLSTM(nn.Module):
    """The sequential baselines of the paper: an LSTM (or BiLSTM) over the words; a sentence's vector is the
    last state (BiLSTM: the forward last and backward first states, concatenated)."""

    def __init__(self, in_dim: int, mem_dim: int, bidirectional: bool = False, layers: int = 1):
        super().__init__()
        self.lstm = nn.LSTM(in_dim, mem_dim, num_layers=layers, bidirectional=bidirectional)
        self.mem_dim, self.bidirectional = mem_dim, bidirectional

    @property
    def out_dim(self) -> int:
        return self.mem_dim * (2 if self.bidirectional else 1)

    def forward(self, embedded: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """embedded [T, B, in] (right-padded), lengths [B] -> (h, c) sentence vectors [B, out_dim]."""
        packed = nn.utils.rnn.pack_padded_sequence(embedded, lengths.cpu(), enforce_sorted=False)
        _, (h, c) = self.lstm(packed)
        if self.bidirectional:
            return torch.cat([h[-2], h[-1]], dim=-1), torch.cat([c[-2], c[-1]], dim=-1)
        return h[-1], c[-1]
