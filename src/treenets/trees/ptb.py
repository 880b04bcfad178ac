"""Penn Treebank trees: reading, and the preprocessing of the ON-LSTM/PRPN parsing evaluation.

Reads multi-line `.mrg` files (several trees per file, each in an unlabelled `( ... )` root, with `-NONE-`
traces and function tags, as in the NLTK WSJ sample) and one-tree-per-line files (`(TOP ...)`), into
`nltk.Tree`. The official preprocessing keeps the leaves whose POS tag is a word tag (dropping punctuation,
`-NONE-`, `$`, `#`), lower-cases them and replaces digit runs by `N`; the gold tree over those words has
empty and unary nodes collapsed.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass
from pathlib import Path

import nltk

from treenets.core.errors import TreenetsError
from treenets.core.files import read_text
from treenets.core.limits import MAX_TREE_DEPTH, check_lines
from treenets.trees.metrics import node_spans
from treenets.trees.walk import fold

# The POS tags whose words are kept (the official `word_tags`).
WORD_TAGS = frozenset([
    "CC", "CD", "DT", "EX", "FW", "IN", "JJ", "JJR", "JJS", "LS", "MD", "NN", "NNS", "NNP", "NNPS", "PDT",
    "POS", "PRP", "PRP$", "RB", "RBR", "RBS", "RP", "SYM", "TO", "UH", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ",
    "WDT", "WP", "WP$", "WRB",
])
_DIGITS = re.compile(r"[0-9]+")
# The tags of the treebanks' empty elements (traces, null subjects): no system reads them as words.
EMPTY_TAGS = frozenset({"-NONE-"})


@dataclass(frozen=True)
class WordRule:
    """Which leaves of a treebank's trees the parsing evaluation keeps, by their POS tag: only the tags of `keep`,
    or (`keep` None) every tag but those of `drop` (punctuation and empty elements); and none under a phrase
    labelled as one of `drop_phrases` (Li et al.'s preprocessing removes a list marker's phrase, `LST`, whatever
    the tags of its words)."""

    name: str
    summary: str
    keep: frozenset[str] | None = None
    drop: frozenset[str] = frozenset()
    drop_phrases: frozenset[str] = frozenset()

    def keeps(self, tag: str) -> bool:
        return tag in self.keep if self.keep is not None else tag not in self.drop

    def dropping(self, tags) -> WordRule:
        """The same rule dropping `tags` too (a keep-list loses them)."""
        tags = frozenset(tags)
        return WordRule(f"{self.name} without {', '.join(sorted(tags))}", self.summary,
                        None if self.keep is None else self.keep - tags, self.drop | tags, self.drop_phrases)

    def pruned(self, tree: nltk.Tree) -> nltk.Tree:
        """`tree` without the phrases of `drop_phrases` (a copy; `tree` itself when it has none)."""
        if not self.drop_phrases or not any(isinstance(node, nltk.Tree) and node.label() in self.drop_phrases
                                            for node in _nodes(tree)):
            return tree
        return fold(tree, lambda word: word, lambda phrase, children: nltk.Tree(phrase.label(), [
            child for child, node in zip(children, phrase)
            if not (isinstance(node, nltk.Tree) and node.label() in self.drop_phrases)]))


def _nodes(tree: nltk.Tree) -> list:
    """Every node and word of `tree`, without recursion."""
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, nltk.Tree):
            stack.extend(node)
    return found

Nested = "str | list[Nested]"  # a tree as nested lists of words (what the official code scores)

# The rules of the treebanks a user may score trees on. `ptb` is the official ON-LSTM/PRPN evaluation's; the others
# drop their treebank's punctuation and empty-element tags and keep every other word.
WORD_RULES = {rule.name: rule for rule in (
    WordRule("ptb", "Penn Treebank word tags only (punctuation, -NONE-, $ and # dropped), as the official code",
             keep=WORD_TAGS),
    WordRule("ctb", "Penn Chinese Treebank: every word but punctuation (PU) and empty elements (-NONE-)",
             drop=frozenset({"PU", "-NONE-"})),
    WordRule("negra", "NEGRA and TIGER (STTS tags): every word but punctuation ($, $. $() and empty elements (--)",
             drop=frozenset({"$,", "$.", "$(", "--", "-NONE-"})),
    WordRule("ud", "trees with Universal Dependencies' POS tags: every word but PUNCT (and -NONE-)",
             drop=frozenset({"PUNCT", "-NONE-"})),
    WordRule("li", "Li et al. (2020) without punctuation: every Penn Treebank word but , . : `` '' -LRB- -RRB- # "
             "SYM LS LST and -NONE-, and none of a list marker's phrase LST ($ kept)",
             drop=frozenset({",", ".", ":", "``", "''", "-LRB-", "-RRB-", "#", "SYM", "LS", "LST", "-NONE-"}),
             drop_phrases=frozenset({"LST"})),
    WordRule("li-punct", "Li et al. (2020) with punctuation: every Penn Treebank word but LS, LST and -NONE-, and "
             "none of a list marker's phrase LST", drop=frozenset({"LS", "LST", "-NONE-"}),
             drop_phrases=frozenset({"LST"})),
)}
PTB = WORD_RULES["ptb"]


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
            if depth > MAX_TREE_DEPTH:
                raise TreenetsError(f"{path}:{start_line}: tree deeper than {MAX_TREE_DEPTH} levels (line {line} "
                                    f"opens bracket {MAX_TREE_DEPTH + 1} inside it); treebank trees nest at most "
                                    f"{MAX_TREE_DEPTH} brackets deep")
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
    """Trees of a treebank text (any layout), with where each starts.

    Raises:
        TreenetsError: naming the file and line of a malformed tree, a tree deeper than
            `treenets.core.limits.MAX_TREE_DEPTH` levels, or a line longer than `treenets.core.limits.MAX_LINE_CHARS`.
    """
    check_lines(text.split("\n"), path)  # numbered as `_split_brackets` numbers them
    trees = []
    for line, chunk in _split_brackets(text, path):
        try:
            tree = nltk.Tree.fromstring(chunk)
        except ValueError as exc:
            raise TreenetsError(f"{path}:{line}: malformed tree ({str(exc).splitlines()[0][:120]})") from None
        if not _tagged_words(tree):
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
        trees.extend(parse_trees(read_text(file, "a Penn Treebank file of bracketed trees"), str(file)))
    if not trees:
        raise TreenetsError(f"{path}: no trees found")
    return trees


def _tagged_words(tree: nltk.Tree) -> list[tuple[str, str]]:
    """`tree.pos()` without recursion: every word with its tag (the label of the node right above it)."""
    pairs, stack = [], [(tree, "")]
    while stack:
        node, tag = stack.pop()
        if isinstance(node, nltk.Tree):
            stack.extend((child, node.label()) for child in reversed(node))
        else:
            pairs.append((node, tag))
    return pairs


def tree_words(tree: nltk.Tree, rule: WordRule = PTB) -> list[str]:
    """The words the evaluation keeps (`rule`: by default the official word tags), normalised."""
    return [normalize_word(word) for word, tag in _tagged_words(tree) if rule.keeps(tag)]


def collapse(tree, rule: WordRule = PTB) -> Nested | list:
    """The gold tree over the kept words (`rule`) as nested lists: empty nodes dropped, unary nodes collapsed
    (the official `tree2list`). A sentence without kept words gives `[]`."""
    if not isinstance(tree, nltk.Tree):
        return []

    def node(phrase: nltk.Tree, values: list):
        children = _kept_children(phrase, values, rule)
        return children if len(children) > 1 else (children[0] if children else [])

    return fold(tree, normalize_word, node)


def _kept_children(phrase: nltk.Tree, values: list, rule: WordRule) -> list:
    """The values of `phrase`'s children that stay: its phrases' (when not empty), and its words' where its tag is
    kept by `rule` (a word is kept when its tag, the phrase right above it, is)."""
    kept = rule.keeps(phrase.label())
    return [value for child, value in zip(phrase, values) if (kept or isinstance(child, nltk.Tree)) and value != []]


# The labels of a treebank's outer root, which holds the sentence's tree and is no phrase of it: the unlabelled
# `( ...)` of .mrg files (which nltk's PTB reader strips), `(TOP ...)` of one-tree-per-line files, `(ROOT ...)`.
WRAPPERS = frozenset({"", "TOP", "ROOT"})


def unwrapped(tree, label: str):
    """A nested-list tree without its outer root when that root is a wrapper (labelled as one of `WRAPPERS`)
    around a single phrase."""
    if label in WRAPPERS and isinstance(tree, list) and len(tree) == 1 and isinstance(tree[0], list):
        return tree[0]
    return tree


def phrases(tree, rule: WordRule = PTB) -> Nested | list:
    """The gold tree over the kept words (`rule`) with every phrase of the treebank in it, as nested lists: a
    phrase left with a single child is kept as a list of one (unary chains stay, a phrase over one word is
    `["word"]`), a preterminal is its word, empty phrases are dropped, and so is the wrapper root (`WRAPPERS`).
    The conventions that count unary chains or one-word phrases (`kim`, `evalb`) score this tree; `collapse`
    gives the same spans of two or more words. A sentence without kept words gives `[]`."""
    if not isinstance(tree, nltk.Tree):
        return []

    def node(phrase: nltk.Tree, values: list):
        children = _kept_children(phrase, values, rule)
        if len(phrase) == 1 and not isinstance(phrase[0], nltk.Tree):  # a preterminal: its word, or nothing
            return children[0] if children else []
        return children

    return unwrapped(fold(tree, normalize_word, node), tree.label())


def label_of(tree: nltk.Tree) -> str:
    """The constituent label without function tags and indices: `NP-SBJ-1` -> `NP`, `S=2` -> `S`."""
    return re.split(r"[-=]", tree.label())[0]


def labeled_spans(tree: nltk.Tree, rule: WordRule = PTB) -> list[tuple[int, int, str]]:
    """`(start, end, label)` of every phrase of the gold tree covering two or more kept words (`rule`), unary
    chains included (each label counts), as the official per-label recall counts them."""
    # The kept words before each word of the tree: a phrase's span over the kept words from its span over all.
    kept_before = list(itertools.accumulate((rule.keeps(tag) for _, tag in _tagged_words(tree)), initial=0))
    spans = []
    words = 0

    def leaf(_) -> tuple[int, int]:
        nonlocal words
        words += 1
        return words - 1, words

    def node(phrase: nltk.Tree, children: list) -> tuple[int, int]:
        first, last = (children[0][0], children[-1][1]) if children else (words, words)
        start, end = kept_before[first], kept_before[last]
        if end - start > 1:
            spans.append((start, end, label_of(phrase)))
        return first, last

    fold(tree, leaf, node)
    return spans


@dataclass
class GoldSentence:
    words: list[str]  # the kept, normalised words
    gold: object  # nested lists over `words` ([] if no word is kept)
    labeled: list  # (start, end, label) of the gold phrases, for per-label recall
    tree: nltk.Tree
    source: TreeSource
    phrases: object = None  # `gold` with every phrase of the treebank kept (unary chains too): `phrases`
    # Every leaf but the empty elements, as the treebank writes it: (word, tag, whether the word rule keeps it)
    leaves: list[tuple[str, str, bool]] | None = None

    def __post_init__(self):
        if self.phrases is None:  # a sentence made from a nested-list tree alone: its phrases are its nodes
            self.phrases = self.gold
        if self.leaves is None:  # (and its words are its leaves)
            self.leaves = [(word, "", True) for word in self.words]

    @property
    def forms(self) -> list[str]:
        """The kept words as the treebank writes them (`words` normalised: `Smith` and `20,000` for `smith`, `N,N`)."""
        return [word for word, _, kept in self.leaves if kept]

    @functools.cached_property
    def nodes(self) -> tuple | None:
        """The `node_spans` of its `phrases` (what every system is scored against), None for an empty sentence."""
        return node_spans(self.phrases) if self.words else None


def length_limit(wsj10: bool, max_length: int | None) -> int | None:
    """The most words a sentence scored may have: 10 with `wsj10`, `max_length` if lower (or without `wsj10`)."""
    return 10 if wsj10 and (max_length is None or max_length > 10) else max_length


def load_gold(path: Path, wsj10: bool = False, rule: WordRule = PTB, max_length: int | None = None
              ) -> list[GoldSentence]:
    """The sentences of a treebank, preprocessed as in the official evaluation (the words `rule` keeps: by default
    the official word tags); `wsj10` keeps those with at most 10 words after filtering, `max_length` those with at
    most that many."""
    limit = length_limit(wsj10, max_length)
    sentences = []
    for tree, source in read_treebank(path):
        tree = rule.pruned(tree)
        words = tree_words(tree, rule)
        if limit is not None and len(words) > limit:
            continue
        leaves = [(word, tag, rule.keeps(tag)) for word, tag in _tagged_words(tree)
                  if rule.keeps(tag) or tag not in EMPTY_TAGS]
        sentences.append(GoldSentence(words, collapse(tree, rule), labeled_spans(tree, rule), tree, source,
                                      phrases(tree, rule), leaves))
    return sentences
