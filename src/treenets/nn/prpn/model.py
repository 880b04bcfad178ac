"""PRPN: Parsing-Reading-Predict Networks (Shen, Lin, Huang & Courville, ICLR 2018), a language model whose
parsing network predicts syntactic distances that gate attention over past states.

Notation (time t, batch B, `nslots` = S memory slots, slot k holding the state of step t-1-k):

Parsing network (all steps at once)::

    d_t, d'_t = sigmoid(Conv1(ReLU(BN(Conv_{L+1}(e_{t-L}, ..., e_t)))))     gate (the distance) and next-step gate
    a_{t,k}  = prod_{j <= k} f(d_t - d_{t-j})                             memory gate over the slots
    a'_{t,k} = prod_{j <= k} f(d'_t - d_{t-j})                            memory gate of the prediction
    f(x)     = sigmoid(10 x / resolution + 5)            (soft)
             = (hardtanh(2 x / resolution + 1) + 1) / 2   (hard)

Reading network (per layer, per step): attention over its own S past (h, c), masked by a_t::

    q_t = W_q [x_t ; h_{t-1}],   p_{t,k} = a_{t,k} exp(h_{t-1-k} . q_t / sqrt(H)) / sum_j (...)
    (h~, c~) = sum_k p_{t,k} (h_{t-1-k}, c_{t-1-k})
    [i f g o] = LN(W x_t) + LN(U h~);  c_t = s(f) c~ + s(i) tanh(g);  h_t = s(o) tanh(LN(c_t))

Predict network: attention of the last layer's h_t over its past S states masked by a'_t, then
`tanh(BN(W [h_t ; m_t]))` (after optional residual blocks) feeds the decoder.

The semantics follow the official code (yikangshen/PRPN): its LayerNorm (unbiased standard deviation, eps
added to it), its masked softmax (`exp(x - max) * mask / (sum + 1e-8)`), dropout placement, and the initial
parsing state (zero embeddings, gate history +inf, i.e. nothing to attend to before the first word).

Speed: the parsing network (its convolution as one matrix product over windows), the input projections of every
reading layer and the whole predict network run over all steps at once; only the reading layers' recurrence runs
step by step, one layer after another. Where the compiled kernels apply (`treenets.nn.backend`: CPU,
float32/float64) that recurrence runs in C++ (`prpn_cpu.cpp`: per step the two matrix products, on weights packed
once per segment (nn/csrc/recurrent_product.h, nn/csrc/packed_gemm.h), and fused loops for the rest) with a hand-derived
backward that forms the weight gradients once per segment. The recurrent dropout mask is one per forward for the
whole batch, so the hidden product `U (h~ * rmask)` and its gradients run over the kept features alone (half of U's
columns at the paper's rdropout 0.5): fewer FLOPs than the official code, the same values up to rounding. The
predict network's attention, PRPN's layer norm and the dropout masks are compiled too. `reading_step`, `attend` and
`LayerNorm.forward` hold the PyTorch code (the specification, run everywhere else; the `compile` backend, for GPUs,
fuses each `reading_step` with `torch.compile`); tests check that they agree. Both draw the same dropout masks
(`_dropout_mask`), so a run's numbers do not depend on the backend.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from pydantic import Field

from treenets.core.schema import PositiveFloat, PositiveInt, Probability, Section
from treenets.nn.backend import as_step_states, kernels_for, step_function
from treenets.nn.language_model import LanguageModelBase
from treenets.nn.precision import full_precision, low_precision_copy


class LayerNorm(nn.Module):
    """PRPN's layer normalisation: `gamma * (x - mean) / (std + eps) + beta`, std unbiased."""

    def __init__(self, features: int, eps: float = 1e-6):
        super().__init__()
        self.gamma = nn.Parameter(torch.ones(features))
        self.beta = nn.Parameter(torch.zeros(features))
        self.eps = eps

    def forward(self, x):
        x = _full(x, self.gamma)  # in a bf16 block x may come from a bfloat16 product: normalised in float32
        kernels = kernels_for("prpn", x, self.gamma)
        if kernels is not None:
            return _FusedLayerNorm.apply(kernels, x, self.gamma, self.beta, self.eps)
        std, mean = torch.std_mean(x, -1, keepdim=True)
        return torch.addcdiv(self.beta, self.gamma * (x - mean), std + self.eps)


