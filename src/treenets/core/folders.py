"""Where treenets keeps and finds what the user did not name: the source checkout it runs from (if any), its cache,
and the data folder of an installed treenets.

An installed treenets (a wheel in site-packages) has no checkout around it: the shipped models then live in the
cache, put there by `treenets models download`, and the datasets in `default_data_dir`, filled by `treenets data
download`. Each folder is read from the environment at each call (the tests give every test its own).

Every setting that names a folder (`--data`, `$TREENETS_DATA`, `$TREENETS_CACHE`, `$TORCH_EXTENSIONS_DIR`) or a
copy of one, a folder or a URL (`--from`, `$TREENETS_MODELS_URL`), is read by `named_folder` or `copy_url`: a value
of the wrong kind (a file where a folder belongs, a URL of no scheme treenets downloads from) is an error naming the
setting, its value and what it must be, not a failure further on blamed on something else ("File exists").
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from urllib.parse import urlsplit

from treenets.core.errors import TreenetsError

CACHE_ENV = "TREENETS_CACHE"
URL_SCHEMES = ("http", "https", "file")  # what `treenets.data.fetch` downloads from


def _shown(setting: str, value) -> tuple[str, str]:
    """How a message shows `setting` given `value` (`--data DIR`, `TREENETS_CACHE=DIR`, or a default folder with
    what chose it), and how it names the setting afterwards."""
    if setting.startswith("-"):
        return f"{setting} {value}", setting
    if setting.startswith("$"):
        return f"{setting[1:]}={value}", setting[1:]
    return f"{value} ({setting})", "it"


def named_folder(value: str | os.PathLike, setting: str, what: str, must_exist: bool = False) -> Path:
    """The folder `value` that `setting` names (an option such as `--data`, an environment variable such as
    `$TREENETS_CACHE`, or words saying how a default was chosen), expanded (`~`), checked to be a folder or a
    place where one can be made, and with `must_exist` to exist.

    Raises:
        TreenetsError: `--data FILE: a file, not a folder (--data must name a folder: WHAT)`, and the like for a
            path under a file or, with `must_exist`, a folder that does not exist.
    """
    path = Path(value).expanduser()
    shown, subject = _shown(setting, value)
    existing = next((p for p in (path, *path.parents) if os.path.lexists(p)), None)  # (a link counts, broken too)
    if existing is not None and existing.is_symlink() and not existing.exists():
        problem = (f"{'is' if existing == path else f'lies under {existing},'} a link to {os.readlink(existing)}, "
                   "which does not exist")
    elif existing == path and not path.is_dir():
        problem = "a file, not a folder" if path.is_file() else "not a folder"
    elif existing is not None and existing != path and not existing.is_dir():
        problem = f"lies under {existing}, which is a file, not a folder"
    elif must_exist and existing != path:
        problem = "does not exist"
    else:
        return path
    raise TreenetsError(f"{shown}: {problem} ({subject} must name {what})")


def copy_url(value: str | os.PathLike, setting: str, what: str) -> str:
    """The base URL of the copy of a folder that `setting` names (`--from`, `$TREENETS_MODELS_URL`): a URL
    (`http://host/models`, `https:`, `file:`) without its trailing `/`, or an existing folder (as a `file:` URL).

    Raises:
        TreenetsError: naming `setting` and `value` for a URL of another scheme (`htp:/x`), an http(s) URL without a
            host, or a path that is no folder (`named_folder`).
    """
    text = str(value)
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]+):", text)  # (two letters at least: `C:` is a drive)
    if scheme and not Path(text).expanduser().is_dir():
        shown, subject = _shown(setting, text)
        must = f"({subject} must name {what}: a folder, or an http://, https:// or file: URL)"
        name = scheme.group(1).lower()
        if name not in URL_SCHEMES:
            raise TreenetsError(f"{shown}: neither a folder nor a URL treenets downloads from (its scheme is {name}:) "
                                f"{must}")
        try:
            host = urlsplit(text).hostname
        except ValueError as exc:  # `http://[::1`
            raise TreenetsError(f"{shown}: not a URL ({exc}) {must}") from None
        if name != "file" and not host:
            raise TreenetsError(f"{shown}: a URL without a host (expected {name}://HOST/PATH) {must}")
        return text.rstrip("/")
    return named_folder(value, setting, f"{what}: a folder, or an http://, https:// or file: URL",
                        must_exist=True).resolve().as_uri()


def checkout() -> Path | None:
    """The source checkout treenets runs from (the folder holding `pyproject.toml` and `src/treenets`), or None
    for an installed treenets."""
    root = Path(__file__).resolve().parents[3]  # src/treenets/core/folders.py
    return root if (root / "pyproject.toml").is_file() and (root / "src" / "treenets").is_dir() else None


CACHE = "a folder: treenets' cache of models, induced trees and data, made where missing"


def cache_dir() -> Path:
    """`$TREENETS_CACHE`, else `treenets` in the user's cache folder (`$XDG_CACHE_HOME`, else `~/.cache`), which
    need not exist yet.

    Raises:
        TreenetsError: naming the setting that chose it when it is a file or lies under one (`named_folder`).
    """
    if os.environ.get(CACHE_ENV):
        return named_folder(os.environ[CACHE_ENV], f"${CACHE_ENV}", CACHE)
    if os.environ.get("XDG_CACHE_HOME"):
        user_cache = named_folder(os.environ["XDG_CACHE_HOME"], "$XDG_CACHE_HOME", "a folder: the user's cache")
        return named_folder(user_cache / "treenets", f"the cache folder in $XDG_CACHE_HOME; ${CACHE_ENV} names "
                            "another", CACHE)
    return named_folder(Path.home() / ".cache" / "treenets", f"the default cache folder; ${CACHE_ENV} names another",
                        CACHE)


def default_data_dir() -> Path:
    """The data folder used when none is set and no `../shared/data` is found: `data` in the cache."""
    return named_folder(cache_dir() / "data", "the default data folder, in the cache; $TREENETS_DATA or --data "
                        "names another", "a folder: the data root")
