"""Shared fixtures: a home of its own for every test, the staged data and golden folders, and a tiny corpus for
fast training tests.

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
from treenets.core.errors import TreenetsError

REPO = Path(__file__).resolve().parents[1]

# Under an emulator (tests/arm/run.sh) drawing an example can take many seconds: `--hypothesis-profile emulated`.
settings.register_profile("emulated", deadline=None, suppress_health_check=[HealthCheck.too_slow])


# Where each test (and every process it starts, which inherits the environment) keeps its home and caches.
HOME_FOLDERS = {"HOME": "", "XDG_CACHE_HOME": ".cache", "TREENETS_CACHE": ".cache/treenets",
                "MPLCONFIGDIR": ".config/matplotlib"}


def _move_home(monkeypatch, home: Path) -> None:
    for variable, folder in HOME_FOLDERS.items():
        monkeypatch.setenv(variable, str(home / folder))


@pytest.fixture(scope="session", autouse=True)
def session_home(tmp_path_factory):
    """An empty home for the session's module- and session-scoped fixtures (which run before `own_home`: a
    run trained once for a module, say), so that nothing in the suite reads or writes the user's home or caches.

    The C++ kernels' builds stay shared, in the folder they would have without the tests: torch finds it under
    `$TORCH_EXTENSIONS_DIR`, else under the home's cache folder, which would move with every test and rebuild
    the kernels (about half a minute each) in every test that runs one. Their folder is named by everything a build
    depends on (`treenets.nn.backend.build_name`), so sharing it cannot change what a test sees. (CI starts
    from an empty home, `.ci/run`: there the kernels are built once, in the suite's first test that needs one.)
    """
    from torch.utils import cpp_extension

    # torch's folder of this Python's and torch's builds, as found before the home moves (a build named ''
    # is that folder itself)
    kernels = os.environ.get("TORCH_EXTENSIONS_DIR") or cpp_extension._get_build_directory("", verbose=False)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(Path(kernels)))
        _move_home(monkeypatch, tmp_path_factory.mktemp("session-home"))
        yield


@pytest.fixture(autouse=True)
def own_home(session_home, tmp_path_factory) -> Path:
    """Every test's own empty home and caches (`HOME_FOLDERS`), so that what it sees never depends on what ran
    before it, on this machine or in this session: a cache another test filled would hide a first run's
    output (before, `treenets eval` of a Tree-LSTM over induced trees printed a note that only a first run
    shows, and the suite passed wherever the user's cache was filled). Its own `MonkeyPatch`: a test's
    `monkeypatch.undo()` leaves it in place."""
    home = tmp_path_factory.mktemp("home")
    with pytest.MonkeyPatch.context() as monkeypatch:
        _move_home(monkeypatch, home)
        yield home


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
