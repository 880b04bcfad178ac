"""Dependency trees: a sentence's words each with its head, as CoNLL writes them (1-based positions, 0 for the root).

Reading and writing CoNLL-X and CoNLL-U files, the check that heads make a tree, the baseline trees (chains and a
random projective tree), and attachment scores with punctuation excluded as StructFormer's evaluation excludes it.
Trees converted from constituency trees by head rules: `treenets.trees.head_rules`.
"""

from __future__ import annotations

import math
import os
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from treenets.core.errors import TreenetsError
from treenets.core.files import read_text, write_text_atomic
from treenets.core.limits import check_lines
from treenets.trees.build import random_tree
from treenets.trees.ptb import PTB, WORD_RULES, TreeSource, WordRule
from treenets.trees.walk import fold

# The 17 Universal Dependencies POS tags (UPOS).
UPOS_TAGS = frozenset({"ADJ", "ADP", "ADV", "AUX", "CCONJ", "DET", "INTJ", "NOUN", "NUM", "PART", "PRON", "PROPN",
                       "PUNCT", "SCONJ", "SYM", "VERB", "X"})


def heads_from_parents(parent, height: Sequence[float]) -> list[int]:
    """The dependency heads StructFormer's evaluation reads off its parent distributions (`test_phrase_grammar.py`):
    each word's head is its most likely parent (`argmax(parent[l]) + 1`), and a word of the greatest height is a
    root (0). Taken word by word, they need not form a tree (two words may head each other), as in the paper's
    figures.

    Args:
        parent: [L, L] each word's parent distribution (diagonal 0).
        height: [L] each word's height.

    Returns:
        L heads, 1-based, 0 for the root.
    """
    parent, height = np.asarray(parent, dtype=np.float64), np.asarray(height, dtype=np.float64)
    top = height.max(initial=-np.inf)
    return [0 if h >= top else int(np.argmax(row)) + 1 for row, h in zip(parent, height)]


def _head_out_of_range(heads: Sequence[int]) -> tuple[int, str] | None:
    """The first word whose head is no position of the sentence (0..n), with what is wrong; None if there is none."""
    n = len(heads)
    for i, head in enumerate(heads):
        if not 0 <= head <= n:
            return i, f"word {i + 1} has head {head}; expected 0 (the root) or a word 1..{n}"
    return None


def tree_problem(heads: Sequence[int], single_root: bool = True) -> tuple[int | None, str] | None:
    """What keeps `heads` (1-based, 0 for the root) from being a dependency tree, or None if they are one: a head
    out of range, no word attached to the root, more than one (with `single_root`), or a cycle (a word whose
    heads never reach the root). Walks each word's heads once, without recursion.

    Returns:
        (the 0-based position of a word at fault, None when no one word is; what is wrong), or None.
    """
    problem = _head_out_of_range(heads)
    if problem:
        return problem
    roots = [i for i, head in enumerate(heads) if head == 0]
    if not roots:
        return None, "no word has head 0 (expected a root)"
    if single_root and len(roots) > 1:
        return roots[1], (f"{len(roots)} words have head 0 ({', '.join(str(i + 1) for i in roots)}); expected one "
                          "root")
    state = [0] * len(heads)  # 0: not seen yet, 1: on the path walked now, 2: known to reach the root
    for start in range(len(heads)):
        path, i = [], start
        while i >= 0 and state[i] == 0:
            state[i] = 1
            path.append(i)
            i = heads[i] - 1
        if i >= 0 and state[i] == 1:  # back on the path walked now: a cycle
            cycle = path[path.index(i):] + [i]
            return i, f"words {' -> '.join(str(j + 1) for j in cycle)} form a cycle (expected heads that lead to 0)"
        for j in path:
            state[j] = 2
    return None


def check_tree(heads: Sequence[int], where: str = "heads", single_root: bool = True) -> None:
    """Raise a `TreenetsError` saying `where: ` and what keeps `heads` from being a tree (`tree_problem`)."""
    problem = tree_problem(heads, single_root)
    if problem:
        raise TreenetsError(f"{where}: {problem[1]}")


