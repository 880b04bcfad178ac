"""Plain references, one step (or one node) at a time, written the way the official code runs: the
specification the batched and compiled code is tested against, and the baseline the benchmarks time."""

from __future__ import annotations

import math
import random

import torch
import torch.nn as nn
import torch.nn.functional as F

from treenets.nn.prpn.model import masked_softmax
from treenets.trees.parents import ParentTree


# --- Tree-LSTMs: recursion over one tree, one node at a time (the official PyTorch port's way) -----------
def random_tree(rng: random.Random, n: int, max_children: int | None = None) -> ParentTree:
    """A random dependency-style tree over n words (node i's parent among the earlier nodes)."""
    parents = [-1]
    for i in range(1, n):
        choices = [p for p in range(i) if max_children is None or parents.count(p) < max_children]
        parents.append(rng.choice(choices))
    order = list(range(n))
    rng.shuffle(order)  # the root need not be word 1
    relabel = {old: new for new, old in enumerate(order)}
    shuffled = [-1] * n
    for old, parent in enumerate(parents):
        shuffled[relabel[old]] = -1 if parent == -1 else relabel[parent]
    return ParentTree(tuple(shuffled), tuple(f"w{i}" for i in range(n)))


def reference_child_sum(cell, tree, x):
    """The port's way: recursion, one node at a time."""
    def node(j):
        kids = [node(k) for k in tree.children[j]]
        child_c = torch.stack([k[0] for k in kids]) if kids else x.new_zeros(1, cell.mem_dim)
        child_h = torch.stack([k[1] for k in kids]) if kids else x.new_zeros(1, cell.mem_dim)
        i, o, u = (cell.ioux(x[j]) + cell.iouh(child_h.sum(0))).chunk(3)
        f = torch.sigmoid(cell.fh(child_h) + cell.fx(x[j]))
        c = torch.sigmoid(i) * torch.tanh(u) + (f * child_c).sum(0)
        return c, torch.sigmoid(o) * torch.tanh(c)
    return node(tree.root)


def reference_nary(cell, tree, x):
    def node(j):
        kids = [node(k) for k in tree.children[j]]
        hs = [k[1] for k in kids] + [x.new_zeros(cell.mem_dim)] * (cell.n_ary - len(kids))
        cs = [k[0] for k in kids] + [x.new_zeros(cell.mem_dim)] * (cell.n_ary - len(kids))
        gates = cell.children_proj(torch.cat(hs))
        xj = x[j] if j < len(tree.words) else x.new_zeros(x.size(1))
        i, o, u = (cell.iou_x(xj) + gates[: 3 * cell.mem_dim]).chunk(3)
        fs = torch.sigmoid(cell.f_x(xj) + gates[3 * cell.mem_dim :].view(cell.n_ary, -1))
        c = torch.sigmoid(i) * torch.tanh(u) + sum(f * ck for f, ck in zip(fs, cs))
        return c, torch.sigmoid(o) * torch.tanh(c)
    return node(tree.root)


