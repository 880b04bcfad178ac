"""The training loop: exact resume, NT-ASGD, signals, DistributedDataParallel."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from helpers import tiny_config

from treenets.config import build_config
from treenets.core import checkpoint, optim
from treenets.core.errors import TreenetsError
from treenets.core.optim import make_optimizer, nt_asgd_triggered
from treenets.workflows.training.trainer import Trainer

PRPN = {"model": {"name": "prpn", "emb_size": 8, "hidden_size": 10, "num_layers": 2, "nslots": 3, "nlookback": 2,
                  "dropout": 0.2, "idropout": 0.1, "rdropout": 0.1, "res": 1},
        "optim": {"name": "adam", "lr": 0.003, "betas": [0.0, 0.999], "lr_plateau_factor": 0.5,
                  "lr_plateau_patience": 0},
        "data": {"variable_bptt": False, "random_offset": True},
        "loss": {"ar": 0.0, "tar": 0.0}}


def _trainer(corpus, out, resume=None, sections=None, **train_options):
    raw = tiny_config(corpus, train=train_options)
    for section, values in (sections or {}).items():
        raw[section] = {"name": values["name"]} if section == "model" else raw.get(section, {})
        raw[section].update(values)
    return Trainer(build_config(raw), out, resume=resume, progress=False, log=lambda *_: None)


def _states(path):
    saved = checkpoint.load(path)
    return saved["model"], saved["optimizer"], saved["trainer"]["step"]


def test_nt_asgd_trigger():
    assert not nt_asgd_triggered([5.0, 4.0, 3.0], 3.5, nonmono=3)  # not enough history
    assert nt_asgd_triggered([5.0, 4.0, 3.0, 3.1], 5.5, nonmono=3)  # worse than the best before the window
    assert not nt_asgd_triggered([5.0, 4.0, 3.0, 3.1], 4.5, nonmono=3)
    assert not nt_asgd_triggered([5.0, 4.0, 3.0, 3.1], 2.9, nonmono=1)  # a new best never triggers


@pytest.mark.parametrize("sections", [None, PRPN], ids=["onlstm-nt-asgd", "prpn-adam-plateau"])
def test_resume_continues_bit_for_bit(tmp_path, corpus, monkeypatch, sections):
    # ON-LSTM: switch to averaged SGD at the end of the second epoch, so the resumed half must restore its
    # state. PRPN: Adam moments, the plateau schedule and the per-epoch random offset must be restored.
    monkeypatch.setattr(optim, "nt_asgd_triggered", lambda history, loss, nonmono: len(history) == 1)
    per_epoch = _trainer(corpus, tmp_path / "probe", sections=sections).task.batches_per_epoch()
    total, half = int(2.6 * per_epoch), int(2.3 * per_epoch)

    straight = _trainer(corpus, tmp_path / "a", sections=sections, max_steps=total).run()
    assert straight.reason == "max_steps"
    assert straight.state.optimizer == ("adam" if sections else "asgd")

    first = _trainer(corpus, tmp_path / "b", sections=sections, max_steps=half).run()
    assert first.state.step == half
    resumed = _trainer(corpus, tmp_path / "b", resume=tmp_path / "b" / "last.pt", sections=sections,
                       max_steps=total)
    assert resumed.state.step == half
    resumed.run()

    model_a, optim_a, step_a = _states(tmp_path / "a" / "last.pt")
    model_b, optim_b, step_b = _states(tmp_path / "b" / "last.pt")
    assert step_a == step_b == total
    for name in model_a:
        assert torch.equal(model_a[name], model_b[name]), name
    for key, value in optim_a["state"]["state"].items():
        for field, tensor in value.items():
            assert torch.equal(tensor, optim_b["state"]["state"][key][field]), (key, field)


def test_training_stops_when_the_validation_score_stops_improving(tmp_path, corpus):
    # A learning rate too small to move any weight: the first validation is the best, the next ones equal it.
    frozen = {"optim": {"lr": 1e-30, "nt_asgd": False}}
    result = _trainer(corpus, tmp_path / "run", sections=frozen, epochs=10, patience=2).run()
    assert result.reason == "converged" and result.exit_code == 0
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    evals = [r for r in records if r["event"] == "eval"]
    assert [r["epoch"] for r in evals] == [1, 2, 3]  # no validation after the last epoch's
    assert result.state.epoch == 4 and result.state.best_step == evals[0]["step"]  # epochs 2, 3 were no better
    assert checkpoint.load(tmp_path / "run" / "last.pt")["trainer"]["epochs_without_better"] == 2
    # resumed, a converged run stops at once (before: it trained one more epoch at every resume)
    resumed = _trainer(corpus, tmp_path / "run", resume=tmp_path / "run" / "last.pt", sections=frozen, epochs=10,
                       patience=2).run()
    assert resumed.reason == "converged" and resumed.state.step == result.state.step
    improving = _trainer(corpus, tmp_path / "improving", epochs=3, patience=1).run()
    assert improving.reason in ("finished", "converged")
    assert (improving.reason == "finished") == (improving.state.best_step == improving.state.step)


def test_run_writes_metrics_best_and_config(tmp_path, corpus):
    result = _trainer(corpus, tmp_path / "run", epochs=1).run()
    assert result.reason == "finished"
    records = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert {"train", "eval"} == {r["event"] for r in records}
    assert all(r["loss"] > 0 and r["tokens_per_s"] > 0 for r in records if r["event"] == "train")
    best = checkpoint.load(tmp_path / "run" / "best.pt")
    assert best["kind"] == "model" and best["trainer"]["best"] == pytest.approx(result.valid.score)
    assert result.valid.key == "ppl" and result.valid.values()["ppl"] == result.valid.score
    assert (tmp_path / "run" / "config.yaml").read_text().startswith("task: lm")


def test_each_log_line_gives_the_speed_of_its_own_window(tmp_path, corpus, monkeypatch):
    trainer = _trainer(corpus, tmp_path / "run", epochs=1)
    clock = iter(range(100))  # each call of the clock one second later
    monkeypatch.setattr("treenets.workflows.training.trainer.time.monotonic", lambda: float(next(clock)))
    bar = type("Bar", (), {"disable": True, "set_postfix": lambda self, shown: None})()
    window = {"loss": 0.0, "units": 0, "read": 0, "start": time.monotonic()}
    for _ in range(3):  # a window of 50 tokens read in a second, logged, then the next
        window.update(loss=window["loss"] + 5.0, units=window["units"] + 10, read=window["read"] + 50)
        trainer._log_window(window, bar)
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    speeds = [json.loads(line)["tokens_per_s"] for line in lines]
    assert speeds == [50.0, 50.0, 50.0]  # (before, the tokens read were never reset: 50, 100, 150)


def _cli(*args, **kwargs):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "treenets", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_that_resumes(tmp_path, config_file):
    config = config_file(train={"epochs": 1000, "log_interval": 1})
    out = tmp_path / "run"
    proc = _cli("train", str(config), "--out", str(out), "--no-progress")
    metrics = out / "metrics.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if metrics.exists() and metrics.read_text().count('"train"') >= 3:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr
    assert "stopped (SIGTERM)" in stdout and "interrupted by SIGTERM; continue with" in stderr
    saved = checkpoint.load(out / "last.pt")
    step = saved["trainer"]["step"]
    assert step >= 3
    proc = _cli("train", "--resume", str(out / "last.pt"), "--max-steps", str(step + 2), "--no-progress")
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    assert checkpoint.load(out / "last.pt")["trainer"]["step"] == step + 2


@pytest.mark.slow
def test_two_process_ddp_keeps_replicas_equal(tmp_path, config_file):
    config = config_file(train={"log_interval": 1})
    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1", "--nproc_per_node=2",
           "-m", "treenets", "train", str(config), "--out", str(out), "--max-steps", "4", "--no-progress"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-8000:]  # the ranks' own errors come before torchrun's summary
    assert "2 process(es)" in done.stderr
    saved = checkpoint.load(out / "last.pt")
    prints = saved["replica_fingerprints"]
    assert len(prints) == 2 and prints[0] == prints[1]
    assert saved["trainer"]["step"] == 4 and len(saved["ranks"]) == 2
    # Each process read its own half of the batch: their saved hidden states differ.
    h0 = saved["ranks"][0]["task"]["hidden"][0]  # layer 1 h of each process
    h1 = saved["ranks"][1]["task"]["hidden"][0]
    assert h0.shape == h1.shape == (2, 12) and not torch.equal(h0, h1)
    # A new run from those weights: every rank reads them, and all start equal.
    again = subprocess.run([*cmd[:cmd.index("train") + 1], "--init", str(out / "best.pt"), "--out",
                            str(tmp_path / "init"), "--max-steps", "2", "--no-progress"],
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-8000:]
    assert again.stderr.count(f"starting from the weights of {out / 'best.pt'}") == 1  # said by the first rank
    saved = checkpoint.load(tmp_path / "init" / "last.pt")
    assert saved["trainer"]["step"] == 2 and saved["trainer"]["initialized_from"] == str(out / "best.pt")
    assert len(set(saved["replica_fingerprints"])) == 1


@pytest.mark.parametrize("kind", ["sgd", "adagrad", "adam"])
def test_word_vectors_out_of_weight_decay_stay_put_where_unused(kind):
    """With `decay_embeddings: false` an embedding row that no batch used keeps its value (weight decay alone
    would move it), while the other weights decay; with the default both move."""
    model = torch.nn.Sequential(torch.nn.Embedding(4, 3), torch.nn.Linear(3, 2))
    for decay_embeddings in (False, True):
        torch.manual_seed(0)
        for p in model.parameters():
            torch.nn.init.normal_(p)
        config = build_config({"task": "lm", "optim": {"name": kind, "lr": 0.1, "weight_decay": 0.5,
                                                       "decay_embeddings": decay_embeddings}}).optim
        optimizer = make_optimizer(config, model, kind)
        before = [p.detach().clone() for p in model.parameters()]
        model(torch.tensor([0, 1])).sum().backward()  # rows 2 and 3 unused
        optimizer.step()
        emb, weight = model[0].weight.detach(), model[1].weight.detach()
        assert torch.equal(emb[2:], before[0][2:]) is not decay_embeddings
        assert not torch.equal(emb[:2], before[0][:2]) and not torch.equal(weight, before[1])


def test_every_parameter_group_gets_the_window_learning_rate(tmp_path, corpus):
    """SGD scales the learning rate by the BPTT window's length: of every parameter group, also the word
    vectors' own group when they are kept out of weight decay."""
    trainer = _trainer(corpus, tmp_path / "run", sections={"optim": {"name": "sgd", "decay_embeddings": False}},
                       max_steps=8)
    assert len(trainer.optimizer.param_groups) == 2
    seen, scales = [], []
    step, next_batch = trainer.optimizer.step, trainer.task.next_batch

    def record_step(*args, **kwargs):
        seen.append([group["lr"] for group in trainer.optimizer.param_groups])
        return step(*args, **kwargs)

    def record_batch():
        batch = next_batch()
        scales.append(batch.lr_scale)
        return batch

    trainer.optimizer.step, trainer.task.next_batch = record_step, record_batch
    trainer.run()
    assert len(seen) == len(scales) == 8 and any(scale != 1.0 for scale in scales)
    for lrs, scale in zip(seen, scales):
        assert lrs == pytest.approx([5.0 * scale, 5.0 * scale])
    assert [group["lr"] for group in trainer.optimizer.param_groups] == [5.0, 5.0]  # restored after each step


