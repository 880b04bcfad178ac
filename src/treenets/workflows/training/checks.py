"""What a training run starts from, checked before it runs: a trained model to start from (`train --init`:
`InitialModel`, of the config's task, not in the run folder), and the words of the training data against the
vocabulary a run reads them with (a resumed run's: the same data; a trained model's: its unknown words said)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from treenets.core.errors import TreenetsError
from treenets.core.vocab import Vocab
from treenets.tasks import make_task


@dataclass
class InitialModel:
    """A trained model a new run starts from (`train --init`): how it was named, where it is (a checkpoint file or
    a model folder: a zoo name's folder), and what it holds (`config`, `vocab`, `model`, as
    `treenets.zoo.model_folder.read` returns them)."""

    ref: str
    location: Path
    contents: dict

    @classmethod
    def read(cls, ref: str | Path) -> InitialModel:
        from treenets.zoo import model_folder

        location = model_folder.located(ref)
        return cls(str(ref), location, model_folder.read(location))

    def check(self, task: str, out: Path | None = None) -> None:
        """An error when the model was trained for another task than `task`, or lies in the run folder `out`
        (which the run would write over)."""
        config = self.contents.get("config")
        theirs = config.get("task") if isinstance(config, dict) else None
        if theirs != task:
            raise TreenetsError(f"{self.ref}: a model of task {theirs!r}; --init needs one of the config's task "
                                f"{task!r}")
        if out is not None:
            folder = (self.location if self.location.is_dir() else self.location.parent).resolve()
            if folder == Path(out).resolve():
                raise TreenetsError(f"--out {out}: the folder of {self.ref}, which the run would write over; give "
                                    "the new run another --out")



def _missing_words(config, vocab: Vocab, root) -> str:
    """The words of the training data of `config` that `vocab` lacks: `""` when none, else how many and which
    (the first five)."""
    fresh = make_task(config, None, root, splits=("train",)).vocab
    missing = [word for word in fresh.words if word not in vocab]
    shown = ", ".join(repr(word) for word in missing[:5]) + (", ..." if len(missing) > 5 else "")
    return f"{len(missing):,} word(s) ({shown})" if missing else ""


def check_same_words(config, vocab: Vocab, root, resume) -> None:
    """An error when the training data of `config` holds words the vocabulary of the checkpoint `resume` lacks:
    the data changed since the checkpoint was written, and resuming would read those words as `<unk>`."""
    missing = _missing_words(config, vocab, root)
    if missing:
        raise TreenetsError(f"{resume}: the training data ({config.data.path}) has {missing} that the checkpoint's "
                            f"vocabulary of {len(vocab):,} lacks: it is not the data the run was trained on, and "
                            "resuming would read them as <unk>; point data.path at that data, or start a new run "
                            "(--overwrite, or another --out)")


def warn_unknown_words(config, vocab: Vocab, root, init, log) -> None:
    """Say which words of the training data the vocabulary of `init`, kept with its weights, lacks: the run reads
    them as <unk>."""
    missing = _missing_words(config, vocab, root)
    if missing and vocab.unk is None:
        raise TreenetsError(f"{init}: the training data ({config.data.path}) has {missing} that the model's "
                            f"vocabulary of {len(vocab):,} lacks, and it has no <unk> to read them as: train on data "
                            "within its vocabulary, or a new model")
    if missing:
        log(f"warning: the training data ({config.data.path}) has {missing} that the vocabulary of {init} "
            f"({len(vocab):,} words, kept with its weights) lacks; they are read as <unk>")