# --- the reference: official-style ON-LSTM ----------------------------------------------------------------
class ReferenceCell(nn.Module):
    def __init__(self, n_in, n_hid, chunk, wdrop):
        super().__init__()
        self.n_hid, self.chunk, self.n_chunk, self.wdrop = n_hid, chunk, n_hid // chunk, wdrop
        self.ih = nn.Linear(n_in, 4 * n_hid + 2 * self.n_chunk)
        self.hh = nn.Linear(n_hid, 4 * n_hid + 2 * self.n_chunk)

    def sample_mask(self):
        mask = torch.empty_like(self.hh.weight, dtype=torch.uint8).bernoulli_(self.wdrop)
        self.masked_weight = self.hh.weight.masked_fill(mask.bool(), 0.0)

    def forward(self, transformed_input, hx, cx):
        weight = self.masked_weight if self.training else self.hh.weight * (1 - self.wdrop)
        gates = transformed_input + F.linear(hx, weight, self.hh.bias)
        cin, cforget = gates[:, : self.n_chunk * 2].chunk(2, 1)
        out, cell, ing, forget = gates[:, self.n_chunk * 2 :].view(-1, self.n_chunk * 4, self.chunk).chunk(4, 1)
        cin = 1.0 - torch.cumsum(F.softmax(cin, dim=-1), dim=-1)
        cforget = torch.cumsum(F.softmax(cforget, dim=-1), dim=-1)
        d_forget = 1.0 - cforget.sum(-1) / self.n_chunk
        d_in = cin.sum(-1) / self.n_chunk
        cin, cforget = cin[:, :, None], cforget[:, :, None]
        ing, forget, cell, out = torch.sigmoid(ing), torch.sigmoid(forget), torch.tanh(cell), torch.sigmoid(out)
        overlap = cforget * cin
        forget = forget * overlap + (cforget - overlap)
        ing = ing * overlap + (cin - overlap)
        cy = forget * cx + ing * cell
        hy = out * torch.tanh(cy)
        return hy.view(-1, self.n_hid), cy, (d_forget, d_in)


class ReferenceLM(nn.Module):
    """The official ON-LSTM language model's structure and loop (weights named as the official ones)."""

    def __init__(self, vocab, emb, hid, layers, chunk, dropout, dropouth, dropouti, dropoute, wdrop):
        super().__init__()
        sizes = [emb] + [hid] * (layers - 1) + [emb]
        self.encoder = nn.Embedding(vocab, emb)
        self.cells = nn.ModuleList(ReferenceCell(a, b, chunk, wdrop) for a, b in zip(sizes[:-1], sizes[1:]))
        self.decoder = nn.Linear(emb, vocab)
        self.decoder.weight = self.encoder.weight
        nn.init.uniform_(self.encoder.weight, -0.1, 0.1)  # the official initialisation
        nn.init.zeros_(self.decoder.bias)
        self.drops = (dropout, dropouth, dropouti, dropoute)

    def lockdrop(self, x, p):
        if not self.training or not p:
            return x
        return x * x.new_empty(1, x.size(1), x.size(2)).bernoulli_(1 - p) / (1 - p)

    def forward(self, tokens):
        output, last, _ = self.run(tokens)
        return output, last

    def distances(self, tokens):
        """Syntactic distances `[L, T, B]` (1 - mean master forget gate), as the official model exposes them."""
        return self.run(tokens)[2].detach()

    def run(self, tokens):
        dropout, dropouth, dropouti, dropoute = self.drops
        weight = self.encoder.weight
        if self.training and dropoute:
            weight = weight * weight.new_empty(weight.size(0), 1).bernoulli_(1 - dropoute) / (1 - dropoute)
        x = self.lockdrop(F.embedding(tokens, weight), dropouti)
        if self.training:
            for cell in self.cells:
                cell.sample_mask()
        batch = tokens.size(1)
        layer_distances = []
        for index, cell in enumerate(self.cells):
            h = x.new_zeros(batch, cell.n_hid)
            c = x.new_zeros(batch, cell.n_chunk, cell.chunk)
            t_input = cell.ih(x)
            outs, dists = [], []
            for t in range(tokens.size(0)):
                h, c, d = cell(t_input[t], h, c)
                outs.append(h)
                dists.append(d)
            x = torch.stack(outs)
            layer_distances.append(torch.stack([d_forget for d_forget, _ in dists]))
            last = x
            if index < len(self.cells) - 1:
                x = self.lockdrop(x, dropouth)
        return self.lockdrop(x, dropout), last, torch.stack(layer_distances)


# --- the reference: official-style PRPN ----------------------------------------------------------------
class ReferenceLayerNorm(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.gamma, self.beta = nn.Parameter(torch.ones(n)), nn.Parameter(torch.zeros(n))

    def forward(self, x):
        return self.gamma * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + 1e-6) + self.beta


