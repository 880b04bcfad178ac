"""Several models' trees of typed sentences combined into the tree that agrees most with them (`treenets parse
--ensemble`, and the zoo's `*-ensemble` entries): `treenets.trees.ensemble` over the members' parses.

Every member reads a sentence with its own normaliser; the members must read the same words (the shipped PTB
models all do), or the sentence is refused naming what each read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import torch

from treenets.errors import TreenetsError
from treenets.predictors.base import Predictor, TreeInducer
from treenets.predictors.lm import Layer, Parse
from treenets.trees.draw import bracketed
from treenets.trees.ensemble import combine, nested_from_spans
from treenets.trees.metrics import node_spans

MODES = ("generative", "selective")
CONFIG = "ensemble.json"  # a zoo entry's file: {"members": [...], "weights": [...], "mode": ...}


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
    best binary tree; selective: the best member's tree), each weighted by `weights` (default 1)."""

    def __init__(self, members: dict[str, TreeInducer], weights: list[float] | None = None,
                 mode: str = "generative"):
        if len(members) < 2:
            raise TreenetsError("an ensemble needs two models or more")
        if mode not in MODES:
            raise TreenetsError(f"mode {mode!r}: expected one of {', '.join(MODES)}")
        for name, member in members.items():
            if not isinstance(member, TreeInducer) or not member.induces_trees:
                raise TreenetsError(f"{name}: induces no trees over words, so it cannot be an ensemble's member")
        self.members, self.mode = members, mode
        self.weights = list(weights) if weights is not None else [1.0] * len(members)
        if len(self.weights) != len(members):
            raise TreenetsError(f"{len(self.weights)} weights for {len(members)} members")
        self.decoders = tuple(dict.fromkeys(d for m in members.values() for d in m.decoders))

    @classmethod
    def load(cls, refs: list[str], weights: list[float] | None = None, mode: str = "generative",
             device="cpu") -> EnsembleParser:
        return cls({ref: Predictor.load(ref, device=device) for ref in refs}, weights, mode)

    @classmethod
    def from_folder(cls, folder: Path, device="cpu") -> EnsembleParser:
        """The ensemble a zoo entry's folder describes (`ensemble.json`)."""
        path = Path(folder) / CONFIG
        try:
            spec = json.loads(path.read_text())
            members, weights, mode = spec["members"], spec.get("weights"), spec.get("mode", "generative")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise TreenetsError(f"{path}: not an ensemble's description ({exc})") from None
        return cls.load(members, weights, mode, device)

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
        for name, member in self.members.items():
            options = {"decode": decode} if decode and decode in member.decoders else {}
            parses[name] = member.parse(list(sentences), None, split, batch_size, pretokenized, **options)
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
