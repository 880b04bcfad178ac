"""What every parser returns for a sentence (`Parse`): its words, its rows of syntactic distances and the tree built
from one of them, with what a kind of parser adds (a grammar's labels, Ordered Memory's slots, an ensemble's
agreement) declared by its subclasses. Layers of distances are numbered from 1, as the papers and the CLI print
them; `"mean"` is the mean of the rows."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import nltk
import torch

from treenets.text import Dropped
from treenets.trees import tree_from_distances

Layer = int | str  # a 1-based row of distances, or "mean"


def select_row(distances: torch.Tensor, layer: Layer) -> torch.Tensor:
    """One row of `[rows, words]` distances (`layer` 1-based), or their mean (`"mean"`)."""
    return distances.mean(0) if layer == "mean" else distances[int(layer) - 1]


@dataclass
class Parse:
    """The tree a language model induces for a sentence, from one row of its syntactic distances."""

    words: list[str]  # the sentence's tokens as the model read them (normalised; characters for a character model)
    distances: torch.Tensor  # [rows, words]: every row of distances
    layer: Layer  # the row the tree is built from
    split: str  # "official", "before" or "after" (see `treenets.trees.tree_from_distances`)
    unknown: list[str]  # words read as <unk>
    dropped: list[Dropped] = field(default_factory=list)  # what of the text it read no word from
    # the dependency tree of a model that induces one (StructFormer): each word's head, 1-based, 0 for the root
    heads: list[int] | None = None
    nested: list | str = field(init=False)  # the tree as nested lists of words (a lone word for one)

    def __post_init__(self):
        self.nested = tree_from_distances(self.words, select_row(self.distances, self.layer).tolist(), self.split)

    @property
    def read_distances(self) -> torch.Tensor:
        """`distances` with NaN where no tree reads them: with split "after" the last word's, which no gap of the
        sentence follows (a StructFormer's is its "infinitely far" 1e9), so that figures leave it out."""
        if self.split != "after" or not self.words:
            return self.distances
        read = self.distances.clone()
        read[:, -1] = math.nan
        return read

    def at(self, layer: Layer) -> Parse:
        """The same sentence's tree from another row of distances (no new forward pass)."""
        return Parse(self.words, self.distances, layer, self.split, self.unknown, self.dropped, self.heads)

    def row_name(self, row: int) -> str:
        """How `parse --distances` names row `row` (0-based) of `distances`."""
        return f"layer {row + 1}"

    def record_fields(self) -> dict:
        """What `parse --json` prints of this parse besides its tree, tokens, heads and distances (none here)."""
        return {}

    def notes(self) -> list[str]:
        """Lines `parse` prints below the drawing of the tree (none here)."""
        return []

    def labels(self) -> tuple[dict[str, str], list[str]] | None:
        """The labels of a model that labels its tree's nodes (a grammar): each node's over two or more words by
        its span `"start-end"` (end exclusive) and each word's, as the report and `serve` draw them; None here."""
        return None

    @property
    def tree(self) -> nltk.Tree:
        """The tree as an `nltk.Tree` (every node labelled `X`)."""
        from treenets.trees.draw import to_nltk

        return to_nltk(self.nested if isinstance(self.nested, list) else [self.nested])
