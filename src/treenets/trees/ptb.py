"""Penn Treebank trees: reading, and the preprocessing of the ON-LSTM/PRPN parsing evaluation.

Reads multi-line `.mrg` files (several trees per file, each in an unlabelled `( ... )` root, with `-NONE-`
traces and function tags, as in the NLTK WSJ sample) and one-tree-per-line files (`(TOP ...)`), into
`nltk.Tree`. The official preprocessing keeps the leaves whose POS tag is a word tag (dropping punctuation,
`-NONE-`, `$`, `#`), lower-cases them and replaces digit runs by `N`; the gold tree over those words has
empty and unary nodes collapsed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import nltk

from treenets.errors import TreenetsError

# The POS tags whose words are kept (the official `word_tags`).
WORD_TAGS = frozenset([
    "CC", "CD", "DT", "EX", "FW", "IN", "JJ", "JJR", "JJS", "LS", "MD", "NN", "NNS", "NNP", "NNPS", "PDT",
    "POS", "PRP", "PRP$", "RB", "RBR", "RBS", "RP", "SYM", "TO", "UH", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ",
    "WDT", "WP", "WP$", "WRB",
])
_DIGITS = re.compile(r"[0-9]+")

Nested = "str | list[Nested]"  # a tree as nested lists of words (what the official code scores)


def normalize_word(word: str) -> str:
    """Lower-case, digit runs -> `N` (the official preprocessing)."""
    return _DIGITS.sub("N", word.lower())


@dataclass(frozen=True)
class TreeSource:
    """Where a tree came from, for messages and outputs."""

    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


def _split_brackets(text: str, path: str):
    """Yield `(line, text)` of every top-level bracketed expression; errors name the file and line."""
    depth, start, start_line, line = 0, None, 0, 1
    for i, char in enumerate(text):
        if char == "\n":
            line += 1
        elif char == "(":
            if depth == 0:
                start, start_line = i, line
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                raise TreenetsError(f"{path}:{line}: unexpected ')' (no tree is open)")
            if depth == 0:
                yield start_line, text[start : i + 1]
        elif depth == 0 and not char.isspace():
            raise TreenetsError(f"{path}:{line}: unexpected text {text[i:i + 20]!r} outside a bracketed tree")
    if depth > 0:
        raise TreenetsError(f"{path}:{start_line}: tree opened here is never closed ({depth} ')' missing)")


def parse_trees(text: str, path: str = "<string>") -> list[tuple[nltk.Tree, TreeSource]]:
    """Trees of a treebank text (any layout), with where each starts."""
    trees = []
    for line, chunk in _split_brackets(text, path):
        try:
            tree = nltk.Tree.fromstring(chunk)
        except ValueError as exc:
            raise TreenetsError(f"{path}:{line}: malformed tree ({str(exc).splitlines()[0][:120]})") from None
        if not tree.leaves():
            raise TreenetsError(f"{path}:{line}: tree without words")
        trees.append((tree, TreeSource(path, line)))
    return trees


def read_treebank(path: str | Path) -> list[tuple[nltk.Tree, TreeSource]]:
    """All trees of a treebank file, or of every `.mrg` file under a folder (sorted by name).

    Raises:
        TreenetsError: naming the file and line of a malformed tree, or a missing/empty path.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(path.rglob("*.mrg"))
        if not files:
            raise TreenetsError(f"{path}: folder holds no .mrg files")
    elif path.is_file():
        files = [path]
    else:
        raise TreenetsError(f"{path}: treebank not found")
    trees = []
    for file in files:
        try:
            text = file.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise TreenetsError(f"{file}: not UTF-8 text ({exc.reason})") from None
        trees.extend(parse_trees(text, str(file)))
    if not trees:
        raise TreenetsError(f"{path}: no trees found")
    return trees


def tree_words(tree: nltk.Tree) -> list[str]:
    """The words the evaluation keeps: word-tag leaves, normalised."""
    return [normalize_word(word) for word, tag in tree.pos() if tag in WORD_TAGS]


def collapse(tree) -> Nested | list:
    """The gold tree over the kept words as nested lists: empty nodes dropped, unary nodes collapsed
    (the official `tree2list`). A sentence without kept words gives `[]`."""
    if isinstance(tree, nltk.Tree):
        if tree.label() in WORD_TAGS:
            return normalize_word(tree.leaves()[0])
        children = [c for c in (collapse(child) for child in tree) if c != []]
        if len(children) > 1:
            return children
        if len(children) == 1:
            return children[0]
    return []


def label_of(tree: nltk.Tree) -> str:
    """The constituent label without function tags and indices: `NP-SBJ-1` -> `NP`, `S=2` -> `S`."""
    return re.split(r"[-=]", tree.label())[0]


def labeled_spans(tree: nltk.Tree) -> list[tuple[int, int, str]]:
    """`(start, end, label)` of every phrase of the gold tree covering two or more kept words, unary chains
    included (each label counts), as the official per-label recall counts them."""
    spans = []

    def walk(node, start: int) -> int:
        if not isinstance(node, nltk.Tree):
            return start
        if node.label() in WORD_TAGS:
            return start + 1
        end = start
        for child in node:
            end = walk(child, end)
        if end - start > 1:
            spans.append((start, end, label_of(node)))
        return end

    walk(tree, 0)
    return spans
