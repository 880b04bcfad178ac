"""The trees that classifiers induce of what they read (logic formulas, ListOps sequences, SST sentences) where
their encoder builds one as it reads (Ordered Memory), for `treenets parse` beside the language models' trees.

Such an encoder declares its trees (`treenets.nn.registry.InducedTrees`): one row of distances per input and the
tree it builds from them, by its own rule (Ordered Memory: bottom-up from the memory slot it wrote each token at).
An `InducedParse` holds that tree over the tokens read, the same tree with the tokens the scores leave out (a
formula's brackets) left out, and the input's own tree over the same words, which the task scores it against
(None where the input has none: a sentence as typed).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from treenets.core.errors import TreenetsError
from treenets.nn.registry import InducedTrees
from treenets.predictors.base import TreeInducer
from treenets.predictors.parse import Layer, Parse
from treenets.trees import without
from treenets.trees.draw import bracketed


@dataclass
class InducedParse(Parse):
    """The tree an encoder induces of one input: `words` are the tokens it read, `distances` [1, words] the row it
    built the tree from (`layer` 1, `split` unused), `induced` that tree."""

    own: list | str | None = None  # the input's own tree over its words (the tokens without `left_out`); None:
    # it has none (a sentence as typed)
    left_out: frozenset[str] = frozenset()  # tokens the scores leave out (a formula's brackets)
    induced: list | str = ""  # the tree the encoder built (`InducedTrees.trees`)
    row: str = "distances"  # how the encoder names its row of distances (`InducedTrees.row_name`)

    def __post_init__(self):
        self.nested = self.induced

    def at(self, layer: Layer) -> InducedParse:
        """The one tree there is (the encoder has one row of distances)."""
        return self

    @property
    def scored(self) -> list | str:
        """The induced tree without the tokens of `left_out`: what is scored against `own`."""
        return without(self.nested, set(self.left_out)) if self.left_out else self.nested

    def row_name(self, row: int) -> str:
        return self.row

    def record_fields(self) -> dict:
        """The tree scored (without `left_out`) and the input's own tree (None for a sentence as typed)."""
        return {"scored_tree": bracketed(self.scored), "gold_tree": None if self.own is None else bracketed(self.own)}

    def notes(self) -> list[str]:
        """The tree without `left_out`, and the input's own tree where it has one."""
        lines = [f"without {' '.join(sorted(self.left_out))}: {bracketed(self.scored)}"] if self.left_out else []
        return lines + ([f"its own tree: {bracketed(self.own)}"] if self.own is not None else [])


class InducedTreeParser(TreeInducer):
    """What a predictor whose encoder may induce trees adds for `treenets parse`, with the interface of
    `treenets.predictors.LanguageModel`'s parsing (`read`, `layers`, `default_layer`, `parse`).

    A subclass implements `_read_input(text, where, pretokenized) -> (tokens read, own tree or None)` and
    `_induce(token lists) -> InducedTrees` (what the encoder declares of the trees of those inputs), declares
    `left_out`, and where its encoder may be one that induces none,
    `_no_trees()`: why the model induces no trees (None when it does)."""

    left_out: frozenset[str] = frozenset()

    def _read_input(self, text: str, where: str | None, pretokenized: bool) -> tuple[list[str], list | str | None]:
        raise NotImplementedError

    def _induce(self, tokens: list[list[str]]) -> InducedTrees:
        raise NotImplementedError

    def _no_trees(self) -> str | None:
        return None

    def read(self, text: str, pretokenized: bool = False, where: str | None = None) -> list[str]:
        """The tokens the encoder reads of `text`, or an error saying why it cannot be read, its message starting
        with `where` (e.g. the file and line) when given; `pretokenized`: split on white space (a sentence; a
        formula or a sequence is tokens already, which it changes nothing for)."""
        return self._read_input(text, where, pretokenized)[0]

    def layers(self, spec: Layer = "default", option: str = "layer") -> list[Layer]:
        """[1]: the encoder has one row of distances (`spec` default, 1 or all; errors name `option`)."""
        if self._no_trees():
            raise TreenetsError(self._no_trees())
        if spec in ("default", "all", None, 1, "1"):
            return [1]
        raise TreenetsError(f"{option} {spec}: this model's encoder has one row of distances, which its tree is "
                            "built from: expected 1 (the default)")

    @property
    def default_layer(self) -> int:
        return self.layers()[0]

    @torch.no_grad()
    def parse(self, inputs: str | list[str], layer: Layer | None = None, split: str = "official",
              batch_size: int = 64, pretokenized: bool = False) -> InducedParse | list[InducedParse]:
        """The trees the encoder induces of `inputs` (one string, or a list of them read in batches of
        `batch_size`), as the model is tested; `layer` as `layers` takes it; `split` must be "official" (the
        encoder builds its trees by its own rule, not split top-down)."""
        if isinstance(inputs, str):
            return self.parse([inputs], layer, split, batch_size, pretokenized)[0]
        self.layers("default" if layer is None else layer)
        if split != "official":
            raise TreenetsError(f"split {split!r}: this model's encoder builds its trees by its own rule as it "
                                "reads; a split point applies to a language model's syntactic distances only")
        read = [self._read_input(text, None, pretokenized) for text in inputs]
        order = sorted(range(len(read)), key=lambda i: len(read[i][0]))  # batches of similar length
        parses: list[InducedParse | None] = [None] * len(read)
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            induced = self._induce([read[i][0] for i in chunk])
            distances, trees = induced.distances.cpu(), induced.trees([read[i][0] for i in chunk])
            for j, i in enumerate(chunk):
                tokens, own = read[i]
                parses[i] = InducedParse(tokens, distances[: len(tokens), j].unsqueeze(0), 1, "official", [], [],
                                         own=own, left_out=self.left_out, induced=trees[j], row=induced.row_name)
        return parses
