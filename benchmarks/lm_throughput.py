"""Language-model throughput: treenets versus plain references written in the official style.

The references (tests/reference.py, which the tests check too) are the same models written the way the
official code runs them. ON-LSTM: the input
projection of a layer for all steps at once, then a Python loop over time steps calling the cell. PRPN: the
parsing network over all steps, then a loop over time steps and, inside it, over the reading layers and the
predict network's attention, each projecting its inputs step by step. Autograd records every step in
training; evaluation runs under `torch.no_grad` (which the official evaluation does not use, so the
references evaluate faster than the official code and the ratios are conservative). The references are
initialised like the official models, and denormal numbers are flushed to zero for both sides, as
`treenets train` does (without it, tiny gradients slow the references' matrix products several times over).
Both sides run the same batch size and BPTT length with 2 threads; the table gives the median tokens/s over
several steps (taken in turns) and the ratio treenets / reference, for each backend and precision asked for
(treenets.nn.backend: on a GPU, `torch` is the plain PyTorch step loop and `compile` the steps fused by
torch.compile; treenets.nn.precision: `bf16` runs the forward's matrix products in bfloat16, the reference
stays fp32 as the official code). The last columns put the fastest treenets column against the machine: the
matrix-product FLOPs of one step (counted by torch's FlopCounterMode on the reference, forward and backward:
the work both sides do) times its steps per second, in GFLOP/s and as a percentage of the rate of a large
matrix product in that column's precision, measured in the same run. The last two say how far fp32 can go
against the reference: `floor ms` is the time of an ON-LSTM step's per-time-step recurrent products alone in
fp32 as the kernels run them (`recurrent_floor`: they run one after another whatever the implementation; none for
PRPN), and `bound`
the reference's step time over the fastest an fp32 step doing the reference's work could be: that floor, plus the
step's other matrix-product FLOPs at the fp32 peak measured in the same run. (PRPN's training step skips the
products of the features its recurrent dropout drops, so it may pass that bound.)
"""

from __future__ import annotations

import argparse
import copy
import math
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

from treenets.nn.backend import kernels, long_job, use_backend
from treenets.nn.graphs import EvaluationWindows, TrainingWindows, capture_refusal
from treenets.nn.precision import autocast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from reference import ReferenceLM, ReferencePRPN  # noqa: E402 - the references the tests use

from treenets.nn.lstm.model import LSTMLanguageModel  # noqa: E402
from treenets.nn.onlstm.model import ONLSTMLanguageModel  # noqa: E402
from treenets.nn.prpn.model import PRPNLanguageModel  # noqa: E402

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
AWD_DROPOUTS = (0.4, 0.25, 0.4, 0.1, 0.5)  # AWD-LSTM's PTB run: dropout, dropouth, dropouti, dropoute, wdrop
VOCAB = 10000


# --- timing ----------------------------------------------------------------------------------------------
def make_models(name: str):
    """(treenets model, reference model, train batch, eval batch, bptt, use AR/TAR) for a benchmark entry."""
    model, size = name.split("-")
    if model == "onlstm":
        emb, hid, layers, chunk, batch, eval_batch, bptt, dropout, dropouth, dropouti, dropoute, wdrop = CONFIGS[size]
        ours = ONLSTMLanguageModel(VOCAB, emb, hid, layers, chunk, dropout, dropouth, dropouti, dropoute, wdrop)
        ref = ReferenceLM(VOCAB, emb, hid, layers, chunk, dropout, dropouth, dropouti, dropoute, wdrop)
        return ours, ref, batch, eval_batch, bptt, True
    if model == "lstm":  # the reference: the same cuDNN layers run from Python, as AWD-LSTM's code runs them
        emb, hid, layers, _, batch, eval_batch, bptt, *_ = CONFIGS[size]
        ours = LSTMLanguageModel(VOCAB, emb, hid, layers, *AWD_DROPOUTS)
        return ours, copy.deepcopy(ours), batch, eval_batch, bptt, True
    emb, hid, layers, slots, lookback, batch, eval_batch, bptt, dropout, idropout, rdropout = PRPN_CONFIGS[size]
    ours = PRPNLanguageModel(VOCAB, emb, hid, layers, slots, lookback, 0.1, dropout, idropout, rdropout)
    ref = ReferencePRPN(VOCAB, emb, hid, layers, slots, lookback, dropout, idropout, rdropout)
    return ours, ref, batch, eval_batch, bptt, False


