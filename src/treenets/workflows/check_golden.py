"""Fidelity checks against reference outputs of the official implementations (`treenets check-golden`).

A model fixture holds `config.json` (with `kind` and the official constructor arguments), `params.npz`
(the official `state_dict`), `inputs.npz` (where its kind reads its inputs from there) and `outputs.npz`. Each
kind is declared by its model's folder (`treenets.nn.registry`: `Model.fixtures`, a function of the folder's
`fixtures.py`), which rebuilds the model from the constructor arguments through the folder's `convert.py` and runs
the inputs; here every array of `outputs.npz` is compared to 1e-5 (but the inputs a kind reads from there; a kind
may declare a tolerance relative to each array's scale instead, `Model.fixture_tolerance`), and every list of
trees the kind builds with the list of that name in `config.json`, exactly (the error reported is the number of
trees that differ); an array or list the kind gives that the fixture lacks is an error naming the file, and so is a
weight of `params.npz` that is not floats (`treenets.nn.official.load_renamed`). Models run in float64, so that the
remaining difference is the reference's own float32 rounding.

A `parse-eval` fixture holds `config.json` (summary means) and `sentences.jsonl` (gold tree, distances,
the official words, gold and predicted trees and scores per sentence); it is compared with treenets'
preprocessing, tree builder and scores, floats to 1e-9. For words and span sets the reported error is the
number of sentences that differ.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from treenets.core.errors import TreenetsError
from treenets.nn.registry import FixtureKind, fixture_kinds

TOLERANCE = 1e-5  # model outputs
PARSE_TOLERANCE = 1e-9  # parse-eval scores


@dataclass
class Comparison:
    name: str
    max_abs_err: float  # inf when the output was not produced or has another shape
    tolerance: float = TOLERANCE

    @property
    def ok(self) -> bool:
        return self.max_abs_err <= self.tolerance


class Arrays(dict):
    """The arrays of one `.npz` file by name, with the file's `source` path: what reads them (a converter's
    `treenets.nn.official.load_renamed`) names the file in its messages."""

    def __init__(self, arrays: dict, source: Path):
        super().__init__(arrays)
        self.source = source


def _load_npz(path: Path) -> Arrays:
    if not path.is_file():
        raise TreenetsError(f"{path}: missing (a fixture holds config.json, params.npz, inputs.npz, outputs.npz)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            return Arrays({key: archive[key] for key in archive.files}, path)
    except (OSError, ValueError, EOFError) as exc:  # an empty file: EOFError
        raise TreenetsError(f"{path}: not a readable .npz archive ({exc or type(exc).__name__})") from None


def _compare_model(kind: FixtureKind, directory: Path, config: dict, config_path: Path) -> list[Comparison]:
    arrays = {name.removesuffix(".npz"): _load_npz(directory / name) for name in kind.files}
    for name, values in arrays.get("params", {}).items():  # (a NaN weight fails far from its cause)
        if np.issubdtype(values.dtype, np.floating) and not np.isfinite(values).all():
            raise TreenetsError(f"{directory / 'params.npz'}: {name} holds {int((~np.isfinite(values)).sum()):,} NaN "
                                "or infinite value(s); expected finite weights")
    expected = arrays["outputs"] = _load_npz(directory / "outputs.npz")
    try:
        got = kind.run(config, arrays, config_path)
    except (KeyError, RuntimeError, ValueError, TypeError, IndexError) as exc:  # (a kind checks what it reads first)
        raise TreenetsError(f"{directory}: the fixture does not fit kind {config['kind']!r}: {exc}") from None
    # every array the kind gives is compared: one the fixture lacks is an error (not an array left unchecked)
    for name, value in got.items():
        if isinstance(value, np.ndarray) and name not in expected:
            raise TreenetsError(f"{directory / 'outputs.npz'}: {name}: missing (expected an array of shape "
                                f"{list(value.shape)}: kind {config['kind']!r} compares every output it gives)")
        if isinstance(value, list) and not isinstance(config.get(name), list):
            found = "missing" if name not in config else f"a {type(config[name]).__name__}"
            raise TreenetsError(f"{config_path}: {name}: {found} (expected a list of {len(value)}: kind "
                                f"{config['kind']!r} compares every list of trees it builds)")
    comparisons = []
    for name, reference in expected.items():
        value = got.get(name)
        if value is None and kind.reads_outputs(name):  # an input that travels in outputs.npz
            continue
        if not isinstance(value, np.ndarray) or value.shape != reference.shape:
            comparisons.append(Comparison(name, float("inf")))
        else:
            err = np.abs(value.astype(np.float64) - reference.astype(np.float64)).max(initial=0.0)
            comparisons.append(Comparison(name, float(err), kind.tolerance(reference, TOLERANCE)))
    for name, trees in got.items():  # trees (lists) against those of config.json: the number that differ
        if isinstance(trees, list):
            reference = config.get(name)
            differ = float("inf") if not isinstance(reference, list) or len(reference) != len(trees) else \
                float(sum(ours != theirs for ours, theirs in zip(trees, reference)))
            comparisons.append(Comparison(name, differ, 0.0))
    return comparisons


def _parse_eval(directory: Path, config: dict, config_path: Path) -> list[Comparison]:
    import nltk

    from treenets.trees import (
        ParseScores,
        collapse,
        left_branching,
        right_branching,
        sentence_prf,
        spans,
        tree_from_distances,
        tree_words,
    )

    path = directory / "sentences.jsonl"
    if not path.is_file():
        raise TreenetsError(f"{path}: missing (a parse-eval fixture holds config.json and sentences.jsonl)")
    mismatches = {"words": 0, "gold_spans": 0, "pred_spans": 0}
    errors = {"prec": 0.0, "reca": 0.0, "f1": 0.0, "f1_right_branching": 0.0, "f1_left_branching": 0.0}
    groups = {"all": {}, "wsj10": {}}
    for group in groups.values():
        group.update(model=ParseScores(), right=ParseScores(), left=ParseScores())
    with open(path) as fh:
        for lineno, line in enumerate(fh, start=1):
            try:
                record = json.loads(line)
                tree = nltk.Tree.fromstring(record["tree"])
                distances, official_words = record["distances"], record["words"]
            except (json.JSONDecodeError, KeyError, ValueError) as exc:
                raise TreenetsError(f"{path}:{lineno}: not a parse-eval record ({exc})") from None
            words, gold = tree_words(tree), collapse(tree)
            mismatches["words"] += words != official_words
            if words != official_words or len(distances) != len(words):
                continue
            pred = tree_from_distances(words, distances)
            mismatches["gold_spans"] += spans(gold) != spans(record["gold"])
            mismatches["pred_spans"] += spans(pred) != spans(record["pred"])
            right, left = right_branching(words), left_branching(words)
            got = dict(zip(("prec", "reca", "f1"), sentence_prf(spans(pred), spans(gold))))
            got["f1_right_branching"] = sentence_prf(spans(right), spans(gold))[2]
            got["f1_left_branching"] = sentence_prf(spans(left), spans(gold))[2]
            for key, value in got.items():
                errors[key] = max(errors[key], abs(value - record[key]))
            for name, group in groups.items():
                if name == "all" or len(words) <= 10:
                    group["model"].add(pred, gold)
                    group["right"].add(right, gold)
                    group["left"].add(left, gold)
    comparisons = [Comparison(name, float(count), PARSE_TOLERANCE) for name, count in mismatches.items()]
    comparisons += [Comparison(name, err, PARSE_TOLERANCE) for name, err in errors.items()]
    for name, group in groups.items():
        if name not in config:
            continue
        model, right, left = (group[k].summary() for k in ("model", "right", "left"))
        ours = {"n": model["n"], "mean_f1": model["sentence_f1"], "mean_prec": model["sentence_prec"],
                "mean_reca": model["sentence_reca"], "right_branching_f1": right["sentence_f1"],
                "left_branching_f1": left["sentence_f1"]}
        for key, reference in config[name].items():
            value = ours.get(key)
            err = float("inf") if value is None else abs(value - reference)
            comparisons.append(Comparison(f"{name}.{key}", err, PARSE_TOLERANCE))
    return comparisons




def kinds() -> list[str]:
    """Every fixture kind: each model's (`treenets.nn.registry.fixture_kinds`) and `parse-eval`."""
    return sorted([*fixture_kinds(), "parse-eval"])


