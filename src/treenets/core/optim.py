"""Optimisers: their configs (one schema per optimiser, chosen by `optim.name`) and how they are built.

SGD carries the AWD-LSTM recipe's options (the switch to averaged SGD on the non-monotone trigger, the
learning rate scaled by the BPTT window's length); Adam and Adagrad have their own.
"""

from __future__ import annotations

from typing import Annotated, Literal

import torch
from pydantic import Discriminator, Field, Tag

from treenets.core.schema import NonNegativeFloat, PositiveFloat, PositiveInt, Section


class OptimizerBase(Section):
    lr: PositiveFloat
    clip: NonNegativeFloat = 0.25  # max gradient norm; 0 = no clipping
    weight_decay: NonNegativeFloat = 1.2e-6
    decay_embeddings: bool = True  # false: no weight decay on word embeddings
    lr_plateau_factor: Annotated[float, Field(gt=0.0, lt=1.0)] | None = None  # multiply lr on a plateau
    lr_plateau_patience: Annotated[int, Field(ge=0)] = 2  # epochs with no new best validation; one more lowers lr
    lr_plateau_on: Literal["loss", "score"] = "loss"  # the validation loss, or the task's metric (e.g. accuracy)


class SGDConfig(OptimizerBase):
    """SGD, as AWD-LSTM and ON-LSTM train (NT-ASGD)."""

    name: Literal["sgd"] = "sgd"
    lr: PositiveFloat = 30.0
    nt_asgd: bool = True  # switch to averaged SGD when validation stops improving
    nonmono: PositiveInt = 5  # the non-monotone trigger's window (epochs)
    lr_scale_by_length: bool = True  # lr x seq_len / bptt for variable-length BPTT windows


class AdamConfig(OptimizerBase):
    name: Literal["adam"] = "adam"
    lr: PositiveFloat = 0.001
    betas: tuple[float, float] = (0.9, 0.999)
    eps: PositiveFloat = 1e-8


class AdagradConfig(OptimizerBase):
    """Adagrad, as Tai et al. (2015) train the Tree-LSTMs."""

    name: Literal["adagrad"] = "adagrad"
    lr: PositiveFloat = 0.05


def _optimizer_name(value) -> str | None:
    """The union's tag: `name`, SGD when a section leaves it out (as configs written before the union did)."""
    return value.get("name", "sgd") if isinstance(value, dict) else getattr(value, "name", None)


OptimConfig = Annotated[Annotated[SGDConfig, Tag("sgd")] | Annotated[AdamConfig, Tag("adam")]
                        | Annotated[AdagradConfig, Tag("adagrad")], Discriminator(_optimizer_name)]


def make_optimizer(optim, model: torch.nn.Module, kind: str) -> torch.optim.Optimizer:
    """`kind` is `optim.name`, or `asgd` (averaged SGD, as after the NT-ASGD switch).

    Parameters that do not require gradients (frozen embeddings) are left out; with `optim.decay_embeddings`
    false, word embeddings get no weight decay (as the official Tree-LSTM code, which leaves them out of L2).
    """
    embeddings = {id(m.weight) for m in model.modules() if isinstance(m, torch.nn.Embedding)}
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": params}]
    if not optim.decay_embeddings:
        groups = [{"params": [p for p in params if id(p) not in embeddings]},
                  {"params": [p for p in params if id(p) in embeddings], "weight_decay": 0.0}]
    # The fused Adagrad/Adam update each tensor in one pass (4-5x faster than the per-op loop on the CPU, which
    # matters for large embedding tables); same update, same state, so checkpoints resume either way.
    fused = bool(params) and all(p.device.type == "cpu" for p in params)
    if kind == "asgd":
        return torch.optim.ASGD(groups, lr=optim.lr, t0=0, lambd=0.0, weight_decay=optim.weight_decay)
    if kind == "sgd":
        return torch.optim.SGD(groups, lr=optim.lr, weight_decay=optim.weight_decay)
    if kind == "adagrad":
        return torch.optim.Adagrad(groups, lr=optim.lr, weight_decay=optim.weight_decay, fused=fused or None)
    return torch.optim.Adam(groups, lr=optim.lr, betas=optim.betas, eps=optim.eps, weight_decay=optim.weight_decay,
                            fused=fused or None)


def lr_scale(optim, batch) -> float:
    """The learning-rate factor of `batch`: its BPTT window's length / bptt under SGD's `lr_scale_by_length`
    (AWD-LSTM), else 1."""
    return batch.lr_scale if isinstance(optim, SGDConfig) and optim.lr_scale_by_length else 1.0


def nt_asgd_triggered(history: list[float], loss: float, nonmono: int) -> bool:
    """The non-monotone trigger of NT-ASGD (Merity et al., 2018), as in the official code: switch when the
    new validation loss is worse than the best one from before the last `nonmono` epochs."""
    return len(history) > nonmono and loss > min(history[:-nonmono])
