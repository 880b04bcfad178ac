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
official weights load without permutation (`treenets.convert`).

Speed: the input projections of all steps are one matrix product before the loop; inside the loop only the
hidden projection runs. Training uses a hand-derived backward (`_FusedRecurrence`) that keeps no autograd
graph per step and computes the hidden-to-hidden weight gradient as one large matrix product over all steps,
instead of T small ones accumulated one by one.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn as nn

from treenets.nn.dropout import dropconnect, embedding_dropout, locked_dropout
from treenets.nn.native import kernels_for

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


def onlstm_step_backward(dh, dc, c_prev, c, master, probs, gates, d_master):
    """Gradient of `onlstm_step` w.r.t. its pre-activations and `c_prev`, given the gradients of its outputs.

    Args:
        dh, dc: gradients w.r.t. h and c of this step, [B, H].
        c_prev, c, master, probs, gates: what `onlstm_step` computed (or received) for this step.
        d_master: gradient w.r.t. `master` [B, 2, n_chunks], or None.

    Returns:
        (d_pre [B, 2*n_chunks + 4*H], d_c_prev [B, H])
    """
    batch, _, n_chunks, chunk = gates.shape
    out_gate, cand, in_gate, forget_gate = gates.unbind(1)
    master_in, master_forget = master[:, 0].unsqueeze(-1), master[:, 1].unsqueeze(-1)
    overlap = master_in * master_forget
    dh = dh.view(batch, n_chunks, chunk)
    tanh_c = torch.tanh(c.view(batch, n_chunks, chunk))
    d_out = dh * tanh_c  # h = o * tanh(c)
    dc = dc.view(batch, n_chunks, chunk) + dh * out_gate * (1.0 - tanh_c * tanh_c)
    forget_hat = torch.addcmul(master_forget - overlap, forget_gate, overlap)
    in_hat = torch.addcmul(master_in - overlap, in_gate, overlap)
    d_forget_hat = dc * c_prev.view_as(dc)  # eq. 13
    d_in_hat = dc * cand
    d_cand = dc * in_hat
    d_c_prev = dc * forget_hat
    # eqs. 11-12: f^ = f~ + (f - 1) w, i^ = i~ + (i - 1) w, w = f~ i~; master gates are shared by a chunk.
    d_overlap = (d_forget_hat * (forget_gate - 1.0) + d_in_hat * (in_gate - 1.0)).sum(-1)
    d_master_in = d_in_hat.sum(-1) + d_overlap * master_forget.squeeze(-1)
    d_master_forget = d_forget_hat.sum(-1) + d_overlap * master_in.squeeze(-1)
    # cumax backward. i~ = 1 - cumsum(p_i) and f~ = cumsum(p_f), so dp_k = (-/+) sum_{j >= k} d(master)_j;
    # then the softmax Jacobian: da = p * (dp - <p, dp>).
    d_cum = torch.stack([-d_master_in, d_master_forget], dim=1)
    if d_master is not None:
        d_cum = d_cum + d_master * d_cum.new_tensor([-1.0, 1.0]).view(1, 2, 1)
    d_probs = d_cum - d_cum.cumsum(-1) + d_cum.sum(-1, keepdim=True)  # suffix sums
    d_logits = probs * (d_probs - (probs * d_probs).sum(-1, keepdim=True))
    # sigmoid' = s (1 - s) for o, i, f; tanh' = 1 - t^2 for the candidate.
    slope = gates * (1.0 - gates)
    slope[:, 1] = 1.0 - cand * cand
    d_gates = torch.stack([d_out, d_cand, d_in_hat * overlap, d_forget_hat * overlap], dim=1) * slope
    d_pre = torch.cat([d_logits.view(batch, -1), d_gates.view(batch, -1)], dim=1)
    return d_pre, d_c_prev.view(batch, -1)


def _native(x: torch.Tensor):
    """The compiled CPU kernels when they apply: CPU float tensors, no autograd graph to record."""
    return kernels_for("onlstm", x)


class Recurrence(NamedTuple):
    hs: torch.Tensor  # [T, B, H]
    c_last: torch.Tensor  # [B, H]
    master: torch.Tensor  # [T, B, 2, n_chunks]
    cs: torch.Tensor | None  # [T + 1, B, H] cell states from c0 (kept for the backward)
    probs: torch.Tensor | None  # [T, B, 2, n_chunks]
    gates: torch.Tensor | None  # [T, B, 4, H]


