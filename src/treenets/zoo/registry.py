"""The shipped models, and where they are: the registry (`zoo.json`, beside this module: what each model is, its
headline figures, and the sha256, size and download URL of each file, empty until a release publishes them), found
by name in the source checkout's `models/` folder, then in the cache (`treenets.core.folders.cache_dir`:
`$TREENETS_CACHE`, default `~/.cache/treenets`). An installed treenets has no checkout: `install` downloads a model
into the cache, from a copy of the `models/` folder (a folder, or a URL serving one: `NAME/FILE` under it) given by
`--from` or `$TREENETS_MODELS_URL`, else from the URLs of `zoo.json`; `locate` does so on a model's first use where a
URL is known. Every file is checked against its sha256 before it is used. `print_models` is `treenets models`,
`download` is `treenets models download`; `write_registry` is `models/register.py`'s work.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from treenets.core import checkpoint, folders
from treenets.core.console import note
from treenets.core.errors import TreenetsError
from treenets.core.files import held_lock
from treenets.core.runlog import format_figure
from treenets.data import fetch, sha256_of

MODELS_URL_ENV = "TREENETS_MODELS_URL"
FILES = ("config.json", "model.safetensors", "vocab.txt", "metrics.json", "README.md")
# An ensemble of zoo models (`treenets.predictors.ensemble`): its members and how they combine, and its card.
ENSEMBLE_FILES = ("ensemble.json", "metrics.json", "README.md")
_REGISTRY = Path(__file__).with_name("zoo.json")


@dataclass(frozen=True)
class ZooFile:
    sha256: str
    bytes: int
    url: str  # empty until a release publishes the file


@dataclass(frozen=True)
class ZooModel:
    name: str
    task: str
    summary: str  # one line: what it is
    headline: dict  # figure name -> value, for `treenets models`
    files: dict[str, ZooFile]

    @property
    def size_mb(self) -> float:
        """Its files' size in megabytes, one decimal."""
        return round(sum(f.bytes for f in self.files.values()) / 1e6, 1)

    @property
    def figures(self) -> list[str]:
        """Its headline figures for people, `name value`: F1 and attachment accuracy (DDA) in percent as `parse-eval`
        prints them, the rest as `format_figure` does."""
        return [f"{k} {100 * v:.1f}" if "F1" in k or "DDA" in k else f"{k} {format_figure(v)}"
                for k, v in self.headline.items()]


@cache
def registry(path: Path = _REGISTRY) -> dict[str, ZooModel]:
    """Name -> `ZooModel`, from `zoo.json`."""
    doc = json.loads(path.read_text())
    return {name: ZooModel(name=name, task=m["task"], summary=m["summary"], headline=m["headline"],
                           files={f: ZooFile(**spec) for f, spec in m["files"].items()})
            for name, m in doc["models"].items()}


def repository_models() -> Path | None:
    """The source checkout's `models/` folder; None for an installed treenets."""
    repository = folders.checkout()
    return repository / "models" if repository else None


def _lookup_folders(name: str) -> Iterator[Path]:
    """Where the zoo model `name` is looked up: the checkout's `models/`, then the cache, whose setting is read only
    when the checkout does not hold the model (a model found there needs no cache, nor a valid `$TREENETS_CACHE`)."""
    models = repository_models()
    if models:
        yield models / name
    yield folders.cache_dir() / name


def installed(model: ZooModel) -> Path | None:
    """The first of `model`'s folders (`_lookup_folders`) that holds all its files (unverified), or None."""
    return next((folder for folder in _lookup_folders(model.name)
                 if all((folder / f).is_file() for f in model.files)), None)


def _damage(folder: Path, model: ZooModel) -> str | None:
    """What is wrong with `folder`'s copy of `model` (a file of another size or sha256), or None."""
    for name, spec in model.files.items():
        path = folder / name
        if path.stat().st_size != spec.bytes or sha256_of(path) != spec.sha256:
            return (f"{path}: does not match the zoo's sha256 {spec.sha256[:12]}... ({spec.bytes} bytes): the file "
                    "is corrupted or was changed")
    return None


