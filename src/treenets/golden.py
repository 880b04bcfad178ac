"""Fidelity checks against reference outputs of the official implementations (`treenets check-golden`).

A model fixture holds `config.json` (with `kind` and the official constructor arguments), `params.npz`
(the official `state_dict`), `inputs.npz` and `outputs.npz`. Each model kind rebuilds the model from the
constructor arguments through `treenets.convert`, runs the inputs, and compares every array of
`outputs.npz` to 1e-5, and the trees it builds (`ordered-memory-logic`: `trees_2x`) with those of `config.json`
exactly (the error reported is the number of trees that differ). Models run in float64, so that the remaining
difference is the reference's own float32 rounding.

A `parse-eval` fixture holds `config.json` (summary means) and `sentences.jsonl` (gold tree, distances,
the official words, gold and predicted trees and scores per sentence); it is compared with treenets'
preprocessing, tree builder and scores, floats to 1e-9. For words and span sets the reported error is the
number of sentences that differ.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from treenets.errors import TreenetsError

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


def _load_npz(path: Path) -> dict[str, np.ndarray]:
    if not path.is_file():
        raise TreenetsError(f"{path}: missing (a fixture holds config.json, params.npz, inputs.npz, outputs.npz)")
    try:
        with np.load(path, allow_pickle=False) as archive:
            return {key: archive[key] for key in archive.files}
    except (OSError, ValueError, EOFError) as exc:  # an empty file: EOFError
        raise TreenetsError(f"{path}: not a readable .npz archive ({exc or type(exc).__name__})") from None


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
        outputs["distance_forget"] = run.distances
        outputs["distance_input"] = run.distance_input
        for layer, (h, c) in enumerate(run.state):
            outputs[f"h_final_{layer}"], outputs[f"c_final_{layer}"] = h, c
        if "tokens2" in inputs:
            outputs["logits2"] = model.decoder(model(torch.from_numpy(inputs["tokens2"]), run.state).output)
    return {name: value.numpy() for name, value in outputs.items()}


def _prpn_lm(config: dict, params: dict, inputs: dict, path: Path) -> dict[str, np.ndarray]:
    from treenets.convert import prpn_lm_from_official

    args = {k: _arg(config, k, path) for k in ("ntoken", "ninp", "nhid", "nlayers")}
    optional = ("nslots", "nlookback", "resolution", "dropout", "idropout", "rdropout", "tie_weights", "hard", "res")
    args.update({k: config[k] for k in optional if k in config})
    model = prpn_lm_from_official(params, **args).double()
    outputs = {}
    with torch.no_grad():
        run = model(torch.from_numpy(inputs["tokens"]))
        outputs["logits"] = model.decoder(run.output)
        outputs["gates"] = run.distances[0].t()
        if "tokens2" in inputs:
            outputs["logits2"] = model.decoder(model(torch.from_numpy(inputs["tokens2"]), run.state).output)
    return {name: value.numpy() for name, value in outputs.items()}


def _childsum_similarity(config: dict, params: dict, inputs: dict, path: Path) -> dict[str, np.ndarray]:
    """All pairs in one batch of trees (level by level), compared with the port's tree-at-a-time outputs."""
    from treenets.convert import childsum_similarity_from_official
    from treenets.trees.parents import parse_parents

    args = {k: _arg(config, k, path) for k in ("vocab", "in_dim", "mem_dim", "hidden_dim")}
    model = childsum_similarity_from_official(params, num_classes=config.get("num_classes", 5), **args).double()
    pairs = sorted(int(key.rsplit("_", 1)[1]) for key in inputs if key.startswith("a_parents_"))
    trees, ids = [], []
    for side in ("a", "b"):
        for k in pairs:
            tokens = inputs[f"{side}_tokens_{k}"]
            parents = " ".join(str(int(p)) for p in inputs[f"{side}_parents_{k}"])
            trees.append(parse_parents(parents, [str(t) for t in tokens], f"{path.parent} {side}_parents_{k}"))
            ids.append(torch.from_numpy(tokens))
    outputs = {}
    with torch.no_grad():
        roots_h, roots_c = model.sentence_states(trees, ids)
        log_probs = model.compare(roots_c[: len(pairs)], roots_c[len(pairs) :])
    for i, k in enumerate(pairs):
        for side, offset in (("a", 0), ("b", len(pairs))):
            outputs[f"{side}_root_c_{k}"] = roots_c[offset + i : offset + i + 1]
            outputs[f"{side}_root_h_{k}"] = roots_h[offset + i : offset + i + 1]
        outputs[f"log_probs_{k}"] = log_probs[i : i + 1]
    return {name: value.numpy() for name, value in outputs.items()}


