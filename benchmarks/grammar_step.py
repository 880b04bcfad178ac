"""Where a grammar's training step goes, beside its bound: the Neural and Compound PCFGs (Kim et al. 2019) at 30/60
symbols and SimplePCFG (Liu et al. 2023) at 256/512, 512/1024 and 1,024/2,048, float32, on one thread and two.

    python benchmarks/grammar_step.py [--json] [--threads 1,2] [--length 30] [--repeats 3] [--backends cpp,torch]
        [--models neural-pcfg:30:60,compound-pcfg:30:60,simple-neural-pcfg:512:1024]

A step is the training step of `treenets train` (the task's loss, its backward, the gradient norm clipped at 3 and
Adam), on a batch of the recipe's size (4 sentences for Kim's grammars, 16 for SimplePCFG's) of `--length` words.
Its parts, measured by the same computation cut where the grammar's tensors are handed to the chart:

    networks   the rule and emission networks (and the Compound PCFG's inference network and z): the grammar
    inside     the inside algorithm, log Z                         (`treenets.nn.chart.inside`)
    outside    its backward: the gradient of the loss for the grammar's tensors
    backprop   the networks' backward from there
    optimizer  the clipping and Adam's step
    rest       the step less the parts (what cutting the step apart does not show: a negative figure is noise)

The bound: every matrix product the step runs (forward and backward; recorded by a `TorchDispatchMode` over one
step: `mm`, `addmm`, `bmm`, `baddbmm`, and the LSTM's products as the products of its gates), each timed alone on
its shapes (and operand layouts) in the same run, at the same thread count: the step's time if everything that is
not a matrix product took none. `ratio` is seconds_per_step / bound_seconds. `--backends` gives the chart's backend
(`cpp`: the compiled kernels where they exist; `torch`: the PyTorch code, their specification); the backends and the
sizes run in turns, the median of `--repeats` steps after a warm-up. `--json` prints one JSON object a line per
(model, size, threads, backend), else a table.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from treenets.nn.backend import use_backend  # noqa: E402
from treenets.nn.chart import Grammar, inside  # noqa: E402
from treenets.nn.compound_pcfg.model import CompoundPCFGConfig  # noqa: E402
from treenets.nn.grammars import gaussian_kl  # noqa: E402
from treenets.nn.neural_pcfg.model import NeuralPCFGConfig  # noqa: E402
from treenets.nn.simple_pcfg.model import SimpleNeuralPCFGConfig  # noqa: E402

VOCAB = 10_000
CONFIGS = {"neural-pcfg": (NeuralPCFGConfig, 4), "compound-pcfg": (CompoundPCFGConfig, 4),
           "simple-neural-pcfg": (SimpleNeuralPCFGConfig, 16)}
DEFAULT_MODELS = ("neural-pcfg:30:60,compound-pcfg:30:60,simple-neural-pcfg:256:512,simple-neural-pcfg:512:1024,"
                  "simple-neural-pcfg:1024:2048")
PARTS = ("networks", "inside", "outside", "backprop", "optimizer")
aten = torch.ops.aten
PRODUCTS = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default}


def cpu_name() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines() if Path("/proc/cpuinfo").exists() else []:
        if line.startswith("model name"):
            flags = Path("/proc/cpuinfo").read_text()
            isa = next((f for f in ("avx512_bf16", "avx512f", "avx2") if f" {f}" in flags), "no AVX2")
            return f"{line.split(':', 1)[1].strip()} ({isa})"
    return platform.processor() or platform.machine()


class ProductLog(TorchDispatchMode):
    """Records the matrix products run under it: (op, operand shapes, which operands are transposed)."""

    def __init__(self):
        super().__init__()
        self.products: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in PRODUCTS:
            operands = [a for a in args if isinstance(a, torch.Tensor)]
            self.products.append((func, tuple(tuple(a.shape) for a in operands),
                                  tuple(a.dim() >= 2 and a.stride(-2) == 1 and a.stride(-1) != 1 for a in operands)))
        elif func in (aten.mkldnn_rnn_layer.default, aten.mkldnn_rnn_layer_backward.default):
            self.products += _lstm_products(args, backward=func is aten.mkldnn_rnn_layer_backward.default)
        return func(*args, **(kwargs or {}))


def _lstm_products(args, backward: bool) -> list[tuple]:
    """One direction of an LSTM layer as products: the input projection of every step at once and each step's
    recurrent product (the backward: their input and weight gradients, the latter one product over the steps)."""
    batch_first = args[21] if backward else args[14]
    steps, batch, width = (args[0].shape[1], args[0].shape[0], args[0].shape[2]) if batch_first else args[0].shape
    gates, hidden = args[1].shape[0], args[2].shape[1]
    mm = aten.mm.default
    plain = (False, False)
    if not backward:
        return [(mm, ((steps * batch, width), (width, gates)), plain)] + \
            [(mm, ((batch, hidden), (hidden, gates)), plain)] * steps
    return [(mm, ((steps * batch, gates), (gates, width)), plain), (mm, ((width, steps * batch),
                                                                        (steps * batch, gates)), plain),
            (mm, ((hidden, steps * batch), (steps * batch, gates)), plain)] + \
        [(mm, ((batch, gates), (gates, hidden)), plain)] * steps


def _operand(shape, transposed: bool) -> torch.Tensor:
    if transposed:
        return torch.randn(*shape[:-2], shape[-1], shape[-2]).transpose(-1, -2)
    return torch.randn(*shape)


def bound_seconds(products: list[tuple], repeats: int) -> tuple[float, float]:
    """The products' time, each distinct one timed alone on its shapes (the median of `repeats` after a warm-up),
    and their GFLOP."""
    counts: dict[tuple, int] = {}
    for product in products:
        counts[product] = counts.get(product, 0) + 1
    total = flops = 0.0
    for (func, shapes, transposed), count in counts.items():
        operands = [_operand(s, t) for s, t in zip(shapes, transposed)]
        func(*operands)
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            func(*operands)
            times.append(time.perf_counter() - start)
        total += count * statistics.median(times)
        a, b = shapes[-2], shapes[-1]
        flops += count * 2.0 * (a[0] if len(a) == 3 else 1) * a[-2] * a[-1] * b[-1]
    return total, flops / 1e9


class Setup:
    """A grammar of `name` at (nt, t) with Adam as its recipe's, and a batch of `batch` sentences of `length` words."""

    def __init__(self, name: str, nt: int, t: int, length: int):
        config, self.batch = CONFIGS[name]
        torch.manual_seed(0)
        self.net = config(nonterminals=nt, preterminals=t).build(VOCAB)
        lr = 2e-3 if name.startswith("simple") else 1e-3
        self.optimizer = torch.optim.Adam(self.net.parameters(), lr=lr, betas=(0.75, 0.999))
        self.tokens = torch.randint(0, VOCAB, (self.batch, length), generator=torch.Generator().manual_seed(1))
        self.lengths = torch.full((self.batch,), length, dtype=torch.long)

    def _finish(self):
        torch.nn.utils.clip_grad_norm_(self.net.parameters(), 3.0)
        self.optimizer.step()

    def step(self) -> None:
        """The training step (the pcfg task's loss, backward, clipping, Adam)."""
        self.optimizer.zero_grad()
        run = self.net(self.tokens, self.lengths)
        (run.nll + run.kl).mean().backward()
        self._finish()

    def parts(self) -> dict[str, float]:
        """The same step cut where the grammar's tensors reach the chart: seconds per part."""
        self.optimizer.zero_grad()
        times = [time.perf_counter()]
        kl = None
        if self.net.z_dim:
            mean, logvar = self.net.encode(self.tokens, self.lengths)
            kl = gaussian_kl(mean, logvar)
            grammar = self.net.grammar(self.tokens, mean + (0.5 * logvar).exp() * torch.randn_like(mean))
        else:
            grammar = self.net.grammar(self.tokens)
        tensors = [x for x in (grammar.roots, grammar.terms, grammar.rules, grammar.left, grammar.right)
                   if x is not None]
        leaves = [x.detach().requires_grad_() for x in tensors]
        times.append(time.perf_counter())
        fields = iter(leaves)
        cut = Grammar(*(None if x is None else next(fields)
                        for x in (grammar.roots, grammar.terms, grammar.rules, grammar.left, grammar.right)))
        log_z = inside(cut, self.lengths)
        times.append(time.perf_counter())
        grads = torch.autograd.grad(-log_z.mean(), leaves)
        times.append(time.perf_counter())
        torch.autograd.backward(tensors + ([kl.mean()] if kl is not None else []),
                                list(grads) + ([None] if kl is not None else []))
        times.append(time.perf_counter())
        self._finish()
        times.append(time.perf_counter())
        return {part: b - a for part, a, b in zip(PARTS, times, times[1:])}


