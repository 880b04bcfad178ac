"""`treenets train`: the config read (a file, a checkpoint's to resume, or a trained model's to start from), the run
folder prepared and locked (`treenets.workflows.training.run_folder`), the run
(`treenets.workflows.training.trainer.Trainer`, the loop shared by every task), and where its files are printed."""

from __future__ import annotations

from pathlib import Path

from treenets.config import load_config, saved_config
from treenets.core import checkpoint
from treenets.core.console import note
from treenets.core.devices import resolve_device
from treenets.core.errors import TreenetsError
from treenets.core.files import output_folder
from treenets.core.runlog import format_figure
from treenets.nn.precision import check_precision
from treenets.workflows.training.checks import InitialModel
from treenets.workflows.training.run_folder import check_not_a_model_folder, prepare_run_folder, run_folder_lock
from treenets.workflows.training.trainer import Trainer


def run_training(config_file: str | None = None, overrides: tuple[str, ...] | list[str] = (),
                 out: str | Path | None = None, resume: str | None = None, overwrite: bool = False, root=None,
                 progress: bool = True, init: str | Path | None = None) -> int:
    """`treenets train`: train the model of the YAML file `config_file` with `overrides` (`KEY=VALUE`), or go on
    with the run of the checkpoint `resume` under its saved config, in the run folder `out` (default:
    `runs/<config name>`, or the checkpoint's folder), and print where its files are. `resume` `""` means
    `out/last.pt`; `overwrite` starts a folder that holds a run afresh; `root` is the data root; `init`, a trained
    model (checkpoint, model folder or zoo name), gives a new run its first weights and vocabulary (the optimizer
    and counters start afresh; without `config_file`, under the model's own config). Returns the exit code
    (`TrainResult.exit_code`)."""
    if config_file is None and not resume and init is None:
        raise TreenetsError("train: give a CONFIG file, --resume CHECKPOINT or --init MODEL")
    if init is not None and resume is not None:
        raise TreenetsError("train: --init starts a new run from a model's weights, --resume goes on with a run; "
                            "give one of them")
    start = InitialModel.read(init) if init is not None else None  # read and checked before the run folder
    if config_file is not None:
        config = load_config(config_file, list(overrides))
        out = Path(out or Path("runs") / Path(config_file).stem)
    elif start is not None:
        config = saved_config(start.contents, init, list(overrides))
        named = Path(init).resolve().parent if Path(init).is_file() else Path(init)  # runs/X/best.pt, folder, zoo
        out = Path(out or Path("runs") / f"{named.name}-init")
    else:
        config = saved_config(checkpoint.load(resume), resume, list(overrides))
        out = Path(out or Path(resume).parent)
    if start is not None:
        start.check(config.task, out)
    check_not_a_model_folder(out)
    check_precision(config.train.precision, resolve_device(config.train.device))  # before the run folder is made
    with run_folder_lock(output_folder(out, "--out")):
        return _train_in(out, config, resume, overwrite, root, progress, start)


def _train_in(out: Path, config, resume, overwrite: bool, root, progress: bool, init: InitialModel | None) -> int:
    """`run_training` in the locked run folder `out`."""
    resume = prepare_run_folder(out, resume, overwrite)
    trainer = Trainer(config, out, root=root, resume=resume, progress=progress, init=init)
    if trainer.is_main:
        words = len(trainer.task.vocab)
        params = sum(p.numel() for p in trainer.model.parameters())
        note(f"treenets: task {config.task}, model {config.model.name}, {params:,} parameters, vocabulary "
              f"{words:,}, device {trainer.device}, {trainer.world} process(es), run folder {out}")
        if resume:
            note(f"resuming from {resume} at step {trainer.state.step} (epoch {trainer.state.epoch})")
        if init:
            note(f"starting from the weights of {init.ref}")
    result = trainer.run()
    trainer.close()
    if trainer.is_main:
        key = trainer.task.Metric.key
        valid = format_figure(result.valid.score) if result.valid else "n/a"
        print(f"stopped ({result.reason}) at step {result.state.step}, epoch {result.state.epoch}: "
              f"validation {key} {valid}")
        print(f"checkpoint (resume): {out / 'last.pt'}")
        if (out / "best.pt").is_file():
            print(f"best weights:        {out / 'best.pt'} (validation {key} {format_figure(result.state.best)})")
        elif result.state.best_step is None:
            print(f"best weights:        none yet ({out / 'best.pt'} is written at the first validation)")
        else:
            print(f"best weights:        {out / 'best.pt'} is missing (deleted during the run?); the next "
                  "validation that improves on the best writes it")
        print(f"metrics:             {out / 'metrics.jsonl'}")
        if result.reason in ("SIGINT", "SIGTERM"):
            note(f"interrupted by {result.reason}; continue with: treenets train --resume {out / 'last.pt'}")
    return result.exit_code