def losses_of(model, tokens, targets, reference, ar_tar=True):
    """(loss to minimise: the cross-entropy, plus AR and TAR where `ar_tar`; the cross-entropy)."""
    if reference:
        output, last = model(tokens)
    else:
        out = model(tokens)
        output, last = out.output, out.last_layer
    logits = model.decoder(output)
    xent = F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))
    if not ar_tar:
        return xent, xent
    return xent + 2.0 * last.pow(2).mean() + 1.0 * (last[1:] - last[:-1]).pow(2).mean(), xent


def loss_of(model, tokens, targets, reference, ar_tar=True):
    return losses_of(model, tokens, targets, reference, ar_tar)[0]


def train_step(model, tokens, targets, reference, opt, ar_tar, precision="fp32"):
    opt.zero_grad()
    with autocast(precision, tokens.device):
        loss = loss_of(model, tokens, targets, reference, ar_tar)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
    opt.step()


def eval_step(model, tokens, targets, reference, _opt, ar_tar, precision="fp32"):
    # The official evaluate() keeps autograd on; the reference is given torch.no_grad all the same, which
    # makes it faster than the official code and the ratio a conservative one.
    with torch.no_grad(), autocast(precision, tokens.device):
        loss_of(model, tokens, targets, reference, ar_tar).item()


class Side:
    """One side of a comparison: a model run one way (`train(tokens, targets)` / `evaluate(tokens, targets)`), with a
    name for the table. treenets under `auto` on CUDA runs its windows as CUDA graphs (`treenets.nn.graphs`), as
    `treenets train` and `treenets eval` do; every other side runs `train_step` / `eval_step` step by step."""

    def __init__(self, name, model, reference, backend="torch", precision="fp32", ar_tar=True, device="cpu"):
        self.name, self.model, self.reference, self.backend, self.precision = name, model, reference, backend, precision
        self.ar_tar, self.optimizer = ar_tar, torch.optim.SGD(model.parameters(), lr=1.0)
        with use_backend(backend):
            captured = not reference and capture_refusal(torch.device(device)) is None
        self.windows = self.evaluation = None
        if captured:
            self.windows = TrainingWindows(model, self.optimizer, self._window_loss, 0.25, precision)
            self.evaluation = EvaluationWindows(model, self._evaluation_window)

    def _window_loss(self, model, tokens, targets, _state):  # every window from the initial state, as train_step
        return (*losses_of(model, tokens, targets, False, self.ar_tar), [])

    def _evaluation_window(self, model, tokens, targets, _state):
        return loss_of(model, tokens, targets, False, ar_tar=False) * targets.numel(), []

    def train(self, tokens, targets):
        with use_backend(self.backend):
            if self.windows is None:
                return train_step(self.model, tokens, targets, self.reference, self.optimizer, self.ar_tar,
                                  self.precision)
            self.model.train()
            xent, norm, _ = self.windows.forward_backward(tokens, targets, [])
            if not (math.isfinite(xent.item()) and math.isfinite(norm.item())):  # the check treenets train makes
                raise RuntimeError("loss or gradient norm not finite")
            self.windows.step()

    def evaluate(self, tokens, targets):
        with use_backend(self.backend):
            if self.evaluation is None:
                return eval_step(self.model, tokens, targets, self.reference, None, self.ar_tar, self.precision)
            self.model.eval()
            with torch.no_grad(), autocast(self.precision, tokens.device):
                self.evaluation(tokens, targets, [])[0].item()


class OfficialSide(Side):
    """The official code (`official.py`), run as its scripts run it."""

    def __init__(self, name, official):
        self.name, self.official, self.model = name, official, official.model

    def train(self, tokens, targets):
        self.official.train_step(tokens, targets)

    def evaluate(self, tokens, targets):
        self.official.eval_step(tokens, targets)


def measure(sides, phase, batch, bptt, steps, device):
    """Tokens/s of each side in `phase` ("train" or "eval"), median over `steps` timed steps. The sides take
    turns step by step, so that a slow spell of the machine affects all alike."""
    tokens = torch.randint(0, VOCAB, (bptt, batch), device=device)
    targets = torch.randint(0, VOCAB, (bptt, batch), device=device)
    times = [[] for _ in sides]
    for i in range(steps + 3):
        for k, side in enumerate(sides):
            _synchronize(device)
            start = time.perf_counter()
            (side.train if phase == "train" else side.evaluate)(tokens, targets)
            _synchronize(device)
            if i >= 3:  # the first three steps warm up (compile; capture the windows at their second call)
                times[k].append(time.perf_counter() - start)
    return [batch * bptt / statistics.median(t) for t in times]


