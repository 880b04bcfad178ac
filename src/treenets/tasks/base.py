"""What every task shares: the declarations the registry reads, the constructor, evaluation mode."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import ClassVar

import torch

from treenets import data
from treenets.core.errors import TreenetsError
from treenets.core.vocab import Vocab
from treenets.data.corpus import PreparedCorpus
from treenets.nn.utils import unwrap
from treenets.tasks.metrics import Metric


class Task:
    """A task for the shared training loop (`treenets.workflows.training.trainer`), `treenets eval` and `treenets.load`.

    A subclass declares (class attributes):
        name: the value of `task:` in configs.
        Config: its config schema (a `treenets.core.schema.Section` with `task: Literal[name]`).
        Metric: the `treenets.tasks.metrics.Metric` its `evaluate` returns.
        Predictor: the user-facing class that wraps a trained network (`treenets.predictors`).
        units: what a batch's `size` and `read` count, for speeds in the log ("tokens", "pairs", ...).
        all_splits: the splits it can read.
        token_unit: what one input token of its network is ("word" unless declared otherwise, e.g.
            "character"), with `split_words` saying how a sentence's words become those tokens (predictors
            read both to take text).
        level: for a task that reads a corpus prepared by `treenets data prepare` (`open_corpus`), the corpus's
            level ("word" or "char").

    and implements `build_net` (the network for a config and vocabulary size), reading its data in
    `__init__` (building the vocabulary when none is given), `batches_per_epoch()`, `next_batch()` (None at
    the end of an epoch), `train_loss(model, batch) -> (loss, summed loss for reporting)`,
    `evaluate(model, split) -> Metric`, and `state_dict()` / `load_state_dict(state, model)` for exact
    resumption (tasks that read examples in shuffled batches keep a `ShuffledBatches` in `self.batches` and
    inherit these).

    Args:
        config: the validated config of the task.
        vocab: the vocabulary of a checkpoint; None builds it from the training data.
        root: the data root (None: `TREENETS_DATA` / the default lookup).
        device: where batches go.
        rank, world: this process and the number of processes (DistributedDataParallel).
        splits: which splits to read (evaluation needs only one); None: all of `all_splits`.
    """

    name: ClassVar[str]
    Config: ClassVar[type]
    Metric: ClassVar[type[Metric]]
    Predictor: ClassVar[type]
    units: ClassVar[str]
    all_splits: ClassVar[tuple[str, ...]] = ("train", "valid", "test")
    token_unit: ClassVar[str] = "word"
    level: ClassVar[str | None] = None

    @staticmethod
    def split_words(words: list[str]) -> list[str]:
        """The tokens the network reads for a sentence of `words`: the words themselves."""
        return list(words)

    def __init__(self, config, vocab: Vocab | None = None, root=None, device=None, rank: int = 0, world: int = 1,
                 splits: tuple[str, ...] | None = None):
        self.config, self.vocab, self.root = config, vocab, root
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        self.rank, self.world = rank, world
        for split in splits or ():
            if split not in self.all_splits:
                raise TreenetsError(f"task {self.name} has the splits {', '.join(self.all_splits)}, not {split!r}")
        self.splits = tuple(splits or self.all_splits)

    @classmethod
    def build_net(cls, config, vocab_size: int) -> torch.nn.Module:
        """The network of `config`, freshly initialised."""
        raise NotImplementedError

    def eval_units(self, split: str, batch_size: int | None = None) -> int | None:
        """How many `units` an evaluation of `split` reports to its `progress` (a progress bar's total);
        None if the task does not say."""
        return None

    @classmethod
    def evaluate_text(cls, predictor, sentences: list[tuple[str, str]], batch_size: int | None = None,
                      pretokenized: bool = False, source: str = "--file", log=None) -> Metric:
        """`treenets eval --file`: the metric of `predictor` (a language model of this task) on the lines of a text,
        `(where, text)` pairs (`treenets.core.files.read_sentences`; `source` names the text, `log` takes notes): each
        line read first (a line with nothing to read is an error naming it), then the predictor's `evaluate`. A task
        whose metric holds more than the predictor's reports it as its `evaluate` does a split's."""
        for where, text in sentences:
            predictor.read(text, pretokenized, where)
        return predictor.evaluate([text for _, text in sentences], batch_size or 64, pretokenized)

    def keep_every(self, split: str, every: int) -> None:
        """Keep every `every`-th example of `split` only (a model card's quick check of a large split)."""
        raise NotImplementedError(f"task {self.name} cannot keep a part of a split")

    def build_model(self) -> torch.nn.Module:
        """The network to train (tasks with pretrained word vectors load them here)."""
        return self.build_net(self.config, len(self.vocab))

    def data_folder(self, expected: str) -> Path:
        """The folder `data.path`: under the data root (unless absolute), else from the current folder where it
        exists there (a corpus of one's own: `--set data.path=corpora/mine`); a clear error naming `expected` if it
        is neither."""
        given = Path(self.config.data.path).expanduser()
        folder = data.resolve(given, self.root)
        if folder.is_dir():
            return folder
        if given.is_dir():
            return given
        where = "" if given.is_absolute() else f" (nor {given} from the current folder)"
        raise TreenetsError(f"data.path: {folder} does not exist{where}; expected {expected}")

    def open_corpus(self, folder: Path) -> PreparedCorpus:
        """The corpus prepared by `treenets data prepare` in `folder`, checked to be of the task's `level`. Its
        normaliser becomes the model's (`data.normalizer`: how it reads the raw text a person types) unless the
        config names one or the text was prepared as it was (`none`)."""
        corpus = PreparedCorpus.open(folder)
        corpus.check_level(self.level, self.name)
        data_config = self.config.data
        if corpus.normalizer != "none" and "normalizer" not in data_config.model_fields_set:
            data_config = data_config.model_copy(update={"normalizer": corpus.normalizer})
            self.config = self.config.model_copy(update={"data": data_config})
        return corpus

    def batches_per_epoch(self) -> int:
        return len(self.batches)

    def state_dict(self) -> dict:
        return self.batches.state_dict()

    def load_state_dict(self, state: dict, model=None) -> None:
        self.batches.load_state_dict(state)


@contextlib.contextmanager
def evaluating(model, inference: bool = False):
    """The unwrapped network in eval mode without gradients; its previous mode is restored afterwards. With
    `inference`, in `torch.inference_mode`: less bookkeeping per operation (SICK predictions ran 8 % faster),
    but the tensors made inside can never enter autograd or be changed in place outside it, so only for callers
    that hand back plain numbers or arrays."""
    net = unwrap(model)
    was_training = net.training
    net.eval()
    try:
        with torch.inference_mode() if inference else torch.no_grad():
            yield net
    finally:
        net.train(was_training)
