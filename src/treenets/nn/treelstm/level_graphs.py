"""A Tree-LSTM cell's level loop over padded batches replayed as CUDA graphs (`GraphedLevels`), where
`treenets.nn.treelstm.batch.level_schedule` says `captured`."""

from __future__ import annotations

import contextlib
import weakref

import torch

from treenets.nn import precision
from treenets.nn.graphs import GraphedWindows, cuda_capture
from treenets.nn.treelstm.batch import Level, TreeBatch, level_schedule


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
        if records_graph(iou_x, f_x, *self.weights):
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


def level_states(cell, batch: TreeBatch, iou_x: torch.Tensor, f_x: torch.Tensor):
    """(h, c) of `batch`'s nodes from the PyTorch level loop, for padded batches replayed as CUDA graphs where
    `level_schedule` says `captured`."""
    if batch.stacked is not None and level_schedule(iou_x.device) == "captured":
        graphed = graphed_levels(cell) or capture_levels(cell)
        h, c = graphed(batch, iou_x, f_x)
    else:
        h, c = cell.run_levels(iou_x, f_x, batch.levels)
    return h[: batch.num_nodes], c[: batch.num_nodes]


def records_graph(*tensors: torch.Tensor) -> bool:
    """Whether autograd records a graph through any of `tensors`."""
    return torch.is_grad_enabled() and any(t.requires_grad for t in tensors)