def step_flops(model, step, batch, bptt, ar_tar, device, reference=True) -> int:
    """The matrix-product FLOPs of one step of the reference `model` (forward, and backward for training)."""
    from torch.utils.flop_counter import FlopCounterMode

    tokens = torch.randint(0, VOCAB, (bptt, batch), device=device)
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    model.train(step is train_step)
    with FlopCounterMode(display=False) as counter:
        step(model, tokens, tokens, reference, opt, ar_tar)
    return counter.get_total_flops()


def recurrent_floor(model, step, batch, bptt, steps, device) -> tuple[float, int]:
    """Seconds per step of an ON-LSTM's per-time-step recurrent products alone in fp32, and their FLOPs: in every
    layer `bptt` products h_{t-1} U^T at this batch, one after another as the recurrence orders them, and in
    training as many products d_pre U (the gradient towards h_{t-1}). They run as the compiled kernels run
    them: on a weight packed once per sequence where the kernels pack (`PackedWeight`: small batches, long
    enough sequences; the packing counted), else torch's product. Every fp32 step spends at least this time.
    (0, 0) for other models."""
    if not isinstance(model, ONLSTMLanguageModel):
        return 0.0, 0
    weights = [m.hh.weight.detach() for m in model.modules() if isinstance(getattr(m, "hh", None), torch.nn.Linear)]
    products = 2 if step is train_step else 1
    compiled = kernels("packed_gemm") if torch.device(device).type == "cpu" else None
    packed = compiled is not None and compiled.packed_products(bptt, batch)
    times = []
    for i in range(steps + 1):
        _synchronize(device)
        start = time.perf_counter()
        for w in weights:
            h, out = torch.randn(batch, w.size(1), device=device), torch.empty(batch, w.size(0), device=device)
            if packed:
                forward = compiled.PackedWeight(w, transposed=True)
                for _ in range(bptt):
                    out = forward.multiply(h)
                if products == 2:
                    backward = compiled.PackedWeight(w, transposed=False)
                    for _ in range(bptt):
                        h = backward.multiply(out)
                continue
            for _ in range(bptt):
                torch.mm(h, w.t(), out=out)
            for _ in range(bptt * (products - 1)):
                torch.mm(out, w, out=h)
        _synchronize(device)
        if i:
            times.append(time.perf_counter() - start)
    return statistics.median(times), sum(products * bptt * 2 * batch * w.numel() for w in weights)


def gemm_peak(device, precision="fp32", size=2048, repeats=5) -> float:
    """GFLOP/s of a size x size x size matrix product in `precision` (fp32, bf16, or tf32: float32 operands on a
    GPU's tensor cores, which treenets and the official code do not use): the rate the machine reaches on dense
    work."""
    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    if torch.device(device).type == "cuda":
        size = 8192  # a GPU's peak needs a larger product
    a, b = (torch.randn(size, size, device=device, dtype=dtype) for _ in range(2))
    times = []
    tf32 = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
    try:
        for i in range(repeats + 1):
            _synchronize(device)
            start = time.perf_counter()
            a @ b
            _synchronize(device)
            if i:
                times.append(time.perf_counter() - start)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = tf32
    return 2 * size**3 / statistics.median(times) / 1e9


def _synchronize(device):
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


def official_side(name, args, device):
    """The official code's side for benchmark entry `name`, when its folder was given; else None."""
    import official

    model, size = name.split("-")
    folder = {"onlstm": args.official_onlstm, "prpn": args.official_prpn}.get(model)
    if folder is None:
        return None
    if model == "onlstm":
        emb, hid, layers, chunk, _, _, _, dropout, dropouth, dropouti, dropoute, wdrop = CONFIGS[size]
        code = official.OfficialONLSTM(folder, VOCAB, emb, hid, layers, chunk, dropout, dropouth, dropouti, dropoute,
                                       wdrop, device)
    else:
        emb, hid, layers, slots, lookback, _, _, _, dropout, idropout, rdropout = PRPN_CONFIGS[size]
        code = official.OfficialPRPN(folder, VOCAB, emb, hid, layers, slots, lookback, dropout, idropout, rdropout,
                                     device)
    return OfficialSide("official", code)