@dataclass
class DependencySentence:
    """A sentence's tokens (all of them, punctuation included), their POS tags, and their heads (CoNLL's: 1-based,
    0 for the root), with where it came from."""

    words: list[str]
    tags: list[str]
    heads: list[int]
    source: TreeSource | None = None

    def __post_init__(self):
        if not len(self.words) == len(self.tags) == len(self.heads):
            raise ValueError(f"{len(self.words)} words, {len(self.tags)} tags and {len(self.heads)} heads")

    @property
    def where(self) -> str:
        """Where the sentence came from, for messages."""
        return str(self.source) if self.source else "a dependency tree"

    def kept(self, rule: WordRule = PTB) -> list[int]:
        """The 0-based positions of the tokens whose tag `rule` keeps: the words a model parses (`GoldSentence.words`
        of a treebank's tree)."""
        return [i for i, tag in enumerate(self.tags) if rule.keeps(tag)]

    def kept_heads(self, rule: WordRule = PTB) -> list[int]:
        """The head of every token `rule` keeps, among those tokens (1-based, 0 for the root), as StructFormer's
        evaluation reads a gold tree (`tree_utils.get_dep`): a head that `rule` drops (punctuation) is followed up
        to its first head that is kept, the root if none is.

        Raises:
            TreenetsError: naming the sentence's source if its heads are not a tree (several roots are allowed).
        """
        check_tree(self.heads, self.where, single_root=False)
        return heads_among(self.heads, self.kept(rule))


def heads_among(heads: Sequence[int], kept: Sequence[int]) -> list[int]:
    """The head of each token at the 0-based positions `kept` among those tokens (1-based, 0 for the root), from
    the `heads` of a tree over every token: a head that is not kept is followed up to its first head that is, the
    root if none is."""
    rank = {0: 0} | {position + 1: k + 1 for k, position in enumerate(kept)}  # token -> kept word, 1-based
    result = []
    for position in kept:
        head = heads[position]
        while head not in rank:
            head = heads[head - 1]
        result.append(rank[head])
    return result


def word_rule_for(sentences: Iterable[DependencySentence]) -> WordRule:
    """The rule that tells the scored words of gold dependency trees by their tags: `ud` (every word but `PUNCT`)
    when every tag is a Universal POS tag, else the official Penn Treebank word tags (`ptb`)."""
    universal = all(tag in UPOS_TAGS for sentence in sentences for tag in sentence.tags)
    return WORD_RULES["ud"] if universal else PTB


@dataclass
class AttachmentScores:
    """Directed and undirected attachment accuracy of predicted heads against gold heads, as counts summed over the
    sentences added: `dda` (directed, = unlabelled attachment score, UAS) and `uda` (undirected).

    Punctuation is excluded as StructFormer's official evaluation excludes it (`tree_utils.evald`): only the words
    whose gold tag the word rule keeps are scored (by default the Penn Treebank word tags; `WORD_RULES["ud"]` for
    Universal POS tags, every word but `PUNCT`), each gold head being followed up past dropped tokens
    (`DependencySentence.kept_heads`). A word's arc is correct directed when its predicted head is its gold head
    (the root included), undirected when it is that or the word is the gold head of its predicted head.

    The comparison is by position. The official code compares (word, head word) string pairs, a predicted pair
    counting when the gold sentence has the same pair anywhere: where a word occurs twice in a sentence ("the"),
    attaching either occurrence to the other's head counts, so its figures can be higher than these.
    """

    directed: int = 0
    undirected: int = 0
    words: int = 0
    sentences: int = 0

    def add(self, predicted: Sequence[int], gold: DependencySentence, rule: WordRule = PTB) -> AttachmentScores:
        """Score one sentence and add its counts.

        Args:
            predicted: the heads of the words `rule` keeps (`gold.kept(rule)`, the words a model parses), among
                those words: 1-based, 0 for the root. Need not be a tree (an argmax over parents can have cycles).
            gold: all of the sentence's tokens with their tags and heads.

        Returns:
            the sentence's own counts.

        Raises:
            TreenetsError: naming the gold sentence's source, when `predicted` has another number of words than
                `gold` keeps or a head out of range, or when the gold heads are not a tree.
        """
        gold_heads = gold.kept_heads(rule)
        predicted = [int(head) for head in predicted]
        if len(predicted) != len(gold_heads):
            raise TreenetsError(f"{gold.where}: {len(predicted)} predicted heads, but the gold tree has "
                                f"{len(gold_heads)} words to score of its {len(gold.words)} tokens (rule "
                                f"'{rule.name}': {rule.summary})")
        problem = _head_out_of_range(predicted)
        if problem:
            raise TreenetsError(f"{gold.where}: predicted {problem[1]}")
        directed = sum(head == gold_head for head, gold_head in zip(predicted, gold_heads))
        undirected = sum(head == gold_head or (head != 0 and gold_heads[head - 1] == word)
                         for word, (head, gold_head) in enumerate(zip(predicted, gold_heads), start=1))
        sentence = AttachmentScores(directed, undirected, len(gold_heads), 1)
        self.directed += directed
        self.undirected += undirected
        self.words += len(gold_heads)
        self.sentences += 1
        return sentence

    @property
    def dda(self) -> float:
        """Directed attachment accuracy (UAS), NaN without words."""
        return self.directed / self.words if self.words else math.nan

    @property
    def uda(self) -> float:
        """Undirected attachment accuracy, NaN without words."""
        return self.undirected / self.words if self.words else math.nan

    def summary(self) -> dict:
        """`sentences`, `words` (scored), `dda`, `uda`."""
        return {"sentences": self.sentences, "words": self.words, "dda": self.dda, "uda": self.uda}


