"""Language-model windows replayed as CUDA graphs: a whole training window (the forward over its BPTT steps, the
loss, the backward and the clipping, then the optimiser's step) or evaluation window launched as one graph.

Why: a window of the ON-LSTM's paper config is 70 steps x 3 layers of recurrent steps, forward and backward, each
a few small kernels; run from Python, the GPU waits between hundreds of launches and does a few microseconds of
work after each. Captured once (`torch.cuda.graph`), a window's kernels are launched by the driver back to back.

How (`GraphedWindows`): a function of tensors, `window(*inputs) -> tuple of tensors`, is called as is the first
time a key comes (the key: its inputs' shapes and dtypes, the grad and autocast modes, the backend, the
parameters' addresses, and what the caller adds, such as the learning rates an optimiser's step bakes in). That
call is the warm-up: it compiles the fused steps (`treenets.nn.backend`) and creates the optimiser's state. The
second time, the function is captured into a graph with static input buffers, and replayed from then on: the
inputs are copied into the buffers, the graph replayed, and its static outputs returned. A key that comes once
(the last, shorter window of an evaluation) is never captured. The graphs of one `GraphedWindows` share one
memory pool: they run one after another, never at once, so the pool holds about one window's intermediates, not
the sum over window lengths; hence a graph's outputs are valid until the next replay of any graph of the same
`GraphedWindows` (a caller carries the state on by handing the outputs back in: they are copied into the next
graph's buffers before it replays).

What a captured function may do: device work only (no `.item()`, no Python number read from a tensor); it reads
and writes only tensors that outlive it (parameters, gradients accumulated in place, optimiser state, its inputs
and outputs). Random numbers come from the CUDA generator, whose offset a replay advances by what the eager call
took, so the dropout masks are drawn afresh at every replay, from the same stream as the eager code would.
Where a capture fails (an operation CUDA graphs cannot hold), the function runs as is from then on, and the
reason is printed once.

`TrainingWindows` and `EvaluationWindows` apply it to the language models' windows
(`treenets.workflows.training.trainer`, `treenets.tasks.lm`); `capture_refusal` says where it applies: CUDA,
the `auto` backend, one process.
"""

from __future__ import annotations

import math
import time
import weakref
from collections import Counter
from collections.abc import Callable, Sequence

import torch

from treenets.core.console import note
from treenets.core.errors import TreenetsError
from treenets.nn.backend import get_backend
from treenets.nn.precision import autocast, product_dtype

Window = Callable[..., tuple[torch.Tensor, ...]]


def capture_refusal(device: torch.device, world: int = 1) -> str | None:
    """Why a language model's windows on `device` are not captured as CUDA graphs (None: they are). Only CUDA
    devices take graphs (no reason given elsewhere: ''); the `auto` backend captures, `compile` and `torch` run
    the steps from Python (the fused steps alone, or the PyTorch code: the comparisons the tests and benchmarks
    make); under torchrun DistributedDataParallel's gradient hooks are left to run eagerly."""
    if device.type != "cuda":
        return ""
    if get_backend() != "auto":
        return f"backend {get_backend()}: windows run step by step from Python (auto captures them)"
    if world > 1:
        return f"{world} processes: DistributedDataParallel's windows run from Python"
    return None


def cuda_capture(window: Window, inputs: Sequence[torch.Tensor], pool):
    """Capture `window(*inputs)` into a CUDA graph sharing memory pool `pool` (None: a new one): (replay, pool),
    where `replay()` runs the captured work again on the same input buffers and returns its outputs (the same
    tensors every time, rewritten). A capture records the work without doing it.

    Raises:
        CaptureFailed: `window` did what a graph cannot hold (the first error inside it is named); the CUDA
            generator, which the failed capture left expecting a capture's random draws, is given a fresh state
            with the same seed and offset (`_release_generator`).
    """
    graph = torch.cuda.CUDAGraph()
    torch.cuda.synchronize()
    try:
        with torch.cuda.graph(graph, pool=pool):
            outputs = tuple(window(*inputs))
    except Exception as exc:
        cause = exc
        while cause.__context__ is not None:  # the error inside the window, not capture_end's "previous error"
            cause = cause.__context__
        del graph
        _release_generator(inputs[0].device)
        raise CaptureFailed(str(cause).splitlines()[0] if str(cause) else type(cause).__name__) from exc

    def replay():
        graph.replay()
        return outputs

    return replay, graph.pool()


class CaptureFailed(RuntimeError):
    """A window could not be captured as a CUDA graph."""