@long_job()  # the kernels it times are built where they are not yet (inference alone runs the PyTorch code)
def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    names = [f"{m}-{s}" for m in ("onlstm", "prpn", "lstm") for s in ("paper", "small")]
    parser.add_argument("--configs", nargs="+", default=names, choices=names)
    parser.add_argument("--steps", type=int, default=5, help="timed steps per measurement (median)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--backends", nargs="+", default=["auto"], choices=["auto", "torch", "cpp", "compile"],
                        help="treenets backends to time, each against the reference (default: auto)")
    parser.add_argument("--precisions", nargs="+", default=["fp32", "bf16"], choices=["fp32", "bf16"],
                        help="treenets precisions to time, each with every backend (default: fp32 bf16)")
    parser.add_argument("--batch-sizes", nargs="+", type=int, metavar="B",
                        help="time training and evaluation at these batch sizes (default: each config's own)")
    parser.add_argument("--phases", nargs="+", default=["train", "eval"], choices=["train", "eval"])
    parser.add_argument("--official-onlstm", metavar="DIR", help="a clone of yikangshen/Ordered-Neurons: its code "
                        "is timed too, and the ratios are given against it (official.py)")
    parser.add_argument("--official-prpn", metavar="DIR", help="a clone of yikangshen/PRPN, likewise")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)
    cuda = args.device.startswith("cuda")
    where = torch.cuda.get_device_name(args.device) if cuda else f"{args.threads} threads"
    peaks = {p: gemm_peak(args.device, p) for p in args.precisions}
    if cuda and "fp32" in peaks:
        peaks["tf32"] = gemm_peak(args.device, "tf32")
    print(f"torch {torch.__version__}, {where}, median of {args.steps} steps, tokens/s; GEMM peak "
          + ", ".join(f"{p} {peak:.0f} GFLOP/s" for p, peak in peaks.items()), flush=True)
    variants = [(b, p) for b in args.backends for p in args.precisions]
    for name in args.configs:
        torch.manual_seed(0)
        ours, ref, batch, eval_batch, bptt, ar_tar = make_models(name)
        ours, ref = ours.to(args.device), ref.to(args.device)
        official = official_side(name, args, args.device)
        plain = name.startswith("lstm")  # its reference is a treenets model run step by step (backend torch)
        reference = Side("reference", ref, not plain, ar_tar=ar_tar, device=args.device)
        base = official or reference
        sides = [base] + ([reference] if official else [])
        sides += [Side(f"{b} {p}", ours, False, b, p, ar_tar, args.device) for b, p in variants]
        columns = "".join(f" {side.name:>12} {'ratio':>6}" for side in sides[1:])
        print(f"{'config':13} {'phase':6} {'batch':>5} {'bptt':>4} {base.name:>10}{columns} {'GFLOP/s':>8} "
              f"{'%peak':>6}{' %tf32' if 'tf32' in peaks else ''} {'floor ms':>8} {'bound':>6}", flush=True)
        for phase, step, sizes in (("train", train_step, args.batch_sizes or [batch]),
                                   ("eval", eval_step, args.batch_sizes or [eval_batch])):
            if phase not in args.phases:
                continue
            for size in sizes:
                r, *ts = measure(sides, phase, size, bptt, args.steps, args.device)
                cells = "".join(f" {t:12.0f} {t / r:6.2f}" for t in ts)
                ours_rates = ts[1:] if official else ts
                fastest = max(range(len(ours_rates)), key=ours_rates.__getitem__)
                flops = step_flops(ref, step, size, bptt, ar_tar, args.device, not plain)
                gflops = flops * ours_rates[fastest] / (size * bptt) / 1e9
                share = 100 * gflops / peaks[variants[fastest][1]]
                tf32 = f" {100 * gflops / peaks['tf32']:5.1f}" if "tf32" in peaks else ""
                bound = ""
                if "fp32" in peaks:
                    floor, floor_flops = recurrent_floor(ours, step, size, bptt, args.steps, args.device)
                    fastest_fp32 = floor + (flops - floor_flops) / (peaks["fp32"] * 1e9)
                    floor_ms = f"{floor * 1e3:8.1f}" if floor else f"{'-':>8}"
                    bound = f" {floor_ms} {size * bptt / r / fastest_fp32:6.2f}"
                print(f"{name:13} {phase:6} {size:5d} {bptt:4d} {r:10.0f}{cells} {gflops:8.1f} {share:6.1f}{tf32}"
                      f"{bound}", flush=True)


if __name__ == "__main__":
    main()
