"""Treebanks for unsupervised parsing: the staged ones by name, and their sentences preprocessed as in the
official evaluation (word tags only, lower-cased, digit runs -> N; gold trees with empty and unary nodes
collapsed)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import nltk

from treenets import data
from treenets.errors import TreenetsError
from treenets.trees import collapse, labeled_spans, read_treebank, tree_words
from treenets.trees.ptb import TreeSource

# Short names for the treebanks staged under the data root.
TREEBANKS = {
    "nltk-sample": "nltk_data/corpora/treebank/combined",  # WSJ sections 00-01, 10% sample, 3,914 trees
    "wsj22": "wsj_trees/22.auto.clean",  # WSJ section 22, 1,700 trees
    "wsj24": "wsj_trees/dev_24.LDC99T42",  # WSJ section 24, 1,346 trees
}


def resolve_treebank(spec: str, root=None) -> Path:
    """A treebank path: one of `TREEBANKS`, an existing path, or a path under the data root."""
    if spec in TREEBANKS:
        return data.resolve(TREEBANKS[spec], root)
    path = Path(spec).expanduser()
    if path.exists() or path.is_absolute():
        return path
    under_root = data.resolve(spec, root)
    if under_root.exists():
        return under_root
    raise TreenetsError(f"--treebank {spec}: not found (a path, a path under the data root, or one of "
                        f"{', '.join(TREEBANKS)})")


@dataclass
class GoldSentence:
    words: list[str]  # the kept, normalised words
    gold: object  # nested lists over `words` ([] if no word is kept)
    labeled: list  # (start, end, label) of the gold phrases, for per-label recall
    tree: nltk.Tree
    source: TreeSource


def load_gold(path: Path, wsj10: bool = False) -> list[GoldSentence]:
    """The sentences of a treebank, preprocessed as in the official evaluation; `wsj10` keeps those with at
    most 10 words after filtering."""
    sentences = []
    for tree, source in read_treebank(path):
        words = tree_words(tree)
        if wsj10 and len(words) > 10:
            continue
        sentences.append(GoldSentence(words, collapse(tree), labeled_spans(tree), tree, source))
    return sentences
