"""Trees another parser wrote, read from a file and matched with the gold sentences by their words
(`treenets parse-eval my-parser.txt --treebank ...`).

A file holds one bracketed tree per line (blank lines skipped), with labels or without: `(X (X a) (X b))`,
`(NT-1 (T-1 a) (T-1 b))`, `(S (NP the cat) sat)`, `((a b) c)`. Read with labels, a bracket's first item is
its label when it is a word (`(NP the cat)`; `(T-1 a)`, a bracket around one word, is that word); read without,
every item is a word. A file is read one way, with labels unless more of its lines are gold sentences read
without (the readings differ by a word a bracket: `((a b) c)` read with labels is `b c`), or a bracket of it
is a word alone (`(a)`). A root labelled `TOP` or `ROOT`, or unlabelled, around a single phrase is the file's
wrapper and dropped (`ptb.WRAPPERS`); other unary chains stay, for the conventions that count them.

Words are compared with the gold sentence's (the words the treebank's word rule keeps) in lower case with digit
runs as `N`, so that a file may keep the treebank's case and numbers or write them as the official
preprocessing does; `<unk>` and `[unk]` stand for any word, `N`, `<num>` and `[num]` for any word with a digit.
The lines may come in any order: each is matched with a gold sentence of the same words not matched yet (the
first after the previous line's, for sentences that occur twice).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from treenets.errors import TreenetsError
from treenets.files import read_text
from treenets.limits import check_lines
from treenets.trees.ptb import GoldSentence, Nested, normalize_word, unwrapped

UNKNOWN_WORDS = frozenset({"<unk>", "[unk]"})
NUMBER_WORDS = frozenset({"N", "<num>", "[num]"})
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


def _tokens(line: str, where: str) -> list[str]:
    """The brackets and items of one line, checked to be one bracketed tree."""
    tokens = _TOKEN.findall(line)
    depth = 0
    for k, token in enumerate(tokens):
        if token == "(":
            depth += 1
        elif token == ")":
            if depth == 0:
                raise TreenetsError(f"{where}: unexpected ')' (no bracket is open)")
            if tokens[k - 1] == "(":
                raise TreenetsError(f"{where}: empty brackets '()'")
            depth -= 1
        if depth == 0 and k < len(tokens) - 1:
            break
    if depth > 0:
        raise TreenetsError(f"{where}: {depth} bracket(s) never closed; expected one bracketed tree a line")
    if tokens[0] != "(" or k < len(tokens) - 1:
        raise TreenetsError(f"{where}: expected one bracketed tree a line, found {line.strip()[:60]!r}")
    return tokens


def _labelled(tokens: list[str]) -> bool:
    """Whether the tree can be read with labels: no bracket is a label alone, `(a)`."""
    return not any(a == "(" and c == ")" for a, c in zip(tokens, tokens[2:]))


def words_of(tokens: list[str], labelled: bool) -> list[str]:
    """The words of a tree's tokens: every item, or (`labelled`) every item but the first of a bracket."""
    return [t for t, before in zip(tokens, ["", *tokens]) if t not in "()" and not (labelled and before == "(")]


def tree_of(tokens: list[str], labelled: bool) -> Nested | list:
    """The nested-list tree of a line's tokens, read with labels (dropped) or without. A bracket around one word
    is that word (a preterminal); around one bracket, a unary node; a wrapper root (`ptb.WRAPPERS`) around one
    phrase is dropped."""
    # Each open bracket: its trees so far, and whether its items so far are one word and nothing else.
    stack: list[list] = []
    root_label = ""
    for k, token in enumerate(tokens):
        if token == "(":
            stack.append([[], True, 0])
        elif token == ")":
            children, one_word, items = stack.pop()
            tree = children[0] if one_word and items == 1 else children
            if not stack:
                return unwrapped(tree, root_label) if labelled else tree
            frame = stack[-1]
            frame[0].append(tree)
            frame[1], frame[2] = False, frame[2] + 1
        elif labelled and tokens[k - 1] == "(":
            if len(stack) == 1:
                root_label = token
        else:
            frame = stack[-1]
            frame[0].append(token)
            frame[1], frame[2] = frame[2] == 0, frame[2] + 1
    raise AssertionError("unbalanced tokens")  # `_tokens` checked them


def _key(word: str) -> str:
    return normalize_word(word).lower()


def _same(word: str, gold: str) -> bool:
    """Whether a file's word stands for the gold word (`gold`: as the treebank's rule normalised it)."""
    if word.lower() in UNKNOWN_WORDS or (word in NUMBER_WORDS and "N" in gold):
        return True
    return _key(word) == gold.lower()


@dataclass
class PredictedTrees:
    """A file's trees in the order of the gold sentences (`trees[i]` None where the file has none for sentence
    i: `missing`, the indices of the gold sentences with words that it lacks)."""

    path: str
    trees: list
    missing: list[int]
    lines: int
    longer: int = 0  # lines skipped for having more words than the sentences scored may have


