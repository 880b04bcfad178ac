"""Where the datasets live, what they should contain, and how to fetch them.

One setting finds every dataset: the data root. It is, in order, the `--data` option (or the `root`
argument), the environment variable `TREENETS_DATA`, or `../shared/data` when that folder exists
(looked up from the current directory and from the source checkout). `datasets.json` lists every file
treenets can use, with its size, sha256 and a canonical URL, so that `treenets data check` can verify what
is present and `treenets data download` can fetch what is missing (tests never download).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import urllib.request
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from treenets.console import note
from treenets.errors import TreenetsError

ENV_VAR = "TREENETS_DATA"
_REGISTRY = Path(__file__).with_name("datasets.json")


def _default_candidates() -> list[Path]:
    checkout = Path(__file__).resolve().parents[3]  # src/treenets/data -> repository root
    return [Path.cwd() / ".." / "shared" / "data", checkout / ".." / "shared" / "data"]


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data root: `root` if given, else `$TREENETS_DATA`, else `../shared/data` if it exists.

    Raises:
        TreenetsError: if the chosen folder does not exist, or none was given and no default exists.
    """
    if root is not None:
        origin = "--data"
    elif os.environ.get(ENV_VAR):
        root, origin = os.environ[ENV_VAR], f"${ENV_VAR}"
    else:
        for candidate in _default_candidates():
            if candidate.is_dir():
                return candidate.resolve()
        raise TreenetsError(
            f"no data folder: set {ENV_VAR} or pass --data DIR (the folder that holds ptb_lm/, sick/, ...); "
            f"`treenets data download --data DIR` fetches the datasets"
        )
    path = Path(root).expanduser()
    if not path.is_dir():
        raise TreenetsError(f"data folder {path} (from {origin}) does not exist")
    return path.resolve()


def resolve(path: str | os.PathLike, root: str | os.PathLike | None = None) -> Path:
    """`path` itself if absolute, else `path` under the data root."""
    path = Path(path).expanduser()
    return path if path.is_absolute() else data_root(root) / path


@dataclass(frozen=True)
class DataFile:
    """One file of a dataset: where it goes under the data root, and how to verify and fetch it."""

    dataset: str
    path: str
    bytes: int
    sha256: str
    url: str
    unpack_to: str | None = None  # a zip archive is unpacked into this folder after download


@cache
def registry() -> dict[str, list[DataFile]]:
    """Dataset name -> its files, from `datasets.json`."""
    doc = json.loads(_REGISTRY.read_text())
    return {name: [DataFile(dataset=name, **f) for f in files] for name, files in doc["datasets"].items()}


def _select(names: list[str] | None) -> list[DataFile]:
    known = registry()
    for name in names or []:
        if name not in known:
            raise TreenetsError(f"unknown dataset {name!r}: expected one of {', '.join(sorted(known))}")
    return [f for name in (names or sorted(known)) for f in known[name]]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class FileStatus:
    file: DataFile
    status: str  # "ok", "missing", "wrong size", "wrong sha256"


def check(names: list[str] | None = None, root: str | os.PathLike | None = None) -> list[FileStatus]:
    """Verify the size and sha256 of every registered file of `names` (all datasets by default)."""
    base = data_root(root)
    result = []
    for f in _select(names):
        path = base / f.path
        if not path.is_file():
            status = "missing"
        elif path.stat().st_size != f.bytes:
            status = "wrong size"
        elif sha256_of(path) != f.sha256:
            status = "wrong sha256"
        else:
            status = "ok"
        result.append(FileStatus(f, status))
    return result


def print_check(names: list[str] | None = None, root: str | os.PathLike | None = None) -> bool:
    """`treenets data check`: print the data root and the status of every file of `names` (`check`), then the
    counts; whether no file is wrong (missing files are not wrong: `treenets data download` fetches them)."""
    statuses = check(names, root)
    print(f"data root: {data_root(root)}")
    for s in statuses:
        print(f"{s.status:12s} {s.file.dataset:16s} {s.file.path}")
    counts = {status: sum(s.status == status for s in statuses) for status in ("ok", "missing")}
    wrong = len(statuses) - sum(counts.values())
    print(f"{counts['ok']} ok, {counts['missing']} missing, {wrong} wrong")
    return wrong == 0


def fetch(url: str, target: Path, sha256: str) -> None:
    """Download `url` to `target`, verifying its sha256. The file is written under a temporary name and renamed
    only after its checksum matched, so an interrupted download never leaves a file that looks complete."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:
            shutil.copyfileobj(response, out)
        got = sha256_of(Path(tmp))
        if got != sha256:
            raise TreenetsError(f"{url}: sha256 {got} does not match the expected {sha256}")
        os.replace(tmp, target)
    except OSError as exc:
        raise TreenetsError(f"could not download {url}: {exc}") from exc
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def download(names: list[str] | None, root: str | os.PathLike, log=note) -> None:
    """Fetch the files of `names` that are missing or wrong under `root`, verifying each sha256 (`fetch`)."""
    base = Path(root).expanduser()
    base.mkdir(parents=True, exist_ok=True)
    for status in check(names, base):
        f = status.file
        if status.status == "ok":
            log(f"ok          {f.path}")
            continue
        target = base / f.path
        log(f"downloading {f.path} <- {f.url}")
        fetch(f.url, target, f.sha256)
        if f.unpack_to:
            with zipfile.ZipFile(target) as archive:
                archive.extractall(base / f.unpack_to)
