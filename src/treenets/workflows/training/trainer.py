"""The training loop shared by every task.

A task (e.g. `treenets.tasks.lm.LMTask`) supplies data, model, loss and metric; this loop supplies the rest:
optimizers (SGD with the non-monotonically triggered switch to averaged SGD, or Adam), gradient clipping,
limits (`max_steps`, `max_minutes`; `patience`: stop when converged), a progress bar, metrics as JSONL (and
TensorBoard when installed), atomic checkpoints that resume bit for bit, a checkpoint on SIGTERM/SIGINT, and
DistributedDataParallel when started by `torchrun`.

Files in the run folder: `last.pt` (everything to resume), `best.pt` (the weights with the best validation
metric, averaged weights once averaged SGD is on), `metrics.jsonl`, `config.yaml`. `treenets.workflows.train`
is `treenets train`: the config read, the run folder prepared and locked (`run_folder.py`), the run, and where its
files are printed; `checks.py` checks what a run starts from.
"""

from __future__ import annotations

import hashlib
import math
import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.distributed as dist
import yaml
from tqdm.auto import tqdm

from treenets.config import to_dict
from treenets.core import checkpoint, optim
from treenets.core.console import note
from treenets.core.devices import resolve_device, set_threads
from treenets.core.errors import TreenetsError
from treenets.core.runlog import MetricsLog, format_figure
from treenets.core.vocab import Vocab
from treenets.nn import graphs
from treenets.nn.backend import set_backend
from treenets.nn.precision import autocast, check_precision
from treenets.nn.utils import check_fits
from treenets.tasks import make_task
from treenets.tasks.metrics import Metric
from treenets.workflows.training.checks import InitialModel, check_same_words, warn_unknown_words


@dataclass
class TrainerState:
    epoch: int = 1  # the epoch under way (1-based)
    step: int = 0  # optimizer steps done in all
    epoch_step: int = 0  # steps done in this epoch
    optimizer: str = "sgd"  # sgd, asgd or adam
    best: float | None = None  # best validation metric so far
    best_step: int | None = None
    history: list = field(default_factory=list)  # end-of-epoch validation losses (the NT-ASGD trigger)
    train_seconds: float = 0.0  # training time over all runs of this training
    epochs_without_better: int = 0  # end-of-epoch validations since the best one (`train.patience`)
    initialized_from: str | None = None  # the trained model whose weights this run started from (`--init`)



@dataclass
class TrainResult:
    reason: str  # "finished", "converged" (train.patience), "max_steps", "max_minutes", "SIGTERM", "SIGINT"
    state: TrainerState
    valid: Metric | None  # the last validation result
    out_dir: Path

    @property
    def exit_code(self) -> int:
        signals = {"SIGINT": 130, "SIGTERM": 143}
        return signals.get(self.reason, 0)