def _full(x: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """`x` in `like`'s dtype when a bf16 block made it bfloat16 (the output of a product): the element-wise work
    that follows runs in the weights' precision (treenets.nn.precision)."""
    return x.to(like.dtype) if x.dtype == torch.bfloat16 and like.dtype != torch.bfloat16 else x


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The official masked softmax over the last dimension: `exp(x - max(x)) * mask / (sum + 1e-8)`."""
    e = torch.exp(logits - logits.max(dim=-1, keepdim=True).values) * mask
    return e / (e.sum(dim=-1, keepdim=True) + 1e-8)


# splitmix64 (Steele, Lea & Flood, 2014) as signed 64-bit integers: the odd constant and the two multipliers.
_GOLDEN, _MIX1, _MIX2 = (c - 2**64 for c in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB))


def _shift_right(z: torch.Tensor, k: int) -> torch.Tensor:
    """Logical right shift of int64 values taken as unsigned (`>>` on int64 copies the sign bit)."""
    return (z >> k) & ((1 << (64 - k)) - 1)


def splitmix_uniform_bits(seed: int, count: int, device=None) -> torch.Tensor:
    """`count` 24-bit uniform integers [count] from a counter-based generator: value j is bits 40..63 (j even)
    or 16..39 (j odd) of splitmix64(seed + (j // 2 + 1) * golden). Integer products wrap around as in C++;
    the compiled `dropout_mask` draws the same numbers."""
    counter = torch.arange(1, (count + 1) // 2 + 1, dtype=torch.int64, device=device)
    z = seed + counter * _GOLDEN
    z = (z ^ _shift_right(z, 30)) * _MIX1
    z = (z ^ _shift_right(z, 27)) * _MIX2
    z = z ^ _shift_right(z, 31)
    pairs = torch.stack([_shift_right(z, 40), _shift_right(z, 16) & 0xFFFFFF], dim=1)
    return pairs.view(-1)[:count]


def _dropout_mask(p: float, training: bool, like: torch.Tensor):
    """A dropout mask (kept units 1 / (1 - p)) of like's shape, device and dtype; None when there is no
    dropout. A seed is drawn from torch's generator (so masks follow `torch.manual_seed` and a checkpoint's
    RNG state), then a unit is kept where its 24-bit uniform (`splitmix_uniform_bits`) is at least
    ceil(p 2^24): in the compiled kernels (several times faster than torch.rand) or in PyTorch, the same mask.
    On a GPU the seed is drawn there, a tensor from the device's generator: a window replayed as a CUDA graph
    (`treenets.nn.graphs`) then draws new masks at every replay, where a number from the CPU's generator would be
    fixed at the capture."""
    if not training or not p:
        return None
    if like.device.type == "cpu":
        seed = int(torch.randint(0, 2**62, ()))
    else:
        seed = torch.randint(0, 2**62, (), device=like.device)
    like = like if like.dtype != torch.bfloat16 else like.float()  # 1 / (1 - p) not rounded to bfloat16
    kernels = kernels_for("prpn", like)
    if kernels is not None:
        return kernels.dropout_mask(list(like.shape), p, seed, like)
    keep = splitmix_uniform_bits(seed, like.numel(), like.device) >= math.ceil(p * 16777216.0)
    return (keep.to(like.dtype) * (1.0 / torch.tensor(1.0 - p, dtype=like.dtype))).view(like.shape)


def _dropout(x, p, training):
    """Dropout with a mask from `_dropout_mask`."""
    mask = _dropout_mask(p, training, x)
    return x if mask is None else x * mask


class _FusedReading(torch.autograd.Function):
    """The reading layer's recurrence over a segment in the compiled kernels, with their hand-derived
    backward (`ReadingLayer.forward` is the specification). Returns the states hs [S + T, B, H] and cells
    cs [S + T, B, H] by absolute time: the first S are the carried memory, oldest first."""

    @staticmethod
    def forward(ctx, kernels, low_weights, *args):
        """low_weights: (w_query_h, w_hh) in bfloat16 for bfloat16 products (mixed precision), or (None, None)."""
        with full_precision():
            saved = kernels.forward(*args, True, *low_weights)  # hs, cs and the intermediates of every step
        gates_x, query_x, memory_gate, mem_h, mem_c, w_query_h, w_hh, b_hh, hh_gamma, hh_beta, c_gamma, c_beta, \
            rmask, h_masks, q_masks, _, _ = args
        hs, cs = saved.pop("hs"), saved.pop("cs")
        # hs and cs are outputs: kept through save_for_backward (an attribute would make a reference cycle).
        ctx.kernels, ctx.masks, ctx.intermediates, ctx.low_weights = kernels, (h_masks, q_masks), saved, low_weights
        ctx.save_for_backward(memory_gate, w_query_h, w_hh, hh_gamma, c_gamma, c_beta, rmask, hs, cs)
        return hs, cs

    @staticmethod
    def backward(ctx, d_hs, d_cs):
        memory_gate, w_query_h, w_hh, hh_gamma, c_gamma, c_beta, rmask, hs, cs = ctx.saved_tensors
        with full_precision():
            grads = ctx.kernels.backward(d_hs, d_cs, memory_gate, w_query_h, w_hh, hh_gamma, c_gamma, c_beta, rmask,
                                         *ctx.masks, dict(ctx.intermediates, hs=hs, cs=cs), *ctx.low_weights)
        # None for the kernels, the low weights, and for rmask, the masks and the two eps
        return (None, None, *grads, None, None, None, None, None)


class _FusedLayerNorm(torch.autograd.Function):
    """`LayerNorm` in the compiled kernels, forward and backward."""

    @staticmethod
    def forward(ctx, kernels, x, gamma, beta, eps):
        y, xhat, stats = kernels.layer_norm_forward(x, gamma, beta, eps)
        ctx.kernels = kernels
        ctx.save_for_backward(xhat, stats, gamma)
        return y

    @staticmethod
    def backward(ctx, dy):
        dx, d_gamma, d_beta = ctx.kernels.layer_norm_backward(dy, *ctx.saved_tensors)
        return None, dx, d_gamma, d_beta, None


class _FusedAttention(torch.autograd.Function):
    """`attend` in the compiled kernels, forward and backward."""

    @staticmethod
    def forward(ctx, kernels, history, query, memory_gate):
        read, *saved = kernels.attend_forward(history, query, memory_gate)
        ctx.kernels = kernels
        ctx.save_for_backward(history, query, memory_gate, *saved)
        return read

    @staticmethod
    def backward(ctx, d_read):
        return None, *ctx.kernels.attend_backward(d_read, *ctx.saved_tensors)


def attend(history: torch.Tensor, query: torch.Tensor, memory_gate: torch.Tensor) -> torch.Tensor:
    """Attention of every step over the S states before it, masked by the memory gates.

    Args:
        history: [S + T, B, H], oldest first: the S states before the segment, then one per step.
        query: [T, B, H].
        memory_gate: [T, B, S], slot k for the state k + 1 steps back.

    Returns:
        [T, B, H]: sum_k p_{t,k} h_{t-1-k}, p the official masked softmax of <h_{t-1-k}, q_t> / sqrt(H).
    """
    query = _full(query, history)  # (bfloat16 when a bf16 block made it: the attention runs in float32)
    kernels = kernels_for("prpn", history, query, memory_gate)
    if kernels is not None:
        args = history.contiguous(), query.contiguous(), memory_gate.contiguous()
        return _FusedAttention.apply(kernels, *args) if torch.is_grad_enabled() else kernels.attend_forward(*args)[0]
    steps, slots = query.size(0), memory_gate.size(-1)
    past = [history[slots - 1 - k : slots - 1 - k + steps] for k in range(slots)]  # past[k][t] = h_{t-1-k}
    scale = 1.0 / math.sqrt(query.size(-1))
    logits = torch.stack([(p * query).sum(-1) for p in past], dim=-1) * scale  # [T, B, S]
    weights = masked_softmax(logits, memory_gate)
    return sum(weights[..., k : k + 1] * p for k, p in enumerate(past))


def _apply(x, mask):
    return x if mask is None else x * mask


def memory_gates(query: torch.Tensor, gates: torch.Tensor, previous: torch.Tensor, resolution: float,
                 hard: bool) -> torch.Tensor:
    """Memory gates `a_{t,k} = prod_{j <= k} f(q_t - d_{t-j})` for k = 0..S-1.

    Args:
        query: q [B, T] (the gate d itself, or the next-step gate d').
        gates: d [B, T].
        previous: the S gates before the first step [B, S], oldest first (+inf where there was none).
        resolution, hard: the temperature and the form of f (see the module docstring).

    Returns:
        [T, B, S]
    """
    history = torch.cat([previous, gates], dim=1)  # [B, S + T]
    # earlier[b, t, k] = d_{t-k}: the window of S gates ending at t, most recent first.
    earlier = history.unfold(1, previous.size(1), 1)[:, 1:].flip(-1)
    x = query.unsqueeze(-1) - earlier
    f = (F.hardtanh(x / resolution * 2 + 1) + 1) / 2 if hard else torch.sigmoid(x / resolution * 10 + 5)
    return cumulative_product(f, dim=2).transpose(0, 1)


def cumulative_product(x: torch.Tensor, dim: int) -> torch.Tensor:
    """`torch.cumprod(x, dim)` as a chain of products, the same values: its gradient is the chain rule's, where
    torch.cumprod's backward first asks whether any input is zero (the hard gates often are), a wait for the GPU
    that a window captured as a CUDA graph cannot hold (`treenets.nn.graphs`). For the few slots of a memory."""
    products = [x.select(dim, 0)]
    for k in range(1, x.size(dim)):
        products.append(products[-1] * x.select(dim, k))
    return torch.stack(products, dim)


class ParserState(NamedTuple):
    embeddings: torch.Tensor  # [nlookback, B, E]: the last embeddings, the convolution's left context
    gates: torch.Tensor  # [B, S]: the last S gates (+inf before the first word)


class ParsingNetwork(nn.Module):
    """Gates (syntactic distances) from a window of `nlookback + 1` embeddings, and the memory gates."""

    def __init__(self, emb_size, hidden_size, nslots, nlookback, resolution, dropout, hard):
        super().__init__()
        self.conv = nn.Conv1d(emb_size, hidden_size, nlookback + 1)
        self.norm = nn.BatchNorm1d(hidden_size)
        self.out = nn.Conv1d(hidden_size, 2, 1, groups=2)  # one half of the channels each: gate, next gate
        self.nslots, self.nlookback, self.resolution, self.dropout, self.hard = (
            nslots, nlookback, resolution, dropout, hard)

    def initial_state(self, batch: int) -> ParserState:
        weight = self.conv.weight
        return ParserState(weight.new_zeros(self.nlookback, batch, self.conv.in_channels),
                           weight.new_full((batch, self.nslots), math.inf))

    def forward(self, emb: torch.Tensor, state: ParserState):
        """emb [T, B, E] -> memory gates [T, B, S], next-step memory gates [T, B, S], gates [B, T], state."""
        window = torch.cat([state.embeddings, emb])  # [L + T, B, E]
        steps, batch = emb.shape[:2]
        x = _dropout(window, self.dropout, self.training)
        # The convolution as one matrix product over rows of windows, each laid out (embedding, offset) like
        # the convolution's weight [hidden, E, L + 1]: faster on the CPU than the convolution itself.
        windows = x.unfold(0, self.nlookback + 1, 1).reshape(steps * batch, -1)  # [T*B, E*(L + 1)]
        x = F.linear(windows, self.conv.weight.flatten(1), self.conv.bias)
        x = _dropout(F.relu(self.norm(x)), self.dropout, self.training)
        # The grouped 1x1 convolution: each half of the channels gives one of the two gates.
        logits = torch.einsum("ngc,gc->ng", x.view(steps * batch, 2, -1), self.out.weight.view(2, -1))
        gates = torch.sigmoid(logits + self.out.bias).view(steps, batch, 2).permute(2, 1, 0)  # [2, B, T]
        gate, gate_next = gates[0], gates[1]
        memory = memory_gates(gate, gate, state.gates, self.resolution, self.hard)
        memory_next = memory_gates(gate_next, gate, state.gates, self.resolution, self.hard)
        history = torch.cat([state.gates, gate], dim=1)
        new_state = ParserState(window[window.size(0) - self.nlookback :], history[:, -self.nslots :])
        return memory, memory_next, gate, new_state


class Memory(NamedTuple):
    h: torch.Tensor  # [B, S, H], slot 0 the most recent
    c: torch.Tensor  # [B, S, H]


class ReadingLayer(nn.Module):
    """One reading layer: an LSTM cell (layer-normalised) reading an attention-weighted mix of its past."""

    def __init__(self, input_size, hidden_size, nslots, dropout, idropout):
        super().__init__()
        self.ih = nn.Linear(input_size, 4 * hidden_size)
        self.ih_norm = LayerNorm(4 * hidden_size)
        self.hh = nn.Linear(hidden_size, 4 * hidden_size)
        self.hh_norm = LayerNorm(4 * hidden_size)
        self.c_norm = LayerNorm(hidden_size)
        self.query = nn.Linear(input_size + hidden_size, hidden_size)  # the official projector_summ
        self.input_size, self.hidden_size, self.nslots = input_size, hidden_size, nslots
        self.dropout, self.idropout = dropout, idropout

    def initial_state(self, batch: int) -> Memory:
        zeros = self.ih.weight.new_zeros(batch, self.nslots, self.hidden_size)
        return Memory(zeros, zeros)

    def forward(self, x: torch.Tensor, memory: Memory, memory_gate: torch.Tensor, rmask: torch.Tensor):
        """x [T, B, I], memory gates [T, B, S], rmask [H] -> outputs [T, B, H], memory."""
        train, size, steps = self.training, self.input_size, x.size(0)
        # Everything that depends on x alone, for all steps at once (dropout masks as the official per step).
        query_x = _full(F.linear(_dropout(x, self.idropout, train), self.query.weight[:, :size], self.query.bias),
                        self.hh.weight)
        gates_x = self.ih_norm(self.ih(_dropout(x, self.dropout, train)))
        query_h_weight = self.query.weight[:, size:]
        # independent masks for every step, [T, B, H]
        h_masks = _dropout_mask(self.idropout, train, query_x)
        query_masks = _dropout_mask(self.idropout, train, query_x)
        kernels = kernels_for("prpn", x, self.hh.weight, memory_gate, memory.h, memory.c)
        if kernels is not None:
            # mixed precision: the per-step products take the two weights in bfloat16 (the kernels' own copies)
            low_weights = tuple(low_precision_copy(w.detach()) for w in (query_h_weight, self.hh.weight))
            # (the memory may have any layout: the kernels copy it into their own state tensors)
            args = (gates_x.contiguous(), query_x.contiguous(), memory_gate.contiguous(), memory.h, memory.c,
                    query_h_weight.contiguous(), self.hh.weight, self.hh.bias,
                    self.hh_norm.gamma, self.hh_norm.beta, self.c_norm.gamma, self.c_norm.beta, rmask.contiguous(),
                    h_masks, query_masks, self.hh_norm.eps, self.c_norm.eps)
            if torch.is_grad_enabled():
                hs, cs = _FusedReading.apply(kernels, low_weights, *args)
            else:
                with full_precision():
                    states = kernels.forward(*args, False, *low_weights)
                hs, cs = states["hs"], states["cs"]
            slots = self.nslots
            return hs[slots:], Memory(hs[steps:].flip(0).transpose(0, 1), cs[steps:].flip(0).transpose(0, 1))
        # The memory as lists of the last S states, most recent first: indexing a stacked tensor step after
        # step would make autograd fill and add full-size gradients at every step.
        step_inputs = [query_x, gates_x, memory_gate, *self.parameters()]
        mem_h, mem_c = (as_step_states(list(states.unbind(1)), step_inputs) for states in memory)
        outputs = []
        no_masks = [None] * steps
        h_masks = no_masks if h_masks is None else h_masks.unbind(0)
        query_masks = no_masks if query_masks is None else query_masks.unbind(0)
        steps_in = zip(query_x.unbind(0), gates_x.unbind(0), memory_gate.unbind(0), h_masks, query_masks)
        step = step_function(reading_step, query_x.device)
        for query_x_t, gates_x_t, gate_t, h_mask, query_mask in steps_in:
            h, c = step(self, query_x_t, gates_x_t, gate_t, h_mask, query_mask, rmask, mem_h, mem_c)
            mem_h, mem_c = [h] + mem_h[:-1], [c] + mem_c[:-1]
            outputs.append(h)
        return torch.stack(outputs), Memory(torch.stack(mem_h, 1), torch.stack(mem_c, 1))


def reading_step(layer: ReadingLayer, query_x_t, gates_x_t, gate_t, h_mask, query_mask, rmask, mem_h, mem_c):
    """One step of a reading layer (the PyTorch code; the unit the `compile` backend fuses).

    Args:
        layer: the reading layer, for its weights.
        query_x_t, gates_x_t: the step's input parts of the query [B, H] and of the gates [B, 4H].
        gate_t: the step's memory gates [B, S].
        h_mask, query_mask: dropout masks [B, H] of the last state (in the query) and of the query, or None.
        rmask: the recurrent dropout mask [H] on the read state.
        mem_h, mem_c: the last S states, lists of [B, H], most recent first.

    Returns:
        (h, c), each [B, H].
    """
    query_h_weight = layer.query.weight[:, layer.input_size :]
    query = _apply(query_x_t + F.linear(_apply(mem_h[0], h_mask), query_h_weight), query_mask)
    stacked_h, stacked_c = torch.stack(mem_h, 1), torch.stack(mem_c, 1)  # [B, S, H]
    scale = 1.0 / math.sqrt(layer.hidden_size)
    weights = masked_softmax(torch.bmm(stacked_h, query.unsqueeze(-1)).squeeze(-1) * scale, gate_t)
    read_h = torch.bmm(weights.unsqueeze(1), stacked_h).squeeze(1)
    read_c = torch.bmm(weights.unsqueeze(1), stacked_c).squeeze(1)
    i, f, g, o = (gates_x_t + layer.hh_norm(layer.hh(read_h * rmask))).chunk(4, dim=1)
    c = torch.sigmoid(f) * read_c + torch.sigmoid(i) * torch.tanh(g)
    h = torch.sigmoid(o) * torch.tanh(layer.c_norm(c))
    return h, c


class ResidualBlock(nn.Module):
    """`relu(BN(W2 dropout(relu(BN(W1 x)))) + x)`."""

    def __init__(self, size, dropout):
        super().__init__()
        self.fc1, self.bn1 = nn.Linear(size, size), nn.BatchNorm1d(size)
        self.fc2, self.bn2 = nn.Linear(size, size), nn.BatchNorm1d(size)
        self.dropout = dropout

    def forward(self, x):
        y = _dropout(F.relu(self.bn1(self.fc1(x))), self.dropout, self.training)
        return F.relu(self.bn2(self.fc2(y)) + x)


class PredictNetwork(nn.Module):
    """Attention of h_t over its S predecessors, masked by the next-step memory gate, then a feed-forward
    layer to the embedding size."""

    def __init__(self, hidden_size, out_size, nslots, dropout, res):
        super().__init__()
        self.query = nn.Linear(hidden_size, hidden_size)  # the official projector_pred
        self.blocks = nn.ModuleList(ResidualBlock(2 * hidden_size, dropout) for _ in range(res))
        self.fc = nn.Linear(2 * hidden_size, out_size)
        self.norm = nn.BatchNorm1d(out_size)
        self.nslots, self.dropout = nslots, dropout

    def initial_state(self, batch: int) -> torch.Tensor:
        return self.fc.weight.new_zeros(batch, self.nslots, self.query.in_features)

    def forward(self, h: torch.Tensor, memory: torch.Tensor, memory_gate_next: torch.Tensor):
        """h [T, B, H] (last reading layer), memory [B, S, H], gates [T, B, S] -> output [T*B, E], memory."""
        steps, slots, train = h.size(0), self.nslots, self.training
        query = _dropout(self.query(_dropout(h, self.dropout, train)), self.dropout, train)
        history = torch.cat([memory.transpose(0, 1).flip(0), h])  # [S + T, B, H], oldest first
        read = attend(history, query, memory_gate_next)
        x = torch.cat([h, read], dim=-1).view(steps * h.size(1), -1)
        for block in self.blocks:
            x = block(x)
        out = torch.tanh(self.norm(self.fc(_dropout(x, self.dropout, train))))
        new_memory = history[-slots:].flip(0).transpose(0, 1)
        return out, new_memory


class PRPNState(NamedTuple):
    reader: list  # Memory per reading layer
    parser: ParserState
    predictor: torch.Tensor  # [B, S, H]


class PRPNOutput(NamedTuple):
    output: torch.Tensor  # [T, B, E]: the decoder's input (after dropout)
    state: PRPNState
    last_layer: torch.Tensor  # [T, B, E]: the same before dropout
    distances: torch.Tensor  # [1, T, B]: the parsing network's gate d_t, the syntactic distance

    @property
    def ar_input(self) -> torch.Tensor:
        """What activation regularisation penalises (the official PRPN has none): the output before dropout."""
        return self.last_layer


class PRPNConfig(Section):
    """PRPN language model; the official `main_LM.py` option names are the same."""

    name: Literal["prpn"] = "prpn"
    emb_size: PositiveInt = 800  # [emsize]
    hidden_size: PositiveInt = 1200  # [nhid]
    num_layers: PositiveInt = 2  # [nlayers] reading layers
    nslots: PositiveInt = 15  # memory slots: how many past states the attention sees
    nlookback: PositiveInt = 5  # the parsing convolution reads nlookback + 1 embeddings
    resolution: PositiveFloat = 0.1  # temperature of the memory gates
    dropout: Probability = 0.7  # on the first reading layer's input and the decoder's input
    idropout: Probability = 0.5  # everywhere else
    rdropout: Probability = 0.5  # on the hidden state each reading layer feeds its cell
    tie_weights: bool = True  # [tied]
    hard: bool = True  # hardtanh memory gates instead of sigmoid ones
    res: Annotated[int, Field(ge=0)] = 0  # residual blocks in the predict network

    def build(self, vocab_size: int) -> PRPNLanguageModel:
        """The language model of this config, freshly initialised."""
        return PRPNLanguageModel(vocab_size, **self.model_dump(exclude={"name"}))


class PRPNLanguageModel(LanguageModelBase):
    """The PRPN language model: embedding, parsing network, reading layers, predict network, decoder.

    Args (official names in brackets): vocab_size [ntoken], emb_size [ninp], hidden_size [nhid],
    num_layers [nlayers] reading layers, nslots, nlookback, resolution, dropout (on the first reading layer's
    input and the decoder's input), idropout (everywhere else), rdropout (one mask per forward on the hidden
    state each reading layer feeds its cell), tie_weights [tied], hard, res (residual blocks).
    """

    def __init__(self, vocab_size, emb_size=800, hidden_size=1200, num_layers=2, nslots=15, nlookback=5,
                 resolution=0.1, dropout=0.7, idropout=0.5, rdropout=0.5, tie_weights=True, hard=True, res=0):
        if nlookback < 1:
            raise ValueError("nlookback must be at least 1")
        super().__init__(vocab_size, emb_size)
        self.parser = ParsingNetwork(emb_size, hidden_size, nslots, nlookback, resolution, idropout, hard)
        self.readers = nn.ModuleList(
            ReadingLayer(emb_size if i == 0 else hidden_size, hidden_size, nslots,
                         dropout if i == 0 else idropout, idropout) for i in range(num_layers))
        self.predictor = PredictNetwork(hidden_size, emb_size, nslots, idropout, res)
        self._add_decoder(tie_weights, init_range=0.01)
        self.hidden_size, self.dropout, self.rdropout = hidden_size, dropout, rdropout

    num_distance_rows = 1  # rows of `forward(...).distances`: the parsing network's gate
    default_distance_row = 1  # (1-based) the row parsed by default

    @property
    def num_layers(self) -> int:
        """Reading layers."""
        return len(self.readers)

    def initial_state(self, batch_size: int) -> PRPNState:
        return PRPNState([r.initial_state(batch_size) for r in self.readers],
                         self.parser.initial_state(batch_size), self.predictor.initial_state(batch_size))

    def forward(self, tokens: torch.Tensor, state: PRPNState | None = None) -> PRPNOutput:
        """Run `tokens` [T, B] from `state` (the initial state if None)."""
        state = state if state is not None else self.initial_state(tokens.size(1))
        emb = self.embedding(tokens)
        memory_gate, memory_gate_next, gate, parser_state = self.parser(emb, state.parser)
        rmask = _dropout(emb.new_ones(len(self.readers), self.hidden_size), self.rdropout, self.training)
        h, memories = emb, []
        for reader, memory, mask in zip(self.readers, state.reader, rmask):
            h, memory = reader(h, memory, memory_gate, mask)
            memories.append(memory)
        out, predictor_state = self.predictor(h, state.predictor, memory_gate_next)
        out = out.view(tokens.size(0), tokens.size(1), -1)
        dropped = _dropout(out, self.dropout, self.training)
        return PRPNOutput(dropped, PRPNState(memories, parser_state, predictor_state), out,
                          gate.t().unsqueeze(0))
