"""A training run's folder (`treenets train --out`): the files a run writes there (`RUN_FILES`: `last.pt` to resume,
`best.pt`, `metrics.jsonl`, TensorBoard's logs; and `config.yaml`), whether a folder may take a run (not a model
folder; one holding another run only with `--overwrite`), and the lock one run holds on it while it writes."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import yaml

from treenets.core.errors import TreenetsError

RUN_FILES = ("last.pt", "best.pt", "metrics.jsonl", "tensorboard")


def prepare_run_folder(out: Path, resume, overwrite: bool):
    """The checkpoint to resume from (None: a fresh run) for run folder `out`: `resume` `""` means
    `out/last.pt`; a folder that already holds a run (its `last.pt`) must be resumed (from a checkpoint in it) or
    overwritten (its run files are then deleted), whether the run written there is a fresh one or another folder's
    resumed (`resume` a `last.pt` elsewhere: it would replace the folder's `last.pt` and `config.yaml`)."""
    if resume == "":
        return out / "last.pt"
    last = out / "last.pt"
    # (a checkpoint of the folder itself, its last.pt or a copy kept beside it, goes on with the folder's run)
    if last.exists() and (resume is None or not _same_file(Path(resume).parent, out)):
        if not overwrite:
            if resume is None:
                raise TreenetsError(f"{out} already holds a training run ({_run_summary(out)}): pass --resume to "
                                    "continue it, --overwrite to start again, or --out for another folder")
            raise TreenetsError(f"--out {out} already holds another training run ({_run_summary(out)}) than the one "
                                f"of --resume {resume}, whose files (last.pt, best.pt, config.yaml, metrics.jsonl) "
                                "would replace it: pass --overwrite to replace that run, or another --out (without "
                                "--out the run goes on in its own folder)")
        for name in RUN_FILES:
            target = out / name
            shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
    return resume


def _same_file(a, b: Path) -> bool:
    """Whether the paths `a` and `b` name one file or folder (links and other spellings of a path included)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _run_summary(out: Path) -> str:
    """What the run of the folder `out` is, for messages: its task and model from its `config.yaml`, where that
    reads."""
    path = out / "config.yaml"
    try:
        saved = yaml.safe_load(path.read_text(encoding="utf-8"))
        task, model = saved["task"], saved["model"].get("name", "its default model")
    except (OSError, ValueError, yaml.YAMLError, TypeError, KeyError, AttributeError):
        return f"its last.pt; {path} does not say which task"
    return f"task {task}, model {model}: {path}"



@contextlib.contextmanager
def run_folder_lock(out: Path):
    """Hold `out/.lock` (an exclusive `flock`) while a run writes into `out`: a second `treenets train` into the
    same folder gets a clear error instead of writing the same files. The lock goes with the process, also
    when it is killed; under torchrun only the first process (rank 0) takes it."""
    import fcntl

    if int(os.environ.get("RANK", "0")) != 0:
        yield
        return
    out.mkdir(parents=True, exist_ok=True)
    with open(out / ".lock", "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.seek(0)
            holder = fh.read().strip()
            raise TreenetsError(f"{out}: another treenets train is writing into this run folder"
                                f"{f' (process {holder})' if holder else ''}; wait for it to end, or give another "
                                "--out") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"{os.getpid()}\n")
        fh.flush()
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def check_not_a_model_folder(out: Path) -> None:
    """An error when the run folder `out` is or lies in a model folder (`treenets.zoo.model_folder.is_model_folder`:
    an exported model, or a zoo model's folder in the checkout or the cache), into which a run never writes."""
    from treenets.zoo import model_folder

    model_folder.refuse_model_folder(out, "--out", "a run's files: last.pt, best.pt, config.yaml, metrics.jsonl")