def _fingerprint(model: torch.nn.Module) -> str:
    digest = hashlib.sha1()
    for tensor in model.state_dict().values():
        digest.update(tensor.detach().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


class Trainer:
    """Train `config` into `out_dir`; `resume` is a `last.pt` to continue from (or None); `init` is a trained model
    (a checkpoint, a model folder or a zoo name, or an `InitialModel` read already) whose weights and vocabulary a
    fresh run starts from (or None).

    Under `torchrun` (environment variable `WORLD_SIZE` > 1) every process runs this same loop on its share
    of each batch, and DistributedDataParallel averages the gradients.
    """

    def __init__(self, config, out_dir, root=None, resume=None, progress=True, log=note, init=None):
        self.config, self.out_dir, self.log = config, Path(out_dir), log
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        device = resolve_device(config.train.device)
        if self.world > 1 and device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        self._started_group = self.world > 1 and not dist.is_initialized()
        if self._started_group:
            dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        self.device = device
        check_precision(config.train.precision, device)  # refused before anything is read or written
        set_threads(config.train.threads, "train.threads")  # None: $TREENETS_THREADS, else torch's default
        if config.train.backend is not None:
            set_backend(config.train.backend)
        self.is_main = self.rank == 0
        self.progress = progress and self.is_main

        saved = checkpoint.load(resume, task=config.task) if resume else None
        if saved is not None and saved.get("kind") != "train-state":
            raise TreenetsError(f"{resume}: holds model weights only; resume needs a last.pt train state")
        start = init if init is None or isinstance(init, InitialModel) else InitialModel.read(init)
        if start is not None:
            start.check(config.task)
        vocab = Vocab((saved or start.contents)["vocab"]) if saved or start else None
        if saved is not None and not saved["trainer"].get("initialized_from"):
            check_same_words(config, vocab, root, resume)
        elif vocab is not None:  # a run from a trained model's vocabulary reads its own data through it
            warn_unknown_words(config, vocab, root, (start.ref if start else saved["trainer"]["initialized_from"]),
                               log if self.is_main else lambda *_: None)
        self.task = make_task(config, vocab, root, device, self.rank, self.world)
        config = self.config = self.task.config  # with what the data says of itself (a corpus's normaliser)
        torch.manual_seed(config.train.seed)  # identical initial weights in every process
        check_fits(lambda: self.task.build_net(config, len(self.task.vocab)), "config")
        # weights read from elsewhere replace the initial ones: no word vectors are loaded to be written over
        build = self.task.build_model if vocab is None else lambda: self.task.build_net(config, len(self.task.vocab))
        self.model = build().to(device)
        if start is not None:
            checkpoint.load_weights(self.model, start.contents["model"], start.ref)
        self.state = TrainerState(optimizer=config.optim.name, initialized_from=start.ref if start else None)
        self.optimizer = optim.make_optimizer(config.optim, self.model, self.state.optimizer)
        self.scheduler = self._make_scheduler()
        torch.manual_seed(config.train.seed + self.rank)  # different dropout masks in every process
        if saved is not None:
            self._restore(saved, resume)
        self.net = self.model
        self.windows = self._training_windows()
        if self.world > 1:
            ids = [device.index] if device.type == "cuda" else None
            self.net = torch.nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        if self.is_main:
            checkpoint.remove_temporaries(self.out_dir)
        self.metrics = MetricsLog(self.out_dir / "metrics.jsonl", enabled=self.is_main)
        if saved is not None and self.is_main:
            self._check_run_files()
        if self.is_main:
            (self.out_dir / "config.yaml").write_text(yaml.safe_dump(to_dict(config), sort_keys=False))
        self._signal = None

    def _training_windows(self) -> graphs.TrainingWindows | None:
        """The training windows captured as CUDA graphs, where the task has windows (`train_window`) and
        `graphs.capture_refusal` allows; else None, with the reason said on a CUDA device."""
        refusal = graphs.capture_refusal(self.device, self.world)
        if refusal is None and not hasattr(self.task, "train_window"):
            refusal = (f"task {self.config.task}: its batches run from Python (whole windows are captured for "
                       "language models; a Tree-LSTM replays its level loop as CUDA graphs)")
        graphs.set_capturable(self.optimizer, refusal is None)
        if refusal is not None:
            if refusal:
                self.log(f"note: {refusal}")
            return None
        return graphs.TrainingWindows(self.model, self.optimizer, self.task.window_loss, self.config.optim.clip,
                                      self.config.train.precision)

    def _check_run_files(self) -> None:
        """After a resume: a torn last line of `metrics.jsonl` is cut, and a `best.pt` that went missing is written
        again from these weights if they are the best, else said to be lost (the next validation writes it)."""
        repaired = self.metrics.repair()
        if repaired:
            self.log(f"warning: {repaired}")
        best = self.out_dir / "best.pt"
        if self.state.best_step is None or best.is_file():
            return
        if self.state.best_step == self.state.step:
            checkpoint.save(self._payload("model", self._evaluated_weights()), best)
            self.log(f"warning: {best} was missing; written again from {self.out_dir / 'last.pt'}, whose weights are "
                     f"the best (step {self.state.best_step})")
        else:
            self.log(f"warning: {best} is missing: the best weights (validation {format_figure(self.state.best)} at "
                     f"step {self.state.best_step}) are lost; the next validation writes {best} again")
            self.state.best, self.state.best_step = None, None

    def close(self) -> None:
        """Leave the process group this trainer started (under torchrun), after a run that ended normally.
        Without it Gloo's threads can outlive the interpreter at exit and the process aborts ("terminate called
        without an active exception", pytorch/pytorch#190489); seen in 3 of 61 two-process runs. Not after
        an error: another process may still be in a collective, which the teardown would wait on."""
        if self._started_group and dist.is_initialized():
            dist.destroy_process_group()
        self._started_group = False

    def _make_scheduler(self):
        """Learning rate x factor when validation (its loss, or the task's metric: `lr_plateau_on`) has not improved
        for `patience` + 1 epochs in a row (PRPN's recipe; the official ON-LSTM logic code watches accuracy)."""
        config = self.config.optim
        if config.lr_plateau_factor is None:
            return None
        on_score = config.lr_plateau_on == "score" and self.task.Metric.higher_is_better
        return torch.optim.lr_scheduler.ReduceLROnPlateau(self.optimizer, "max" if on_score else "min",
                                                          config.lr_plateau_factor, config.lr_plateau_patience,
                                                          threshold=0)

    # --- checkpoints ---------------------------------------------------------------------------------
    def _rank_state(self) -> dict:
        rng = {"torch": torch.get_rng_state()}
        if self.device.type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state(self.device)
        return {"rng": rng, "task": self.task.state_dict()}

    def _gather(self, value):
        if self.world == 1:
            return [value]
        gathered = [None] * self.world
        dist.all_gather_object(gathered, value)
        return gathered

    def _payload(self, kind: str, model_state: dict) -> dict:
        return {"kind": kind, "config": to_dict(self.config), "vocab": self.task.vocab.words,
                "model": model_state, "trainer": asdict(self.state)}

    def save_last(self) -> Path:
        """Write `last.pt`; every process must call it (their RNG and task states are gathered)."""
        ranks = self._gather(self._rank_state())
        prints = self._gather(_fingerprint(self.model))
        if len(set(prints)) > 1:
            raise RuntimeError(f"replicas diverged: parameter fingerprints {prints}")
        path = self.out_dir / "last.pt"
        if self.is_main:
            payload = self._payload("train-state", self.model.state_dict())
            payload.update(optimizer={"kind": self.state.optimizer, "state": self.optimizer.state_dict()},
                           scheduler=self.scheduler.state_dict() if self.scheduler else None,
                           ranks=ranks, replica_fingerprints=prints)
            checkpoint.save(payload, path)
        return path

    def _restore(self, saved: dict, path) -> None:
        checkpoint.load_weights(self.model, saved["model"], path)
        self.state = TrainerState(**saved["trainer"])
        opt = saved["optimizer"]
        self.optimizer = optim.make_optimizer(self.config.optim, self.model, opt["kind"])
        self.optimizer.load_state_dict(opt["state"])
        self.scheduler = self._make_scheduler()
        if self.scheduler is not None and saved.get("scheduler"):
            self.scheduler.load_state_dict(saved["scheduler"])
        ranks = saved["ranks"]
        if len(ranks) == self.world:
            mine = ranks[self.rank]
            torch.set_rng_state(mine["rng"]["torch"])
            if "cuda" in mine["rng"] and self.device.type == "cuda":
                torch.cuda.set_rng_state(mine["rng"]["cuda"], self.device)
            self.task.load_state_dict(_to_device(mine["task"], self.device), self.model)
        else:
            self.log(f"warning: {path} was written by {len(ranks)} processes, this run has {self.world}: "
                     "the data position is kept, the hidden state and dropout RNG restart")
            state = dict(ranks[0]["task"], hidden=None)
            self.task.load_state_dict(state, self.model)

    # --- evaluation ------------------------------------------------------------------------------------
    def _averaged(self):
        """Parameters and the weights to evaluate them with (the running average under averaged SGD)."""
        if self.state.optimizer != "asgd":
            return []
        return [(p, self.optimizer.state[p]["ax"]) for p in self.model.parameters() if "ax" in self.optimizer.state[p]]

    def _evaluated_weights(self) -> dict:
        """The weights a validation evaluates (the running averages under averaged SGD), as a state dict."""
        averages = {id(p): avg for p, avg in self._averaged()}
        state = self.model.state_dict(keep_vars=True)  # tied weights are one parameter under two names
        return {key: averages.get(id(value), value).detach().clone()
                for key, value in state.items()}

    def evaluate(self, split="valid") -> Metric:
        """Evaluate on `split`, with the averaged weights when averaged SGD is on."""
        swaps = self._averaged()
        kept = [p.detach().clone() for p, _ in swaps]
        with torch.no_grad():
            for p, avg in swaps:
                p.copy_(avg)
        try:
            with (tqdm(unit="tok", desc=f"eval {split}", leave=False, disable=None if self.progress else True) as bar,
                  autocast(self.config.train.precision, self.device)):
                result = self.task.evaluate(self.model, split, progress=bar.update)
            if self.is_main and result.improves(result.score, self.state.best):
                self.state.best, self.state.best_step = result.score, self.state.step
                checkpoint.save(self._payload("model", self.model.state_dict()), self.out_dir / "best.pt")
        finally:
            with torch.no_grad():
                for (p, _), value in zip(swaps, kept):
                    p.copy_(value)
        if self.world > 1:  # every process must agree on the best value (it drives no decision, but is saved)
            self.state.best, self.state.best_step = self._gather((self.state.best, self.state.best_step))[0]
        record = {"event": "eval", "split": split, "step": self.state.step, "epoch": self.state.epoch,
                  "averaged": bool(swaps), "key": result.key, **result.values()}  # key: the task's metric's
        self.metrics.write(record)
        return result

    # --- the loop --------------------------------------------------------------------------------------
    def _on_signal(self, signum, _frame):
        self._signal = signal.Signals(signum).name
        signal.signal(signum, signal.SIG_DFL)  # a second signal ends the process at once

    def _poll(self, started: float, save_due: bool) -> tuple[str | None, bool]:
        """(why to stop now, or None; whether to write a checkpoint now), the same in every process (the first
        process to see a reason or a due checkpoint decides for all: `save_last` is collective)."""
        cfg = self.config.train
        reason = None
        if self._signal:
            reason = self._signal
        elif cfg.max_steps is not None and self.state.step >= cfg.max_steps:
            reason = "max_steps"
        elif cfg.max_minutes is not None and time.monotonic() - started >= cfg.max_minutes * 60:
            reason = "max_minutes"
        if self.world > 1:  # all processes stop, and save, at the same step
            codes = ["", "max_steps", "max_minutes", "SIGTERM", "SIGINT"]
            flags = torch.tensor([codes.index(reason or ""), int(save_due)], device=self.device)
            dist.all_reduce(flags, op=dist.ReduceOp.MAX)
            reason, save_due = codes[int(flags[0].item())] or None, bool(flags[1].item())
        return reason, save_due

    def _train_step(self, batch) -> float:
        config = self.config.optim
        self.net.train()
        # Every parameter group's learning rate is scaled for this batch (e.g. by its BPTT length), then restored.
        scale = optim.lr_scale(config, batch)
        base_lrs = [group["lr"] for group in self.optimizer.param_groups]
        if scale != 1.0:
            for group, base_lr in zip(self.optimizer.param_groups, base_lrs):
                group["lr"] = base_lr * scale
        if self.windows is not None:  # forward, backward and clipping as one CUDA graph (treenets.nn.graphs)
            xent, norm = self.task.train_window(self.windows, batch)
            summed = xent.item() * batch.size
        else:
            self.optimizer.zero_grad(set_to_none=True)
            with autocast(self.config.train.precision, self.device):  # the forward; the backward follows its dtypes
                loss, summed = self.task.train_loss(self.net, batch)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.clip or math.inf)
        # The total gradient norm (clipped to `clip` when set); checked with the loss before any update, so a
        # run that turns NaN or inf stops with its checkpoints holding the last good state.
        # (The norm is of the gradients all processes share; the loss is this process's, checked alone only when
        # it is the only one, so that every process decides the same.)
        if not math.isfinite(norm.item()) or (self.world == 1 and not math.isfinite(summed)):
            raise TreenetsError(
                f"step {self.state.step + 1}: the training loss is {summed / batch.size:g} and the gradient norm "
                f"{norm.item():g} at learning rate {base_lrs[0]:g}: training stopped "
                "before the update; the checkpoints written before (if any) are intact (try a lower optim.lr, "
                "gradient clipping with optim.clip, or check the data)")
        if self.windows is not None:
            self.windows.step()
        else:
            self.optimizer.step()
        for group, base_lr in zip(self.optimizer.param_groups, base_lrs):
            group["lr"] = base_lr
        return summed

    def _end_epoch(self) -> Metric:
        """Validate, keep the best weights, apply the NT-ASGD trigger (official ON-LSTM `main.py` semantics) and
        the plateau schedule (official PRPN `main_LM.py`)."""
        result = self.evaluate("valid")
        config, state = self.config.optim, self.state
        loss = result.loss
        if state.optimizer == "sgd" and config.nt_asgd and optim.nt_asgd_triggered(state.history, loss,
                                                                                   config.nonmono):
            self.log(f"epoch {state.epoch}: validation stopped improving; switching to averaged SGD")
            state.optimizer = "asgd"
            self.optimizer = optim.make_optimizer(config, self.model, "asgd")
            self.scheduler = self._make_scheduler()
            if self.windows is not None:
                self.windows.use_optimizer(self.optimizer)
        state.history.append(loss)
        # this epoch brought a better score if the best came after its first step (also at a validation that a
        # stop in the middle of the epoch ran before a resume)
        improved = state.best_step is not None and state.best_step > state.step - state.epoch_step
        state.epochs_without_better = 0 if improved else state.epochs_without_better + 1
        if self.scheduler is not None:
            self.scheduler.step(result.score if config.lr_plateau_on == "score" else loss)
        return result

    def run(self) -> TrainResult:
        cfg, state = self.config.train, self.state
        started = time.monotonic()
        handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
        last_save, saved = time.monotonic(), False
        valid, reason = None, None
        # Weights that only weight decay moves (e.g. the N-ary W_f, whose input is zero wherever its gate
        # matters) shrink into denormal floats, which make the CPU's matrix products tens of times slower:
        # flush them to zero while training (the setting is process-wide, so it is switched back after).
        flush_denormals = self.device.type == "cpu" and torch.set_flush_denormal(True)
        if cfg.patience is not None and state.epochs_without_better >= cfg.patience:
            reason = "converged"  # a converged run resumed: nothing to train
        try:
            while state.epoch <= cfg.epochs and reason is None:
                bar = tqdm(total=self.task.batches_per_epoch(), initial=state.epoch_step,
                           disable=None if self.progress else True,  # None: only on a terminal
                           desc=f"epoch {state.epoch}", unit="batch", dynamic_ncols=True, leave=False)
                window = {"loss": 0.0, "units": 0, "read": 0, "start": time.monotonic()}
                while True:
                    # The first checkpoint comes within a minute, so a crash early in a run loses little.
                    interval = cfg.checkpoint_minutes * 60 if saved else min(60.0, cfg.checkpoint_minutes * 60)
                    reason, save_due = self._poll(started, time.monotonic() - last_save >= interval)
                    if reason is not None:
                        break
                    if save_due:
                        self.save_last()
                        last_save, saved = time.monotonic(), True
                    batch = self.task.next_batch()
                    if batch is None:
                        if state.epoch_step == 0:
                            raise TreenetsError("the training data gives no batch (fewer examples than one batch, or "
                                                "an empty split): nothing to train on")
                        break
                    step_start = time.monotonic()
                    summed = self._train_step(batch)
                    state.train_seconds += time.monotonic() - step_start
                    state.step += 1
                    state.epoch_step += 1
                    window["loss"] += summed
                    window["units"] += batch.size
                    window["read"] += batch.read
                    bar.update(1)
                    if state.step % cfg.log_interval == 0 or state.epoch_step == 1:
                        self._log_window(window, bar)
                bar.close()
                if reason is None:
                    valid = self._end_epoch()
                    self.log(f"epoch {state.epoch}: valid {valid.key} {format_figure(valid.score)} (step {state.step})")
                    state.epoch += 1
                    state.epoch_step = 0
                    self.save_last()
                    last_save, saved = time.monotonic(), True
                    if cfg.patience is not None and state.epochs_without_better >= cfg.patience:
                        self.log(f"epoch {state.epoch - 1}: no better validation {valid.key} in {cfg.patience} "
                                 f"epochs (train.patience): converged")
                        reason = "converged"
            if reason not in (None, "converged"):
                # Save, validate, save again: last.pt then records the best metric including this validation
                # (resuming must never replace best.pt by a worse model), and nothing is lost if the process is
                # killed during the validation. A signal skips the validation, to exit within seconds.
                self.save_last()
                if reason not in ("SIGINT", "SIGTERM"):
                    valid = self.evaluate("valid")
                    self.save_last()
            reason = reason or "finished"
            if self.windows is not None and self.is_main:
                self.log(self.windows.summary())
        finally:
            for s, handler in handlers.items():
                signal.signal(s, handler)
            if flush_denormals:
                torch.set_flush_denormal(False)
        return TrainResult(reason, state, valid, self.out_dir)

    def _log_window(self, window: dict, bar) -> None:
        elapsed = max(time.monotonic() - window["start"], 1e-9)
        loss = window["loss"] / max(window["units"], 1)
        speed = window["read"] * self.world / elapsed
        running = self.task.Metric.running(loss)
        record = {"event": "train", "step": self.state.step, "epoch": self.state.epoch, "loss": loss, **running}
        record.update({"lr": self.optimizer.param_groups[0]["lr"], f"{self.task.units}_per_s": speed,
                       "optimizer": self.state.optimizer})
        self.metrics.write(record)
        shown = {"loss": f"{loss:.3f}", **{k: format_figure(v) for k, v in running.items()},
                 f"{self.task.units}/s": f"{speed:.0f}"}
        bar.set_postfix(shown)
        if bar.disable and self.is_main:  # no progress bar (not a terminal, or --no-progress): a log line
            values = " ".join(f"{k} {v}" for k, v in shown.items())
            self.log(f"epoch {self.state.epoch} step {self.state.step}: {values} lr {record['lr']:g}")
        window.update(loss=0.0, units=0, read=0, start=time.monotonic())


def _to_device(value, device):
    if isinstance(value, torch.Tensor):
        return value.to(device) if value.dtype != torch.uint8 else value  # generator states stay on the CPU
    if isinstance(value, dict):
        return {k: _to_device(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_to_device(v, device) for v in value)
    return value