# SGD: Adam would magnify float rounding in the gradients of biases that a batch norm follows (zero in exact
# arithmetic) into steps of the full learning rate.
PRPN_SGD = dict(PRPN, optim={"name": "sgd", "lr": 1.0, "nt_asgd": False})


@pytest.mark.parametrize("sections", [None, PRPN_SGD], ids=["onlstm", "prpn"])
def test_a_run_gives_the_same_numbers_with_either_kernel_backend(tmp_path, corpus, sections):
    """The same training run, once in the PyTorch code and once in the compiled kernels: dropout masks,
    losses and weights agree (to float32 rounding)."""
    from treenets.nn.backend import kernels, use_backend

    if kernels("onlstm") is None or kernels("prpn") is None:
        pytest.skip("compiled kernels unavailable")
    runs = []
    for backend in ("torch", "auto"):
        with use_backend("auto"):  # the Trainer sets the config's backend for the process; restored after
            result = _trainer(corpus, tmp_path / backend, sections=sections, max_steps=6, backend=backend).run()
        runs.append((result.valid.loss, _states(tmp_path / backend / "last.pt")[0]))
    (loss_a, model_a), (loss_b, model_b) = runs
    assert loss_a == pytest.approx(loss_b, rel=1e-4)
    for name in model_a:
        torch.testing.assert_close(model_a[name], model_b[name], rtol=1e-3, atol=1e-5, msg=name)


