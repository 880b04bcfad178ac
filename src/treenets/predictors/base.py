"""The base of every predictor: load from a checkpoint, save, predict; the inputs it declares for `treenets
predict`."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

import torch

from treenets.config import registered_tasks, saved_config, to_dict
from treenets.core import checkpoint
from treenets.core.devices import resolve_device
from treenets.core.errors import TreenetsError
from treenets.core.vocab import Vocab
from treenets.nn.utils import build_within_memory


@dataclass(frozen=True)
class PredictionInput:
    """An input that a predictor reads (`Predictor.inputs`), as `treenets predict` takes it: the option `--NAME`
    followed by `values` values, handed to `Predictor.predict_inputs` under `name`."""

    name: str
    help: str  # what the value is, and for which models
    values: int = 1  # how many values follow the option (a pair: 2)
    metavar: str | tuple[str, ...] | None = None  # how the help names the values (default: NAME)

    @property
    def option(self) -> str:
        return f"--{self.name}"


def prediction_inputs() -> list[PredictionInput]:
    """Every input that the predictors of the registered tasks read (`treenets predict`'s options), once per
    name, in the order of the task registry; the helps of the predictors that share a name are joined.

    Raises:
        ValueError: for two predictors that read an input of one name with other numbers of values.
    """
    specs: dict[str, PredictionInput] = {}
    helps: dict[str, list[str]] = {}
    for predictor in dict.fromkeys(task.Predictor for task in registered_tasks().values()):
        for spec in predictor.inputs:
            known = specs.setdefault(spec.name, spec)
            if (known.values, known.metavar) != (spec.values, spec.metavar):
                raise ValueError(f"{predictor.__name__} reads --{spec.name} with {spec.values} value(s) named "
                                 f"{spec.metavar}, another predictor with {known.values} named {known.metavar}")
            if spec.help not in helps.setdefault(spec.name, []):
                helps[spec.name].append(spec.help)
    return [replace(spec, help="; ".join(helps[name])) for name, spec in specs.items()]


class Predictor:
    """A trained network with its vocabulary and config, in eval mode.

    A subclass declares `inputs`, what its `predict_inputs` reads (the options of `treenets predict`), and
    `reads`, saying so for messages.

    Args:
        net: the task's network (`Task.build_net`), with trained weights.
        vocab: its vocabulary.
        config: the validated config it was trained with.
        device: where it runs.
    """

    inputs: ClassVar[tuple[PredictionInput, ...]] = ()
    reads: ClassVar[str] = ""  # e.g. "a logic model reads --pair PREMISE HYPOTHESIS (bracketed formulas)"

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
        from treenets.zoo import model_folder

        if not isinstance(ref, str | Path) or not str(ref):
            raise TypeError(f"ref: expected a model name, a model folder or a checkpoint path, not "
                            f"{type(ref).__name__} {ref!r:.40}")
        return cls.from_checkpoint(model_folder.read(ref), ref, device)

    @classmethod
    def from_checkpoint(cls, saved: dict, path: str | Path, device="cpu") -> Predictor:
        """`load` for a model already read with `treenets.zoo.model_folder.read` (or `treenets.core.checkpoint.load`)
        from `path`."""
        config = saved_config(saved, path)
        task = registered_tasks()[config.task]  # (a task the registry holds: the config was validated)
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

    def predict_inputs(self, inputs: dict, pretokenized: bool = False):
        """`predict` for inputs named as this predictor declares them (`inputs`: `treenets predict`'s options),
        the text read as `pretokenized` where the predictor reads typed text; a clear error naming the inputs
        it does not read or (`_predict_inputs`) those it misses."""
        unread = [f"--{name}" for name in inputs if name not in {spec.name for spec in self.inputs}]
        if unread:
            raise TreenetsError(f"predict: {self.reads}, not {' / '.join(unread)}")
        return self._predict_inputs(pretokenized=pretokenized, **inputs)

    def _predict_inputs(self, pretokenized: bool = False, **inputs):
        """`predict_inputs` once the inputs are known to be this predictor's (see each predictor)."""
        raise NotImplementedError


class TreeInducer:
    """What a predictor that induces trees offers `treenets parse`, `serve` and `parse-eval` (a language model; a
    model whose encoder may induce them): `read(text, pretokenized, where)` the tokens it reads or a clear error,
    `layers(spec, option)` the rows of distances a spec names (an error where it induces none), `default_layer`,
    and `parse(texts, layer, split, batch_size, pretokenized)` a `treenets.predictors.parse.Parse` per text, which
    declares what it holds besides its tree (`record_fields`, `notes`, `row_name`). A predictor whose `parse` takes
    a `decode` lists its values in `decoders` (the first its default); `tree_source` says where its trees come
    from, and `unknown_words` how it reads a word outside its vocabulary, for messages."""

    decoders: ClassVar[tuple[str, ...]] = ()
    tree_source: ClassVar[str] = "syntactic distances"
    unknown_words: ClassVar[str] = "read as <unk>"

    @property
    def induces_trees(self) -> bool:
        """Whether it induces trees over words that can be scored against a treebank's."""
        return True


def describe(value) -> str:
    """What a value that is not a sentence is, for a message."""
    if isinstance(value, list | tuple):
        odd = next((w for w in value if not isinstance(w, str)), None)
        return f"a list holding {type(odd).__name__} {odd!r:.40}"
    return f"{type(value).__name__} {value!r:.40}"


def sentence_list(sentences) -> list:
    """`sentences` as a list (one string or several sentences), or a TypeError naming the argument."""
    if isinstance(sentences, list | tuple):
        return list(sentences)
    raise TypeError(f"sentences: expected a string or a list of sentences (strings or word lists), not "
                    f"{describe(sentences)}")


def checked_batch_size(value) -> int:
    """`batch_size` if it is a whole number of at least 1, else an error naming the argument."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"batch_size: expected a whole number, not {type(value).__name__} {value!r:.20}")
    if value < 1:
        raise ValueError(f"batch_size={value}: expected at least 1")
    return value


def quoted(text: str | list[str], limit: int = 60) -> str:
    """`text` (a list joined by spaces) quoted for a message, cut after `limit` characters."""
    text = text if isinstance(text, str) else " ".join(text)
    return repr(text if len(text) <= limit else text[:limit] + "...")