def _ordered_memory_logic(config: dict, params: dict, inputs: dict, path: Path) -> dict:
    """The classifier on `tokens` with the trained number of slots and twice as many (as the official evaluation
    tests it); the trees of every sequence from the latter's distances, as `genparse` builds them."""
    from treenets.convert import ordered_memory_classifier_from_official
    from treenets.nn.ordered_memory import slot_distances
    from treenets.trees import tree_from_slots

    args = _arg(config, "args", path)
    model = ordered_memory_classifier_from_official(params, **args).double()
    pad = config.get("pad", args["ntoken"] - 1)  # the official padding index: the last token id
    vocab = _arg(config, "vocab", path)
    tokens = torch.from_numpy(inputs["tokens"])
    lengths = (tokens != pad).sum(0)
    outputs = {}
    with torch.no_grad():
        embedded = model.embedding(tokens)
        for suffix, slots in (("", args["nslot"]), ("_2x", 2 * args["nslot"])):
            run = model.encoder(embedded, lengths, slots)
            outputs[f"logits{suffix}"] = model.classify(run.output).numpy()
            outputs[f"probs{suffix}"] = run.probs.numpy()
    distances = slot_distances(torch.from_numpy(outputs["probs_2x"]))
    outputs["distance_2x"] = distances.numpy()
    outputs["trees_2x"] = [tree_from_slots([vocab[i] for i in tokens[:n, b].tolist()], distances[:n, b].tolist())
                           for b, n in enumerate(lengths.tolist())]
    return outputs


def _structformer_mlm(config: dict, params: dict, inputs: dict, path: Path) -> dict:
    """The masked language model on the padded batch `tokens` and on `masked` (with its loss against `targets`),
    then each sentence alone, unpadded, as the official `test_phrase_grammar.test` parses it: its distances,
    heights, parent distributions, tree (`build_tree`) and CoNLL heads. The arrays are rounded to float32, the
    reference's precision: the distance of each sentence's last gap is 1e9 less the margin, which float32 holds
    to 64."""
    from treenets.convert import structformer_from_official
    from treenets.trees import tree_from_distances
    from treenets.trees.dependencies import heads_from_parents

    args = _arg(config, "args", path)
    model = structformer_from_official(params, **args).double()
    pad, vocab = args.get("pad", 0), _arg(config, "vocab", path)
    tokens = torch.from_numpy(inputs["tokens"])
    outputs, trees, heads = {}, [], []
    with torch.no_grad():
        run = model(tokens)
        outputs["logits"] = model.output_layer(run.hidden).flatten(0, 1)
        outputs.update(distance=run.distance, height=run.height, head=run.parent, block=run.block,
                       cibling=run.sibling, att_mask=run.mask)
        if "masked" in inputs:
            masked = model.output_layer(model(torch.from_numpy(inputs["masked"])).hidden).flatten(0, 1)
            outputs["masked_logits"] = masked
            if "targets" in inputs:
                outputs["masked_loss"] = torch.nn.functional.cross_entropy(
                    masked, torch.from_numpy(inputs["targets"]).flatten(), ignore_index=pad)
        for i, row in enumerate(tokens):
            sentence = row[row != pad][None]
            alone = model(sentence, alone=True)
            distance, height, parent = alone.distance[0], alone.height[0], alone.parent[0]
            outputs.update({f"distance_single_{i}": distance, f"height_single_{i}": height,
                            f"head_single_{i}": parent})
            words = [vocab[t] for t in sentence[0].tolist()]
            trees.append(tree_from_distances(words, distance.tolist(), "after"))
            heads.append(heads_from_parents(parent, height))
    arrays = {name: value.float().numpy() for name, value in outputs.items()}
    return {**arrays, "trees_single": trees, "heads_single": heads}


def _compare_model(run: Callable, directory: Path, config: dict, config_path: Path) -> list[Comparison]:
    params = _load_npz(directory / "params.npz")
    inputs = _load_npz(directory / "inputs.npz")
    expected = _load_npz(directory / "outputs.npz")
    try:
        got = run(config, params, inputs, config_path)
    except (KeyError, RuntimeError, ValueError) as exc:
        raise TreenetsError(f"{directory}: the fixture does not fit kind {config['kind']!r}: {exc}") from None
    comparisons = []
    for name, reference in expected.items():
        value = got.get(name)
        if not isinstance(value, np.ndarray) or value.shape != reference.shape:
            comparisons.append(Comparison(name, float("inf")))
        else:
            err = np.abs(value.astype(np.float64) - reference.astype(np.float64)).max(initial=0.0)
            comparisons.append(Comparison(name, float(err)))
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


MODEL_KINDS: dict[str, Callable] = {"onlstm-lm": _onlstm_lm, "prpn-lm": _prpn_lm,
                                    "childsum-treelstm-similarity": _childsum_similarity,
                                    "ordered-memory-logic": _ordered_memory_logic,
                                    "structformer-mlm": _structformer_mlm}
KINDS = sorted([*MODEL_KINDS, "parse-eval"])


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
        raise TreenetsError(f"{config_path}: unknown kind {kind!r} (expected one of: {', '.join(KINDS)})")
    if kind == "parse-eval":
        return _parse_eval(directory, config, config_path)
    return _compare_model(MODEL_KINDS[kind], directory, config, config_path)


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