def read_predicted(path: str, sentences: list[GoldSentence], words_rule: str = "",
                   max_length: int | None = None) -> PredictedTrees:
    """The trees of file `path`, matched with `sentences` by their words (see the module's doc). With
    `max_length` (the sentences are those of a treebank of at most that many words), a line of more words,
    however read, is skipped and counted (`longer`).

    Raises:
        TreenetsError: naming the line of a malformed tree, or of a tree whose words are no gold sentence left
            (saying which sentence was expected there, and the first word that differs).
    """
    lines = check_lines(read_text(path, "a file of bracketed trees, one a line").split("\n"), path)
    by_words: dict[tuple, list[int]] = {}
    by_length: dict[int, list[int]] = {}
    for i, s in enumerate(sentences):
        if s.words:
            by_words.setdefault(tuple(w.lower() for w in s.words), []).append(i)
            by_length.setdefault(len(s.words), []).append(i)
    trees: list = [None] * len(sentences)
    after = 0  # the gold sentences from here on come first: those after the previous line's
    previous = None

    def first(candidates: list[int]) -> int | None:
        free = [i for i in candidates if trees[i] is None]
        return next((i for i in free if i >= after), free[0] if free else None)

    def candidates(words: list[str]) -> list[int]:
        exact = by_words.get(tuple(_key(w) for w in words), [])
        if exact or not any(w.lower() in UNKNOWN_WORDS or w in NUMBER_WORDS for w in words):
            return exact  # (`N` is also the treebank's own word for a number, as the official preprocessing writes it)
        return [i for i in by_length.get(len(words), ())
                if all(_same(w, g) for w, g in zip(words, sentences[i].words))]

    parsed = [(number, _tokens(line, f"{path}:{number}")) for number, line in enumerate(lines, start=1) if line.strip()]
    readings: dict = {}  # (line, with labels) -> its words and the gold sentences they are

    def reading(k: int, labelled: bool) -> tuple[list[str], list[int]]:
        if (k, labelled) not in readings:
            words = words_of(parsed[k][1], labelled)
            readings[(k, labelled)] = words, candidates(words)
        return readings[(k, labelled)]

    # One reading for the whole file: a line read the other way could be another sentence by chance (`((x was)
    # (y money))` with labels is `was money`).
    labelled = all(_labelled(tokens) for _, tokens in parsed)
    if labelled:
        found = sum(bool(reading(k, True)[1]) for k in range(len(parsed)))
        labelled = found == len(parsed) or found >= sum(bool(reading(k, False)[1]) for k in range(len(parsed)))
    read = longer = 0
    for k, (number, tokens) in enumerate(parsed):
        words, found = reading(k, labelled)
        index = first(found)
        if index is None and max_length is not None and len(words) > max_length:
            longer += 1
            continue
        if index is None:
            raise TreenetsError(_unmatched(f"{path}:{number}", words, sentences, trees, after, previous, words_rule))
        trees[index] = tree_of(tokens, labelled)
        after, previous, read = index + 1, number, read + 1
    if not read:
        raise TreenetsError(f"{path}: no tree in it (expected one bracketed tree a line)")
    missing = [i for i, s in enumerate(sentences) if s.words and trees[i] is None]
    return PredictedTrees(path, trees, missing, read, longer)


def _unmatched(where: str, words: list[str], sentences: list[GoldSentence], trees: list, after: int,
               previous: int | None, words_rule: str) -> str:
    """The message for a line whose words are no gold sentence left: the sentence expected there (of those without
    a tree, the one whose first words are most like the line's; of equals, the next in the treebank's order after
    the previous line's) and how the line differs from it."""
    shown = " ".join(words)
    message = f"{where}: no sentence of the treebank without a tree yet has its words: {shown[:200]!r} " \
              f"({len(words)} words)"
    free = [i for i, s in enumerate(sentences) if s.words and trees[i] is None]
    if not free:
        return message + "; every sentence of the treebank has a tree already (a sentence given twice?)"

    def same_start(i: int) -> int:
        gold = sentences[i].words
        return next((k for k, (w, g) in enumerate(zip(words, gold)) if not _same(w, g)), min(len(words), len(gold)))

    expected = max(free, key=lambda i: (same_start(i), i >= after, -i))
    gold = sentences[expected]
    place = f"after the tree of line {previous}" if previous else "first"
    message += f"; expected ({place}, the closest sentence without a tree): {gold.source} " \
               f"{' '.join(gold.words)[:200]!r} ({len(gold.words)} words"
    differ = same_start(expected)
    if differ < min(len(words), len(gold.words)):
        message += f"; word {differ + 1} is {words[differ]!r} where the treebank has {gold.words[differ]!r}"
    elif len(words) != len(gold.words):
        message += f"; the line has {len(words)} words where the treebank has {len(gold.words)}"
    return message + f"){'; ' + words_rule if words_rule else ''}"