# --- faults: non-finite numbers, stopping, early and stale checkpoints ---------------------------------------


def test_a_loss_that_turns_nan_stops_the_run_before_the_update(tmp_path, corpus):
    from treenets.core.errors import TreenetsError

    trainer = _trainer(corpus, tmp_path / "run", epochs=5)
    real_loss = trainer.task.train_loss
    snapshots = []

    def poisoned(model, batch):
        snapshots.append({k: v.clone() for k, v in trainer.model.state_dict().items()})
        loss, summed = real_loss(model, batch)
        return (loss * float("nan"), float("nan")) if len(snapshots) == 3 else (loss, summed)

    trainer.task.train_loss = poisoned
    with pytest.raises(TreenetsError, match=r"step 3: the training loss is nan .* at learning rate 5"):
        trainer.run()
    for name, tensor in trainer.model.state_dict().items():  # the poisoned step changed nothing
        assert torch.equal(tensor, snapshots[-1][name]), name
    assert not (tmp_path / "run" / "best.pt").exists()


def test_a_nan_or_infinite_validation_is_never_the_best():
    from treenets.tasks.metrics import Perplexity

    assert not Perplexity.improves(float("nan"), None)
    assert not Perplexity.improves(float("inf"), 300.0)
    assert Perplexity.improves(200.0, None)


