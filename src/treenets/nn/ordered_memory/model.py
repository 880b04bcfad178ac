"""Ordered Memory (Shen, Tan, Hosseini, Lin, Sordoni & Courville, NeurIPS 2019): a recurrent network over an
ordered stack of N memory slots of D values that composes what it reads into a tree as it reads.

Notation (paper section 3; one step t of a batch of B sequences; in brackets the official `ordered_memory.py`):

Input (all steps at once)::

    x_t = LN(W_x e_t + b_x)                                    the input in the slot size, [B, D]

Searching for the split point (section 3.1) [`Distribution`]: attention over the slots of the previous step's
output memory M^_{t-1}::

    q_t     = LN(W_q x_t + b_q)                                query          [B, D]
    k_t^i   = LN(W_k M^_{t-1}^i + b_k)                         key per slot   [B, N, D]
    b_t^i   = (w_b . ReLU(q_t + k_t^i) + c_b) / sqrt(D)        score
    p_t^i   ~ exp(b_t^i) * ->pi_{t-1}^{i+1}                   the split point, normalised over i; ->pi^N = 1
    ->pi_t^i = sum_{j <= i} p_t^j,   <-pi_t^i = sum_{j >= i} p_t^j       [`cp`, `rcp`]

The previous step's cumulative distribution, shifted by one slot, weights the scores (values below 1e-5 count
as zero), so that the split point rises at most one slot above the previous one: it pushes one new level onto
the stack, or pops (reduces) any number of them. Before the first step there is no distribution:
`p_1 = 0, ->pi_1 = 0, <-pi_1 = 1`.

The memory update (section 3.1) [`omr_step`]: the slots at and below the split point are replaced by the
previous step's compositions, the others kept; then the input is composed with every slot from the split point
to the last (the bottom of the stack) by the gated recursive cell::

    M_t^i   = M_{t-1}^i (1 - <-pi_t^i) + M^_{t-1}^i <-pi_t^i
    M^_t^i  = x_t (1 - ->pi_t^i) + GRC(M^_t^{i-1}, M_t^i) ->pi_t^i,        M^_t^{-1} = x_t
    o_t     = M^_t^{N-1}                                       the output of step t

Gated recursive cell (section 3.2) [`Cell`]; the layer norm is the one of the input projection (one
parameter set for both)::

    [g_v; g_h; g_c; c^] = W_2 ReLU(W_1 [v; h] + b_1) + b_2     W_1: [4D, 2D], W_2: [4D, 4D]
    GRC(v, h) = LN(sigmoid(g_v) * v + sigmoid(g_h) * h + sigmoid(g_c) * c^)

Dropout (training): `dropout` before each of the cell's two linear maps, `dropout_memory` before the query's and
the key's linear maps and before w_b, a fresh mask at every use, as the official code draws them.

The syntactic distance of step t is the slot of its largest p_t^i (the official `genparse`): the higher the slot,
the more constituents the token closes. `tree_from_slots` (`trees.py` in this folder) builds the tree from them;
the network's output declares both (`OrderedMemoryOutput.distances` and `.trees`), so that the tasks and
predictors read its trees without knowing how.

Padding: a sequence's vector is the output at its last token; padded steps change nothing before them. Past a
sequence's end the official code runs on and zeroes its state; here it stops (the batch is sorted by length and
each step runs on the sequences still going), which gives the same values with less work, and the distribution
of a step past the end is zero, as there. The backward direction (`bidirectional`) reads each sequence from its
last token to its first, its padding still after it; the official code flips the whole padded batch, so that a
padded sequence's backward vector there depends on its padding (the same for a batch without padding).

Speed: the input projection runs over all steps at once; per step the key of every slot is one product, and so is
the memory's half of the cell's first linear map (`W_1 [v; h] = W_1v v + W_1h h`: W_1h M_t over every slot that
composes), so that only the input half and W_2 run slot by slot. Slots whose ->pi is zero in every sequence of the
batch are not composed (their M^ is x_t exactly); the official code skips the same slots but one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from treenets.nn.ordered_memory.trees import tree_from_slots

SPLIT_FLOOR = 1e-5  # cumulative probabilities below this weight a slot's score by zero (the official threshold)


class SlotAttention(nn.Module):
    """Where the split point falls (the split-point search above): `p_t` and its cumulative sums.

    Args:
        size: D, the slot size.
        dropout: `dropout_memory` of the module docstring.
    """

    def __init__(self, size: int, dropout: float):
        super().__init__()
        self.query = nn.Linear(size, size)
        self.query_norm = nn.LayerNorm(size)
        self.key = nn.Linear(size, size)
        self.key_norm = nn.LayerNorm(size)
        self.score = nn.Linear(size, 1)
        self.dropout, self.scale = dropout, math.sqrt(size)

    def forward(self, x: torch.Tensor, prev_output: torch.Tensor, prev_p: torch.Tensor):
        """(p, ->pi, <-pi), each [B, N], from x_t [B, D], M^_{t-1} [B, N, D] and p_{t-1} [B, N]."""
        drop = self.dropout if self.training else 0.0
        query = self.query_norm(self.query(F.dropout(x, drop, self.training)))
        key = self.key_norm(self.key(F.dropout(prev_output, drop, self.training)))
        hidden = F.dropout(torch.relu(query.unsqueeze(1) + key), drop, self.training)
        score = self.score(hidden).squeeze(-1) / self.scale
        weight = torch.exp(score - score.amax(-1, keepdim=True))  # the softmax's numerator, its largest 1
        reach = prev_p.cumsum(-1)[:, 1:]  # ->pi_{t-1}^{i+1}
        reach = F.pad(reach.masked_fill(reach < SPLIT_FLOOR, 0.0), (0, 1), value=1.0)
        p = F.normalize(weight * reach, p=1, dim=-1)
        return p, p.cumsum(-1), p.flip(-1).cumsum(-1).flip(-1)


class GatedRecursiveCell(nn.Module):
    """The gated recursive cell (section 3.2) before its layer norm, which its owner applies.

    The first linear map is applied in two halves: `memory_part` on the memory slots (all of them at once) and
    `forward` on the running composition v, slot by slot.

    Args:
        size: D.
        dropout: before each linear map.
    """

    def __init__(self, size: int, dropout: float):
        super().__init__()
        self.size, self.dropout = size, dropout
        self.hidden = nn.Linear(2 * size, 4 * size)  # W_1 on [v; h]
        self.out = nn.Linear(4 * size, 4 * size)  # W_2

    def _drop(self, x: torch.Tensor) -> torch.Tensor:
        return F.dropout(x, self.dropout, self.training)

    def memory_part(self, h: torch.Tensor) -> torch.Tensor:
        """`W_1h h + b_1` for slots h [..., D], with h's dropout; [..., 4D]."""
        return F.linear(self._drop(h), self.hidden.weight[:, self.size :], self.hidden.bias)

    def forward(self, v: torch.Tensor, h: torch.Tensor, h_part: torch.Tensor) -> torch.Tensor:
        """`sigmoid(g_v) v + sigmoid(g_h) h + sigmoid(g_c) c^` [B, D] for v, h [B, D] and `memory_part(h)`."""
        pre = torch.addmm(h_part, self._drop(v), self.hidden.weight[:, : self.size].t())
        gates, candidate = self.out(self._drop(torch.relu(pre))).split((3 * self.size, self.size), dim=-1)
        g_v, g_h, g_c = torch.sigmoid(gates).chunk(3, dim=-1)
        return g_v * v + g_h * h + g_c * candidate


