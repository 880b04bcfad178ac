"""Batches for the training loop, and epochs over a list of examples in shuffled batches."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from treenets.core.errors import TreenetsError


class Batch:
    """What the training loop reads from any task's batch: `size` (the units the loss is summed over, for
    reporting), `read` (the units the network reads, for speeds) and `lr_scale` (the learning-rate factor of this
    batch; only variable-length BPTT windows set it, see `treenets.data.lm.Window`)."""

    lr_scale: float = 1.0

    @property
    def size(self) -> int:
        raise NotImplementedError

    @property
    def read(self) -> int:
        """`size`, unless the loss scores a share of what the network reads (a masked language model)."""
        return self.size


def hold_out(pool: Sequence, every: int) -> tuple[list, list]:
    """(the rest, every `every`-th example of `pool` in its order): a validation split held out of a training file
    (the logic and ListOps tasks)."""
    return ([e for i, e in enumerate(pool, start=1) if i % every],
            [e for i, e in enumerate(pool, start=1) if not i % every])


def require_examples(result: dict[str, list], splits: Sequence[str], why_empty) -> dict[str, list]:
    """`result`'s `splits`, in that order; an empty one would have no accuracy (0 / 0), so it is an error, its
    message `why_empty(split)` (the file and what leaves the split empty)."""
    for split in splits:
        if not result[split]:
            raise TreenetsError(why_empty(split))
    return {split: result[split] for split in splits}


class EpochOrder:
    """What a checkpoint holds of a batch order (`order`, the epoch's; `position` in it; the `generator` that
    shuffles it), so that a resumed run sees the same batches."""

    order: torch.Tensor
    position: int
    generator: torch.Generator

    def state_dict(self) -> dict:
        return {"order": self.order, "position": self.position, "generator": self.generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        self.order, self.position = state["order"], int(state["position"])
        self.generator.set_state(state["generator"])


class ShuffledBatches(EpochOrder):
    """Indices of `count` examples in batches of `batch_size`, reshuffled at the start of every epoch from
    the object's own generator; process `rank` of `world` takes every `world`-th row of each batch.

    With `lengths` (one per example), batches are made of examples of similar length, so that padded
    sequence batches waste little: each epoch's shuffled order is cut into windows of `BUCKET_BATCHES`
    batches, each window is sorted by length and cut into batches, and the full batches are shuffled.

    `next_rows()` returns None once at the end of each epoch. The state (order, position, generator) is part
    of a checkpoint, so a resumed run sees the same batches.
    """

    BUCKET_BATCHES = 50

    def __init__(self, count: int, batch_size: int, seed: int, shuffle: bool = True, rank: int = 0, world: int = 1,
                 lengths: Sequence[int] | None = None):
        self.count, self.batch_size, self.shuffle, self.rank, self.world = count, batch_size, shuffle, rank, world
        self.generator = torch.Generator().manual_seed(seed)
        self.order = torch.arange(count)
        self.position = 0
        self.lengths = None if lengths is None else torch.as_tensor(lengths)

    def _epoch_order(self) -> torch.Tensor:
        order = torch.randperm(self.count, generator=self.generator)
        if self.lengths is None:
            return order
        window = self.BUCKET_BATCHES * self.batch_size
        order = torch.cat([chunk[self.lengths[chunk].argsort(stable=True)] for chunk in order.split(window)])
        # The full batches in a random order, a short last one (count % batch_size) kept last, so that
        # `next_rows` cuts the same batches at steps of batch_size.
        full = self.count // self.batch_size
        batches = order[: full * self.batch_size].view(full, self.batch_size)
        shuffled = batches[torch.randperm(full, generator=self.generator)].reshape(-1)
        return torch.cat([shuffled, order[full * self.batch_size :]])

    def __len__(self) -> int:
        return math.ceil(self.count / self.batch_size)

    def next_rows(self) -> list[int] | None:
        if self.position == 0 and self.shuffle:
            self.order = self._epoch_order()
        if self.position >= self.count:
            self.position = 0
            return None
        rows = self.order[self.position : self.position + self.batch_size].tolist()
        self.position += self.batch_size
        # A last batch smaller than the number of processes still gives every process a row.
        return rows[self.rank :: self.world] or rows[:1]


class TokenBudgetBatches(EpochOrder):
    """Examples in batches of about `tokens` tokens, as StructFormer's official `batchify` makes them: the examples
    sorted by length (stably), each batch taking examples until it holds at least `tokens` tokens, so that a batch
    pads little; every epoch reads the batches in a new random order from the object's own generator (`shuffle`),
    and process `rank` of `world` takes every `world`-th example of each batch.

    `next_rows()` returns None once at the end of each epoch. The state (order, position, generator) is part of a
    checkpoint, so a resumed run sees the same batches.
    """

    def __init__(self, lengths: Sequence[int], tokens: int, seed: int, shuffle: bool = True, rank: int = 0,
                 world: int = 1):
        order = sorted(range(len(lengths)), key=lengths.__getitem__)
        self.batches, batch, held = [], [], 0
        for index in order:
            batch.append(index)
            held += lengths[index]
            if held >= tokens:
                self.batches.append(batch)
                batch, held = [], 0
        if batch:
            self.batches.append(batch)
        self.shuffle, self.rank, self.world = shuffle, rank, world
        self.generator = torch.Generator().manual_seed(seed)
        self.order = torch.arange(len(self.batches))
        self.position = 0

    def __len__(self) -> int:
        return len(self.batches)

    def next_rows(self) -> list[int] | None:
        if self.position == 0 and self.shuffle:
            self.order = torch.randperm(len(self.batches), generator=self.generator)
        if self.position >= len(self.batches):
            self.position = 0
            return None
        rows = self.batches[int(self.order[self.position])]
        self.position += 1
        return rows[self.rank :: self.world] or rows[:1]
