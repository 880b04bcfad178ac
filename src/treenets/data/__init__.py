"""Where the datasets live, what they should contain, and how to fetch them.

One setting finds every dataset: the data root. It is, in order, the `--data` option (or the `root`
argument), the environment variable `TREENETS_DATA`, `../shared/data` when that folder exists (looked up from
the current directory and from the source checkout), else the default folder of an installed treenets,
`data` in the cache (`treenets.core.folders.default_data_dir`). `datasets.json` lists every file treenets can
use, with its size, sha256 and a canonical URL, so that `treenets data check` can verify what is present and
`treenets data download` can fetch what is missing, from those URLs or from a copy of a data root (a folder, or a
server holding one: `--from`).
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from treenets.core import folders
from treenets.core.console import note
from treenets.core.errors import TreenetsError

ENV_VAR = "TREENETS_DATA"
DEFAULT = "the default"  # the origin of the data root when nothing else names one
_REGISTRY = Path(__file__).with_name("datasets.json")


def _shared_candidates() -> list[Path]:
    """`../shared/data` beside the current folder, and beside the source checkout treenets runs from."""
    repository = folders.checkout()
    return [Path.cwd() / ".." / "shared" / "data", *([repository / ".." / "shared" / "data"] if repository else [])]


ROOT = "a folder: the data root, which holds ptb_lm/, sick/, ..."


def chosen_root(root: str | os.PathLike | None = None) -> tuple[Path, str]:
    """The data root and what chose it (`--data`, `$TREENETS_DATA`, `../shared/data` or `DEFAULT`), whether or
    not the folder exists yet.

    Raises:
        TreenetsError: naming the setting when it names a file, or a path under one (`folders.named_folder`).
    """
    if root is not None:
        return folders.named_folder(root, "--data", ROOT), "--data"
    if os.environ.get(ENV_VAR):
        return folders.named_folder(os.environ[ENV_VAR], f"${ENV_VAR}", ROOT), f"${ENV_VAR}"
    for candidate in _shared_candidates():
        if candidate.is_dir():
            return candidate.resolve(), "../shared/data"
    return folders.default_data_dir(), DEFAULT


def data_root(root: str | os.PathLike | None = None) -> Path:
    """The data root (`chosen_root`), which must exist.

    Raises:
        TreenetsError: if the chosen folder does not exist, saying how to fill the default one.
    """
    path, origin = chosen_root(root)
    if not path.is_dir():
        if origin == DEFAULT:
            raise TreenetsError(
                f"no data folder: the default one, {path}, does not exist yet; `treenets data download DATASET...` "
                f"fills it (`treenets data check` lists the datasets), or set {ENV_VAR} or pass --data DIR (the "
                "folder that holds ptb_lm/, sick/, ...)")
        folders.named_folder(path, origin, ROOT, must_exist=True)
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
    """Verify the size and sha256 of every registered file of `names` (all datasets by default). The default
    data root may not exist yet: every file is then missing."""
    base, origin = chosen_root(root)
    if origin != DEFAULT or base.exists():
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
    """`treenets data check`: print the data root and what chose it, the status of every file of `names`
    (`check`), then the counts; whether no file is wrong (missing files are not wrong: `treenets data download`
    fetches them)."""
    statuses = check(names, root)
    path, origin = chosen_root(root)
    print(f"data root: {path} ({origin})")
    for s in statuses:
        print(f"{s.status:12s} {s.file.dataset:16s} {s.file.path}")
    counts = {status: sum(s.status == status for s in statuses) for status in ("ok", "missing")}
    wrong = len(statuses) - sum(counts.values())
    print(f"{counts['ok']} ok, {counts['missing']} missing, {wrong} wrong")
    return wrong == 0


def _copy_at_most(source, target, limit: int) -> int:
    """Copy at most `limit` bytes from the file object `source` to `target`; how many were copied."""
    copied = 0
    while copied < limit:
        block = source.read(min(1 << 20, limit - copied))
        if not block:
            break
        target.write(block)
        copied += len(block)
    return copied


def fetch(url: str, target: Path, size: int, sha256: str, hint: str = "") -> None:
    """Download `url` (`http(s):` or `file:`) to `target`, verifying its size and sha256. The file is written
    under a temporary name beside `target` and renamed only after both matched, so an interrupted download never
    leaves a file that looks complete, and a file of another size or checksum is refused and left nowhere. No more
    than `size` bytes and one are read: a body of another declared length is refused before it is read, and one
    without a length (or a wrong one) as soon as it runs past `size`. `hint` (what to do instead) ends the message
    when the download fails."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.")
    refused = "refused, nothing was written"
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=60) as response:
            declared = (response.headers.get("Content-Length") or "").strip()
            if declared.isdigit() and int(declared) != size:
                raise TreenetsError(f"{target.name} from {url}: the server sends {int(declared):,} bytes, expected "
                                    f"{size:,} (the copy differs): {refused} (nor read)")
            got = _copy_at_most(response, out, size + 1)
        if got > size:
            raise TreenetsError(f"{target.name} from {url}: more than the {size:,} bytes expected (the copy differs; "
                                f"reading stopped there): {refused}")
        if got != size:  # (a connection closed early ends the body without an error)
            raise TreenetsError(f"{target.name} from {url}: {got:,} bytes, expected {size:,} (the download was cut "
                                f"short, or the copy differs): {refused}")
        digest = sha256_of(Path(tmp))
        if digest != sha256:
            raise TreenetsError(f"{target.name} from {url}: sha256 {digest} is not the expected {sha256}: {refused} "
                                "(a damaged or changed copy)")
        os.replace(tmp, target)
    except (OSError, http.client.HTTPException) as exc:
        # A connection that failed has its reason beside the URL; an HTTP error (404) says it itself.
        reason = exc.reason if type(exc) is urllib.error.URLError else exc
        raise TreenetsError(f"could not download {url}: {reason}" + (f"; {hint}" if hint else "")) from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def download(names: list[str] | None, root: str | os.PathLike | None = None, source: str | os.PathLike | None = None,
             log=note) -> Path:
    """Fetch the files of `names` (all datasets by default) that are missing or wrong under the data root
    (`chosen_root(root)`, created if needed), each from its URL in `datasets.json` or, with `source`, from the
    same path under that copy of a data root (a folder or a URL), verifying each sha256 (`fetch`); the root."""
    base = chosen_root(root)[0]
    base.mkdir(parents=True, exist_ok=True)
    mirror = folders.copy_url(source, "--from", "a copy of a data root") if source is not None else None
    for status in check(names, base):
        f = status.file
        if status.status == "ok":
            log(f"ok          {f.path}")
            continue
        target = base / f.path
        url = f"{mirror}/{f.path}" if mirror else f.url
        hint = (f"is {source} a copy of a data root, holding {f.path}?" if mirror else
                f"offline? give a copy of a data root: `treenets data download {f.dataset} --from DIR|URL`")
        log(f"downloading {f.path} <- {url}")
        fetch(url, target, f.bytes, f.sha256, hint)
        if f.unpack_to:
            with zipfile.ZipFile(target) as archive:
                archive.extractall(base / f.unpack_to)
    return base