def left_chain(n: int) -> list[int]:
    """The heads of n words where each word's head is the next word and the last is the root: `[2, 3, ..., n, 0]`."""
    return [*range(2, n + 1), 0] if n else []


def right_chain(n: int) -> list[int]:
    """The heads of n words where each word's head is the previous word and the first is the root:
    `[0, 1, ..., n-1]`."""
    return list(range(n))


def random_projective_tree(n: int, rng: random.Random) -> list[int]:
    """The heads of a random projective tree over n words, with one root.

    Drawn as the random binary tree of `treenets.trees.build.random_tree` (merge a uniformly chosen adjacent pair
    of parts until one is left) whose every merge makes one of its two parts' heads, with even odds, the head of the
    other's: every projective tree can be drawn, though not uniformly (a tree that several binary trees give is
    more likely: over 3 words, `[2, 0, 2]` has probability 1/4 and each of the 6 others 1/8).
    """
    if n == 0:
        return []
    heads = [0] * n

    def merge(_, parts: list) -> int:
        head, dependent = parts if rng.random() < 0.5 else parts[::-1]
        heads[dependent] = head + 1
        return head

    fold(random_tree(list(range(n)), rng), lambda position: position, merge)
    return heads


# The ten columns of CoNLL-X (CoNLL-U's names after the slash where they differ).
CONLL_COLUMNS = ("ID", "FORM", "LEMMA", "CPOSTAG/UPOS", "POSTAG/XPOS", "FEATS", "HEAD", "DEPREL", "PHEAD/DEPS",
                 "PDEPREL/MISC")
_INTEGER = re.compile(r"-?[0-9]+")
_SKIPPED_ID = re.compile(r"[0-9]+[-.][0-9]+")  # CoNLL-U's multiword tokens (1-2) and empty nodes (1.1)
_EXPECTED = "a CoNLL-X or CoNLL-U file of dependency trees"