def measure(name: str, nt: int, t: int, length: int, threads: int, backends: list[str], repeats: int) -> list[dict]:
    torch.set_num_threads(threads)
    setup = Setup(name, nt, t, length)
    rows = []
    for backend in backends:
        with use_backend(backend):
            setup.step()  # warm-up (and the kernels' build)
            log = ProductLog()
            with log:
                setup.step()
            steps, parts = [], []
            for _ in range(repeats):  # the whole step and its parts in turns
                start = time.perf_counter()
                setup.step()
                steps.append(time.perf_counter() - start)
                parts.append(setup.parts())
        bound, gflop = bound_seconds(log.products, repeats)
        seconds = statistics.median(steps)
        split = {part: statistics.median(p[part] for p in parts) for part in PARTS}
        rows.append({"model": name, "nonterminals": nt, "preterminals": t, "threads": threads, "backend": backend,
                     "batch": setup.batch, "length": length, "seconds_per_step": round(seconds, 4),
                     "bound_seconds": round(bound, 4), "ratio": round(seconds / bound, 2),
                     "product_gflop": round(gflop, 2), "products": len(log.products),
                     **{f"{part}_seconds": round(v, 4) for part, v in split.items()},
                     "rest_seconds": round(seconds - sum(split.values()), 4), "cpu": cpu_name(),
                     "torch": torch.__version__})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", default=DEFAULT_MODELS, help="model:NT:T, comma-separated")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--length", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--backends", default="cpp,torch")
    parser.add_argument("--json", action="store_true", help="one JSON object a line")
    args = parser.parse_args()
    torch.set_flush_denormal(True)
    backends = args.backends.split(",")
    if not args.json:
        print(f"{cpu_name()}, torch {torch.__version__}, float32, batches of the recipe's size of {args.length} words")
        print("| model | NT/T | threads | backend | s/step | bound s | ratio | networks | inside | outside | backprop "
              "| optimizer | rest |")
        print("| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for threads in map(int, args.threads.split(",")):
        for spec in args.models.split(","):
            name, nt, t = spec.split(":")
            for row in measure(name, int(nt), int(t), args.length, threads, backends, args.repeats):
                if args.json:
                    print(json.dumps(row), flush=True)
                else:
                    print(f"| {name} | {nt}/{t} | {threads} | {row['backend']} | {row['seconds_per_step']:.3f} | "
                          f"{row['bound_seconds']:.3f} | {row['ratio']:.2f} | "
                          + " | ".join(f"{row[f'{p}_seconds']:.3f}" for p in (*PARTS, "rest")) + " |", flush=True)


if __name__ == "__main__":
    main()