class ReferenceReader(nn.Module):
    def __init__(self, n_in, n_hid, dropout, idropout):
        super().__init__()
        self.ih = nn.Sequential(nn.Linear(n_in, 4 * n_hid), ReferenceLayerNorm(4 * n_hid))
        self.hh = nn.Sequential(nn.Linear(n_hid, 4 * n_hid), ReferenceLayerNorm(4 * n_hid))
        self.c_norm = ReferenceLayerNorm(n_hid)
        self.key = nn.Sequential(nn.Dropout(idropout), nn.Linear(n_in + n_hid, n_hid), nn.Dropout(idropout))
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mem_h, mem_c, gate, rmask):
        key = self.key(torch.cat([x, mem_h[:, 0]], dim=1))
        att = masked_softmax(torch.bmm(mem_h, key[:, :, None]).squeeze(2) / math.sqrt(mem_h.size(2)), gate)
        sel_h, sel_c = (mem_h * att[:, :, None]).sum(1), (mem_c * att[:, :, None]).sum(1)
        i, f, g, o = (self.ih(self.drop(x)) + self.hh(sel_h * rmask)).chunk(4, 1)
        c = torch.sigmoid(f) * sel_c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(self.c_norm(c))
        return h, torch.cat([h[:, None], mem_h[:, :-1]], 1), torch.cat([c[:, None], mem_c[:, :-1]], 1)


class ReferencePRPN(nn.Module):
    """The official PRPN language model's structure and loop over time steps (hard memory gates, tied)."""

    def __init__(self, vocab, emb, hid, layers, nslots, nlookback, dropout, idropout, rdropout):
        super().__init__()
        self.encoder = nn.Embedding(vocab, emb)
        self.gate = nn.Sequential(nn.Dropout(idropout), nn.Conv1d(emb, hid, nlookback + 1), nn.BatchNorm1d(hid),
                                  nn.ReLU(), nn.Dropout(idropout), nn.Conv1d(hid, 2, 1, groups=2), nn.Sigmoid())
        self.readers = nn.ModuleList(ReferenceReader(emb if j == 0 else hid, hid, dropout if j == 0 else idropout,
                                                     idropout) for j in range(layers))
        self.pred_key = nn.Sequential(nn.Dropout(idropout), nn.Linear(hid, hid), nn.Dropout(idropout))
        self.ffd = nn.Sequential(nn.Dropout(idropout), nn.Linear(2 * hid, emb), nn.BatchNorm1d(emb), nn.Tanh())
        self.decoder = nn.Linear(emb, vocab)
        self.decoder.weight = self.encoder.weight
        nn.init.uniform_(self.encoder.weight, -0.01, 0.01)  # the official initialisation
        nn.init.zeros_(self.decoder.bias)
        self.sizes, self.drop, self.rdrop = (emb, hid, nslots, nlookback), nn.Dropout(dropout), nn.Dropout(rdropout)

    def compare(self, x):
        return (F.hardtanh(x / 0.1 * 2 + 1) + 1) / 2

    def forward(self, tokens):
        emb_size, hid, slots, lookback = self.sizes
        steps, batch = tokens.shape
        emb = self.encoder(tokens)
        padded = torch.cat([emb.new_zeros(lookback, batch, emb_size), emb])
        gates = self.gate(padded.permute(1, 2, 0))
        gate, gate_next = gates[:, 0], gates[:, 1]
        cum = torch.cat([emb.new_full((batch, slots), math.inf), gate], 1)
        hat = torch.stack([cum[:, i : i + steps] for i in range(slots, 0, -1)], dim=2)
        mgate = torch.cumprod(self.compare(gate[:, :, None] - hat), 2).unbind(1)
        mgate_next = torch.cumprod(self.compare(gate_next[:, :, None] - hat), 2).unbind(1)
        rmask = self.rdrop(emb.new_ones(len(self.readers), hid))
        mems = [(emb.new_zeros(batch, slots, hid), emb.new_zeros(batch, slots, hid)) for _ in self.readers]
        pred_mem = emb.new_zeros(batch, slots, hid)
        outs_h, outs_m = [], []
        for t in range(steps):
            h = emb[t]
            for j, reader in enumerate(self.readers):
                h, mem_h, mem_c = reader(h, *mems[j], mgate[t], rmask[j])
                mems[j] = (mem_h, mem_c)
            key = self.pred_key(h)
            att = masked_softmax(torch.bmm(pred_mem, key[:, :, None]).squeeze(2) / math.sqrt(hid), mgate_next[t])
            outs_m.append((pred_mem * att[:, :, None]).sum(1))
            pred_mem = torch.cat([h[:, None], pred_mem[:, :-1]], 1)
            outs_h.append(h)
        out = self.ffd(torch.cat([torch.stack(outs_h), torch.stack(outs_m)], -1).view(steps * batch, -1))
        out = self.drop(out).view(steps, batch, -1)
        return out, out