def test_a_stopped_run_saves_last_pt_after_its_final_validation(tmp_path, corpus):
    # Before: last.pt was written before the final validation, so it held a stale best, and a resumed run
    # replaced best.pt by a worse model.
    result = _trainer(corpus, tmp_path / "run", max_steps=5).run()
    assert result.reason == "max_steps"
    last, best = (checkpoint.load(tmp_path / "run" / name)["trainer"] for name in ("last.pt", "best.pt"))
    assert last["best"] == best["best"] == pytest.approx(result.valid.score)
    assert last["best_step"] == 5


def test_the_first_checkpoint_comes_within_a_minute(tmp_path, corpus, monkeypatch):
    from treenets.workflows.training import trainer as loop

    clock = iter(range(0, 10**6, 10))  # every reading of the clock is 10 s later
    monkeypatch.setattr(loop.time, "monotonic", lambda: float(next(clock)))
    trainer = _trainer(corpus, tmp_path / "run", max_steps=12, checkpoint_minutes=10)
    saved_at = []
    real_save = trainer.save_last
    trainer.save_last = lambda: (saved_at.append(trainer.state.step), real_save())[1]
    trainer.run()
    assert saved_at[0] <= 3 and saved_at[-1] == 12  # before: the first save came after 10 minutes


def test_an_epoch_without_a_batch_is_an_error(tmp_path, corpus):
    from treenets.core.errors import TreenetsError

    trainer = _trainer(corpus, tmp_path / "run")
    trainer.task.next_batch = lambda: None
    with pytest.raises(TreenetsError, match="the training data gives no batch"):
        trainer.run()


def test_temporary_files_of_a_killed_write_are_removed_at_start(tmp_path, corpus):
    (tmp_path / "run").mkdir()
    stale = tmp_path / "run" / ".last.pt.x1y2.tmp"
    stale.write_bytes(b"half a checkpoint")
    keep = tmp_path / "run" / "notes.tmp"
    keep.write_text("mine")
    _trainer(corpus, tmp_path / "run")
    assert not stale.exists() and keep.exists()


def test_the_metrics_log_is_strict_json(tmp_path):
    from treenets.core.runlog import MetricsLog

    log = MetricsLog(tmp_path / "metrics.jsonl", enabled=True)
    log.write({"event": "eval", "split": "valid", "step": 1, "loss": float("nan"), "ppl": float("inf")})
    text = (tmp_path / "metrics.jsonl").read_text()
    assert "NaN" not in text and "Infinity" not in text
    assert json.loads(text)["loss"] is None