def _release_generator(device: torch.device) -> None:
    """After a failed capture: the CUDA generator of `device` in a fresh state (the same seed and offset), since
    the failed capture never ended its own, and every graph captured before forgotten (`_forget_all_graphs`): those
    draw from the old state, which no longer follows the generator's offset."""
    generator = torch.cuda.default_generators[device.index if device.index is not None else 0]
    if not hasattr(generator, "graphsafe_set_state"):  # torch < 2.4
        raise TreenetsError("a window could not be captured as a CUDA graph, and this version of torch cannot "
                            "restore its random generator after that: run with TREENETS_BACKEND=compile")
    generator.graphsafe_set_state(generator.clone_state())
    _forget_all_graphs()


_live: weakref.WeakSet = weakref.WeakSet()  # every GraphedWindows of the process


def _forget_all_graphs() -> None:
    for windows in list(_live):
        windows.graphs.clear()


class _Graph:
    """One captured key: its input buffers and the replay."""

    def __init__(self, inputs, replay):
        self.inputs, self.replay = inputs, replay

    def __call__(self, inputs: Sequence[torch.Tensor]) -> tuple[torch.Tensor, ...]:
        for buffer, value in zip(self.inputs, inputs):
            if buffer is not value:
                buffer.copy_(value)
        return self.replay()


class GraphedWindows:
    """Calls of `window` replayed as CUDA graphs, one per key, captured at a key's second call (module docstring).

    Args:
        window: a function of tensors returning a tuple of tensors; device work only.
        what: what the windows are, for the printed lines ("training windows").
        parameters: the tensors `window` reads besides its inputs (their addresses join the key, so that weights
            moved or replaced are never read through a stale graph).
        capture: how a graph is captured (`cuda_capture`; the tests pass one that replays by calling again).
    """

    def __init__(self, window: Window, what: str, parameters: Sequence[torch.Tensor] = (), capture=cuda_capture):
        self.window, self.what, self.parameters, self.capture = window, what, list(parameters), capture
        self.graphs: dict = {}
        self.calls: Counter = Counter()
        self.pool = None
        self.failure: str | None = None
        self.capture_seconds: list[float] = []
        self.pool_bytes = 0
        _live.add(self)

    def key(self, inputs: Sequence[torch.Tensor], extra=()) -> tuple:
        device = (list(inputs) or self.parameters)[0].device.type
        return (tuple((tuple(x.shape), x.dtype) for x in inputs), torch.is_grad_enabled(), product_dtype(device),
                get_backend(), tuple(p.data_ptr() for p in self.parameters), extra)

    def __call__(self, *inputs: torch.Tensor, extra=()) -> tuple[torch.Tensor, ...]:
        """`window(*inputs)`, replayed from a graph once the key of these inputs (and `extra`) has come before."""
        key = self.key(inputs, extra)
        graph = self.graphs.get(key)
        if graph is not None:
            return graph(inputs)
        self.calls[key] += 1
        if self.calls[key] == 1 or self.failure is not None:
            return self.window(*inputs)
        graph = self._capture(inputs)
        if graph is None:
            return self.window(*inputs)
        self.graphs[key] = graph
        return graph(inputs)  # the capture did not do the work: this call's is the first replay

    def _capture(self, inputs) -> _Graph | None:
        buffers = [x.detach().clone() for x in inputs]
        start = time.perf_counter()
        reserved = torch.cuda.memory_reserved() if torch.cuda.is_available() else 0
        try:
            replay, self.pool = self.capture(self.window, buffers, self.pool)
        except CaptureFailed as exc:  # run the window as is from now on
            self.failure = str(exc)
            note(f"treenets: {self.what} not captured as CUDA graphs ({self.failure}); they run from Python")
            return None
        self.capture_seconds.append(time.perf_counter() - start)
        if torch.cuda.is_available():
            self.pool_bytes += torch.cuda.memory_reserved() - reserved
        if len(self.capture_seconds) == 1:
            note(f"treenets: {self.what} captured as CUDA graphs (the first in {self.capture_seconds[0]:.1f} s; "
                 "one graph per window shape, replayed from its second window on)")
        return _Graph(buffers, replay)

    def summary(self) -> str:
        """A line on the graphs captured so far: how many, the capture time, the memory their pool took."""
        if self.failure is not None:
            return f"{self.what}: not captured ({self.failure})"
        return (f"{self.what}: {len(self.graphs)} CUDA graph(s) captured in {sum(self.capture_seconds):.1f} s, "
                f"their memory pool {self.pool_bytes / 2**20:,.0f} MiB")