# --- the reference: official-style Ordered Memory logic classifier --------------------------------------------
# Module names as the official `ordered_memory.py` and `proplog.py` name them, so that `state_dict()` is in the
# official format (one LayerNorm stored under three names); the loop over slots as the official step runs it.
class ReferenceSlotAttention(nn.Module):
    def __init__(self, d, dropout):
        super().__init__()
        self.query = nn.Sequential(nn.Dropout(dropout), nn.Linear(d, d), nn.LayerNorm(d))
        self.key = nn.Sequential(nn.Dropout(dropout), nn.Linear(d, d), nn.LayerNorm(d))
        self.beta = nn.Sequential(nn.ReLU(), nn.Dropout(dropout), nn.Linear(d, 1))

    def forward(self, x, prev_out, prev_p):
        scores = self.beta(self.query(x)[:, None] + self.key(prev_out))[..., 0] / math.sqrt(x.size(1))
        if prev_p is None:
            zeros = torch.zeros_like(scores)
            return zeros, torch.ones_like(scores), zeros
        allowed = torch.cumsum(prev_p, 1)[:, 1:]
        allowed = torch.cat([torch.where(allowed < 1e-5, 0.0, allowed), allowed.new_ones(len(x), 1)], 1)
        unnormalised = torch.exp(scores - scores.max(1, keepdim=True).values) * allowed
        p = unnormalised / unnormalised.sum(1, keepdim=True).clamp_min(1e-12)
        reverse = torch.stack([p[:, i:].sum(1) for i in range(p.size(1))], 1)
        return torch.cumsum(p, 1), reverse, p


class ReferenceGatedCell(nn.Module):
    def __init__(self, d, dropout, activation):
        super().__init__()
        self.input_t = nn.Sequential(nn.Dropout(dropout), nn.Linear(2 * d, 4 * d), nn.ReLU(), nn.Dropout(dropout),
                                     nn.Linear(4 * d, 4 * d))
        self.activation = activation

    def forward(self, v, h):
        g_v, g_h, g_c, c = self.input_t(torch.cat([v, h], 1)).chunk(4, 1)
        return self.activation(torch.sigmoid(g_v) * v + torch.sigmoid(g_h) * h + torch.sigmoid(g_c) * c)


class ReferenceMemoryDirection(nn.Module):
    def __init__(self, d_in, d, nslot, dropout, dropoutm):
        super().__init__()
        self.activation = nn.LayerNorm(d)
        self.input_projection = nn.Sequential(nn.Linear(d_in, d), self.activation)
        self.distribution = ReferenceSlotAttention(d, dropoutm)
        self.cell = ReferenceGatedCell(d, dropout, self.activation)
        self.nslot, self.d = nslot, d

    def forward(self, x, mask):
        """Outputs [T, B, D] and distributions [T, B, N] of a padded batch; past a sequence's end its state is
        zeroed, as the official loop does."""
        batch = x.size(1)
        memory = x.new_zeros(batch, self.nslot, self.d)
        out_memory, p = memory, None
        outputs, probs = [], []
        for t, x_t in enumerate(self.input_projection(x)):
            cp, rcp, p = self.distribution(x_t, out_memory, p)
            memory = memory * (1 - rcp)[:, :, None] + out_memory * rcp[:, :, None]
            h, slots = x_t, []
            for i in range(self.nslot):
                if i == self.nslot - 1 or cp[:, i + 1].max() > 0:
                    h = x_t * (1 - cp[:, i, None]) + self.cell(h, memory[:, i]) * cp[:, i, None]
                slots.append(h)
            out_memory = torch.stack(slots, 1)
            ended = ~mask[t]
            p = p.masked_fill(ended[:, None], 0.0)
            memory = memory.masked_fill(ended[:, None, None], 0.0)
            out_memory = out_memory.masked_fill(ended[:, None, None], 0.0)
            outputs.append(out_memory[:, -1].masked_fill(ended[:, None], 0.0))
            probs.append(p)
        return torch.stack(outputs), torch.stack(probs)