def _run(x_proj, w_hh, h0, c0, n_chunks, keep) -> Recurrence:
    """The forward loop: `x_proj` [T, B, G] holds the input projection plus both biases of every step.

    `keep` also returns what the backward needs. Uses the compiled kernels when `_native` allows, else
    `onlstm_step` (which autograd can differentiate).
    """
    native = _native(x_proj)
    if native is None:
        w_t = w_hh.t()
        h, c = h0, c0
        hs, cs, masters, probs, gates = [], [c0], [], [], []
        for t in range(x_proj.size(0)):
            step = onlstm_step(torch.addmm(x_proj[t], h, w_t), c, n_chunks)
            h, c = step.h, step.c
            hs.append(h)
            cs.append(c)
            masters.append(step.master)
            probs.append(step.probs)
            gates.append(step.gates)
        stacked = (torch.stack(cs), torch.stack(probs), torch.stack(gates)) if keep else (None, None, None)
        return Recurrence(torch.stack(hs), c, torch.stack(masters), *stacked)
    hs, c_last, master, cs, probs, gates = native.forward(x_proj.contiguous(), w_hh, h0, c0, n_chunks, keep)
    return Recurrence(hs, c_last, master, cs, probs, gates)


class _FusedRecurrence(torch.autograd.Function):
    """The ON-LSTM recurrence over a whole sequence with a hand-derived backward (see `onlstm_step_backward`).

    Inputs: x_proj [T, B, G] (input projections + biases), w_hh [G, H], h0 [B, H], c0 [B, H].
    Outputs: hs [T, B, H], c_last [B, H], master [T, B, 2, n_chunks].
    """

    @staticmethod
    def forward(ctx, x_proj, w_hh, h0, c0, n_chunks):
        run = _run(x_proj, w_hh, h0.contiguous(), c0.contiguous(), n_chunks, keep=True)
        ctx.save_for_backward(w_hh, h0, run.hs, run.cs, run.master, run.probs, run.gates)
        ctx.set_materialize_grads(False)
        return run.hs, run.c_last, run.master

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, d_hs, d_c_last, d_master):
        w_hh, h0, hs, cs, master, probs, gates = ctx.saved_tensors
        native = _native(hs)
        if native is not None:
            d_pre, d_w, dh, dc = native.backward(d_hs, d_c_last, d_master, w_hh, h0, hs, cs, master, probs, gates,
                                                 master.size(-1))
            return d_pre, d_w, dh, dc, None
        steps, batch, hidden = hs.shape
        d_pre = hs.new_empty(steps, batch, w_hh.size(0))
        dh = hs.new_zeros(batch, hidden)
        dc = hs.new_zeros(batch, hidden) if d_c_last is None else d_c_last
        for t in reversed(range(steps)):
            if d_hs is not None:
                dh = dh + d_hs[t]
            d_m = None if d_master is None else d_master[t]
            d_pre[t], dc = onlstm_step_backward(dh, dc, cs[t], cs[t + 1], master[t], probs[t], gates[t], d_m)
            dh = d_pre[t] @ w_hh
        # One [G, T*B] x [T*B, H] product instead of T products accumulated into the weight gradient.
        h_prev = torch.cat([h0.unsqueeze(0), hs[:-1]]).view(-1, hidden)
        d_w = d_pre.view(-1, d_pre.size(-1)).t() @ h_prev
        return d_pre, d_w, dh, dc, None


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
        fused: use the hand-derived backward; False runs `onlstm_step` under plain autograd.
    """

    def __init__(self, input_size, hidden_size, chunk_size, weight_drop=0.0, weight_drop_inverted=False,
                 fused=True):
        super().__init__()
        if hidden_size % chunk_size:
            raise ValueError(f"hidden_size={hidden_size} is not divisible by chunk_size={chunk_size}")
        self.hidden_size, self.chunk_size = hidden_size, chunk_size
        self.n_chunks = hidden_size // chunk_size
        width = 2 * self.n_chunks + 4 * hidden_size
        self.ih = nn.Linear(input_size, width)
        self.hh = nn.Linear(hidden_size, width)
        self.weight_drop, self.weight_drop_inverted, self.fused = weight_drop, weight_drop_inverted, fused

    def initial_state(self, batch_size: int) -> State:
        zeros = self.hh.weight.new_zeros(batch_size, self.hidden_size)
        return zeros, zeros

    def forward(self, x: torch.Tensor, state: State | None = None) -> LayerOutput:
        h0, c0 = state if state is not None else self.initial_state(x.size(1))
        w_hh = dropconnect(self.hh.weight, self.weight_drop, self.training, self.weight_drop_inverted)
        x_proj = self.ih(x) + self.hh.bias  # every step's input projection at once, both biases folded in
        if self.fused and torch.is_grad_enabled():
            hs, c_last, master = _FusedRecurrence.apply(x_proj, w_hh, h0, c0, self.n_chunks)
        else:  # evaluation, or plain autograd through every step
            hs, c_last, master, *_ = _run(x_proj, w_hh, h0, c0, self.n_chunks, keep=False)
        return LayerOutput(hs, (hs[-1], c_last), master)


class StackOutput(NamedTuple):
    outputs: list[torch.Tensor]  # each layer's output [T, B, H_l], before dropout
    state: list[State]
    distance_forget: torch.Tensor  # [L, T, B]: 1 - mean(master forget gate), the syntactic distance
    distance_input: torch.Tensor  # [L, T, B]: mean(master input gate)


class ONLSTMStack(nn.Module):
    """Layers of sizes `sizes[1:]` on input size `sizes[0]`, locked dropout `dropout_hidden` between them."""

    def __init__(self, sizes, chunk_size, dropout_hidden=0.0, weight_drop=0.0, weight_drop_inverted=False,
                 fused=True):
        super().__init__()
        self.layers = nn.ModuleList(
            ONLSTMLayer(n_in, n_out, chunk_size, weight_drop, weight_drop_inverted, fused)
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


class ONLSTMLanguageModel(nn.Module):
    """Embedding -> ON-LSTM stack -> linear decoder, with the AWD-LSTM dropouts of the official model.

    Layer sizes are `[emb] + [hidden] * (num_layers - 1) + [emb]`, so the decoder can share the embedding
    matrix (`tie_weights`). `forward` returns the decoder's input; `decoder(output)` gives the logits.
    """

    def __init__(self, vocab_size, emb_size=400, hidden_size=1150, num_layers=3, chunk_size=10,
                 dropout=0.45, dropout_hidden=0.3, dropout_input=0.5, dropout_embedding=0.1,
                 weight_drop=0.45, weight_drop_inverted=False, tie_weights=True, fused=True):
        super().__init__()
        sizes = [emb_size] + [hidden_size] * (num_layers - 1) + [emb_size]
        self.embedding = nn.Embedding(vocab_size, emb_size)
        self.rnn = ONLSTMStack(sizes, chunk_size, dropout_hidden, weight_drop, weight_drop_inverted, fused)
        self.decoder = nn.Linear(emb_size, vocab_size)
        nn.init.uniform_(self.embedding.weight, -0.1, 0.1)
        nn.init.zeros_(self.decoder.bias)
        if tie_weights:
            self.decoder.weight = self.embedding.weight
        else:
            nn.init.uniform_(self.decoder.weight, -0.1, 0.1)
        self.dropout, self.dropout_input, self.dropout_embedding = dropout, dropout_input, dropout_embedding

    @classmethod
    def from_config(cls, config, vocab_size: int) -> ONLSTMLanguageModel:
        """Build from a `treenets.config.ONLSTMConfig`."""
        fields = config.model_dump(exclude={"name"})
        return cls(vocab_size, **fields)

    @property
    def num_layers(self) -> int:
        return self.rnn.num_layers

    @property
    def default_parse_layer(self) -> int:
        """The layer whose distances the paper parses with: the second (of three); the first of one."""
        return min(1, self.num_layers - 1)

    def initial_state(self, batch_size: int) -> list[State]:
        return self.rnn.initial_state(batch_size)

    def forward(self, tokens: torch.Tensor, state: list[State] | None = None) -> LMOutput:
        """Run `tokens` [T, B] from `state` (zeros if None)."""
        emb = embedding_dropout(self.embedding.weight, tokens, self.dropout_embedding, self.training)
        emb = locked_dropout(emb, self.dropout_input, self.training)
        stack = self.rnn(emb, state)
        last = stack.outputs[-1]
        output = locked_dropout(last, self.dropout, self.training)
        return LMOutput(output, stack.state, last, stack.distance_forget, stack.distance_input)
