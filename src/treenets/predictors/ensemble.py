"""Several models' trees of typed sentences combined into the tree that agrees most with them (`treenets parse
--ensemble`, and the zoo's `*-ensemble` entries): `treenets.trees.ensemble` over the members' parses.

Every member reads a sentence with its own normaliser; the members must read the same words (the shipped PTB
models all do), or the sentence is refused naming what each read.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from treenets.core.errors import TreenetsError
from treenets.predictors.base import Predictor, TreeInducer
from treenets.predictors.parse import Layer, Parse
from treenets.trees.draw import bracketed
from treenets.trees.ensemble import combine, nested_from_spans
from treenets.trees.metrics import node_spans

MODES = ("generative", "selective")
CONFIG = "ensemble.json"  # a zoo entry's file: {"members": [...], "weights": [...], "mode": ...}
OPTIONS = ("layer", "decode")  # what a member may say of how it parses: `Member`


@dataclass(frozen=True)
class Member:
    """One system of an ensemble, written `REF[:layer=L][:decode=D]`: a model (a zoo name, a model folder, a
    checkpoint) or a file of trees (`treenets ensemble`), with the layer whose distances build its trees and a
    grammar's decoder (None: the model's default), e.g. `onlstm-ptb-small:layer=2`, `compound-pcfg-ptb:decode=mbr`."""

    ref: str
    layer: str | None = None
    decode: str | None = None

    @classmethod
    def read(cls, text, where: str) -> Member:
        """The member `text` names (`where`: the option or file field, for the error)."""
        if isinstance(text, Member):
            return text
        if not isinstance(text, str) or not text.strip():
            raise TreenetsError(f"{where}: {text!r} is not a member (expected a model's name or path, or a file of "
                                "trees, as REF[:layer=L][:decode=D])")
        ref, options = text, {}
        while True:  # options at the end, `:key=value` each (a path may hold a colon elsewhere)
            head, colon, tail = ref.rpartition(":")
            key, equals, value = tail.partition("=")
            if not colon or not equals or key not in OPTIONS:
                if colon and equals and "/" not in tail:
                    raise TreenetsError(f"{where}: {text}: unknown option {key!r} (a member takes "
                                        f"{', '.join(f'{k}=' for k in OPTIONS)}: REF[:layer=L][:decode=D])")
                break
            if not value or key in options:
                raise TreenetsError(f"{where}: {text}: {key}= {'twice' if value else 'without a value'} (expected "
                                    "REF[:layer=L][:decode=D])")
            options[key], ref = value, head
        if not ref:
            raise TreenetsError(f"{where}: {text}: no model or file before the options")
        return cls(ref, **options)

    def __str__(self) -> str:
        return self.ref + "".join(f":{key}={getattr(self, key)}" for key in OPTIONS if getattr(self, key))


def ensemble_definition(members, weights=None, mode="generative", where: str = "ensemble",
                        weights_name: str = "weights") -> tuple[list[Member], list[float], str]:
    """The one check of an ensemble's definition, wherever it comes from (`treenets ensemble` and its
    `--weights`, an `ensemble.json`, `parse --ensemble`, `treenets.load`): two members or more, none twice, one
    finite weight of at least 0 per member (default 1 each), not all 0, and a mode of `MODES`. Errors name `where`
    (a file, a command) and `weights_name` (the option or field of the weights) and what was expected. Returns
    (members, weights, mode)."""
    if isinstance(members, str) or not isinstance(members, list | tuple):
        raise TreenetsError(f"{where}: members must be a list of models (zoo names, folders, checkpoints) or files, "
                            f"got {type(members).__name__} {members!r}")
    found = [Member.read(m, where) for m in members]
    if len(found) < 2:
        raise TreenetsError(f"{where}: an ensemble needs two members or more, got {len(found)}")
    twice = sorted({str(m) for m in found if found.count(m) > 1})
    if twice:
        raise TreenetsError(f"{where}: {', '.join(twice)} given twice (each member once; a weight says how much one "
                            "counts)")
    if weights is None:
        weights = [1.0] * len(found)
    if isinstance(weights, str) or not isinstance(weights, list | tuple):
        raise TreenetsError(f"{where}: {weights_name} must be a list of numbers, one per member, got {weights!r}")
    if len(weights) != len(found):
        raise TreenetsError(f"{where}: {weights_name}: {len(weights)} weights for {len(found)} members (one each, "
                            "in order)")
    bad = [w for w in weights if isinstance(w, bool) or not isinstance(w, int | float) or not math.isfinite(w)
           or w < 0]
    if bad or not any(weights):
        raise TreenetsError(f"{where}: {weights_name} {list(weights)}: expected finite numbers of at least 0, not "
                            "all 0"
                            + (f" (not: {', '.join(repr(w) for w in bad)})" if bad else ""))
    if mode not in MODES:
        raise TreenetsError(f"{where}: mode {mode!r}: expected one of {', '.join(MODES)}")
    return found, [float(w) for w in weights], mode


@dataclass
class EnsembleParse(Parse):
    """The ensemble's tree of one sentence, with each member's tree and its agreement (official sentence F1) with
    it; `distances` has no row, `layer` 1."""

    tree: list | str | None = None
    members: list[tuple[str, list | str, float]] = field(default_factory=list)  # (model, its tree, agreement)
    mode: str = "generative"

    def __post_init__(self):
        self.nested = self.tree

    def at(self, layer: Layer) -> EnsembleParse:
        return self

    def record_fields(self) -> dict:
        return {"mode": self.mode, "members": [{"model": name, "tree": bracketed(tree), "agreement": agree}
                                               for name, tree, agree in self.members]}

    def notes(self) -> list[str]:
        return [f"{name}: agreement {100 * agree:.1f} (sentence F1), {bracketed(tree)}"
                for name, tree, agree in self.members]


class EnsembleParser(TreeInducer):
    """Models that induce trees (`TreeInducer`s, e.g. from `Predictor.load`), combined (`mode` generative: the
    best binary tree; selective: the best member's tree), each weighted by `weights` (default 1). `members` maps
    each member's name (`str(Member)`) to its model; `options` holds each one's `Member` (its layer and decoder)."""

    def __init__(self, members: dict[str, TreeInducer], weights: list[float] | None = None,
                 mode: str = "generative", options: list[Member] | None = None, where: str = "ensemble"):
        found, self.weights, self.mode = ensemble_definition(options or list(members), weights, mode, where)
        self.members, self.options = members, found
        for (name, member), option in zip(members.items(), found):
            if not isinstance(member, TreeInducer) or not member.induces_trees:
                raise TreenetsError(f"{where}: {name}: induces no trees over words, so it cannot be an ensemble's "
                                    "member")
            if option.layer is not None:
                member.layers(option.layer, f"{where}: {name}: layer")  # (a layer it has)
            if option.decode is not None and option.decode not in member.decoders:
                raise TreenetsError(f"{where}: {name}: decode={option.decode}: " + (
                    f"expected one of {', '.join(member.decoders)}" if member.decoders else
                    f"it has no decoder to choose (its trees come from {member.tree_source})"))
        self.decoders = tuple(dict.fromkeys(d for m in members.values() for d in m.decoders))

    @classmethod
    def load(cls, refs: list, weights: list[float] | None = None, mode: str = "generative", device="cpu",
             where: str = "ensemble") -> EnsembleParser:
        """The ensemble of the models `refs` (names as `Member` reads them: REF[:layer=L][:decode=D])."""
        from treenets.zoo.model_folder import ensemble_folder

        found, weights, mode = ensemble_definition(refs, weights, mode, where)
        for member in found:
            if ensemble_folder(member.ref) is not None:
                raise TreenetsError(f"{where}: {member.ref} is an ensemble; an ensemble's members are models (name "
                                    "its members instead)")
        return cls({str(m): Predictor.load(m.ref, device=device) for m in found}, weights, mode, found, where)

    @classmethod
    def from_folder(cls, folder: Path, device="cpu") -> EnsembleParser:
        """The ensemble a zoo entry's folder describes (`ensemble.json`: its members, weights and mode, checked as
        every definition is: `ensemble_definition`)."""
        path = Path(folder) / CONFIG
        try:
            spec = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise TreenetsError(f"{path}: not an ensemble's description ({exc})") from None
        if not isinstance(spec, dict) or "members" not in spec:
            raise TreenetsError(f"{path}: not an ensemble's description (expected an object with \"members\", "
                                "\"weights\" and \"mode\")")
        return cls.load(spec["members"], spec.get("weights"), spec.get("mode", "generative"), device, str(path))

    @property
    def induces_trees(self) -> bool:
        return True

    def require_words(self, context: str) -> None:
        """Its trees are over words (every member's are: checked when it was made)."""

    def read(self, text, pretokenized: bool = False, where: str | None = None) -> list[str]:
        """The words every member reads of `text` (an error where they read different words)."""
        readings = {name: member.read(text, pretokenized, where) for name, member in self.members.items()}
        first = next(iter(readings.values()))
        if any(words != first for words in readings.values()):
            shown = "; ".join(f"{name}: {' '.join(words)}" for name, words in readings.items())
            raise TreenetsError(f"{where + ': ' if where else ''}the ensemble's models read different words ({shown})")
        return first

    def layers(self, spec: Layer = "default", option: str = "layer") -> list[Layer]:
        if spec in ("default", "all", None, 1, "1"):
            return [1]
        raise TreenetsError(f"{option} {spec}: an ensemble's tree is one: each member's default layer's")

    @property
    def default_layer(self) -> int:
        return 1

    @torch.no_grad()
    def parse(self, sentences, layer: Layer | None = None, split: str = "official", batch_size: int = 64,
              pretokenized: bool = False, decode: str | None = None):
        if isinstance(sentences, str):
            return self.parse([sentences], layer, split, batch_size, pretokenized, decode)[0]
        self.layers("default" if layer is None else layer)
        for text in sentences:
            self.read(text, pretokenized)
        parses = {}
        for (name, member), option in zip(self.members.items(), self.options):
            chosen = option.decode or (decode if decode in member.decoders else None)
            options = {"decode": chosen} if chosen else {}
            parses[name] = member.parse(list(sentences), option.layer, split, batch_size, pretokenized, **options)
        result = []
        for i in range(len(sentences)):
            own = [parses[name][i] for name in self.members]
            words = own[0].words
            positions = list(range(len(words)))
            trees = [_over_positions(parse.nested, len(words)) for parse in own]
            tree, agree = combine(positions, trees, self.weights, self.mode)
            nested = _over_words(tree, words)
            unknown = sorted({w for parse in own for w in parse.unknown})
            result.append(EnsembleParse(words, torch.zeros(0, len(words)), 1, split, unknown, own[0].dropped,
                                        tree=nested, mode=self.mode,
                                        members=[(name, parse.nested, a) for name, parse, a in
                                                 zip(self.members, own, agree)]))
        return result


def _over_positions(tree, n: int):
    """A tree over words as the same tree over positions 0..n-1."""
    nodes, _ = node_spans(tree)
    return nested_from_spans(list(range(n)), sorted(span for span in nodes if span[1] - span[0] >= 2))


def _over_words(tree, words: list[str]):
    """A tree over positions as the same tree over `words`."""
    if isinstance(tree, list):
        return [_over_words(child, words) for child in tree]
    return words[tree]
