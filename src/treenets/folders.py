"""Where treenets keeps and finds what the user did not name: the source checkout it runs from (if any), its cache,
and the data folder of an installed treenets.

An installed treenets (a wheel in site-packages) has no checkout around it: the shipped models then live in the
cache, put there by `treenets models download`, and the datasets in `default_data_dir`, filled by `treenets data
download`. Each folder is read from the environment at each call (the tests give every test its own).
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "TREENETS_CACHE"


def checkout() -> Path | None:
    """The source checkout treenets runs from (the folder holding `pyproject.toml` and `src/treenets`), or None
    for an installed treenets."""
    root = Path(__file__).resolve().parents[2]
    return root if (root / "pyproject.toml").is_file() and (root / "src" / "treenets").is_dir() else None


def cache_dir() -> Path:
    """`$TREENETS_CACHE`, else `treenets` in the user's cache folder (`$XDG_CACHE_HOME`, else `~/.cache`)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "treenets"


def default_data_dir() -> Path:
    """The data folder used when none is set and no `../shared/data` is found: `data` in the cache."""
    return cache_dir() / "data"
