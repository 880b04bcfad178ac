"""What every task shares: its constructor arguments, evaluation mode, batches over examples, perplexity."""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from treenets import data
from treenets.errors import TreenetsError
from treenets.vocab import Vocab


@dataclass
class Task:
    """A task for the shared training loop (`treenets.train`).

    Args:
        config: the validated config of the task.
        vocab: the vocabulary of a checkpoint; None builds it from the training data.
        root: the data root (None: `TREENETS_DATA` / the default lookup).
        device: where batches go.
        rank, world: this process and the number of processes (DistributedDataParallel).
        splits: which splits to read (evaluation needs only one).

    A task provides `build_model()`, `batches_per_epoch()`, `next_batch()` (None at the end of an epoch),
    `train_loss(model, batch) -> (loss, summed loss for reporting)`, `evaluate(model, split)` (a dict with
    `loss` and `metric`), and `state_dict()` / `load_state_dict(state, model)` for exact resumption.
    """

    config: object
    vocab: Vocab | None = None
    root: str | None = None
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    rank: int = 0
    world: int = 1
    splits: tuple[str, ...] = ("train", "valid", "test")

    higher_is_better = False  # for `metric`

    def data_folder(self, expected: str):
        """The folder of `data.path` under the data root; a clear error naming `expected` if it is missing."""
        folder = data.resolve(self.config.data.path, self.root)
        if not folder.is_dir():
            raise TreenetsError(f"data.path: {folder} does not exist (expected {expected})")
        return folder

    # Tasks that read examples in shuffled batches keep a `ShuffledBatches` in `self.batches`.
    def batches_per_epoch(self) -> int:
        return len(self.batches)

    def state_dict(self) -> dict:
        return self.batches.state_dict()

    def load_state_dict(self, state: dict, model=None) -> None:
        self.batches.load_state_dict(state)


@contextlib.contextmanager
def evaluating(model):
    """The unwrapped network in eval mode without gradients; its previous mode is restored afterwards."""
    net = getattr(model, "module", model)
    was_training = net.training
    net.eval()
    try:
        with torch.no_grad():
            yield net
    finally:
        net.train(was_training)


def perplexity(total: torch.Tensor, world: int) -> dict:
    """`{"loss", "ppl", "tokens"}` from `total` = [summed cross-entropy, tokens] over all processes."""
    if world > 1:
        dist.all_reduce(total)
    loss = (total[0] / total[1]).item()
    return {"loss": loss, "ppl": math.exp(loss), "tokens": int(total[1].item())}
