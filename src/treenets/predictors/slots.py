"""The trees that classifiers with an Ordered Memory encoder induce of what they read (logic formulas, ListOps
sequences, SST sentences), for `treenets parse` beside the language models' trees.

Ordered Memory writes each token at a memory slot; the slots are its syntactic distances, one row of them, and
its tree is built from them bottom-up (`treenets.nn.ordered_memory.trees.tree_from_slots`, the official `build_tree`). A
`SlotParse` holds that tree over the tokens read, the same tree with the tokens the scores leave out (a formula's
brackets) left out, and the input's own tree over the same words, which the task scores it against (None
where the input has none: a sentence as typed).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from treenets.errors import TreenetsError
from treenets.nn.ordered_memory.trees import tree_from_slots
from treenets.predictors.base import TreeInducer
from treenets.predictors.lm import Layer, Parse
from treenets.trees import without
from treenets.trees.draw import bracketed


@dataclass
class SlotParse(Parse):
    """The tree Ordered Memory induces of one input: `words` are the tokens it read, `distances` [1, words] their
    memory slots (`layer` 1, `split` unused)."""

    own: list | str | None = None  # the input's own tree over its words (the tokens without `left_out`); None:
    # it has none (a sentence as typed)
    left_out: frozenset[str] = frozenset()  # tokens the scores leave out (a formula's brackets)

    def __post_init__(self):
        self.nested = tree_from_slots(self.words, self.distances[0].tolist())

    def at(self, layer: Layer) -> SlotParse:
        """The one tree there is (Ordered Memory has one row of distances)."""
        return self

    @property
    def scored(self) -> list | str:
        """The induced tree without the tokens of `left_out`: what is scored against `own`."""
        return without(self.nested, set(self.left_out)) if self.left_out else self.nested

    def row_name(self, row: int) -> str:
        return "slots"

    def record_fields(self) -> dict:
        """The tree scored (without `left_out`) and the input's own tree (None for a sentence as typed)."""
        return {"scored_tree": bracketed(self.scored), "gold_tree": None if self.own is None else bracketed(self.own)}

    def notes(self) -> list[str]:
        """The tree without `left_out`, and the input's own tree where it has one."""
        lines = [f"without {' '.join(sorted(self.left_out))}: {bracketed(self.scored)}"] if self.left_out else []
        return lines + ([f"its own tree: {bracketed(self.own)}"] if self.own is not None else [])


class SlotParser(TreeInducer):
    """What a predictor whose encoder may be Ordered Memory adds for `treenets parse`, with the interface of
    `treenets.predictors.LanguageModel`'s parsing (`read`, `layers`, `default_layer`, `parse`).

    A subclass implements `_read_input(text, where, pretokenized) -> (tokens read, own tree or None)` and
    `_slots(token lists) -> [T, N]` (the slot of each token of each input), declares `left_out`, and where its
    encoder may be another one,
    `_no_trees()`: why the model induces no trees (None when it does, its encoder being Ordered Memory)."""

    left_out: frozenset[str] = frozenset()

    def _read_input(self, text: str, where: str | None, pretokenized: bool) -> tuple[list[str], list | str | None]:
        raise NotImplementedError

    def _slots(self, tokens: list[list[str]]) -> torch.Tensor:
        raise NotImplementedError

    def _no_trees(self) -> str | None:
        return None

    def read(self, text: str, pretokenized: bool = False, where: str | None = None) -> list[str]:
        """The tokens the encoder reads of `text`, or an error saying why it cannot be read, its message starting
        with `where` (e.g. the file and line) when given; `pretokenized`: split on white space (a sentence; a
        formula or a sequence is tokens already, which it changes nothing for)."""
        return self._read_input(text, where, pretokenized)[0]

    def layers(self, spec: Layer = "default", option: str = "layer") -> list[Layer]:
        """[1]: Ordered Memory has one row of distances, its slots (`spec` default, 1 or all; errors name
        `option`)."""
        if self._no_trees():
            raise TreenetsError(self._no_trees())
        if spec in ("default", "all", None, 1, "1"):
            return [1]
        raise TreenetsError(f"{option} {spec}: Ordered Memory has one row of distances, its memory slots: expected "
                            "1 (the default)")

    @property
    def default_layer(self) -> int:
        return self.layers()[0]

    @torch.no_grad()
    def parse(self, inputs: str | list[str], layer: Layer | None = None, split: str = "official",
              batch_size: int = 64, pretokenized: bool = False) -> SlotParse | list[SlotParse]:
        """The trees Ordered Memory induces of `inputs` (one string, or a list of them read in batches of
        `batch_size`), as the model is tested; `layer` as `layers` takes it; `split` must be "official" (the trees
        are built from slots, bottom-up, not split top-down)."""
        if isinstance(inputs, str):
            return self.parse([inputs], layer, split, batch_size, pretokenized)[0]
        self.layers("default" if layer is None else layer)
        if split != "official":
            raise TreenetsError(f"split {split!r}: Ordered Memory's trees are built from its memory slots, bottom-up; "
                                "a split point applies to syntactic distances only")
        read = [self._read_input(text, None, pretokenized) for text in inputs]
        order = sorted(range(len(read)), key=lambda i: len(read[i][0]))  # batches of similar length
        parses: list[SlotParse | None] = [None] * len(read)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            slots = self._slots([read[i][0] for i in chunk]).cpu()
            for j, i in enumerate(chunk):
                tokens, own = read[i]
                parses[i] = SlotParse(tokens, slots[: len(tokens), j].unsqueeze(0), 1, "official", [], [], own=own,
                                      left_out=self.left_out)
        return parses

