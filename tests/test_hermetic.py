"""The suite never reads or writes the user's home or caches: every test, and every process it starts, has its own
empty home (`own_home` in conftest.py), and treenets finds its cache there at each call. The C++ kernels' builds
stay shared, where they would be without the tests."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest

from treenets.core import folders

WHERE = """import json, os, pathlib
import matplotlib
from torch.utils import cpp_extension
from treenets.core import folders
print(json.dumps({"home": str(pathlib.Path.home()), "cache": str(folders.cache_dir()),
                  "matplotlib": matplotlib.get_configdir(), "kernels": os.environ.get("TORCH_EXTENSIONS_DIR"),
                  "kernels by default": cpp_extension.get_default_build_root()}))
"""


def test_the_home_of_a_test_is_not_the_users(own_home, tmp_path_factory):
    user = Path(pwd.getpwuid(os.getuid()).pw_dir)
    assert Path.home() == own_home != user and own_home.is_relative_to(tmp_path_factory.getbasetemp())
    assert folders.cache_dir().is_relative_to(own_home) and Path("~").expanduser() == own_home
    # a process the test starts finds the same home and caches (matplotlib's too), and the shared kernels' builds
    where = json.loads(subprocess.run([sys.executable, "-c", WHERE], capture_output=True, text=True,
                                      check=True).stdout)
    assert Path(where["home"]) == own_home
    assert Path(where["cache"]).is_relative_to(own_home) and Path(where["matplotlib"]).is_relative_to(own_home)
    # the kernels' builds, which would move with the home, stay where they were before the tests began
    assert Path(where["kernels by default"]).is_relative_to(own_home)
    kernels = where["kernels"]
    assert kernels is not None and not Path(kernels).is_relative_to(own_home), f"$TORCH_EXTENSIONS_DIR: {kernels}"


@pytest.mark.parametrize("turn", ["one", "another"])
def test_every_test_starts_from_an_empty_home(turn, own_home):
    # Whichever runs second finds the home empty only if each has its own.
    assert list(own_home.iterdir()) == [] and not folders.cache_dir().exists()
    folders.cache_dir().mkdir(parents=True)
    (folders.cache_dir() / "trees").mkdir()


def test_the_cache_is_found_at_each_call(tmp_path, monkeypatch):
    # from the environment when asked, not when treenets was imported: the tests move it for every test
    monkeypatch.setenv(folders.CACHE_ENV, str(tmp_path / "given"))
    assert folders.cache_dir() == tmp_path / "given"
    monkeypatch.delenv(folders.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert folders.cache_dir() == tmp_path / "xdg" / "treenets"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert folders.cache_dir() == tmp_path / "home" / ".cache" / "treenets"