def _urls(model: ZooModel, source: str | os.PathLike | None = None) -> dict[str, str] | None:
    """File -> the URL `model`'s file is downloaded from: `NAME/FILE` under `source` (`--from`) or
    `$TREENETS_MODELS_URL` (a copy of the `models/` folder: a folder or a URL), else the URL `zoo.json` gives; None
    where none is known.

    Raises:
        TreenetsError: naming `--from` or `$TREENETS_MODELS_URL` where it is neither a folder nor a URL treenets
            downloads from (`folders.copy_url`).
    """
    setting = "--from" if source else f"${MODELS_URL_ENV}"
    base = source or os.environ.get(MODELS_URL_ENV)
    if base:
        mirror = folders.copy_url(base, setting, "a copy of treenets' models/ folder")
        return {f: f"{mirror}/{model.name}/{f}" for f in model.files}
    if all(spec.url for spec in model.files.values()):
        return {f: spec.url for f, spec in model.files.items()}
    return None


def _not_installed(model: ZooModel) -> TreenetsError:
    return TreenetsError(
        f"model {model.name}: not in {' nor in '.join(map(str, _lookup_folders(model.name)))}, and no release "
        f"publishes the models at a URL yet: `treenets models download {model.name} --from DIR|URL` installs it from "
        f"a copy of treenets' models/ folder (a source checkout's, or a server's; or set ${MODELS_URL_ENV})")


def install(model: ZooModel, source: str | os.PathLike | None = None, log=note, if_missing: bool = False) -> Path:
    """Download `model` into the cache (`folders.cache_dir()/NAME`) from `_urls(model, source)`, each file checked
    against its size and sha256 (`treenets.data.fetch`); its folder. With `if_missing`, only where no copy is
    installed: the folder of the one found instead, looked for again once the lock below is held.

    The files are written into a temporary folder beside the model's (`.NAME.XXXX`) and the folder is renamed into
    place once every file is in and verified: an interrupted or refused download leaves no folder that looks
    installed, and a damaged copy in the cache is replaced only by a whole verified one. One process at a time
    installs a model, holding its lock in the cache: two that need it at once (the ranks of a torchrun, two
    commands started together) would otherwise each remove and rename the other's folder. So the holder of the
    lock also removes the temporary folders of the model's downloads that were killed on the way (SIGKILL, a
    reboot), which nothing else would.

    Raises:
        TreenetsError: where no URL is known, or a file cannot be downloaded or fails its checks (naming it).
    """
    urls = _urls(model, source)
    if urls is None:
        raise _not_installed(model)
    base = source or os.environ.get(MODELS_URL_ENV)
    target = folders.cache_dir() / model.name
    target.parent.mkdir(parents=True, exist_ok=True)
    with held_lock(target.parent / f".{model.name}.lock",
                   on_wait=lambda: log(f"waiting for another process installing {model.name}")):
        found = installed(model) if if_missing else None
        if found is not None:  # by the process this one waited for
            return found
        for stale in target.parent.glob(f".{model.name}.*"):
            if stale.is_dir():  # a download's folder, which only the lock's holder writes: one killed on the way
                log(f"removing {stale}, left by a download of {model.name} that was killed on the way")
                shutil.rmtree(stale)
        tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{model.name}."))
        try:
            for file, spec in model.files.items():
                hint = (f"is {base} a copy of treenets' models/ folder, holding {model.name}/{file}?" if base else
                        f"offline? install it from a copy: `treenets models download {model.name} --from DIR|URL`")
                log(f"downloading {model.name}/{file} <- {urls[file]}")
                fetch(urls[file], tmp / file, spec.bytes, spec.sha256, hint)
            for path in [tmp, *tmp.iterdir()]:
                checkpoint.usual_permissions(path)
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp)
    return target


