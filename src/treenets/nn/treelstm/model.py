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

Batches of trees are `TreeBatch`es (`batch.py`: the trees' nodes scheduled by height, padded to a few shapes on a
GPU), whose level loop replays as CUDA graphs there (`level_graphs.py`).
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn as nn

from treenets.core.errors import TreenetsError
from treenets.nn.backend import kernels_for
from treenets.nn.treelstm.batch import Level, TreeBatch
from treenets.nn.treelstm.level_graphs import level_states, records_graph
from treenets.trees.parents import ParentTree

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
            if records_graph(iou_x, f_x, *weights):
                return _ChildSumLevels.apply(kernels, iou_x, f_x, *weights, batch, parts)
            return tuple(_ChildSumLevels.run(kernels, iou_x, f_x, *weights, batch, parts, keep=False)[:2])
        return level_states(self, batch, iou_x, f_x)

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
            if records_graph(iou_x, f_x, *weights):
                return _NaryLevels.apply(kernels, iou_x, f_x, *weights, self.n_ary, batch, parts)
            return tuple(_NaryLevels.run(kernels, iou_x, f_x, *weights, self.n_ary, batch, parts, keep=False)[:2])
        return level_states(self, batch, iou_x, f_x)

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
