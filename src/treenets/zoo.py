"""The model zoo: trained models shipped as folders, found by name, by path or by download.

A model folder follows the Hugging Face layout:

    config.json         the treenets config the model was trained with
    model.safetensors   the weights (read without unpickling anything)
    vocab.txt           the vocabulary, one token per line (id = line number)
    metrics.json        the figures of its card, measured on these files, and the one the tests recompute
    README.md           the model card

`zoo.json` (beside this module) lists the shipped models: what each is, its headline figures, and the
sha256, size and download URL of each file (empty until a release publishes them). A name is looked up in the
source checkout's `models/` folder, then in the cache (`treenets.core.folders.cache_dir`: `$TREENETS_CACHE`, default
`~/.cache/treenets`). An installed treenets has no checkout: `install` downloads a model into the cache, from a
copy of the `models/` folder (a folder, or a URL serving one: `NAME/FILE` under it) given by `--from` or
`$TREENETS_MODELS_URL`, else from the URLs of `zoo.json`; `locate` does so on a model's first use where a URL is
known. Every file is checked against its sha256 before it is used. `print_models` is `treenets models`,
`download` is `treenets models download`.
"""

from __future__ import annotations

import contextlib
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
from treenets.core.files import held_lock, json_text
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


def read_folder(folder: str | Path) -> dict:
    """The contents of a model folder, as `treenets.core.checkpoint.load` returns a checkpoint's (`config`, `vocab`,
    `model`), with every tensor in float32 (folders may store half precision).

    Raises:
        TreenetsError: naming the file that is missing, unreadable, truncated or not what it should be.
    """
    from safetensors import SafetensorError, safe_open

    folder = Path(folder)
    missing = [f for f in FILES[:3] if not (folder / f).is_file()]
    if missing:
        run = [name for name in ("best.pt", "last.pt") if (folder / name).is_file()]
        hint = f"; it is a training run's folder: give its checkpoint, {folder / run[0]}" if run else ""
        raise TreenetsError(f"{folder}: not a treenets model folder (missing {', '.join(missing)}; expected "
                            f"{', '.join(FILES[:3])}, as `treenets export` writes){hint}")
    try:
        config = json.loads((folder / "config.json").read_text(encoding="utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise TreenetsError(f"{folder / 'config.json'}: not a JSON config ({exc})") from None
    except RecursionError:
        raise TreenetsError(f"{folder / 'config.json'}: nests too deep to be a treenets config") from None
    if not isinstance(config, dict) or "task" not in config:
        raise TreenetsError(f"{folder / 'config.json'}: expected a treenets config (a mapping with 'task')")
    try:
        words = (folder / "vocab.txt").read_text(encoding="utf-8-sig").split("\n")
    except UnicodeDecodeError as exc:
        raise TreenetsError(f"{folder / 'vocab.txt'}: not UTF-8 text ({exc})") from None
    if words and words[-1] == "":
        words.pop()
    weights = folder / "model.safetensors"
    try:
        with safe_open(weights, framework="pt") as fh:
            state = {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118 - not a dict
            tied = json.loads((fh.metadata() or {}).get("tied", "{}"))
    except (SafetensorError, OSError, ValueError, RecursionError) as exc:
        raise TreenetsError(f"{weights}: truncated or corrupt weights ({exc})") from None
    if not isinstance(tied, dict) or not all(isinstance(v, str) for v in tied.values()):
        raise TreenetsError(f"{weights}: the metadata 'tied' is {type(tied).__name__}; expected a JSON object "
                            "naming, for each tied tensor, the tensor it shares")
    state = {k: v.float() if v.is_floating_point() else v for k, v in state.items()}
    for key, kept in tied.items():
        if kept not in state:
            raise TreenetsError(f"{weights}: {key} is tied to {kept}, which the file does not hold")
        state[key] = state[kept]
    return {"kind": "model", "config": config, "vocab": words, "model": state}


def located(ref: str | Path, log=note) -> Path:
    """The checkpoint file or model folder `ref` names: a path as it is, a zoo name as its verified folder
    (`locate`, which may download it).

    Raises:
        TreenetsError: for a ref that is neither a path nor a zoo name, or a zoo model that cannot be located.
    """
    path = Path(ref)
    if path.exists():
        return path
    if str(ref) in registry():
        return locate(str(ref), log)
    raise TreenetsError(f"{ref}: no such checkpoint file or model folder, nor a zoo model name (the zoo: "
                        f"{', '.join(sorted(registry()))}; `treenets models` lists them)")


def ensemble_folder(ref) -> Path | None:
    """The folder of the ensemble `ref` names (a folder holding `ensemble.json`, or the zoo name of one, located
    and verified as every zoo model is), or None for anything else."""
    if isinstance(ref, str | Path) and Path(ref).is_dir():
        return Path(ref) if (Path(ref) / ENSEMBLE_FILES[0]).is_file() else None
    model = registry().get(str(ref))
    return locate(str(ref)) if model is not None and ENSEMBLE_FILES[0] in model.files else None


def names_a_model(ref: str) -> bool:
    """Whether `ref` names a model rather than being text: an existing path, or a zoo name."""
    return Path(ref).exists() or ref in registry()


def read(ref: str | Path, log=note) -> dict:
    """A trained model's contents from a checkpoint file (`best.pt`), a model folder, or a zoo name (`located`)."""
    path = located(ref, log)
    return read_folder(path) if path.is_dir() else checkpoint.load(path)


def _zoo_places() -> list[Path]:
    """The folders holding the zoo's model folders: the checkout's `models/` and the cache (unless the cache's
    setting names no folder: nothing is kept there then, and the commands that use the cache say so)."""
    places = [repository_models()] if repository_models() else []
    with contextlib.suppress(TreenetsError):
        places.append(folders.cache_dir())
    return places


def is_model_folder(folder: str | Path) -> bool:
    """Whether `folder` is a model folder: one that holds a model's weights (`model.safetensors`, as `export`
    writes them), or where the zoo keeps or looks up a shipped model (`NAME` in the checkout's `models/` or in the
    cache), installed or not. The one test of it: nothing but a model's own files is written into one."""
    folder = Path(folder).expanduser().resolve()
    return (folder / "model.safetensors").is_file() or (
        folder.name in registry() and any(folder == place.resolve() / folder.name for place in _zoo_places()))


def model_folder_of(path: str | Path) -> Path | None:
    """The model folder (`is_model_folder`) that `path` is or lies in, or None."""
    path = Path(path).expanduser().resolve()
    return next((folder for folder in (path, *path.parents) if is_model_folder(folder)), None)


def refuse_model_folder(out: str | Path, option: str, what: str = "a command's outputs") -> None:
    """An error naming `option` when `out` (an output file or folder) is or lies in a model folder
    (`is_model_folder`), which holds nothing but a model's own files: `what` never go there (they would replace a
    file of the model, its metrics.json say, or lie beside them)."""
    folder = model_folder_of(out)
    if folder is not None:
        where = "is" if folder == Path(out).expanduser().resolve() else "lies in"
        raise TreenetsError(f"{option} {out}: {where} the model folder {folder}, which holds nothing but a model's "
                            f"own files ({what} never go there): give a path outside it")


def check_target(out: str | Path, source: str | Path | None = None, overwrite: bool = False) -> Path:
    """`out` if a model folder may be written there: a new or empty folder, or with `overwrite` a model folder
    (whose own files, `FILES`, are then replaced and nothing else); never the folder being exported (`source`),
    nor a folder holding anything else, which would be the user's files."""
    out = Path(out)
    inside = model_folder_of(out.parent)
    if inside is not None:
        raise TreenetsError(f"{out}: lies in the model folder {inside}; give a folder outside it")
    if not out.exists():
        return out
    if not out.is_dir():
        raise TreenetsError(f"{out}: exists and is a file; give a new or empty folder")
    if source is not None:
        source = located(source).resolve()  # (a zoo name: its folder)
        if source == out.resolve() or out.resolve() in source.parents:
            raise TreenetsError(f"{out}: is where the model being exported is; give another folder")
    present = sorted(p.name for p in out.iterdir())
    if not present:
        return out
    if not is_model_folder(out):
        raise TreenetsError(f"{out}: not empty and not a model folder (it holds {', '.join(present[:3])}"
                            f"{', ...' if len(present) > 3 else ''}); give a new or empty folder, nothing in it "
                            "was touched")
    if not overwrite:
        raise TreenetsError(f"{out}: holds a model folder; --overwrite replaces its model files "
                            f"({', '.join(FILES)}) and keeps any other file")
    return out


def write_folder(predictor, out: str | Path, half: bool = False, metrics: dict | None = None,
                 card: str = "", overwrite: bool = False) -> Path:
    """Write `predictor` (weights, vocabulary, config; `metrics.json` and `README.md` if given) as a model
    folder. The files are written beside `out` first: a new folder is renamed into place, so a failure never
    leaves half of one; into an existing folder (empty, or a model folder with `overwrite`: `check_target`)
    each file is moved by a rename, which replaces the model's own files only, and the model files not
    written this time (an older card) are removed.

    Args:
        predictor: a `treenets.predictors.Predictor`.
        out: the folder to write.
        half: store floating-point weights in float16 (half the size; loaded back as float32).
        overwrite: replace the model files of an existing model folder.
    """
    from safetensors.torch import save_file

    from treenets.config import to_dict

    out = check_target(out, overwrite=overwrite)
    bad = [w for w in predictor.vocab.words if "\n" in w or "\r" in w]
    if bad:
        raise TreenetsError(f"vocabulary word {bad[0]!r} holds a line break: it cannot be written to vocab.txt")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}."))
    try:
        state, tied, seen = {}, {}, {}
        for key, tensor in predictor.net.state_dict().items():
            # Tied weights (a decoder sharing the embedding) are stored once and named in the metadata.
            where = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape))
            if where in seen:
                tied[key] = seen[where]
                continue
            seen[where] = key
            tensor = tensor.detach().cpu()
            state[key] = (tensor.half() if half and tensor.is_floating_point() else tensor).contiguous()
        save_file(state, tmp / "model.safetensors", metadata={"format": "treenets", "tied": json.dumps(tied)})
        (tmp / "config.json").write_text(json.dumps(to_dict(predictor.config), indent=1) + "\n")
        (tmp / "vocab.txt").write_text("".join(w + "\n" for w in predictor.vocab.words), encoding="utf-8")
        if metrics is not None:
            (tmp / "metrics.json").write_text(json_text(metrics, indent=1) + "\n")
        if card:
            (tmp / "README.md").write_text(card)
        for path in [tmp, *tmp.iterdir()]:
            checkpoint.usual_permissions(path)
        if not out.exists():
            os.replace(tmp, out)
        else:
            written = {path.name for path in tmp.iterdir()}
            for name in FILES:
                if name in written:
                    os.replace(tmp / name, out / name)
                else:
                    (out / name).unlink(missing_ok=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return out


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
