"""Where a language-model step's time goes: torch.profiler over a few treenets steps, one row per operator.

Each row is an operator's self time per step (its own work, not that of the operators it calls) and its share
of the step. Inside the compiled kernels the matrix products are ATen calls of their own (`aten::addmm`,
`aten::mm`, ...); the kernels' fused element-wise loops are the self time of the autograd Function that calls
them (`_FusedRecurrence` for ON-LSTM; for PRPN, of the step that calls `kernels.forward`). The last line is the
process's peak resident memory (`ru_maxrss`) after the steps: run one configuration per process to read it.

    python benchmarks/step_profile.py [--config onlstm-paper] [--phase train|eval] [--precision fp32|bf16]
        [--batch 20] [--steps 3] [--rows 14]
"""

from __future__ import annotations

import argparse
import resource

import torch
from lm_throughput import CONFIGS, PRPN_CONFIGS, eval_step, make_models, train_step
from torch.profiler import ProfilerActivity, profile


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    names = [f"onlstm-{s}" for s in CONFIGS] + [f"prpn-{s}" for s in PRPN_CONFIGS]
    parser.add_argument("--config", default="onlstm-paper", choices=names)
    parser.add_argument("--phase", default="train", choices=["train", "eval"])
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    parser.add_argument("--batch", type=int, help="batch size (default: the config's for the phase)")
    parser.add_argument("--steps", type=int, default=3, help="profiled steps (after two warm-up steps)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rows", type=int, default=14, help="operators shown")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)
    torch.manual_seed(0)
    model, _, train_batch, eval_batch, bptt, ar_tar = make_models(args.config)
    step = train_step if args.phase == "train" else eval_step
    batch = args.batch or (train_batch if args.phase == "train" else eval_batch)
    model.train(args.phase == "train")
    tokens = torch.randint(0, 10000, (bptt, batch))
    targets = torch.randint(0, 10000, (bptt, batch))
    opt = torch.optim.SGD(model.parameters(), lr=1.0)
    for _ in range(2):
        step(model, tokens, targets, False, opt, ar_tar, args.precision)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(args.steps):
            step(model, tokens, targets, False, opt, ar_tar, args.precision)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    rows = sorted(events, key=lambda e: -e.self_cpu_time_total)[: args.rows]
    print(f"{args.config} {args.phase} {args.precision}, batch {batch}, bptt {bptt}, {args.threads} threads: "
          f"{total / args.steps / 1e3:.1f} ms per step ({batch * bptt * args.steps / (total / 1e6):.0f} tokens/s)")
    print(f"{'operator':44} {'ms/step':>9} {'share':>6} {'calls/step':>10}")
    for e in rows:
        print(f"{e.key[:44]:44} {e.self_cpu_time_total / args.steps / 1e3:9.1f} "
              f"{100 * e.self_cpu_time_total / total:5.1f}% {e.count / args.steps:10.0f}")
    rest = total - sum(e.self_cpu_time_total for e in rows)
    print(f"{'(all other operators)':44} {rest / args.steps / 1e3:9.1f} {100 * rest / total:5.1f}%")
    print(f"peak resident memory of the process: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