def set_capturable(optimizer: torch.optim.Optimizer, capturable: bool) -> None:
    """Set the `capturable` option of `optimizer`'s parameter groups (Adam, ASGD: whether their step keeps every
    number on the device, as a captured step must; SGD has no such option), after building or loading it: a
    checkpoint's groups carry the option of the run that wrote it, which may have been captured or not. Made
    capturable, the step counters move to their parameters' device."""
    for group in optimizer.param_groups:
        if "capturable" not in group or group["capturable"] == capturable:
            continue
        group["capturable"] = capturable
        if capturable:
            for p in group["params"]:
                state = optimizer.state.get(p, {})
                for name, value in state.items():
                    if torch.is_tensor(value) and value.dim() == 0:
                        state[name] = value.to(p.device)


class TrainingWindows:
    """A language model's training windows as CUDA graphs: `forward_backward` (the forward over the window from the
    carried state, the loss, the backward into gradients kept in place, the clipping) and `step` (the optimiser's
    update at the window's learning rates), two graphs, so that the caller can check the loss and the norm before
    the update, as `treenets.workflows.training.trainer` does.

    Args:
        model: the network (its parameters get gradient tensors now, kept for the graphs' life).
        optimizer: updates the parameters (made `set_capturable` on a CUDA device).
        window_loss: `window_loss(model, tokens, targets, state)` -> (loss to minimise, mean cross-entropy, the new
            state), with states as flat lists of tensors (`treenets.nn.utils.flatten_state`); device work only
            (`treenets.tasks.lm.LMTask.window_loss`).
        clip: the gradient norm's bound (0: none; the norm is returned either way).
        precision: `treenets.nn.precision` of the forward.
        capture: as in `GraphedWindows`.
    """

    def __init__(self, model, optimizer, window_loss, clip: float, precision: str = "fp32", capture=cuda_capture):
        self.model, self.window_loss, self.clip, self.precision = model, window_loss, clip or math.inf, precision
        self.params = [p for p in model.parameters() if p.requires_grad]
        for p in self.params:  # gradients that live as long as the graphs: every window adds into these tensors
            if p.grad is None:
                p.grad = torch.zeros_like(p)
        self.capture = capture
        self.passes = GraphedWindows(self._forward_backward, "training windows",
                                     [*self.params, *(p.grad for p in self.params)], capture)
        self.use_optimizer(optimizer)

    def use_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Update with `optimizer` from now on (a new one, such as averaged SGD after the switch)."""
        self.optimizer = optimizer
        set_capturable(optimizer, self.params[0].device.type == "cuda")
        self.steps = GraphedWindows(self._step, "optimiser steps", self.params, self.capture)

    def _forward_backward(self, tokens, targets, *state):
        torch._foreach_zero_([p.grad for p in self.params])
        with autocast(self.precision, tokens.device):
            loss, xent, new_state = self.window_loss(self.model, tokens, targets, list(state))
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.clip)
        return (xent.detach(), norm, *(s.detach() for s in new_state))

    def _step(self):
        self.optimizer.step()
        return ()

    def forward_backward(self, tokens: torch.Tensor, targets: torch.Tensor, state: list[torch.Tensor]):
        """(mean cross-entropy, gradient norm before clipping, the new state as a flat list), tensors on the device;
        the gradients are in the parameters' `.grad`."""
        xent, norm, *new_state = self.passes(tokens, targets, *state)
        return xent, norm, new_state

    def step(self) -> None:
        """The optimiser's update at its groups' current learning rates (a graph per set of rates)."""
        self.steps(extra=tuple(group["lr"] for group in self.optimizer.param_groups))

    def summary(self) -> str:
        return self.passes.summary()


class EvaluationWindows:
    """A language model's evaluation windows as CUDA graphs.

    Args:
        model: the network, in evaluation mode when called.
        window: `window(model, tokens, targets, state)` -> (summed cross-entropy, the new state), states as flat
            lists of tensors; device work only.
        capture: as in `GraphedWindows`.
    """

    def __init__(self, model, window, capture=cuda_capture):
        self.model, self.window = model, window
        parameters = [*model.parameters(), *model.buffers()]
        self.passes = GraphedWindows(self._window, "evaluation windows", parameters, capture)

    def _window(self, tokens, targets, *state):
        summed, new_state = self.window(self.model, tokens, targets, list(state))
        return (summed, *new_state)

    def __call__(self, tokens: torch.Tensor, targets: torch.Tensor, state: list[torch.Tensor]):
        """(summed cross-entropy, the new state), valid until the next window."""
        summed, *new_state = self.passes(tokens, targets, *state)
        return summed, new_state
