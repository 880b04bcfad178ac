"""The base of every predictor: load from a checkpoint, save, predict."""

from __future__ import annotations

from pathlib import Path

import torch

from treenets import checkpoint
from treenets.config import saved_config, to_dict
from treenets.devices import resolve_device
from treenets.errors import TreenetsError
from treenets.nn.utils import build_within_memory
from treenets.vocab import Vocab


class Predictor:
    """A trained network with its vocabulary and config, in eval mode.

    Args:
        net: the task's network (`Task.build_net`), with trained weights.
        vocab: its vocabulary.
        config: the validated config it was trained with.
        device: where it runs.
    """

    def __init__(self, net: torch.nn.Module, vocab: Vocab, config, device="cpu"):
        self.device = resolve_device(device, "device")
        self.net, self.vocab, self.config = net.to(self.device).eval(), vocab, config

    @classmethod
    def load(cls, ref: str | Path, device="cpu") -> Predictor:
        """The predictor of a trained model's task, holding its weights.

        Args:
            ref: a checkpoint (`best.pt`, `last.pt`, a file written by `save`), a model folder (`treenets
                export`), or the name of a zoo model (`treenets models`).

        Raises:
            TreenetsError: for a missing, corrupt or foreign file, or (called on a subclass, e.g.
                `LanguageModel.load`) a model of a task with another predictor.
        """
        from treenets import zoo

        if not isinstance(ref, str | Path) or not str(ref):
            raise TypeError(f"ref: expected a model name, a model folder or a checkpoint path, not "
                            f"{type(ref).__name__} {ref!r:.40}")
        return cls.from_checkpoint(zoo.read(ref), ref, device)

    @classmethod
    def from_checkpoint(cls, saved: dict, path: str | Path, device="cpu") -> Predictor:
        """`load` for a model already read with `treenets.zoo.read` (or `treenets.checkpoint.load`) from `path`."""
        from treenets.tasks import task_class

        config = saved_config(saved, path)
        task = task_class(config.task)
        if not issubclass(task.Predictor, cls):
            raise TreenetsError(f"{path}: a {config.task} model, not for {cls.__name__} (it loads as "
                                f"{task.Predictor.__name__})")
        folder = Path(path).is_dir()  # a model folder: name its files
        net = build_within_memory(lambda: task.build_net(config, len(saved["vocab"])),
                                  str(Path(path) / "config.json") if folder else f"{path} (saved config)")
        vocab = (str(Path(path) / "vocab.txt") if folder else f"{path} (its vocabulary)", len(saved["vocab"]))
        checkpoint.load_weights(net, saved["model"], Path(path) / "model.safetensors" if folder else path, vocab)
        return task.Predictor(net, Vocab(saved["vocab"]), config, device=device)

    def save(self, path: str | Path) -> Path:
        """Write the weights, vocabulary and config to `path` (atomically), loadable with `load`."""
        state = {k: v.detach().cpu() for k, v in self.net.state_dict().items()}
        return checkpoint.save({"kind": "model", "config": to_dict(self.config), "vocab": self.vocab.words,
                                "model": state}, path)

    def predict(self, *inputs):
        """The prediction for the inputs (see each predictor)."""
        raise NotImplementedError

    def predict_command(self, args):
        """`predict` for the `treenets predict` command's options (`--sentence`, `--pair`, `--parents`,
        `--tree`); a clear error when the options this predictor needs are missing."""
        raise NotImplementedError
