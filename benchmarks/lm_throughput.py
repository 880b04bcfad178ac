"""Language-model throughput: treenets versus a plain reference written in the official style.

The reference below is the same ON-LSTM language model written the way the official code runs it: the
input projection of a layer computed for all steps at once, then a Python loop over time steps calling the
cell, with autograd recording every step in training (evaluation runs under `torch.no_grad`, which the
official `evaluate` does not use: the reference evaluates faster than the official code).
Both run the same weights, batch size and BPTT length, with 2 threads; the table gives the median
tokens/s over several steps and the ratio treenets / reference.

    python benchmarks/lm_throughput.py [--configs paper small] [--steps 5] [--threads 2]
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

from treenets.nn.onlstm import ONLSTMLanguageModel

CONFIGS = {
    # name: (emb, hidden, layers, chunk, train batch, eval batch, bptt, dropout, dropouth, dropouti, dropoute, wdrop)
    "paper": (400, 1150, 3, 10, 20, 10, 70, 0.45, 0.3, 0.5, 0.1, 0.45),
    "small": (200, 400, 3, 10, 20, 10, 70, 0.3, 0.2, 0.3, 0.05, 0.2),
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


# --- timing ----------------------------------------------------------------------------------------------
def make_treenets(cfg):
    emb, hid, layers, chunk, _, _, _, dropout, dropouth, dropouti, dropoute, wdrop = cfg
    return ONLSTMLanguageModel(VOCAB, emb, hid, layers, chunk, dropout, dropouth, dropouti, dropoute, wdrop)


def make_reference(cfg):
    emb, hid, layers, chunk, _, _, _, dropout, dropouth, dropouti, dropoute, wdrop = cfg
    return ReferenceLM(emb, hid, layers, chunk, dropout, dropouth, dropouti, dropoute, wdrop)


def loss_of(model, tokens, targets, reference):
    if reference:
        output, last = model(tokens)
    else:
        out = model(tokens)
        output, last = out.output, out.last_layer
    logits = model.decoder(output)
    xent = F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))
    return xent + 2.0 * last.pow(2).mean() + 1.0 * (last[1:] - last[:-1]).pow(2).mean()


def train_step(model, tokens, targets, reference, opt):
    opt.zero_grad()
    loss_of(model, tokens, targets, reference).backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    opt.step()


def eval_step(model, tokens, targets, reference, _opt):
    # The official evaluate() keeps autograd on; the reference is given torch.no_grad all the same, which
    # makes it faster than the official code and the ratio a conservative one.
    with torch.no_grad():
        loss_of(model, tokens, targets, reference).item()


def measure(models, step, batch, bptt, steps):
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
            step(model, tokens, targets, reference, opt)
            if i:  # the first step warms up
                times[k].append(time.perf_counter() - start)
    return [batch * bptt / statistics.median(t) for t in times]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    parser.add_argument("--steps", type=int, default=5, help="timed steps per measurement (median)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} threads, median of {args.steps} steps, tokens/s")
    print(f"{'config':8} {'phase':6} {'batch':>5} {'bptt':>4} {'reference':>10} {'treenets':>10} {'ratio':>6}")
    for name in args.configs:
        cfg = CONFIGS[name]
        torch.manual_seed(0)
        ours, ref = make_treenets(cfg), make_reference(cfg)
        for phase, batch, step in (("train", cfg[4], train_step), ("eval", cfg[5], eval_step)):
            r, t = measure([(ref, True), (ours, False)], step, batch, cfg[6], args.steps)
            print(f"{name:8} {phase:6} {batch:5d} {cfg[6]:4d} {r:10.0f} {t:10.0f} {t / r:6.2f}")


if __name__ == "__main__":
    main()