def locate(name: str, log=note) -> Path:
    """The verified folder of the zoo model `name`: in the checkout, in the cache, or downloaded into the cache
    (`install`) where a URL is known.

    Raises:
        TreenetsError: for an unknown name, a file that fails its checksum, or a model that is neither
            present nor downloadable.
    """
    known = registry()
    if name not in known:
        raise TreenetsError(f"unknown model {name!r}: expected one of {', '.join(sorted(known))}")
    model = known[name]
    folder = installed(model)
    if folder is None:
        return install(model, log=log, if_missing=True)
    damage = _damage(folder, model)
    if damage:
        raise TreenetsError(f"{damage}; `treenets models download {name}` replaces a copy in the cache")
    return folder


def download(names: list[str] | None = None, source: str | os.PathLike | None = None, log=note) -> None:
    """`treenets models download`: install the zoo models `names` (all by default) that are absent, or whose copy
    in the cache is damaged (`install`, from `source` when given), and print each one's folder. A model in the
    checkout's `models/` is left as it is (a damaged one is an error: those are the repository's files)."""
    known = registry()
    unknown = [name for name in names or [] if name not in known]
    if unknown:
        raise TreenetsError(f"unknown model {unknown[0]!r}: expected one of {', '.join(sorted(known))}")
    for name in names or list(known):
        model = known[name]
        folder = installed(model)
        damage = _damage(folder, model) if folder else None
        if damage and folder != folders.cache_dir() / name:
            raise TreenetsError(damage)
        if folder is None or damage:
            if damage:
                log(f"{damage}: downloading it again")
            folder = install(model, source, log)
        print(f"{name}  {folder}")


def print_models(as_json: bool = False) -> None:
    """`treenets models`: each zoo model's name, task, size, summary, headline figures (F1 in percent, as
    `parse-eval` prints it) and where it is: its folder in the source checkout's `models/` or in the cache,
    `download` (a URL is known: `locate` downloads it at its first use) or `absent` (with a note saying how to
    install it); with `as_json` the same as a JSON list, F1 as a fraction."""
    rows = []
    for model in registry().values():
        folder = installed(model)
        where = str(folder) if folder else ("download" if _urls(model) else "absent")
        rows.append({"name": model.name, "task": model.task, "summary": model.summary, "where": where,
                     "size_mb": model.size_mb, **model.headline})
        if not as_json:
            print(f"{model.name}  ({model.task}, {model.size_mb} MB, {where})\n  {model.summary}")
            print("  " + "; ".join(model.figures))
    if as_json:
        print(json.dumps(rows, indent=1))
    if any(row["where"] == "absent" for row in rows):
        note("absent models: `treenets models download [NAME...] --from DIR|URL` installs them from a copy of "
             f"treenets' models/ folder (no release publishes them at a URL yet; or set ${MODELS_URL_ENV})")


def registry_entry(folder: Path, url_base: str = "") -> dict:
    """The `zoo.json` entry of a written model folder (or an ensemble's: `ENSEMBLE_FILES`): what its `metrics.json`
    says it is, and every file's sha256 and size (URLs under `url_base`, empty without one)."""
    metrics = json.loads((folder / "metrics.json").read_text())
    names = ENSEMBLE_FILES if (folder / ENSEMBLE_FILES[0]).is_file() else FILES
    files = {f: {"sha256": sha256_of(folder / f), "bytes": (folder / f).stat().st_size,
                 "url": f"{url_base.rstrip('/')}/{folder.name}/{f}" if url_base else ""} for f in names}
    return {"task": metrics["task"], "summary": metrics["summary"], "headline": metrics["headline"], "files": files}


def write_registry(model_folders: list[Path], url_base: str = "", path: Path = _REGISTRY) -> None:
    """Write `zoo.json` listing `model_folders` (maintainers run this after exporting the shipped models)."""
    entries = {Path(f).name: registry_entry(Path(f), url_base) for f in model_folders}
    path.write_text(json.dumps({"models": entries}, indent=1) + "\n")
    registry.cache_clear()