def check_golden(directory: str | Path) -> list[Comparison]:
    """Compare treenets with the fixture in `directory`; one `Comparison` per array of `outputs.npz`.

    Raises:
        TreenetsError: for a missing or malformed fixture, or an unknown `kind`.
    """
    directory = Path(directory)
    config_path = directory / "config.json"
    if not config_path.is_file():
        raise TreenetsError(f"{config_path}: missing (is {directory} a golden fixture folder?)")
    try:
        config = json.loads(config_path.read_text())
    except json.JSONDecodeError as exc:
        raise TreenetsError(f"{config_path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    kind = config.get("kind")
    if kind == "parse-eval":
        return _parse_eval(directory, config, config_path)
    models = fixture_kinds()
    if kind not in models:
        raise TreenetsError(f"{config_path}: unknown kind {kind!r} (expected one of: {', '.join(kinds())})")
    return _compare_model(models[kind], directory, config, config_path)


def check_golden_folders(directories: list[str | Path]) -> bool:
    """`treenets check-golden`: `check_golden` each fixture folder, printing `name  max_abs_err` per output and
    then `PASS k/k` or `FAIL k/n`; whether every output is within its tolerance."""
    comparisons = []
    for directory in directories:
        for c in check_golden(directory):
            print(f"{c.name}  {c.max_abs_err:.3e}" if c.max_abs_err != float("inf") else f"{c.name}  missing")
            comparisons.append(c)
    passed = sum(c.ok for c in comparisons)
    print(f"{'PASS' if passed == len(comparisons) else 'FAIL'} {passed}/{len(comparisons)}")
    return passed == len(comparisons)
