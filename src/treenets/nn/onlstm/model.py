"""ON-LSTM: Ordered Neurons (Shen, Tan, Sordoni & Courville, ICLR 2019), and its word-level language model.

Notation (paper section 4; shapes for a batch of B sequences, a layer of H = n_chunks * chunk_size neurons):

    f~_t = cumax(W_f~ x_t + U_f~ h_{t-1} + b_f~)          master forget gate  (eq. 9), [B, n_chunks]
    i~_t = 1 - cumax(W_i~ x_t + U_i~ h_{t-1} + b_i~)      master input gate   (eq. 10)
    w_t  = f~_t * i~_t                                   overlap
    f^_t = f_t * w_t + (f~_t - w_t)                      (eq. 11)
    i^_t = i_t * w_t + (i~_t - w_t)                      (eq. 12)
    c_t  = f^_t * c_{t-1} + i^_t * c^_t                  (eq. 13)
    h_t  = o_t * tanh(c_t)

where f, i, o are the usual sigmoid gates, c^ = tanh(...) the candidate, and cumax(x) = cumsum(softmax(x)).
The master gates have one value per chunk of `chunk_size` neurons and are broadcast over the chunk.
The syntactic distance of step t (used to build trees) is `1 - mean(f~_t)`; `mean(i~_t)` is also reported.

The pre-activations of one step are a single row of `2 * n_chunks + 4 * H` values laid out as the official
code lays them out: `[i~ logits | f~ logits | o | c^ | i | f]` (each of the last four is H wide), so that
official weights load without permutation (`convert.py`).

Speed: the input projections of all steps are one matrix product before the loop; inside the loop only the
hidden projection runs. Where the compiled kernels apply (`treenets.nn.backend`: CPU, float32/float64), the
loop runs in C++ (onlstm_cpu.cpp in this folder) and training uses its hand-derived backward (`_FusedRecurrence`),
which keeps no autograd graph per step and computes the hidden-to-hidden weight gradient as one large matrix
product over all steps, instead of T small ones accumulated one by one; the per-step hidden products run on the
weight packed once per sequence (csrc/packed_gemm.h: AVX-512, AVX2, NEON or SSE2 code from one micro-kernel,
through csrc/recurrent_product.h), 1.5 to 3.6 times as fast as torch's fp32 product at the paper config's batches
of 10 and 20 (benchmarks/packed_gemm.py, AVX-512 and AVX2 builds: README Speed). Elsewhere `onlstm_step`, the
specification, runs step by step under autograd; the `compile` backend (for GPUs) fuses each step's
element-wise work into one kernel with `torch.compile`.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import torch
import torch.nn as nn
from pydantic import model_validator

from treenets.core.schema import PositiveInt, Probability, Section
from treenets.nn.backend import as_step_states, kernels_for, step_function
from treenets.nn.dropout import dropconnect, locked_dropout
from treenets.nn.language_model import RecurrentStackLanguageModel
from treenets.nn.precision import full_precision, low_precision_copy

State = tuple[torch.Tensor, torch.Tensor]  # (h, c) of one layer, each [B, H]


def cumax(x: torch.Tensor, dim: int = -1) -> torch.Tensor:
    """cumax(x) = cumsum(softmax(x)) (eq. 6): non-decreasing along `dim`, in [0, 1], last value 1."""
    return torch.cumsum(torch.softmax(x, dim=dim), dim=dim)


class StepOutput(NamedTuple):
    h: torch.Tensor  # [B, H]
    c: torch.Tensor  # [B, H]
    master: torch.Tensor  # [B, 2, n_chunks]: master input gate i~, master forget gate f~
    probs: torch.Tensor  # [B, 2, n_chunks]: the softmax inside each cumax (kept for the backward)
    gates: torch.Tensor  # [B, 4, n_chunks, chunk_size]: o, c^, i, f after their nonlinearity


def onlstm_step(pre: torch.Tensor, c_prev: torch.Tensor, n_chunks: int) -> StepOutput:
    """One ON-LSTM step from its pre-activations `pre` [B, 2*n_chunks + 4*H] and the previous cell [B, H]."""
    batch = pre.size(0)
    probs = torch.softmax(pre[:, : 2 * n_chunks].view(batch, 2, n_chunks), dim=-1)
    cum = probs.cumsum(-1)
    master_in = 1.0 - cum[:, 0]  # eq. 10
    master_forget = cum[:, 1]  # eq. 9
    gates = torch.sigmoid(pre[:, 2 * n_chunks :]).view(batch, 4, n_chunks, -1)
    cand = torch.tanh(pre[:, 2 * n_chunks :].view(batch, 4, n_chunks, -1)[:, 1])
    gates = torch.stack([gates[:, 0], cand, gates[:, 2], gates[:, 3]], dim=1)
    out_gate, _, in_gate, forget_gate = gates.unbind(1)
    overlap = (master_forget * master_in).unsqueeze(-1)
    forget_hat = torch.addcmul(master_forget.unsqueeze(-1) - overlap, forget_gate, overlap)  # eq. 11
    in_hat = torch.addcmul(master_in.unsqueeze(-1) - overlap, in_gate, overlap)  # eq. 12
    c = torch.addcmul(forget_hat * c_prev.view_as(forget_hat), in_hat, cand)  # eq. 13
    h = out_gate * torch.tanh(c)
    master = torch.stack([master_in, master_forget], dim=1)
    return StepOutput(h.view(batch, -1), c.view(batch, -1), master, probs, gates)


def recurrence(x_proj, w_hh, h0, c0, n_chunks) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The ON-LSTM recurrence over a sequence: (hs [T, B, H], c_last [B, H], master [T, B, 2, n_chunks]).

    `x_proj` [T, B, G] holds the input projection plus both biases of every step; `w_hh` [G, H]. In the
    compiled kernels where they apply (with their hand-derived backward when a graph is recorded), else
    `recurrent_step` step by step under autograd (fused by `torch.compile` where `backend.fuses_steps`).
    """
    w_low = low_precision_copy(w_hh)  # mixed precision: the recurrent products take w_hh in bfloat16
    kernels = kernels_for("onlstm", x_proj, w_hh, h0, c0)
    if kernels is not None:
        if torch.is_grad_enabled():
            return _FusedRecurrence.apply(kernels, x_proj, w_hh, h0, c0, n_chunks, w_low)
        with full_precision():
            hs, c_last, master, *_ = kernels.forward(x_proj.contiguous(), w_hh.contiguous(), h0.contiguous(),
                                                     c0.contiguous(), n_chunks, False, w_low)
        return hs, c_last, master
    step = step_function(recurrent_step, x_proj.device)
    w_t = (w_hh if w_low is None else w_low).t()
    h, c = as_step_states([h0, c0], [x_proj, w_hh])
    hs, masters = [], []
    for t in range(x_proj.size(0)):
        h, c, master = step(x_proj[t], h, c, w_t, n_chunks)
        hs.append(h)
        masters.append(master)
    return torch.stack(hs), c, torch.stack(masters)


