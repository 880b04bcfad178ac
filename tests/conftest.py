"""Shared fixtures: the staged data and golden folders, and a tiny corpus for fast training tests.

Tests that need `../shared/data` or `../shared/golden` skip when those are absent, unless
`TREENETS_REQUIRE_DATA=1` (set by `make test` and CI), which turns a missing folder into a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml
from helpers import tiny_config, write_corpus
from hypothesis import HealthCheck, settings

from treenets import data
from treenets.errors import TreenetsError

REPO = Path(__file__).resolve().parents[1]

# Under an emulator (tests/arm/run.sh) drawing an example can take many seconds: `--hypothesis-profile emulated`.
settings.register_profile("emulated", deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _require(path_name: str):
    if os.environ.get("TREENETS_REQUIRE_DATA") == "1":
        pytest.fail(f"{path_name} is required (TREENETS_REQUIRE_DATA=1) but was not found")
    pytest.skip(f"{path_name} not available")


@pytest.fixture(scope="session")
def data_root() -> Path:
    try:
        return data.data_root()
    except TreenetsError:
        _require("the data root ($TREENETS_DATA or ../shared/data)")


@pytest.fixture(scope="session")
def golden_root(data_root) -> Path:
    golden = Path(os.environ.get("TREENETS_GOLDEN", data_root.parent / "golden"))
    if not golden.is_dir():
        _require(f"the golden fixtures ({golden})")
    return golden


@pytest.fixture
def corpus(tmp_path) -> Path:
    return write_corpus(tmp_path / "corpus")


@pytest.fixture
def config_file(tmp_path, corpus):
    def make(**sections) -> Path:
        path = tmp_path / "tiny.yaml"
        path.write_text(yaml.safe_dump(tiny_config(corpus, **sections)))
        return path

    return make


@pytest.fixture
def two_threads():
    """Two intra-op threads, so that the compiled kernels' parallel loops (a Tree-LSTM batch's parts, the
    language models' rows) run on threads at the same time, whatever the machine's default."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(threads)
