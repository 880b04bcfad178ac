"""What the fused steps cost before they run: the graphs torch.compile makes and the time of the first steps.

Under the `compile` backend (and `auto` in training on a GPU) each ON-LSTM and PRPN step is compiled by
torch.compile at its first call. This times the first training steps and the first evaluation step of a
language model from `lm_throughput.py`'s configs and counts the graphs compiled (torch._dynamo's
`unique_graphs`): one per layer size in training and one in inference when every step of a sequence looks
alike to the compiler (`treenets.nn.backend.as_step_states`). On the CPU torch compiles to C++ (Inductor), on a
GPU to Triton.

    python benchmarks/compile_warmup.py --configs prpn-small --device cpu
    python benchmarks/compile_warmup.py --configs onlstm-paper prpn-paper --device cuda
"""

from __future__ import annotations

import argparse
import time

import torch
from lm_throughput import eval_step, make_models, train_step
from torch._dynamo.utils import counters

from treenets.nn import backend
from treenets.nn.backend import use_backend


def _timed(step, *args, device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    step(*args)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    names = [f"{m}-{s}" for m in ("onlstm", "prpn") for s in ("paper", "small")]
    parser.add_argument("--configs", nargs="+", default=["onlstm-small", "prpn-small"], choices=names)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--batch-size", type=int, default=4, help="training and evaluation batch (default 4)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(f"torch {torch.__version__}, {device}; seconds; graphs compiled so far")
    print(f"{'config':13} {'train 1':>8} {'train 2':>8} {'graphs':>6} {'eval 1':>7} {'eval 2':>7} {'graphs':>6}")
    for name in args.configs:
        torch._dynamo.reset()
        counters.clear()
        backend._compiled.clear()
        torch.manual_seed(0)
        model, _, _, _, bptt, ar_tar = make_models(name)
        model = model.to(device)
        vocab = model.decoder.out_features
        tokens = torch.randint(0, vocab, (bptt, args.batch_size), device=device)
        targets = torch.randint(0, vocab, (bptt, args.batch_size), device=device)
        opt = torch.optim.SGD(model.parameters(), lr=1.0)
        with use_backend("compile"):
            model.train()
            train = [_timed(train_step, model, tokens, targets, False, opt, ar_tar, device=device) for _ in range(2)]
            train_graphs = counters["stats"]["unique_graphs"]
            model.eval()
            evals = [_timed(eval_step, model, tokens, targets, False, opt, ar_tar, device=device) for _ in range(2)]
        print(f"{name:13} {train[0]:8.1f} {train[1]:8.2f} {train_graphs:6d} {evals[0]:7.1f} {evals[1]:7.2f} "
              f"{counters['stats']['unique_graphs']:6d}", flush=True)


if __name__ == "__main__":
    main()
