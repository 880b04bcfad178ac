"""Small helpers shared by the networks and the tasks: the module inside DistributedDataParallel, and
recurrent states (nested lists and named tuples of tensors) detached, flattened and rebuilt."""

from __future__ import annotations

import torch


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
