"""Fidelity checks against reference outputs of the official implementations (`treenets check-golden`).

A fixture folder holds `config.json` (with `kind` and the official constructor arguments), `params.npz`
(the official `state_dict`), `inputs.npz` and `outputs.npz`. Each kind rebuilds the model from the
constructor arguments through `treenets.convert`, runs the inputs, and compares every array of
`outputs.npz`. Models run in float64, so that the remaining difference is the reference's own float32
rounding.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from treenets.errors import TreenetsError

TOLERANCE = 1e-5


@dataclass
class Comparison:
    name: str
    max_abs_err: float  # inf when the output was not produced or has another shape

    @property
    def ok(self) -> bool:
        return self.max_abs_err <= TOLERANCE


def _load_npz(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise TreenetsError(f"{path}: missing (a fixture holds config.json, params.npz, inputs.npz, outputs.npz)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except (OSError, ValueError) as exc:
        raise TreenetsError(f"{path}: not a readable .npz archive ({exc})") from None


def _arg(config: dict, key: str, path: Path):
    if key not in config:
        raise TreenetsError(f"{path}: missing key {key!r}")
    return config[key]


def _onlstm_lm(config: dict, params: dict, inputs: dict, path: Path) -> dict[str, np.ndarray]:
    from treenets.convert import onlstm_lm_from_official

    keys = ("ntoken", "ninp", "nhid", "chunk_size", "nlayers")
    args = {k: _arg(config, k, path) for k in keys}
    optional = ("dropout", "dropouth", "dropouti", "dropoute", "wdrop", "tie_weights")
    args.update({k: config[k] for k in optional if k in config})
    model = onlstm_lm_from_official(params, **args).double()
    outputs = {}
    with torch.no_grad():
        run = model(torch.from_numpy(inputs["tokens"]))
        outputs["logits"] = model.decoder(run.output)
        outputs["distance_forget"] = run.distance_forget
        outputs["distance_input"] = run.distance_input
        for layer, (h, c) in enumerate(run.state):
            outputs[f"h_final_{layer}"], outputs[f"c_final_{layer}"] = h, c
        if "tokens2" in inputs:
            outputs["logits2"] = model.decoder(model(torch.from_numpy(inputs["tokens2"]), run.state).output)
    return {name: value.numpy() for name, value in outputs.items()}


KINDS: dict[str, Callable] = {"onlstm-lm": _onlstm_lm}


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
    if kind not in KINDS:
        raise TreenetsError(f"{config_path}: unknown kind {kind!r} (expected one of: {', '.join(sorted(KINDS))})")
    params = _load_npz(directory / "params.npz")
    inputs = _load_npz(directory / "inputs.npz")
    expected = _load_npz(directory / "outputs.npz")
    try:
        got = KINDS[kind](config, params, inputs, config_path)
    except (KeyError, RuntimeError, ValueError) as exc:
        raise TreenetsError(f"{directory}: the fixture does not fit kind {kind!r}: {exc}") from None
    comparisons = []
    for name, reference in expected.items():
        value = got.get(name)
        if value is None or value.shape != reference.shape:
            comparisons.append(Comparison(name, float("inf")))
        else:
            err = np.abs(value.astype(np.float64) - reference.astype(np.float64)).max(initial=0.0)
            comparisons.append(Comparison(name, float(err)))
    return comparisons
