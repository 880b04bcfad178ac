"""Faults while training: a checkpoint write that fails half-way (disk full), and `kill -9` of `treenets train`
at random moments. Either way the checkpoints on disk stay loadable, and a resumed run finishes."""

from __future__ import annotations

import errno
import io
import os

import pytest
from helpers import kill_and_resume, tiny_config, write_corpus

from treenets.config import build_config
from treenets.core import checkpoint
from treenets.core.errors import TreenetsError
from treenets.workflows.training.trainer import Trainer


def quiet(*_):
    pass


def test_a_checkpoint_write_failing_half_way_keeps_the_checkpoints_and_stops_naming_the_file(tmp_path, monkeypatch):
    corpus = write_corpus(tmp_path / "corpus")
    run = tmp_path / "run"
    Trainer(build_config(tiny_config(corpus, train={"max_steps": 3})), run, progress=False, log=quiet).run()
    before = {name: (run / name).read_bytes() for name in ("last.pt", "best.pt")}
    limit = len(before["last.pt"]) // 2

    class FullDisk(io.FileIO):
        """A file on a device that fills up after `limit` bytes: writes what fits, then fails with ENOSPC."""

        written = 0

        def write(self, data) -> int:
            room = limit - self.written
            if room <= 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            count = super().write(bytes(data)[:room])
            self.written += count
            return count

    monkeypatch.setattr(checkpoint.os, "fdopen", lambda fd, mode: io.BufferedWriter(FullDisk(fd, mode)))
    resumed = Trainer(build_config(tiny_config(corpus, train={"max_steps": 6})), run, resume=run / "last.pt",
                      progress=False, log=quiet)
    with pytest.raises(TreenetsError, match=r"run/last\.pt: could not write the checkpoint \(No space left on dev"):
        resumed.run()
    monkeypatch.undo()
    assert {name: (run / name).read_bytes() for name in before} == before
    assert checkpoint.load(run / "last.pt")["trainer"]["step"] == 3 and checkpoint.load(run / "best.pt")
    assert not list(run.glob(".*.tmp"))


@pytest.mark.slow
def test_kill_9_at_random_moments_leaves_a_loadable_last_pt_and_the_run_resumes(tmp_path):
    records = kill_and_resume(tmp_path, kills=4, seed=15, max_delay=1.0, final_steps=10)
    assert all(r["loadable"] for r in records), records
    steps = [r["step"] for r in records]
    assert steps == sorted(steps) and records[-1]["resumed"] == steps[-1] + 10, records
    assert not list((tmp_path / "run").glob(".*.tmp"))
    assert checkpoint.load(tmp_path / "run" / "best.pt")