def _finished_run(tmp_path, corpus):
    """A tiny run of one epoch through the command line, and its config file."""
    import yaml

    from treenets.cli import main

    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny_config(corpus, train={"epochs": 1})))
    assert main(["train", str(config), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    return config


def test_resume_refuses_training_data_of_other_words(tmp_path, corpus, capsys):
    # Before: every word was read as <unk> (validation perplexity 1.52), without a word.
    from helpers import write_corpus

    from treenets.cli import main

    _finished_run(tmp_path, corpus)
    other = write_corpus(tmp_path / "other")
    for name in other.iterdir():
        name.write_text(name.read_text().replace("cat", "zebra").replace("dog", "yak"))
    capsys.readouterr()
    assert main(["train", "--resume", str(tmp_path / "run" / "last.pt"), "--set", f"data.path={other}",
                 "--set", "train.epochs=2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "has 2 word(s) ('zebra', 'yak') that the checkpoint's vocabulary of 45 lacks" in err


def test_resume_writes_a_missing_best_pt_again_or_says_it_is_lost(tmp_path, corpus, capsys):
    from treenets.cli import main

    _finished_run(tmp_path, corpus)
    run = tmp_path / "run"
    (run / "best.pt").unlink()  # last.pt's weights are the best: the run ended on its best validation
    state = checkpoint.load(run / "last.pt")["trainer"]
    assert state["best_step"] == state["step"]
    assert main(["train", "--resume", str(run / "last.pt"), "--set", "train.epochs=2", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "best.pt was missing; written again from" in err and (run / "best.pt").is_file()


def test_resume_cuts_a_torn_last_line_of_the_metrics_log(tmp_path, corpus, capsys):
    # Before: the resumed run appended after the torn line, and `treenets metrics` failed on the file.
    from treenets.cli import main

    _finished_run(tmp_path, corpus)
    log = tmp_path / "run" / "metrics.jsonl"
    with open(log, "a") as fh:
        fh.write('{"event": "train", "st')  # killed while writing
    assert main(["train", "--resume", str(tmp_path / "run" / "last.pt"), "--set", "train.epochs=2",
                 "--no-progress"]) == 0
    assert "its last line was cut short" in capsys.readouterr().err
    assert main(["metrics", str(tmp_path / "run")]) == 0
    assert all(json.loads(line) for line in log.read_text().splitlines())


def test_one_run_per_folder(tmp_path, corpus):
    """A second `treenets train` into a folder being written gets a clear error (before: both ran, interleaving
    their records); the lock goes when its process ends."""
    from treenets.workflows.training.run_folder import run_folder_lock

    code = ("import sys, time; from pathlib import Path\n"
            "from treenets.workflows.training.run_folder import run_folder_lock\n"
            "with run_folder_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(30)")
    holder = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "run")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(TreenetsError, match=f"another treenets train is writing into this run folder "
                                                f"\\(process {holder.pid}\\)"), run_folder_lock(tmp_path / "run"):
            pass
    finally:
        holder.kill()
        holder.wait()
    with run_folder_lock(tmp_path / "run"):  # free again once the holder is gone (killed: no clean-up ran)
        pass


def test_a_run_folder_deleted_while_training_is_made_again(tmp_path, corpus):
    from treenets.core.runlog import MetricsLog

    log = MetricsLog(tmp_path / "run" / "metrics.jsonl", enabled=True)
    log.write({"event": "train", "step": 1, "epoch": 1, "loss": 1.0})
    import shutil

    shutil.rmtree(tmp_path / "run")
    log.write({"event": "train", "step": 2, "epoch": 1, "loss": 1.0})  # before: FileNotFoundError, the run lost
    assert json.loads((tmp_path / "run" / "metrics.jsonl").read_text())["step"] == 2


def test_init_starts_a_new_run_from_a_trained_models_weights_and_vocabulary(tmp_path, corpus, capsys):
    # A model folder as `treenets export` writes it (the zoo's form), from a run of one epoch: the new run's
    # model holds its weights, keeps its vocabulary, and starts its optimizer and counters afresh.
    from treenets.cli import main
    from treenets.zoo import model_folder

    config = _finished_run(tmp_path, corpus)
    assert main(["export", str(tmp_path / "run" / "best.pt"), str(tmp_path / "folder")]) == 0
    start = model_folder.read_folder(tmp_path / "folder")
    trainer = Trainer(build_config(tiny_config(corpus)), tmp_path / "again", init=tmp_path / "folder",
                      progress=False, log=lambda *_: None)
    for name, tensor in trainer.model.state_dict().items():
        assert torch.equal(tensor, start["model"][name]), name
    assert trainer.task.vocab.words == start["vocab"]
    assert trainer.state.step == 0 and trainer.state.best is None and not trainer.optimizer.state_dict()["state"]
    assert trainer.state.initialized_from == str(tmp_path / "folder")
    trainer.close()

    # Through the command line: the trained model's validation at the start, not a fresh model's; its card
    # names the model it started from.
    fresh = checkpoint.load(tmp_path / "run" / "best.pt")["trainer"]["best"]
    capsys.readouterr()
    assert main(["train", str(config), "--init", str(tmp_path / "folder"), "--out", str(tmp_path / "more"),
                 "--set", "train.epochs=1", "--set", "optim.lr=0.0001", "--no-progress"]) == 0
    assert f"starting from the weights of {tmp_path / 'folder'}" in capsys.readouterr().err
    more = checkpoint.load(tmp_path / "more" / "best.pt")["trainer"]
    assert more["best"] == pytest.approx(fresh, rel=0.01)  # a tiny learning rate: the weights barely move
    assert main(["export", str(tmp_path / "more" / "best.pt"), str(tmp_path / "card")]) == 0
    training = json.loads((tmp_path / "card" / "metrics.json").read_text())["training"]
    assert training["initialized_from"] == str(tmp_path / "folder") and training["steps"] == more["step"]

    # Without a config: the model's own, with the overrides given.
    assert main(["train", "--init", str(tmp_path / "folder"), "--out", str(tmp_path / "own"), "--set",
                 "train.epochs=1", "--max-steps", "1", "--no-progress"]) == 0
    own = checkpoint.load(tmp_path / "own" / "last.pt")
    exported = json.loads((tmp_path / "folder" / "config.json").read_text())
    assert own["config"]["model"] == exported["model"] and own["config"]["train"]["max_steps"] == 1


def test_init_refuses_another_task_another_size_or_a_resume(tmp_path, corpus, capsys):
    from treenets.cli import main

    config = _finished_run(tmp_path, corpus)
    best = str(tmp_path / "run" / "best.pt")
    capsys.readouterr()
    assert main(["train", str(config), "--init", best, "--resume", best, "--no-progress"]) == 2
    assert "--init starts a new run from a model's weights, --resume goes on with a run" in capsys.readouterr().err
    assert main(["train", str(config), "--init", best, "--out", str(tmp_path / "b"), "--set", "model.hidden_size=16",
                 "--no-progress"]) == 2
    assert "the model expects" in capsys.readouterr().err
    assert main(["train", "treelstm-logic", "--init", best, "--out", str(tmp_path / "c"), "--no-progress"]) == 2
    assert f"{best}: a model of task 'lm'; --init needs one of the config's task 'logic'" in capsys.readouterr().err


def test_init_says_which_words_its_vocabulary_lacks(tmp_path, corpus, capsys):
    from helpers import write_corpus

    from treenets.cli import main

    config = _finished_run(tmp_path, corpus)
    other = write_corpus(tmp_path / "other")
    for name in other.iterdir():
        name.write_text(name.read_text().replace("cat", "zebra"))
    capsys.readouterr()
    assert main(["train", str(config), "--init", str(tmp_path / "run" / "best.pt"), "--out", str(tmp_path / "b"),
                 "--set", f"data.path={other}", "--max-steps", "1", "--no-progress"]) == 0
    said = f"has 1 word(s) ('zebra') that the vocabulary of {tmp_path / 'run' / 'best.pt'} (45 words, kept with its " \
           "weights) lacks; they are read as <unk>"
    assert said in capsys.readouterr().err
    # resumed, the run reads the same data through the same vocabulary: said again, not refused as other data
    assert main(["train", "--resume", str(tmp_path / "b" / "last.pt"), "--max-steps", "2", "--no-progress"]) == 0
    assert said in capsys.readouterr().err


def test_init_refuses_a_model_that_is_not_there_or_its_own_folder_as_the_run_folder(tmp_path, corpus, capsys):
    # Before the check: with --overwrite, the run folder (the model's own) was emptied before the model was read.
    from treenets.cli import main

    config = _finished_run(tmp_path, corpus)
    run = tmp_path / "run"
    capsys.readouterr()
    assert main(["train", str(config), "--init", str(run / "best.pt"), "--out", str(run), "--overwrite",
                 "--no-progress"]) == 2
    assert f"--out {run}: the folder of {run / 'best.pt'}, which the run would write over" in capsys.readouterr().err
    assert (run / "best.pt").is_file() and (run / "last.pt").is_file()
    assert main(["train", str(config), "--init", str(tmp_path / "nothing"), "--out", str(tmp_path / "new"),
                 "--no-progress"]) == 2
    assert f"{tmp_path / 'nothing'}: no such checkpoint file or model folder" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_resume_into_another_runs_folder_needs_overwrite(tmp_path, corpus, capsys):
    # Before: `train --resume A/last.pt --out B`, B holding a run of its own (a grammar's), replaced B's last.pt and
    # config.yaml by A's run without --overwrite, as a fresh run into B is refused.
    import shutil

    from treenets.cli import main

    _finished_run(tmp_path, corpus)
    other = tmp_path / "grammar"
    other.mkdir()
    shutil.copy(tmp_path / "run" / "last.pt", other / "last.pt")
    (other / "config.yaml").write_text("task: pcfg\nmodel:\n  name: compound-pcfg\n")
    before = (other / "last.pt").read_bytes()
    capsys.readouterr()
    resume = ["train", "--resume", str(tmp_path / "run" / "last.pt"), "--out", str(other), "--set", "train.epochs=2",
              "--no-progress"]
    assert main(resume) == 2
    err = capsys.readouterr().err
    assert f"--out {other} already holds another training run (task pcfg, model compound-pcfg: " \
           f"{other / 'config.yaml'}) than the one of --resume {tmp_path / 'run' / 'last.pt'}" in err, err
    assert "pass --overwrite to replace that run" in err and "Traceback" not in err
    assert (other / "last.pt").read_bytes() == before and "task: pcfg" in (other / "config.yaml").read_text()
    # its own folder, named either way, goes on; --overwrite replaces the other run
    assert main(["train", "--resume", str(tmp_path / "run" / "last.pt"), "--out", str(tmp_path / "run" / "."),
                 "--set", "train.epochs=2", "--no-progress"]) == 0
    assert main([*resume, "--overwrite"]) == 0
    assert "task: lm" in (other / "config.yaml").read_text()


def test_an_evaluation_records_its_tasks_metric_and_the_curve_draws_it(tmp_path, corpus):
    """Each evaluation of the log names the figure that selects the model (the task's metric's `key`), and the
    learning curve draws that one: a language model's perplexity beside its running training perplexity, on a log
    scale where it spans ten times; a grammar's bound (`ppl_bound`, which the training log does not have) beside
    the training loss (before: the shared plot knew a list of keys and drew a grammar's `loss`)."""
    from treenets.core.runlog import learning_curve, plot_curve, read_metrics

    _finished_run(tmp_path, corpus)
    records = read_metrics(tmp_path / "run")
    evals = [r for r in records if r["event"] == "eval"]
    assert evals and all(r["key"] == "ppl" for r in evals)
    curve = learning_curve(records)
    assert curve["key"] == "ppl" and curve["beside"] and curve["valid"] == [(r["step"], r["ppl"]) for r in evals
                                                                           if r["split"] == "valid"]
    grammar = [{"event": "train", "step": s, "epoch": 1, "loss": 9.0 - s, "ppl": 900.0 / s} for s in (1, 2, 3)]
    grammar += [{"event": "eval", "split": "valid", "step": 3, "epoch": 1, "key": "ppl_bound", "ppl_bound": 300.0,
                 "loss": 5.7}]
    curve = learning_curve(grammar)
    assert (curve["key"], curve["valid"], curve["beside"]) == ("ppl_bound", [(3, 300.0)], False)
    assert curve["train"] == [(1, 8.0), (2, 7.0), (3, 6.0)] and not curve["log"]
    accuracy = [{"event": "train", "step": s, "epoch": 1, "loss": 1.0 / s, "accuracy": 0.5 + s / 10} for s in (1, 2)]
    accuracy += [{"event": "eval", "split": "valid", "step": 2, "epoch": 1, "key": "accuracy", "accuracy": 0.75}]
    assert learning_curve(accuracy)["beside"] and not learning_curve(accuracy)["log"]
    plot_curve(grammar, tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"