def parse_conll(text: str, path: str = "<string>") -> list[DependencySentence]:
    """The sentences of a CoNLL-X or CoNLL-U text: lines of 10 tab-separated columns (`CONLL_COLUMNS`), one per
    token, sentences separated by blank lines; comment lines (`#`), multiword tokens (`1-2`) and empty nodes
    (`1.1`) are skipped. Each token's tag is its POSTAG (CoNLL-X) or XPOS (CoNLL-U) column, its UPOS/CPOSTAG
    column where that is `_`. Several words may have head 0 (CoNLL-X allows it, and some treebanks attach
    punctuation to the root); one at least must.

    Raises:
        TreenetsError: naming `path:line` and what was expected: a line without 10 columns, an empty column, token
            ids that are not 1, 2, ... n in order, a head that is no integer or out of range, a sentence without a
            root or with a cycle, a text without a sentence, a line longer than `treenets.core.limits.MAX_LINE_CHARS`.
    """
    lines = check_lines(text.split("\n"), path)
    sentences: list[DependencySentence] = []
    tokens: list[tuple[int, list[str]]] = []  # (line number, columns) of the sentence being read
    for number, line in enumerate(lines, start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            if tokens:
                sentences.append(_conll_sentence(tokens, path))
                tokens = []
        elif not line.startswith("#"):
            columns = line.split("\t")
            if len(columns) != len(CONLL_COLUMNS):
                spaces = len(line.split()) == len(CONLL_COLUMNS)
                raise TreenetsError(f"{path}:{number}: {len(columns)} tab-separated columns; expected "
                                    f"{len(CONLL_COLUMNS)} ({' '.join(CONLL_COLUMNS)})"
                                    + (" (these seem separated by spaces)" if spaces else ""))
            if not _SKIPPED_ID.fullmatch(columns[0]):
                tokens.append((number, columns))
    if tokens:
        sentences.append(_conll_sentence(tokens, path))
    if not sentences:
        raise TreenetsError(f"{path}: no sentence in it (expected {_EXPECTED}: one token per line, sentences "
                            "separated by blank lines)")
    return sentences


def _conll_sentence(tokens: list[tuple[int, list[str]]], path: str) -> DependencySentence:
    """One sentence from its token lines (line number, columns)."""
    words, tags, heads = [], [], []
    for expected_id, (number, columns) in enumerate(tokens, start=1):
        if "" in columns:
            column = columns.index("")
            raise TreenetsError(f"{path}:{number}: column {column + 1} ({CONLL_COLUMNS[column]}) is empty; expected "
                                "a value (CoNLL writes _ for none)")
        if not (_INTEGER.fullmatch(columns[0]) and int(columns[0]) == expected_id):
            raise TreenetsError(f"{path}:{number}: token id {columns[0]!r}; expected {expected_id} (a sentence "
                                "numbers its tokens 1, 2, 3, ... in order; is a blank line missing before it?)")
        if not _INTEGER.fullmatch(columns[6]):
            raise TreenetsError(f"{path}:{number}: head {columns[6]!r} is not an integer; expected 0 (the root) or "
                                "a token id of the sentence")
        words.append(columns[1])
        tags.append(columns[4] if columns[4] != "_" else columns[3])
        heads.append(int(columns[6]))
    problem = tree_problem(heads, single_root=False)
    if problem:
        position, what = problem
        number = tokens[0 if position is None else position][0]
        raise TreenetsError(f"{path}:{number}: {what} (in the sentence of lines {tokens[0][0]}-{tokens[-1][0]})")
    return DependencySentence(words, tags, heads, TreeSource(path, tokens[0][0]))


def read_conll(path: str | os.PathLike) -> list[DependencySentence]:
    """The sentences of a CoNLL-X or CoNLL-U file (`parse_conll`).

    Raises:
        TreenetsError: naming the file (and line) when it is missing, unreadable or malformed.
    """
    return parse_conll(read_text(path, _EXPECTED), str(path))


def conll_text(sentences: Iterable[DependencySentence]) -> str:
    """Sentences as CoNLL-X: a line of 10 tab-separated columns per token and a blank line after each sentence.
    The tag fills both POS columns, DEPREL is `root` for the root and `dep` for the other words (Universal
    Dependencies' unlabelled relations), the other columns `_`.

    Raises:
        TreenetsError: naming the sentence and word when a word or tag cannot be written (empty, or holding a tab,
            a line break or a NUL, which no reader would take back).
    """
    lines = []
    for sentence in sentences:
        for i, (word, tag, head) in enumerate(zip(sentence.words, sentence.tags, sentence.heads), start=1):
            for what, value in (("word", word), ("tag", tag)):
                if not value or "\t" in value or "\0" in value or value.splitlines() != [value]:
                    raise TreenetsError(f"{sentence.where}: {what} {i} ({value!r}) cannot be written as a CoNLL "
                                        "column (expected text without tabs, line breaks or NULs)")
            lines.append(f"{i}\t{word}\t_\t{tag}\t{tag}\t_\t{head}\t{'root' if head == 0 else 'dep'}\t_\t_\n")
        lines.append("\n")
    return "".join(lines)


def write_conll(path: str | os.PathLike, sentences: Iterable[DependencySentence], overwrite: bool = False) -> None:
    """Write sentences as a CoNLL-X file (`conll_text`), whole or not at all (`files.write_text_atomic`).

    Raises:
        TreenetsError: when `path` exists and not `overwrite`, its folder cannot be written, or a word cannot be
            written (nothing is written then).
    """
    path = Path(path)
    if path.exists() and not overwrite:
        raise TreenetsError(f"{path}: exists already (not replaced; expected a new file name)")
    text = conll_text(sentences)
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise TreenetsError(f"{path}: cannot write it ({exc.strerror})") from None
