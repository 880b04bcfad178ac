"""Batches for the training loop, and epochs over a list of examples in shuffled batches."""

from __future__ import annotations

import math

import torch


class Batch:
    """What the training loop reads from any task's batch: `size` (the units the loss is summed over, for
    reporting) and `lr_scale` (the learning-rate factor of this batch; only variable-length BPTT windows set
    it, see `treenets.data.lm.Window`)."""

    lr_scale: float = 1.0

    @property
    def size(self) -> int:
        raise NotImplementedError


class ShuffledBatches:
    """Indices of `count` examples in batches of `batch_size`, reshuffled at the start of every epoch from
    the object's own generator; process `rank` of `world` takes every `world`-th row of each batch.

    `next_rows()` returns None once at the end of each epoch. The state (order, position, generator) is part
    of a checkpoint, so a resumed run sees the same batches.
    """

    def __init__(self, count: int, batch_size: int, seed: int, shuffle: bool = True, rank: int = 0, world: int = 1):
        self.count, self.batch_size, self.shuffle, self.rank, self.world = count, batch_size, shuffle, rank, world
        self.generator = torch.Generator().manual_seed(seed)
        self.order = torch.arange(count)
        self.position = 0

    def __len__(self) -> int:
        return math.ceil(self.count / self.batch_size)

    def next_rows(self) -> list[int] | None:
        if self.position == 0 and self.shuffle:
            self.order = torch.randperm(self.count, generator=self.generator)
        if self.position >= self.count:
            self.position = 0
            return None
        rows = self.order[self.position : self.position + self.batch_size].tolist()
        self.position += self.batch_size
        # A last batch smaller than the number of processes still gives every process a row.
        return rows[self.rank :: self.world] or rows[:1]

    def state_dict(self) -> dict:
        return {"order": self.order, "position": self.position, "generator": self.generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.order, self.position = state["order"], int(state["position"])
        self.generator.set_state(state["generator"])