def recurrent_step(x_proj_t, h, c, w_t, n_chunks) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One step of `recurrence` from the previous (h, c): (h, c, master). The unit the `compile` backend fuses
    (the hidden product, then all the element-wise work of `onlstm_step` in one kernel). With `w_t` in
    bfloat16 (mixed precision) the product and the sum are apart, so that the bfloat16 product is added to the
    float32 `x_proj_t` and the gates are computed in float32."""
    pre = torch.addmm(x_proj_t, h, w_t) if w_t.dtype == x_proj_t.dtype else x_proj_t + torch.mm(h, w_t)
    step = onlstm_step(pre, c, n_chunks)
    return step.h, step.c, step.master


class _FusedRecurrence(torch.autograd.Function):
    """The ON-LSTM recurrence over a whole sequence in the compiled kernels, with their hand-derived backward
    (the gradient of `onlstm_step`, step by step in reverse; the weight gradient in one product).

    Inputs: the kernels module, x_proj [T, B, G] (input projections + biases), w_hh [G, H], h0 [B, H],
    c0 [B, H], n_chunks, w_low (w_hh in bfloat16 for bfloat16 products, else None). Outputs: hs [T, B, H],
    c_last [B, H], master [T, B, 2, n_chunks].
    """

    @staticmethod
    def forward(ctx, kernels, x_proj, w_hh, h0, c0, n_chunks, w_low):
        h0, c0, w_hh = h0.contiguous(), c0.contiguous(), w_hh.contiguous()
        with full_precision():
            hs, c_last, master, cs, probs, gates = kernels.forward(x_proj.contiguous(), w_hh, h0, c0, n_chunks,
                                                                   True, w_low)
        ctx.kernels = kernels
        ctx.save_for_backward(w_hh, h0, hs, cs, master, probs, gates, w_low)
        ctx.set_materialize_grads(False)
        return hs, c_last, master

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, d_hs, d_c_last, d_master):
        w_hh, h0, hs, cs, master, probs, gates, w_low = ctx.saved_tensors
        with full_precision():
            d_pre, d_w, dh, dc = ctx.kernels.backward(d_hs, d_c_last, d_master, w_hh, h0, hs, cs, master, probs,
                                                      gates, master.size(-1), w_low)
        return None, d_pre, d_w, dh, dc, None, None


class LayerOutput(NamedTuple):
    output: torch.Tensor  # [T, B, H]
    state: State
    master: torch.Tensor  # [T, B, 2, n_chunks]: master input gate, master forget gate


class ONLSTMLayer(nn.Module):
    """One ON-LSTM layer run over a time-major sequence.

    Args:
        input_size: size of x_t.
        hidden_size: H, a multiple of `chunk_size`.
        chunk_size: neurons per master-gate chunk.
        weight_drop: DropConnect probability on the hidden-to-hidden weights.
        weight_drop_inverted: rescale DropConnect in training instead of evaluation (see `dropconnect`).
    """

    def __init__(self, input_size, hidden_size, chunk_size, weight_drop=0.0, weight_drop_inverted=False):
        super().__init__()
        if hidden_size % chunk_size:
            raise ValueError(f"hidden_size={hidden_size} is not divisible by chunk_size={chunk_size}")
        self.hidden_size, self.chunk_size = hidden_size, chunk_size
        self.n_chunks = hidden_size // chunk_size
        width = 2 * self.n_chunks + 4 * hidden_size
        self.ih = nn.Linear(input_size, width)
        self.hh = nn.Linear(hidden_size, width)
        self.weight_drop, self.weight_drop_inverted = weight_drop, weight_drop_inverted

    def initial_state(self, batch_size: int) -> State:
        zeros = self.hh.weight.new_zeros(batch_size, self.hidden_size)
        return zeros, zeros

    def forward(self, x: torch.Tensor, state: State | None = None) -> LayerOutput:
        h0, c0 = state if state is not None else self.initial_state(x.size(1))
        w_hh = dropconnect(self.hh.weight, self.weight_drop, self.training, self.weight_drop_inverted)
        x_proj = self.ih(x) + self.hh.bias  # every step's input projection at once, both biases folded in
        hs, c_last, master = recurrence(x_proj, w_hh, h0, c0, self.n_chunks)
        return LayerOutput(hs, (hs[-1], c_last), master)


class StackOutput(NamedTuple):
    outputs: list[torch.Tensor]  # each layer's output [T, B, H_l], before dropout
    state: list[State]
    distance_forget: torch.Tensor  # [L, T, B]: 1 - mean(master forget gate), the syntactic distance
    distance_input: torch.Tensor  # [L, T, B]: mean(master input gate)


class ONLSTMStack(nn.Module):
    """Layers of sizes `sizes[1:]` on input size `sizes[0]`, locked dropout `dropout_hidden` between them."""

    def __init__(self, sizes, chunk_size, dropout_hidden=0.0, weight_drop=0.0, weight_drop_inverted=False):
        super().__init__()
        self.layers = nn.ModuleList(
            ONLSTMLayer(n_in, n_out, chunk_size, weight_drop, weight_drop_inverted)
            for n_in, n_out in zip(sizes[:-1], sizes[1:])
        )
        self.dropout_hidden = dropout_hidden

    @property
    def num_layers(self) -> int:
        return len(self.layers)

    def initial_state(self, batch_size: int) -> list[State]:
        return [layer.initial_state(batch_size) for layer in self.layers]

    def forward(self, x: torch.Tensor, state: list[State] | None = None) -> StackOutput:
        state = state if state is not None else [None] * len(self.layers)
        outputs, new_state, masters = [], [], []
        for index, layer in enumerate(self.layers):
            result = layer(x, state[index])
            outputs.append(result.output)
            new_state.append(result.state)
            masters.append(result.master)
            x = result.output
            if index < len(self.layers) - 1:
                x = locked_dropout(x, self.dropout_hidden, self.training)
        master = torch.stack([m.mean(-1) for m in masters])  # [L, T, B, 2]
        return StackOutput(outputs, new_state, 1.0 - master[..., 1], master[..., 0])


class LMOutput(NamedTuple):
    output: torch.Tensor  # [T, B, E]: last layer after output dropout, the decoder's input
    state: list[State]
    last_layer: torch.Tensor  # [T, B, E]: last layer before dropout (for AR and TAR)
    distances: torch.Tensor  # [L, T, B]: 1 - mean(master forget gate), the syntactic distance per layer
    distance_input: torch.Tensor  # [L, T, B]: mean(master input gate)

    @property
    def ar_input(self) -> torch.Tensor:
        """What activation regularisation penalises: the last layer before dropout (the official ON-LSTM stack
        returns its last layer undropped and applies the output dropout after)."""
        return self.last_layer


class ONLSTMConfig(Section):
    """ON-LSTM language model; the names of the official `main.py` options are given in brackets."""

    name: Literal["onlstm"] = "onlstm"
    emb_size: PositiveInt = 400  # [emsize] also the size of the last layer
    hidden_size: PositiveInt = 1150  # [nhid]
    num_layers: PositiveInt = 3  # [nlayers]
    chunk_size: PositiveInt = 10  # [chunk_size] neurons per master-gate chunk
    dropout: Probability = 0.45  # [dropout] locked dropout on the last layer's output
    dropout_hidden: Probability = 0.3  # [dropouth] locked dropout between layers
    dropout_input: Probability = 0.5  # [dropouti] locked dropout on the embeddings
    dropout_embedding: Probability = 0.1  # [dropoute] drops whole words from the embedding matrix
    weight_drop: Probability = 0.45  # [wdrop] DropConnect on the hidden-to-hidden weights
    weight_drop_inverted: bool = False  # False: official (no rescale in training, x(1-p) in eval)
    tie_weights: bool = True

    @classmethod
    def upgrade_saved(cls, section: dict) -> dict:
        """`fused` (an earlier treenets chose the fused cell here) is gone: the backend decides."""
        section.pop("fused", None)
        return section

    @model_validator(mode="after")
    def _sizes_divisible_by_chunk(self):
        sizes = {"emb_size": self.emb_size}
        if self.num_layers > 1:
            sizes["hidden_size"] = self.hidden_size
        for key, size in sizes.items():
            if size % self.chunk_size:
                raise ValueError(
                    f"{key}={size} is not divisible by chunk_size={self.chunk_size} "
                    "(every ON-LSTM layer is split into chunks of chunk_size neurons)"
                )
        return self

    def build(self, vocab_size: int) -> ONLSTMLanguageModel:
        """The language model of this config, freshly initialised."""
        return ONLSTMLanguageModel(vocab_size, **self.model_dump(exclude={"name"}))


class ONLSTMLanguageModel(RecurrentStackLanguageModel):
    """Embedding -> ON-LSTM stack -> linear decoder, with the AWD-LSTM dropouts of the official model
    (`RecurrentStackLanguageModel`).

    Layer sizes are `[emb] + [hidden] * (num_layers - 1) + [emb]`, so the decoder can share the embedding
    matrix (`tie_weights`). `forward` returns the decoder's input [T, B, E]; `decoder(output)` gives the logits
    [T, B, V]. Arguments as in `ONLSTMConfig`.
    """

    def __init__(self, vocab_size, emb_size=400, hidden_size=1150, num_layers=3, chunk_size=10,
                 dropout=0.45, dropout_hidden=0.3, dropout_input=0.5, dropout_embedding=0.1,
                 weight_drop=0.45, weight_drop_inverted=False, tie_weights=True):
        super().__init__(vocab_size, emb_size, dropout, dropout_input, dropout_embedding)
        sizes = self.stack_sizes(emb_size, hidden_size, num_layers)
        self.rnn = ONLSTMStack(sizes, chunk_size, dropout_hidden, weight_drop, weight_drop_inverted)
        self._add_decoder(tie_weights, init_range=0.1)

    @property
    def num_distance_rows(self) -> int:
        """Rows of `forward(...).distances`: one per layer."""
        return self.num_layers

    @property
    def default_distance_row(self) -> int:
        """The row (1-based) the paper parses with: the second layer (of three); the first of one."""
        return min(2, self.num_layers)

    def forward(self, tokens: torch.Tensor, state: list[State] | None = None) -> LMOutput:
        """Run `tokens` [T, B] from `state` (zeros if None)."""
        stack = self.rnn(self.embed(tokens), state)
        last = stack.outputs[-1]
        return LMOutput(self.drop_output(last), stack.state, last, stack.distance_forget, stack.distance_input)
