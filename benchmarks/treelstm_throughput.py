"""Tree-LSTM throughput on SICK: level-batched (treenets) versus one node at a time (the official style).

SICK training pairs with their dependency trees, the model and optimizer of
`configs/treelstm-sick-dependency.yaml` (Child-Sum Tree-LSTM, 300-d GloVe held fixed, memory 150, similarity
head of 50, Adagrad), 2 threads. The reference (tests/reference.py, which the tests check too) is written the
way the official PyTorch port runs: recursion over one tree, one node at a time, one pair at a time, gradients
accumulated over 25 pairs before an optimizer step; inference one pair at a time under `torch.no_grad`. treenets
runs 25 pairs (50 trees) per batch, all the nodes of one height at once, in the ways `--levels` names
(`treenets.nn.treelstm.batch.level_schedule`): `exact` levels (each its own size), `padded` levels (sizes rounded up
to a few shapes) and `captured` (padded, the level loop replayed as CUDA graphs; CUDA only). The ways take
turns, 100 pairs at a time; before the timing every way runs the pairs once (`captured` twice: a padded shape is
captured at its second batch), so that what is timed is the replays, not the captures. Also: a full SICK
training epoch (Child-Sum) and a full SST training epoch (`configs/treelstm-sst-fine.yaml`: binary Tree-LSTM,
classifier on every node), in seconds, the levels as the device's default runs them.

    python benchmarks/treelstm_throughput.py [--pairs 500] [--threads 2] [--device cuda] [--backend compile]
        [--levels exact padded captured]   # default: all three on CUDA, exact on the CPU
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from reference import reference_child_sum  # noqa: E402 - the reference the tests use

from treenets.config import load_config  # noqa: E402
from treenets.core.optim import make_optimizer  # noqa: E402
from treenets.data import data_root  # noqa: E402
from treenets.data.sick import PairBatch  # noqa: E402
from treenets.nn.backend import long_job, set_backend  # noqa: E402
from treenets.nn.treelstm.batch import LEVEL_SCHEDULES, use_levels  # noqa: E402
from treenets.nn.treelstm.level_graphs import graphed_levels  # noqa: E402
from treenets.tasks.relatedness import RelatednessTask, sparse_target  # noqa: E402
from treenets.tasks.sentiment import SentimentTask  # noqa: E402

CONFIGS = Path(__file__).resolve().parent.parent / "configs"
LEVEL_WAYS = {"exact": "level-batched", "padded": "padded levels", "captured": "captured levels"}


def reference_pair(model, pair, task):
    """Log-probabilities of one pair, the official way: recursion, node by node (same weights as `model`)."""
    device = model.emb.weight.device
    roots = [reference_child_sum(model.encoder, tree,
                                 model.emb(torch.tensor(task.vocab.encode(tree.words)[0], device=device)))[1]
             for tree in (pair.left, pair.right)]
    return model.compare(roots[0][None], roots[1][None])


@long_job()  # the kernels it times are built where they are not yet (inference alone runs the PyTorch code)
def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=500, help="SICK training pairs timed per way")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--backend", default="auto", choices=["auto", "torch", "cpp", "compile"],
                        help="treenets backend (default: auto)")
    parser.add_argument("--levels", nargs="+", choices=LEVEL_SCHEDULES,
                        help="how the batches run their levels (default: all three on CUDA, exact on the CPU)")
    parser.add_argument("--no-epochs", action="store_true", help="time the pairs only, not the full epochs")
    args = parser.parse_args()
    on_cuda = torch.device(args.device).type == "cuda"
    levels = args.levels or (LEVEL_SCHEDULES if on_cuda else ["exact"])
    if "captured" in levels and not on_cuda:
        parser.error("--levels captured: CUDA graphs need --device cuda")
    set_backend(args.backend)
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # as the training loop does on the CPU
    root = data_root()
    config = load_config(CONFIGS / "treelstm-sick-dependency.yaml")
    task = RelatednessTask(config, root=str(root), splits=("train",))
    torch.manual_seed(0)
    model = task.build_model().to(args.device)
    pairs = task.pairs["train"][: args.pairs]
    nodes = sum(p.left.size + p.right.size for p in pairs)
    opt = make_optimizer(config.optim, model, "adagrad")

    def train_reference(chunk):
        opt.zero_grad()
        for k, pair in enumerate(chunk):
            target = sparse_target(torch.tensor([pair.score]), 5).to(args.device)
            F.kl_div(reference_pair(model, pair, task), target, reduction="batchmean").backward()
            if (k + 1) % 25 == 0:
                opt.step()
                opt.zero_grad()

    def train_batched(chunk):
        for start in range(0, len(chunk), 25):
            batch = PairBatch.build(chunk[start : start + 25], task.vocab)
            opt.zero_grad()
            task.train_loss(model, batch)[0].backward()
            opt.step()

    def infer_reference(chunk):
        with torch.no_grad():
            for pair in chunk:
                reference_pair(model, pair, task)

    def infer_batched(chunk):
        task.predict(model, chunk, batch_size=25)

    def in_levels(schedule, way):
        def run(chunk):
            with use_levels(schedule):
                way(chunk)
        return run

    rows = []
    for phase, reference, batched in (("train", train_reference, train_batched),
                                      ("inference", infer_reference, infer_batched)):
        model.train(phase == "train")
        ways = [reference] + [in_levels(schedule, batched) for schedule in levels]
        for schedule, way in zip(levels, ways[1:]):  # warm-up: kernels built, compiled, graphs captured
            for _ in range(2 if schedule == "captured" else 1):
                way(pairs)
        seconds = [0.0] * len(ways)
        for start in range(0, len(pairs), 100):  # the ways take turns, 100 pairs each
            for k, way in enumerate(ways):
                _synchronize(args.device)
                began = time.perf_counter()
                way(pairs[start : start + 100])
                _synchronize(args.device)
                seconds[k] += time.perf_counter() - began
        rows.append((phase, seconds))
    where = torch.cuda.get_device_name(args.device) if on_cuda else f"{args.threads} threads"
    print(f"torch {torch.__version__}, {where}, backend {args.backend}, {len(pairs)} SICK pairs ({nodes} nodes), "
          "batch 25, Child-Sum 300/150/50")
    print(f"{'phase':10} {'way':16} {'pairs/s':>9} {'nodes/s':>9} {'ratio':>6}")
    for phase, (t_ref, *t_ours) in rows:
        print(f"{phase:10} {'one at a time':16} {len(pairs) / t_ref:9.1f} {nodes / t_ref:9.0f} {'':>6}")
        for schedule, t in zip(levels, t_ours):
            print(f"{phase:10} {LEVEL_WAYS[schedule]:16} {len(pairs) / t:9.1f} {nodes / t:9.0f} {t_ref / t:6.1f}")
    if "captured" in levels:
        graphed = graphed_levels(model.encoder)
        print(f"{graphed.forward.summary()}; {graphed.backward.summary()}")
    if args.no_epochs:
        return
    task = RelatednessTask(config, root=str(root), splits=("train",))
    model = task.build_model().to(args.device).train()
    opt = make_optimizer(config.optim, model, "adagrad")
    seconds = _timed(lambda: _epoch(task, model, opt), args.device)
    print(f"full SICK training epoch ({len(task.pairs['train'])} pairs, Child-Sum): {seconds:.1f} s")
    config = load_config(CONFIGS / "treelstm-sst-fine.yaml")
    sst = SentimentTask(config, root=str(root), splits=("train",))
    model = sst.build_model().to(args.device).train()
    opt = make_optimizer(config.optim, model, "adagrad")
    seconds = _timed(lambda: _epoch(sst, model, opt), args.device)
    print(f"full SST training epoch ({len(sst.trees['train'])} trees, binary Tree-LSTM, fine-grained): {seconds:.1f} s")


def _timed(fn, device) -> float:
    start = time.perf_counter()
    fn()
    _synchronize(device)
    return time.perf_counter() - start


def _synchronize(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def _epoch(task, model, opt):
    while (batch := task.next_batch()) is not None:
        opt.zero_grad()
        task.train_loss(model, batch)[0].backward()
        opt.step()


if __name__ == "__main__":
    main()
