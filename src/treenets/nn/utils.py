"""Small helpers shared by the networks and the tasks: a network built only when it fits in memory, the module
inside DistributedDataParallel, and recurrent states (nested lists and named tuples of tensors) detached,
flattened and rebuilt."""

from __future__ import annotations

import itertools
import os

import torch
from torch.overrides import TorchFunctionMode

from treenets.core.errors import TreenetsError


def memory_bytes() -> int:
    """This machine's physical memory."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


class _NoNormalDraws(TorchFunctionMode):
    """`normal_` (a tensor's and `torch.nn.init`'s) does nothing: on the meta device it draws nothing anyway, and its
    meta kernel imports torch._dynamo, a second of every command's start (a word embedding's initialisation)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if getattr(func, "__name__", None) == "normal_":
            return args[0] if args else kwargs["tensor"]  # (`torch.nn.init.normal_` passes it by name)
        return func(*args, **(kwargs or {}))


def check_fits(build, where: str) -> None:
    """Build on the meta device (shapes only: no memory, no random draws) to check that the parameters and
    buffers of `build()` take at most half of this machine's memory: sizes from a config or a model folder
    (`hidden_size: 1e9`) end in an error naming `where`, not in an allocation failure."""
    try:
        with torch.device("meta"), _NoNormalDraws():
            probe = build()
    except (RuntimeError, ValueError, OverflowError) as exc:  # e.g. "Storage size calculation overflowed"
        raise TreenetsError(f"{where}: no model of these sizes can be built ({str(exc).splitlines()[0][:120]}); "
                            "check the sizes in its config") from None
    tensors = list(itertools.chain(probe.parameters(), probe.buffers()))
    size = sum(t.numel() * t.element_size() for t in tensors)
    if size > memory_bytes() // 2:
        raise TreenetsError(f"{where}: the model has {sum(p.numel() for p in probe.parameters()):,} parameters "
                            f"({size / 2**30:,.1f} GiB), more than half of this machine's memory "
                            f"({memory_bytes() / 2**30:,.0f} GiB); check the sizes in its config")


def build_within_memory(build, where: str) -> torch.nn.Module:
    """`build()`, once `check_fits` has checked it fits."""
    check_fits(build, where)
    return build()


def unwrap(model: torch.nn.Module) -> torch.nn.Module:
    """The network itself, also when `model` is its DistributedDataParallel wrapper."""
    return getattr(model, "module", model)


def map_state(state, fn):
    """The same nested state (lists, tuples, named tuples of tensors) with `fn` applied to every tensor."""
    if isinstance(state, torch.Tensor):
        return fn(state)
    if isinstance(state, tuple) and hasattr(state, "_fields"):
        return type(state)(*(map_state(s, fn) for s in state))
    return type(state)(map_state(s, fn) for s in state)


def detach_state(state):
    """The same nested state cut from its autograd history."""
    return map_state(state, torch.Tensor.detach)


def flatten_state(state) -> list[torch.Tensor]:
    """The tensors of a nested state in order (a checkpoint stores these, not the named tuples)."""
    if isinstance(state, torch.Tensor):
        return [state]
    return [t for s in state for t in flatten_state(s)]


def unflatten_state(template, tensors: list[torch.Tensor]):
    """`template`'s structure filled with `tensors` (in `flatten_state` order)."""
    it = iter(tensors)
    return map_state(template, lambda _: next(it))
