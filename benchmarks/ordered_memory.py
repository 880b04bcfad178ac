"""Ordered Memory on the logic task: treenets against the official-style reference loop (tests/reference.py) and,
given the folder of a clone of the official code, the official `ordered_memory.py` itself (imported from there:
nothing of it is copied here or committed).

    git clone https://github.com/yikangshen/Ordered-Memory
    python benchmarks/ordered_memory.py --official Ordered-Memory [--batches 4] [--threads 1]

Batches of `configs/om-logic.yaml` (128 training pairs, length-bucketed as training draws them; its sizes: 200,
12 slots, 24 at test), all sides with the same weights. A training step as `proplog.py`'s: forward, cross-entropy,
backward, `clip_grad_norm_` to 1, Adam (betas (0, 0.999)); evaluation: the forward under `torch.no_grad` with
twice the slots, on the same batches. The sides take turns, `--batches` batches at a time, twice; the better
turn of each counts. The official classifier around its `OrderedMemory` is `proplog.py`'s (embedding, the
encoder, the MLP over [a; b; a*b; |a-b|]), rebuilt here because `proplog.py` reads its arguments when imported.

`--profile` prints instead where treenets' step spends its time (torch.profiler, self time per operator, training
and evaluation): how much of it is the matrix products and how much the element-wise work and Python around them.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from reference import ReferenceMemoryClassifier  # noqa: E402 - the reference the tests use

from treenets.config import load_config  # noqa: E402
from treenets.data.logic import LogicBatch  # noqa: E402
from treenets.nn.ordered_memory.convert import classifier_from_official  # noqa: E402
from treenets.tasks import make_task  # noqa: E402

CONFIG = Path(__file__).resolve().parent.parent / "configs" / "om-logic.yaml"


class OfficialClassifier(torch.nn.Module):
    """`proplog.py`'s `Classifier` around the official `OrderedMemory` (the reference's structure and names)."""

    def __init__(self, module, reference: ReferenceMemoryClassifier, args: dict):
        super().__init__()
        self.embedding = reference.embedding
        self.encoder = module.OrderedMemory(args["ninp"], args["nhid"], args["nslot"], dropout=args["dropout"],
                                            dropoutm=args["dropoutm"])
        self.mlp, self.drop = reference.mlp, reference.drop

    def set_slots(self, slots: int) -> None:
        self.encoder.OM_forward.nslot = slots

    def forward(self, tokens):
        vectors = self.encoder(self.drop(self.embedding(tokens)), tokens != self.embedding.padding_idx)
        a, b = vectors.chunk(2)
        return self.mlp(torch.cat([a, b, a * b, (a - b).abs()], 1))


class Reference(torch.nn.Module):
    def __init__(self, reference: ReferenceMemoryClassifier):
        super().__init__()
        self.net = reference

    def set_slots(self, slots: int) -> None:
        self.net.encoder.OM_forward.nslot = slots

    def forward(self, tokens):
        return self.net(tokens)[0]


class Ours(torch.nn.Module):
    def __init__(self, net):
        super().__init__()
        self.net, self.slots = net, None

    def set_slots(self, slots: int) -> None:
        self.slots = slots

    def forward(self, batch: LogicBatch):
        return self.net.classify(self.net.encoder(self.net.dropout(self.net.embedding(batch.tokens)), batch.lengths,
                                                  self.slots).output)


def timed(side, batches, inputs, train: bool, slots: int) -> float:
    """Pairs per second of `side` over `batches` (training steps, or evaluation with `slots` slots)."""
    side.set_slots(slots)
    optimizer = torch.optim.Adam(side.parameters(), lr=1e-3, betas=(0.0, 0.999), eps=1e-9, weight_decay=1.2e-6)
    start = time.perf_counter()
    for batch in batches:
        if train:
            side.train()
            optimizer.zero_grad()
            F.cross_entropy(side(inputs(batch)), batch.labels).backward()
            torch.nn.utils.clip_grad_norm_(side.parameters(), 1.0)
            optimizer.step()
        else:
            side.eval()
            with torch.no_grad():
                side(inputs(batch))
    return sum(batch.size for batch in batches) / (time.perf_counter() - start)


def profiled(side, batches, inputs, train: bool, slots: int, rows: int = 12) -> None:
    """Print the operators that take most of `side`'s self time over `batches` (after one batch of warm-up)."""
    timed(side, batches[:1], inputs, train, slots)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        timed(side, batches, inputs, train, slots)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    print(f"{'train' if train else 'eval'}: {total / len(batches) / 1e3:.0f} ms a batch")
    print(f"  {'operator':42} {'share':>6} {'calls/batch':>11}")
    for e in sorted(events, key=lambda e: -e.self_cpu_time_total)[:rows]:
        print(f"  {e.key[:42]:42} {100 * e.self_cpu_time_total / total:5.1f}% {e.count / len(batches):11.0f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--official", help="a clone of yikangshen/Ordered-Memory (its ordered_memory.py is timed)")
    parser.add_argument("--batches", type=int, default=4, help="batches per turn")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--profile", action="store_true", help="where treenets' step spends its time, no timing")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # as the training loop does on the CPU
    config = load_config(CONFIG)
    task = make_task(config, splits=("train",))
    batches = [task.next_batch() for _ in range(args.batches)]
    model = config.model
    official_args = {"ntoken": len(task.vocab), "ninp": model.emb_size, "nhid": model.hidden_size, "nout": 7,
                     "nslot": model.slots, "dropout": model.dropout, "dropouti": model.dropout_input,
                     "dropouto": model.dropout_output, "dropoutm": model.dropout_memory}
    torch.manual_seed(0)
    reference = ReferenceMemoryClassifier(**official_args)
    sides = {"treenets": (Ours(classifier_from_official(reference.state_dict(), **official_args)),
                          lambda batch: batch),
             "reference": (Reference(reference), lambda batch: batch.tokens)}
    if args.profile:
        for train, slots in ((True, model.slots), (False, 2 * model.slots)):
            profiled(sides["treenets"][0], batches, lambda batch: batch, train, slots)
        return
    if args.official:
        folder = Path(args.official).resolve()
        if not (folder / "ordered_memory.py").is_file():
            sys.exit(f"--official: {folder} has no ordered_memory.py (a clone of yikangshen/Ordered-Memory expected)")
        sys.path.insert(0, str(folder))
        module = importlib.import_module("ordered_memory")
        sides["official"] = (OfficialClassifier(module, ReferenceMemoryClassifier(**official_args), official_args),
                             lambda batch: batch.tokens)
        sides["official"][0].load_state_dict(reference.state_dict())
    print(f"{args.batches} batches of {config.data.batch_size} pairs, {args.threads} thread(s); pairs/s, the better "
          "of two turns", file=sys.stderr)
    for train, slots, what in ((True, model.slots, "train"), (False, 2 * model.slots, "eval")):
        best = dict.fromkeys(sides, 0.0)
        for _ in range(2):
            for name, (side, inputs) in sides.items():
                best[name] = max(best[name], timed(side, batches, inputs, train, slots))
        ratios = "  ".join(f"treenets/{name} {best['treenets'] / best[name]:.2f}x" for name in sides
                           if name != "treenets")
        print(f"{what}: " + "  ".join(f"{name} {value:.1f}" for name, value in best.items()) + f"  {ratios}")


if __name__ == "__main__":
    main()
