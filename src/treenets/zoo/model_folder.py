"""A model folder (the Hugging Face layout, `treenets.zoo.registry.FILES`): read (`read_folder`, or `read` of any
model reference: a checkpoint, a folder, a zoo name), written (`write_folder`, `treenets export`), and the folders
nothing may write into (`is_model_folder`, `refuse_model_folder`, `check_target`).

    config.json         the treenets config the model was trained with
    model.safetensors   the weights (read without unpickling anything)
    vocab.txt           the vocabulary, one token per line (id = line number)
    metrics.json        the figures of its card, measured on these files, and the one the tests recompute
    README.md           the model card
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from pathlib import Path

from treenets.core import checkpoint, folders
from treenets.core.console import note
from treenets.core.errors import TreenetsError
from treenets.core.files import json_text
from treenets.zoo import registry


def read_folder(folder: str | Path) -> dict:
    """The contents of a model folder, as `treenets.core.checkpoint.load` returns a checkpoint's (`config`, `vocab`,
    `model`), with every tensor in float32 (folders may store half precision).

    Raises:
        TreenetsError: naming the file that is missing, unreadable, truncated or not what it should be.
    """
    from safetensors import SafetensorError, safe_open

    folder = Path(folder)
    missing = [f for f in registry.FILES[:3] if not (folder / f).is_file()]
    if missing:
        run = [name for name in ("best.pt", "last.pt") if (folder / name).is_file()]
        hint = f"; it is a training run's folder: give its checkpoint, {folder / run[0]}" if run else ""
        raise TreenetsError(f"{folder}: not a treenets model folder (missing {', '.join(missing)}; expected "
                            f"{', '.join(registry.FILES[:3])}, as `treenets export` writes){hint}")
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
    if str(ref) in registry.registry():
        return registry.locate(str(ref), log)
    raise TreenetsError(f"{ref}: no such checkpoint file or model folder, nor a zoo model name (the zoo: "
                        f"{', '.join(sorted(registry.registry()))}; `treenets models` lists them)")


def ensemble_folder(ref) -> Path | None:
    """The folder of the ensemble `ref` names (a folder holding `ensemble.json`, or the zoo name of one, located
    and verified as every zoo model is), or None for anything else."""
    if isinstance(ref, str | Path) and Path(ref).is_dir():
        return Path(ref) if (Path(ref) / registry.ENSEMBLE_FILES[0]).is_file() else None
    model = registry.registry().get(str(ref))
    return registry.locate(str(ref)) if model is not None and registry.ENSEMBLE_FILES[0] in model.files else None


def names_a_model(ref: str) -> bool:
    """Whether `ref` names a model rather than being text: an existing path, or a zoo name."""
    return Path(ref).exists() or ref in registry.registry()


def read(ref: str | Path, log=note) -> dict:
    """A trained model's contents from a checkpoint file (`best.pt`), a model folder, or a zoo name (`located`)."""
    path = located(ref, log)
    return read_folder(path) if path.is_dir() else checkpoint.load(path)


def _zoo_places() -> list[Path]:
    """The folders holding the zoo's model folders: the checkout's `models/` and the cache (unless the cache's
    setting names no folder: nothing is kept there then, and the commands that use the cache say so)."""
    places = [registry.repository_models()] if registry.repository_models() else []
    with contextlib.suppress(TreenetsError):
        places.append(folders.cache_dir())
    return places


def is_model_folder(folder: str | Path) -> bool:
    """Whether `folder` is a model folder: one that holds a model's weights (`model.safetensors`, as `export`
    writes them), or where the zoo keeps or looks up a shipped model (`NAME` in the checkout's `models/` or in the
    cache), installed or not. The one test of it: nothing but a model's own files is written into one."""
    folder = Path(folder).expanduser().resolve()
    return (folder / "model.safetensors").is_file() or (
        folder.name in registry.registry() and any(folder == place.resolve() / folder.name for place in _zoo_places()))


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
    (whose own files, `registry.FILES`, are then replaced and nothing else); never the folder being exported (`source`),
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
                            f"({', '.join(registry.FILES)}) and keeps any other file")
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
            for name in registry.FILES:
                if name in written:
                    os.replace(tmp / name, out / name)
                else:
                    (out / name).unlink(missing_ok=True)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return out
