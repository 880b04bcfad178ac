"""Language-model throughput: treenets versus plain references written in the official style.

The references below are the same models written the way the official code runs them. ON-LSTM: the input
projection of a layer for all steps at once, then a Python loop over time steps calling the cell. PRPN: the
parsing network over all steps, then a loop over time steps and, inside it, over the reading layers and the
predict network's attention, each projecting its inputs step by step. Autograd records every step in
training; evaluation runs under `torch.no_grad` (which the official evaluation does not use, so the
references evaluate faster than the official code and the ratios are conservative). The references are
initialised like the official models, and denormal numbers are flushed to zero for both sides, as
`treenets train` does (without it, tiny gradients slow the references' matrix products several times over).
Both sides run the same batch size and BPTT length with 2 threads; the table gives the median tokens/s over
several steps (taken in turns) and the ratio treenets / reference.

    python benchmarks/lm_throughput.py [--configs onlstm-paper onlstm-small prpn-paper prpn-small] [--steps 5]
"""

from __future__ import annotations

import argparse
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from treenets.nn.onlstm import ONLSTMLanguageModel
from treenets.nn.prpn import PRPNLanguageModel, masked_softmax

CONFIGS = {
    # name: (emb, hidden, layers, chunk, train batch, eval batch, bptt, dropout, dropouth, dropouti, dropoute, wdrop)
    "paper": (400, 1150, 3, 10, 20, 10, 70, 0.45, 0.3, 0.5, 0.1, 0.45),
    "small": (200, 400, 3, 10, 20, 10, 70, 0.3, 0.2, 0.3, 0.05, 0.2),
}
PRPN_CONFIGS = {
    # name: (emb, hidden, layers, nslots, nlookback, train batch, eval batch, bptt, dropout, idropout, rdropout)
    "paper": (800, 1200, 2, 15, 5, 64, 10, 35, 0.7, 0.5, 0.5),
    "small": (200, 400, 2, 15, 5, 64, 10, 35, 0.5, 0.3, 0.3),
}
VOCAB = 10000


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
    def __init__(self, emb, hid, layers, chunk, dropout, dropouth, dropouti, dropoute, wdrop):
        super().__init__()
        sizes = [emb] + [hid] * (layers - 1) + [emb]
        self.encoder = nn.Embedding(VOCAB, emb)
        self.cells = nn.ModuleList(ReferenceCell(a, b, chunk, wdrop) for a, b in zip(sizes[:-1], sizes[1:]))
        self.decoder = nn.Linear(emb, VOCAB)
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
    def __init__(self, emb, hid, layers, nslots, nlookback, dropout, idropout, rdropout):
        super().__init__()
        self.encoder = nn.Embedding(VOCAB, emb)
        self.gate = nn.Sequential(nn.Dropout(idropout), nn.Conv1d(emb, hid, nlookback + 1), nn.BatchNorm1d(hid),
                                  nn.ReLU(), nn.Dropout(idropout), nn.Conv1d(hid, 2, 1, groups=2), nn.Sigmoid())
        self.readers = nn.ModuleList(ReferenceReader(emb if j == 0 else hid, hid, dropout if j == 0 else idropout,
                                                     idropout) for j in range(layers))
        self.pred_key = nn.Sequential(nn.Dropout(idropout), nn.Linear(hid, hid), nn.Dropout(idropout))
        self.ffd = nn.Sequential(nn.Dropout(idropout), nn.Linear(2 * hid, emb), nn.BatchNorm1d(emb), nn.Tanh())
        self.decoder = nn.Linear(emb, VOCAB)
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


# --- timing ----------------------------------------------------------------------------------------------
def make_models(name: str):
    """(treenets model, reference model, train batch, eval batch, bptt, use AR/TAR) for a benchmark entry."""
    model, size = name.split("-")
    if model == "onlstm":
        emb, hid, layers, chunk, batch, eval_batch, bptt, dropout, dropouth, dropouti, dropoute, wdrop = CONFIGS[size]
        ours = ONLSTMLanguageModel(VOCAB, emb, hid, layers, chunk, dropout, dropouth, dropouti, dropoute, wdrop)
        ref = ReferenceLM(emb, hid, layers, chunk, dropout, dropouth, dropouti, dropoute, wdrop)
        return ours, ref, batch, eval_batch, bptt, True
    emb, hid, layers, slots, lookback, batch, eval_batch, bptt, dropout, idropout, rdropout = PRPN_CONFIGS[size]
    ours = PRPNLanguageModel(VOCAB, emb, hid, layers, slots, lookback, 0.1, dropout, idropout, rdropout)
    ref = ReferencePRPN(emb, hid, layers, slots, lookback, dropout, idropout, rdropout)
    return ours, ref, batch, eval_batch, bptt, False


def loss_of(model, tokens, targets, reference, ar_tar=True):
    if reference:
        output, last = model(tokens)
    else:
        out = model(tokens)
        output, last = out.output, out.last_layer
    logits = model.decoder(output)
    xent = F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))
    if not ar_tar:
        return xent
    return xent + 2.0 * last.pow(2).mean() + 1.0 * (last[1:] - last[:-1]).pow(2).mean()


def train_step(model, tokens, targets, reference, opt, ar_tar):
    opt.zero_grad()
    loss_of(model, tokens, targets, reference, ar_tar).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    opt.step()


def eval_step(model, tokens, targets, reference, _opt, ar_tar):
    # The official evaluate() keeps autograd on; the reference is given torch.no_grad all the same, which
    # makes it faster than the official code and the ratio a conservative one.
    with torch.no_grad():
        loss_of(model, tokens, targets, reference, ar_tar).item()


def measure(models, step, batch, bptt, steps, ar_tar):
    """Tokens/s of each model, median over `steps` timed steps. The models take turns step by step, so
    that a slow spell of the machine affects both alike."""
    tokens = torch.randint(0, VOCAB, (bptt, batch))
    targets = torch.randint(0, VOCAB, (bptt, batch))
    opts = [torch.optim.SGD(m.parameters(), lr=1.0) for m, _ in models]
    for model, _ in models:
        model.train(step is train_step)
    times = [[] for _ in models]
    for i in range(steps + 1):
        for k, ((model, reference), opt) in enumerate(zip(models, opts)):
            start = time.perf_counter()
            step(model, tokens, targets, reference, opt, ar_tar)
            if i:  # the first step warms up
                times[k].append(time.perf_counter() - start)
    return [batch * bptt / statistics.median(t) for t in times]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    names = [f"{m}-{s}" for m in ("onlstm", "prpn") for s in ("paper", "small")]
    parser.add_argument("--configs", nargs="+", default=names, choices=names)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per measurement (median)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)
    print(f"torch {torch.__version__}, {args.threads} threads, median of {args.steps} steps, tokens/s")
    print(f"{'config':13} {'phase':6} {'batch':>5} {'bptt':>4} {'reference':>10} {'treenets':>10} {'ratio':>6}")
    for name in args.configs:
        torch.manual_seed(0)
        ours, ref, batch, eval_batch, bptt, ar_tar = make_models(name)
        for phase, size, step in (("train", batch, train_step), ("eval", eval_batch, eval_step)):
            r, t = measure([(ref, True), (ours, False)], step, size, bptt, args.steps, ar_tar)
            print(f"{name:13} {phase:6} {size:5d} {bptt:4d} {r:10.0f} {t:10.0f} {t / r:6.2f}")


if __name__ == "__main__":
    main()