class DirectionOutput(NamedTuple):
    final: torch.Tensor  # [B, D]: the output o_t at each sequence's last token
    probs: torch.Tensor  # [T, B, N]: p_t per step (zero past a sequence's end)


class OrderedMemoryRecurrence(nn.Module):
    """One direction: the input projection, the slot attention and the cell over a padded batch.

    Args:
        input_size: size of the inputs e_t.
        size: D, the slot size.
        dropout: in the cell.
        dropout_memory: in the slot attention.
    """

    def __init__(self, input_size: int, size: int, dropout: float, dropout_memory: float):
        super().__init__()
        self.input_projection = nn.Linear(input_size, size)
        self.norm = nn.LayerNorm(size)  # after the input projection and after the cell: one parameter set
        self.attention = SlotAttention(size, dropout_memory)
        self.cell = GatedRecursiveCell(size, dropout)
        self.size = size

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, slots: int) -> DirectionOutput:
        """Run the right-padded inputs x [T, B, input_size] of lengths [B] (each at least 1) with `slots` slots."""
        steps, batch = x.shape[:2]
        lengths = lengths.to(x.device)
        order = torch.argsort(lengths, descending=True, stable=True)
        sorted_lengths = lengths[order].tolist()
        if sorted_lengths and not 1 <= sorted_lengths[-1] <= sorted_lengths[0] <= steps:
            raise ValueError(f"lengths from {sorted_lengths[-1]} to {sorted_lengths[0]}: expected 1 to {steps} steps")
        running = [sum(n > t for n in sorted_lengths) for t in range(steps)]  # sequences still going at step t
        projected = self.norm(self.input_projection(x[:, order]))  # x_t of every step
        memory = projected.new_zeros(batch, slots, self.size)  # M_{t-1}
        output_memory = memory  # M^_{t-1}
        prev_p = None
        finals, probs = [], []
        for t in range(steps):
            n = running[t]
            if n == 0:
                break
            x_t = projected[t, :n]
            if prev_p is None:  # the first step: nothing to split, nothing to compose (o_1 = x_1)
                p = cp = x_t.new_zeros(n, slots)
                rcp = torch.ones_like(p)
            else:
                p, cp, rcp = self.attention(x_t, output_memory[:n], prev_p[:n])
            memory = torch.lerp(memory[:n], output_memory[:n], rcp.unsqueeze(-1))
            output_memory = self._compose(x_t, memory, cp)
            finals.append(output_memory[:, -1])
            probs.append(F.pad(p, (0, 0, 0, batch - n)))
            prev_p = p
        ends = [sorted_lengths.count(t + 1) for t in range(len(finals))]
        # step t's output is the vector of the sequences that end there: the last ones of the sorted batch
        final = torch.cat([o[n - k : n] for o, n, k in zip(finals, running, ends) if k][::-1])
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(batch, device=order.device)
        probs = torch.stack(probs)
        probs = F.pad(probs, (0, 0, 0, 0, 0, steps - probs.size(0)))[:, inverse]
        return DirectionOutput(final[inverse], probs)

    def _compose(self, x_t: torch.Tensor, memory: torch.Tensor, cp: torch.Tensor) -> torch.Tensor:
        """M^_t [n, N, D]: x_t composed with the slots from the split point down, blended by ->pi_t."""
        slots = memory.size(1)
        first = slots - int((cp.amax(0) > 0).sum())  # slots before it have ->pi = 0 throughout: M^ = x_t there
        composed = [x_t.unsqueeze(1).expand(-1, first, -1)]
        if first < slots:
            # the slots as a tuple of views (`unbind`): the backward of one view taken per slot (`memory[:, i]`)
            # would fill a zero gradient of the whole memory for each slot (a fifth of a training step's time)
            h_parts = self.cell.memory_part(memory[:, first:]).unbind(1)
            v = x_t
            for h, h_part, weight in zip(memory[:, first:].unbind(1), h_parts, cp[:, first:, None].unbind(1)):
                o = self.norm(self.cell(v, h, h_part))
                v = torch.lerp(x_t, o, weight)
                composed.append(v.unsqueeze(1))
        return torch.cat(composed, dim=1)