class ReferenceMemoryEncoder(nn.Module):
    def __init__(self, d_in, d, nslot, dropout, dropoutm, bidirectional):
        super().__init__()
        self.OM_forward = ReferenceMemoryDirection(d_in, d, nslot, dropout, dropoutm)
        if bidirectional:  # the official backward direction reads the whole padded batch flipped
            self.OM_backward = ReferenceMemoryDirection(d_in, d, nslot, dropout, dropoutm)
        self.bidirectional = bidirectional

    def forward(self, x, mask):
        outputs, probs = self.OM_forward(x, mask)
        vectors = [outputs[mask.sum(0) - 1, torch.arange(x.size(1))]]
        if self.bidirectional:
            vectors.append(self.OM_backward(x.flip(0), mask.flip(0))[0][-1])
        return torch.cat(vectors, 1), probs


class ReferenceMemoryClassifier(nn.Module):
    """The official `proplog.py` classifier's structure (the MLP's input is 4x the encoder's output)."""

    def __init__(self, ntoken, ninp, nhid, nout, nslot, dropout, dropouti, dropouto, dropoutm, bidirectional=False):
        super().__init__()
        self.embedding = nn.Embedding(ntoken, ninp, padding_idx=ntoken - 1)
        self.encoder = ReferenceMemoryEncoder(ninp, nhid, nslot, dropout, dropoutm, bidirectional)
        size = 4 * nhid * (2 if bidirectional else 1)
        self.mlp = nn.Sequential(nn.Dropout(dropouto), nn.Linear(size, nhid), nn.ELU(), nn.Dropout(dropouto),
                                 nn.Linear(nhid, nout))
        self.drop = nn.Dropout(dropouti)

    def forward(self, tokens):
        """(logits [B/2, nout], distributions [T, B, N]) of B formulas, premises then hypotheses."""
        vectors, probs = self.encoder(self.drop(self.embedding(tokens)), tokens != self.embedding.padding_idx)
        a, b = vectors.chunk(2)
        return self.mlp(torch.cat([a, b, a * b, (a - b).abs()], 1)), probs


# --- StructFormer: the parent distributions summed span by span, as the official `compute_head` defines them ----
def reference_parents(p_left: torch.Tensor, p_right: torch.Tensor, logits: torch.Tensor) -> torch.Tensor:
    """`parent[l, k] = sum_{i, j} p_left[l, i] p_right[l, j] head(i, j)[k]`, the head of span [i, j] a softmax over
    all L positions of `logits[k]` inside the span and the official fill -1e9 outside it; diagonal 0. One span at a
    time, [L, L] for one sentence (float64)."""
    L = logits.numel()
    parent = torch.zeros(L, L, dtype=torch.float64)
    for i in range(L):
        for j in range(L):
            inside = torch.full((L,), -1e9, dtype=torch.float64)
            if i <= j:
                inside[i : j + 1] = logits[i : j + 1].double()
            head = torch.softmax(inside, 0)
            parent += (p_left[:, i] * p_right[:, j]).double()[:, None] * head[None, :]
    return parent.fill_diagonal_(0.0)
