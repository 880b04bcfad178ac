"""Files the user names: text read with a clear error for anything that is not readable UTF-8 text, and
output paths checked before the work that fills them starts.

Every error names the path (and the option that gave it) and says what was expected, so the command line
prints one line instead of an `OSError` or `UnicodeDecodeError` traceback.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from pathlib import Path

from treenets.core.errors import TreenetsError


@contextlib.contextmanager
def held_lock(path: Path, on_wait=None):
    """Hold an exclusive `flock` on the file `path` (created if missing) while the block runs, after any other
    process holding it lets go; `on_wait()` is called first when one does. The system releases the lock when its
    holder dies, so a killed process never leaves it held (unlike a lock file that is created and removed)."""
    import fcntl  # POSIX

    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if on_wait is not None:
                on_wait()
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield  # released when the file is closed


def read_text(path: str | os.PathLike, expected: str) -> str:
    """The text of `path`, UTF-8 with an optional byte-order mark (dropped: it would stick to the first word).

    Args:
        path: the file.
        expected: what the file should be, for the messages (e.g. "a YAML config").

    Raises:
        TreenetsError: naming the file when it is missing, a folder or another non-regular file (a pipe would
            block), unreadable, binary (a NUL byte: e.g. a checkpoint), or not UTF-8 (naming the line).
    """
    path = Path(path)
    if not path.exists():
        raise TreenetsError(f"{path}: does not exist (expected {expected})")
    if not path.is_file():
        what = "a folder" if path.is_dir() else "not a regular file"
        raise TreenetsError(f"{path}: {what} (expected {expected})")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise TreenetsError(f"{path}: cannot read ({exc.strerror}; expected {expected})") from None
    if b"\0" in raw:
        raise TreenetsError(f"{path}: binary file (expected {expected})")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TreenetsError(f"{path}:{line}: not UTF-8 text ({exc.reason}; expected {expected})") from None


def _make_folder(folder: Path) -> str | None:
    """Create `folder` if needed; what makes it no place to write into, or None."""
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        return f"{existing} is a file, not a folder"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return f"cannot create the folder {folder} ({exc.strerror})"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable"
    return None


def output_folder(path: str | os.PathLike, option: str) -> Path:
    """`path` as a folder to write into, created if needed; call it before the work that fills it.

    Raises:
        TreenetsError: naming `option` when `path` is a file, lies under a file, or cannot be created or written.
    """
    path = Path(path)
    problem = _make_folder(path)
    if problem:
        raise TreenetsError(f"{option} {path}: {problem} (expected a folder to write into)")
    return path


# The record a command keeps in its output folder of the files it wrote there (paths relative to the folder, JSON)
OUTPUTS_RECORD = ".treenets-outputs.json"


def _recorded(folder: Path) -> set[str]:
    """The files an earlier run recorded writing into `folder` (none if the record is missing or unreadable)."""
    try:
        written = json.loads((folder / OUTPUTS_RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {name for name in written if isinstance(name, str)} if isinstance(written, list) else set()


def report_folder(path: str | os.PathLike, option: str, overwrite: bool = False) -> Path:
    """`path` as a folder to write a command's outputs into (`output_folder`): new, empty, or holding only files
    that an earlier run of a command wrote there (its `OUTPUTS_RECORD` lists them; `record_outputs` replaces them);
    with `overwrite`, any folder (its files of the names written are replaced, the others kept). Call it before
    the work that fills it.

    Raises:
        TreenetsError: naming `option` and the first files no earlier run wrote, unless `overwrite`.
    """
    folder = output_folder(path, option)
    written = _recorded(folder)
    others = sorted(str(p.relative_to(folder)) for p in folder.rglob("*")
                    if not p.is_dir() and p.name != OUTPUTS_RECORD and str(p.relative_to(folder)) not in written)
    if others and not overwrite:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5:,} more" if len(others) > 5 else "")
        raise TreenetsError(f"{option} {folder}: holds files that no earlier report of treenets wrote ({shown}); "
                            "name a new or empty folder, or add --overwrite to write over the files of the names it "
                            "writes (the others are kept)")
    return folder


def record_outputs(folder: Path, files: list[Path]) -> None:
    """Record `files` (under `folder`) as what this run wrote, and remove what an earlier run recorded that this
    one did not write again (its outputs, which would otherwise pass for this run's)."""
    names = sorted({str(Path(f).relative_to(folder)) for f in files})
    inside = folder.resolve()
    for stale in _recorded(folder) - set(names):
        target = folder / stale
        if inside in target.resolve().parents:  # (a record edited by hand names nothing outside the folder)
            with contextlib.suppress(OSError):
                target.unlink()
    write_text_atomic(folder / OUTPUTS_RECORD, json.dumps(names, indent=0) + "\n")


def write_text_atomic(path: Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` through a temporary file in its folder, renamed over it: a reader sees the
    old file or the new one, never half of one. Returns `path`."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return path


def output_file(path: str | os.PathLike, option: str, suffixes: tuple[str, ...] = ()) -> Path:
    """`path` as a file to write, its folder created if needed; call it before the work that fills it.

    Args:
        suffixes: the file types allowed (e.g. the image formats of a plot), lower case with the dot; () for any.

    Raises:
        TreenetsError: naming `option` when `path` is a folder, has another suffix, or its folder lies under a
            file or cannot be created or written.
    """
    path = Path(path)
    if path.is_dir():
        raise TreenetsError(f"{option} {path}: is a folder (expected a file name)")
    if suffixes and path.suffix.lower() not in suffixes:
        raise TreenetsError(f"{option} {path}: expected a file name ending in one of {', '.join(suffixes)}")
    problem = _make_folder(path.parent)
    if problem:
        raise TreenetsError(f"{option} {path}: {problem}")
    return path


def refuse_output_over_inputs(path: str | os.PathLike, inputs: dict, option: str) -> None:
    """An error naming `option` when `path` is one of the command's `inputs` ({what it is: its path}; the same
    file under another name, a link, included), which writing it would replace."""
    target = Path(path)
    for what, given in inputs.items():
        source = Path(given)
        same = (target.exists() and source.exists() and os.path.samefile(target, source)) or \
            target.resolve() == source.resolve()
        if same:
            raise TreenetsError(f"{option} {target}: is {what} ({source}), an input of this command: writing it "
                                "would replace it (expected another file name)")


def plot_file(path: str | os.PathLike, option: str) -> Path:
    """`output_file` for a matplotlib figure: the suffix must be a format matplotlib writes (png, pdf, svg, ...)."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = tuple(f".{name}" for name in FigureCanvasBase.get_supported_filetypes())
    return output_file(path, option, formats)


def read_sentences(path: str | os.PathLike, option: str) -> list[tuple[str, str]]:
    """The sentences of a text file given as `option`, one per line, blank lines skipped, each with its
    `file:line` for messages; an error for a file without one."""
    from treenets.core.limits import check_lines

    lines = check_lines(read_text(path, f"{option}: a text file of sentences, one per line").splitlines(), path)
    sentences = [(f"{path}:{number}", line) for number, line in enumerate(lines, start=1) if line.strip()]
    if not sentences:
        raise TreenetsError(f"{path}: no sentence in it (expected {option}: a text file of sentences, one per line)")
    return sentences


def finite(value):
    """`value` (nested dicts, lists, tuples) with NaN and infinities as None: what strict JSON can hold."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite(v) for v in value]
    return value


def json_text(value, **options) -> str:
    """`value` as strict JSON (a non-finite number as null: `NaN` is not JSON, and many readers refuse it)."""
    return json.dumps(finite(value), allow_nan=False, **options)
