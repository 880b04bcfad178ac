"""The Stanford Sentiment Treebank in PTB form (`train.txt`, `dev.txt`, `test.txt`: one labelled binary tree
per line), fine-grained (labels 0..4) or binary (negative / positive; neutral phrases unlabelled, sentences
with a neutral root dropped)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from treenets.core.errors import TreenetsError
from treenets.core.files import read_text
from treenets.core.limits import check_lines
from treenets.core.vocab import Vocab
from treenets.data.batching import Batch
from treenets.trees.parents import ParentTree, node_spans, parse_bracketed

SPLIT_FILES = {"train": "train.txt", "valid": "dev.txt", "test": "test.txt"}
BINARY = {0: 0, 1: 0, 2: -1, 3: 1, 4: 1}  # fine label -> binary label (-1: no label)
CLASS_NAMES = {"fine": ("very negative", "negative", "neutral", "positive", "very positive"),
               "binary": ("negative", "positive")}  # each label's name, by `data.classes`
NUM_CLASSES = {classes: len(names) for classes, names in CLASS_NAMES.items()}


def read_trees(path: Path, classes: str, neutral_roots: bool = False) -> list[ParentTree]:
    """Labelled trees of an SST file (one bracketed tree per line), labels mapped for `classes`; with
    `neutral_roots`, binary keeps the sentences with a neutral root too (their other phrases are labelled)."""
    if not path.is_file():
        raise TreenetsError(f"{path}: missing (expected SST trees in PTB form, one per line)")
    trees = []
    lines = check_lines(read_text(path, "SST trees in PTB form, one per line").splitlines(), path)
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        tree = parse_bracketed(line, f"{path}:{lineno}")
        if any(not 0 <= label <= 4 for label in tree.labels):
            raise TreenetsError(f"{path}:{lineno}: labels must be 0..4 on every node")
        if classes == "binary":
            labels = tuple(BINARY[label] for label in tree.labels)
            if labels[tree.root] == -1 and not neutral_roots:
                continue  # a neutral sentence: not part of the binary task
            tree = ParentTree(tree.parents, tree.words, labels)
        trees.append(tree)
    return trees


def labelled_phrases(trees: list[ParentTree]) -> list[ParentTree]:
    """Every labelled phrase of `trees` (words included, in each tree's node order) as a sentence of its own, for a
    sequential encoder, which reads the words and the root's label: its words as a chain with the phrase's label
    at the root (torchtext's `train_subtrees`, as Ordered Memory's SST code trains: binary from every sentence,
    `read_trees(..., neutral_roots=True)`)."""
    phrases = []
    for tree in trees:
        for node, (start, end) in node_spans(tree).items():
            if tree.labels[node] >= 0:
                words = tree.words[start:end]
                phrases.append(ParentTree(tuple(range(-1, len(words) - 1)), words,
                                          (tree.labels[node],) + (-1,) * (len(words) - 1)))
    return phrases


@dataclass
class TreesBatch(Batch):
    trees: list[ParentTree]
    word_ids: list[torch.Tensor]  # word ids of each tree, in node order

    @property
    def size(self) -> int:
        return len(self.trees)

    @classmethod
    def build(cls, trees: list[ParentTree], vocab: Vocab) -> TreesBatch:
        return cls(trees, [torch.tensor(vocab.encode(t.words)[0]) for t in trees])