class OrderedMemoryOutput(NamedTuple):
    output: torch.Tensor  # [B, D] (bidirectional: [B, 2D], forward then backward): the sequence's vector
    probs: torch.Tensor  # [T, B, N]: the forward direction's split-point distribution per step
    probs_backward: torch.Tensor | None  # [T, B, N] of the backward direction, at the tokens' own positions

    # What an encoder that induces trees declares (`treenets.nn.registry.InducedTrees`):
    @property
    def row_name(self) -> str:
        return "slots"

    @property
    def distances(self) -> torch.Tensor:
        """[T, B] the syntactic distance of every step: the slot of its largest split-point probability (the
        official `genparse`; 0 past a sequence's end and at its first step, whose distribution is zero)."""
        return self.probs.argmax(-1)

    def trees(self, words: Sequence[Sequence[str]]) -> list:
        """The tree induced of each sequence read (column b, its tokens `words[b]`), built bottom-up from its
        slots (`tree_from_slots`): a token, or nested lists of them."""
        slots = self.distances.cpu()
        return [tree_from_slots(tokens, slots[: len(tokens), b].tolist()) for b, tokens in enumerate(words)]


class OrderedMemory(nn.Module):
    """Ordered Memory over right-padded batches, one direction or both.

    Args:
        input_size: size of the inputs.
        size: D, the slot size (the output's size per direction).
        slots: N, the number of memory slots.
        dropout: in the gated recursive cell [dropout].
        dropout_memory: in the slot attention [dropoutm].
        bidirectional: also read each sequence backwards, with weights of its own.
    """

    def __init__(self, input_size: int, size: int, slots: int, dropout: float = 0.2, dropout_memory: float = 0.2,
                 bidirectional: bool = False):
        super().__init__()
        self.forward_memory = OrderedMemoryRecurrence(input_size, size, dropout, dropout_memory)
        self.backward_memory = (OrderedMemoryRecurrence(input_size, size, dropout, dropout_memory)
                                if bidirectional else None)
        self.slots, self.size = slots, size

    @property
    def output_size(self) -> int:
        return self.size * (2 if self.backward_memory is not None else 1)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor, slots: int | None = None) -> OrderedMemoryOutput:
        """Read x [T, B, input_size], right-padded, of lengths [B] (each at least 1), with `slots` slots (None:
        the trained number; the official evaluation tests with twice as many)."""
        slots = slots or self.slots
        lengths = lengths.to(x.device)
        forward = self.forward_memory(x, lengths, slots)
        if self.backward_memory is None:
            return OrderedMemoryOutput(forward.final, forward.probs, None)
        reverse = _reversal(lengths, x.size(0))
        backward = self.backward_memory(x.gather(0, reverse.unsqueeze(-1).expand_as(x)), lengths, slots)
        probs_backward = backward.probs.gather(0, reverse.unsqueeze(-1).expand_as(backward.probs))
        return OrderedMemoryOutput(torch.cat([forward.final, backward.final], dim=-1), forward.probs, probs_backward)


def _reversal(lengths: torch.Tensor, steps: int) -> torch.Tensor:
    """[T, B] indices that reverse each column's first `lengths[b]` steps and keep its padding in place (an
    involution: applied twice, the identity)."""
    t = torch.arange(steps, device=lengths.device).unsqueeze(1)
    return torch.where(t < lengths, lengths - 1 - t, t)

