"""Trees another parser wrote, read from a file (or standard input, `-`) in any format of the field
(`treenets.trees.formats`) and matched with the gold sentences by their words (`treenets parse-eval my-parser.txt
--treebank ...`).

A bracketed file is read one way, with labels unless more of its lines are gold sentences read without (the
readings differ by a word a bracket: `((a b) c)` read with labels is `b c`), or a bracket of it is a word alone
(`(a)`).

A line's words are compared with each gold sentence's as the treebank writes them (the words the word rule
keeps) under the normalisations of `treenets.trees.wordforms`, from exact to `<unk>`: the line is matched with the
sentences it fits at the strictest step. The lines may come in any order:

- a line fits one sentence (or sentences of the same words, the first after the previous line's taken): it is
  that sentence's;
- a line that fits sentences of other words (placeholders and normalised numbers make `<unk> rose N %` fit
  `Prices rose 5 %` and `Sales rose 7 %`) is placed by the file's order where the order settles it: the one such
  sentence without a tree between the sentences of the lines placed before and after it, or a run of such lines
  and as many sentences between them that fit in turn; else by elimination, once the others have their trees;
  else it is not placed, and said (`unplaced`);
- a file with exactly one line for each sentence, each line fitting its sentence in the treebank's order or no
  sentence at all but of its length, is read in that order (its lines of other words counted as `order`);
- a line that keeps some or all of the words the word rule drops (punctuation: `,` `.`; `$`, `#`: Mikolov's PTB
  text keeps `$` and `#` alone) fits a sentence with them, compared with the punctuation and symbols left out of
  both sides and mapped back on the sentence's leaves: refused with a message naming them and the choices that
  read it, or with `drop_punctuation` those words are dropped from the line's tree (a node left with one child
  replaced by it);
- span lists without words are the treebank's sentences in order, their ends read as their spans say
  (`formats.span_ends`, said in `Matching.ends`);
- any other line is an error naming the line, the sentence expected there (of those without a tree, the one whose
  first words are most like the line's) and the first word that differs.

Every sentence is counted by the loosest step its words needed, and every word matched only by a normalisation or
a placeholder by its step (`Matching`). `align_lines` places any file's lines so, given their words: the sentences
of a CoNLL file too (`treenets.trees.dependency_scoring`).
"""

from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field

from treenets.core.errors import TreenetsError
from treenets.core.files import read_text
from treenets.core.limits import check_lines
from treenets.trees.formats import FORMATS, Line, can_be_labelled, read_lines, span_ends
from treenets.trees.ptb import WORD_RULES, GoldSentence
from treenets.trees.walk import fold
from treenets.trees.wordforms import NUMBERS, STEPS, is_placeholder, keys, match_step

# How a line was matched with its sentence, from the strictest: the steps of `wordforms`, then these.
CLASSES = (*STEPS, "punctuation", "order", "treebank")
PHRASES = {
    "exact": "matched exactly", "case": "after lower-casing", "symbols": "after normalising brackets, quotes and "
    "escapes", "numbers": "after normalising numbers", "unknown": "by `<unk>`", "punctuation": "after dropping "
    "punctuation", "order": "by the file's order (words that differ)", "treebank": "in the treebank's order (span "
    "lists without words)",
}
WORD_PHRASES = {
    "case": "lower-cased", "symbols": "brackets, quotes or escapes", "numbers": "numbers", "unknown": "`<unk>`",
    "punctuation": "punctuation dropped", "order": "words that differ (placed by order)",
}
# Tags of the Penn Treebank's punctuation and symbols, which `--words li-punct` keeps
PTB_PUNCTUATION = frozenset({",", ".", ":", "``", "''", "-LRB-", "-RRB-", "#", "$", "SYM"})
# The word rules of a Penn Treebank that keep some of its punctuation and symbols: a line that keeps the same ones
# is read by it
PTB_RULES_KEEPING = {"li-punct": "with its punctuation (Li et al. 2020's setting)",
                     "li": "with its symbol $ (Li et al. 2020's setting without punctuation)"}
STDIN = "-"
# What a file matched with the gold sentences holds, as stderr names it: trees in a format of `formats.FORMATS`, or
# CoNLL's dependency trees (`treenets.trees.dependency_scoring`)
FILE_KINDS = {**FORMATS, "conll": "CoNLL dependency trees"}


@dataclass
class Matching:
    """How a file's lines were matched with the gold sentences: its `format` (`FILE_KINDS`), the sentences
    by the loosest step their words needed (`sentences`, class of `CLASSES` -> count), the words matched only by
    a normalisation or placeholder by step (`words`; `punctuation`: words dropped from the trees, `order`: words
    that differ in lines placed by the file's order), and the lines that fit several sentences and could not be
    placed (`unplaced`: line number -> the sources of the sentences they fit)."""

    format: str
    sentences: Counter = field(default_factory=Counter)
    words: Counter = field(default_factory=Counter)
    unplaced: dict[int, list[str]] = field(default_factory=dict)
    ends: str = ""  # span lists: how their ends were read, and what said so (`formats.span_ends`)

    def summary(self) -> str:
        """`1,862 sentences matched exactly, 550 after normalising numbers, 3 by <unk>; words: 612 numbers, ...`,
        after how the ends of span lists were read."""
        counted = [c for c in CLASSES if self.sentences[c]]
        noun = "sentence" if counted and self.sentences[counted[0]] == 1 else "sentences"
        text = f"{self.ends}; " if self.ends else ""
        text += ", ".join(f"{self.sentences[c]:,} {noun + ' ' if k == 0 else ''}{PHRASES[c]}"
                          for k, c in enumerate(counted))
        if self.words:
            text += "; words matched only by a normalisation or placeholder: " + ", ".join(
                f"{self.words[c]:,} {WORD_PHRASES[c]}" for c in WORD_PHRASES if self.words[c])
        return text

    def record(self) -> dict:
        """As `summary.json` holds it: `summary` (the text of `summary()`), `format`, `sentences`, `words`,
        `unplaced`."""
        return {"summary": self.summary(), "format": self.format,
                "sentences": {c: self.sentences[c] for c in CLASSES if self.sentences[c]},
                "words": {c: self.words[c] for c in WORD_PHRASES if self.words[c]},
                "unplaced": {str(line): sources for line, sources in self.unplaced.items()}}


@dataclass
class FileReading:
    """What was read of a file of another system's sentences (trees, or dependency trees) matched with the gold
    sentences: the file as messages name it (`path`), the indices of the gold sentences with words that it lacks
    (`missing`), how many of its lines were placed on a sentence (`lines`) and how many were skipped for having more
    words than the sentences scored may have (`longer`), and how its lines were matched."""

    path: str
    missing: list[int]
    lines: int
    longer: int = 0
    matching: Matching = field(default_factory=lambda: Matching("bracketed"))


@dataclass
class PredictedTrees(FileReading):
    """A file's trees in the order of the gold sentences (`trees[i]` None where the file has none for sentence i),
    and what was read of it."""

    trees: list = field(default_factory=list)


@dataclass
class Alignment:
    """A file's lines placed on the gold sentences: `placed`, line index -> (sentence index, the positions of the
    line's words that stand for leaves the word rule drops: punctuation and symbols the line keeps, to be left out);
    the gold sentences with words that no line was placed on (`missing`); the lines skipped for their length
    (`longer`)."""

    placed: dict[int, tuple[int, list[int]]]
    missing: list[int]
    longer: int


def read_input(path: str, expected: str) -> str:
    """The text of file `path`, or of standard input for `-`."""
    if path != STDIN:
        return read_text(path, expected)
    raw = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else sys.stdin.read().encode()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise TreenetsError(f"<stdin>:{line}: not UTF-8 text ({exc.reason}; expected {expected})") from None


@dataclass
class _Fit:
    """How a line fits one sentence: the step of each word that stands for a kept word (`steps`); for a line that
    keeps some of the leaves the word rule drops (punctuation and symbols), the positions of its words that stand
    for them (`dropped`) and the leaf each of its words stands for (`leaves`), None for a line of the kept words
    alone."""

    steps: list[int]
    dropped: list[int] | None = None
    leaves: list[int] | None = None

    @property
    def loosest(self) -> int:
        return len(STEPS) if self.dropped else max(self.steps, default=0)


class _Gold:
    """The gold sentences indexed for matching: by their words' `numbers` keys (a line without placeholders fits
    only sentences of its keys), by length, and for the lines that keep some of the punctuation and symbols the
    word rule drops, by the same without the forms of punctuation and symbols (`bare`, both sides alike)."""

    def __init__(self, sentences: list[GoldSentence]):
        self.sentences = sentences
        self.keys = [[keys(form) for form in s.forms] for s in sentences]
        self.full = [[(keys(word), kept) for word, _, kept in s.leaves] for s in sentences]
        # The forms of the leaves the word rule drops anywhere in the treebank: punctuation and symbols
        self.symbols = {k[NUMBERS] for leaves in self.full for k, kept in leaves if not kept}
        self.bare = [[(form, k) for form, k in zip(s.forms, self.keys[i]) if k[NUMBERS] not in self.symbols]
                     for i, s in enumerate(sentences)]
        self.by_key: dict[tuple, list[int]] = {}
        self.by_length: dict[int, list[int]] = {}
        self.bare_by_key: dict[tuple, list[int]] = {}
        self.bare_by_length: dict[int, list[int]] = {}
        for i, s in enumerate(sentences):
            if not s.words:
                continue
            self.by_key.setdefault(tuple(k[NUMBERS] for k in self.keys[i]), []).append(i)
            self.by_length.setdefault(len(s.words), []).append(i)
            if len(self.full[i]) > len(self.keys[i]):
                self.bare_by_key.setdefault(tuple(k[NUMBERS] for _, k in self.bare[i]), []).append(i)
                self.bare_by_length.setdefault(len(self.bare[i]), []).append(i)

    def fit(self, words: list[str], word_keys: list[tuple], i: int) -> _Fit | None:
        """How `words` fit the kept words of sentence `i`, or None."""
        if len(self.keys[i]) != len(words):
            return None
        steps = []
        for word, word_key, gold_key in zip(words, word_keys, self.keys[i]):
            step = match_step(word, gold_key[0], word_key, gold_key)
            if step is None:  # (most sentences of a line's length differ early)
                return None
            steps.append(step)
        return _Fit(steps)

    def fit_leaves(self, words: list[str], word_keys: list[tuple], i: int) -> _Fit | None:
        """How `words` fit the leaves of sentence `i`, each kept word standing for a word and each leaf the word
        rule drops for a word or for none (the punctuation and symbols a line kept or left out), or None."""
        leaves = self.full[i]
        n, m = len(words), len(leaves)
        step = [[match_step(word, gold_key[0], word_key, gold_key) for gold_key, _ in leaves]
                for word, word_key in zip(words, word_keys)]
        # rest[j][l]: whether words j.. stand for leaves l.., every kept one among them standing for a word
        rest = [[False] * (m + 1) for _ in range(n + 1)]
        rest[n][m] = True
        for leaf in range(m - 1, -1, -1):
            rest[n][leaf] = rest[n][leaf + 1] and not leaves[leaf][1]
        for j in range(n - 1, -1, -1):
            for leaf in range(m - 1, -1, -1):
                rest[j][leaf] = (step[j][leaf] is not None and rest[j + 1][leaf + 1]) or (
                    not leaves[leaf][1] and rest[j][leaf + 1])
        if not rest[0][0]:
            return None
        fit, j = _Fit([], [], []), 0
        for leaf, (_, kept) in enumerate(leaves):  # each word for the first leaf it can stand for
            if j < n and step[j][leaf] is not None and rest[j + 1][leaf + 1]:
                if kept:
                    fit.steps.append(step[j][leaf])
                else:
                    fit.dropped.append(j)
                fit.leaves.append(leaf)
                j += 1
        return fit

    def _bare_fit(self, words: list[str], word_keys: list[tuple], bare: list[int], i: int) -> bool:
        """Whether the words at positions `bare` (the line's words but its punctuation and symbols) fit the bare
        words of sentence `i`, word by word."""
        return len(bare) == len(self.bare[i]) and all(
            match_step(words[j], form, word_keys[j], k) is not None for j, (form, k) in zip(bare, self.bare[i]))

    def candidates(self, words: list[str]) -> dict[int, _Fit]:
        """The sentences `words` fit at the strictest step any fits (or with some of their punctuation and symbols,
        when none fits without), with how."""
        word_keys = [keys(w) for w in words]
        placeholders = any(is_placeholder(w) for w in words)
        # (a line without placeholders fits the sentences of its `numbers` forms, unless a word needs the forms that
        # keep the case, `tNc`: then, as with placeholders, every sentence of its length is looked at)
        pool = [] if placeholders else self.by_key.get(tuple(k[NUMBERS] for k in word_keys), [])
        fits = {i: fit for i in pool or self.by_length.get(len(words), [])
                if (fit := self.fit(words, word_keys, i)) is not None}
        bare = [j for j, k in enumerate(word_keys) if k[NUMBERS] not in self.symbols]
        if not fits and len(bare) < len(words):  # a line that keeps punctuation or symbols the word rule drops
            pool = [] if placeholders else self.bare_by_key.get(tuple(word_keys[j][NUMBERS] for j in bare), [])
            fits = {i: fit for i in pool or self.bare_by_length.get(len(bare), [])
                    if self._bare_fit(words, word_keys, bare, i)
                    and (fit := self.fit_leaves(words, word_keys, i)) is not None}
        if not fits:
            return {}
        best = min(fit.loosest for fit in fits.values())
        return {i: fit for i, fit in fits.items() if fit.loosest == best}

    def forms(self, i: int) -> tuple:
        return tuple(self.sentences[i].forms)


def _without(tree, positions: set[int]):
    """`tree` without the words at `positions`, a node left with one child replaced by it."""
    position = -1

    def leaf(word):
        nonlocal position
        position += 1
        return None if position in positions else word

    def node(_, children: list):
        kept = [child for child in children if child is not None]
        return None if not kept else kept[0] if len(kept) == 1 else kept

    return fold(tree, leaf, node)


class _Placement:
    """Lines placed on sentences: `line_of[i]`, the index of the line placed on sentence i (or None)."""

    def __init__(self, count: int):
        self.line_of: list[int | None] = [None] * count
        self.sentence_of: dict[int, int] = {}  # line index -> sentence

    def place(self, k: int, i: int) -> None:
        self.line_of[i], self.sentence_of[k] = k, i

    def free(self, candidates) -> list[int]:
        return [i for i in candidates if self.line_of[i] is None]

    def neighbours(self, k: int, lines: int) -> tuple[int, int]:
        """The sentences of the placed lines nearest before and after line k in the file (-1 and `count` where
        there is none)."""
        before = next((self.sentence_of[j] for j in range(k - 1, -1, -1) if j in self.sentence_of), -1)
        after = next((self.sentence_of[j] for j in range(k + 1, lines) if j in self.sentence_of),
                     len(self.line_of))
        return before, after


def _place(entries: list, gold: _Gold) -> tuple[_Placement, list[int], int | None]:
    """Place the lines (`entries`: each line's candidates) on sentences as the module's doc says. Returns the
    placement, the lines that could not be placed for fitting several sentences, and the first line that fits
    no sentence left (None when every line found one or was left unplaced)."""
    placed = _Placement(len(gold.sentences))
    ambiguous = []
    after = 0  # the gold sentences from here on come first: those after the previous line's
    for k, candidates in enumerate(entries):
        if len({gold.forms(i) for i in candidates}) > 1:
            ambiguous.append(k)
            continue
        free = placed.free(candidates)
        if not free:
            return placed, [], k
        i = next((i for i in free if i >= after), free[0])
        placed.place(k, i)
        after = i + 1
    progress = True
    while ambiguous and progress:
        progress = False
        for k in ambiguous:
            free = placed.free(entries[k])
            if not free:
                return placed, [], k
            before, next_placed = placed.neighbours(k, len(entries))
            between = [i for i in free if before < i < next_placed]
            if len({gold.forms(i) for i in free}) == 1:  # by elimination
                placed.place(k, free[0])
            elif between and len({gold.forms(i) for i in between}) == 1:  # by the file's order
                placed.place(k, between[0])
            else:  # a run of such lines between two placed ones, and as many sentences without a tree there
                run = [j for j in range(k, len(entries)) if j not in placed.sentence_of]
                run = run[: next((n for n, j in enumerate(run) if j != k + n), len(run))]
                gap = [i for i in range(before + 1, next_placed) if placed.line_of[i] is None
                       and gold.sentences[i].words]
                if not (before < next_placed and len(gap) == len(run)
                        and all(i in entries[j] for i, j in zip(gap, run))):
                    continue
                for i, j in zip(gap, run):
                    placed.place(j, i)
            progress = True
        ambiguous = [k for k in ambiguous if k not in placed.sentence_of]
    return placed, ambiguous, None


def read_predicted(path: str, sentences: list[GoldSentence], words_rule: str = "",
                   max_length: int | None = None, fmt: str = "auto", drop_punctuation: bool = False
                   ) -> PredictedTrees:
    """The trees of file `path` (`-`: standard input) in format `fmt` (`formats.FORMATS`, or `auto`: detected),
    matched with `sentences` by their words (see the module's doc and `align_lines`). With `max_length` (the
    sentences are those of a treebank of at most that many words), a line of more words that fits no sentence is
    skipped and counted (`longer`). `words_rule` names the word rule in messages.

    Raises:
        TreenetsError: naming the line of a malformed tree, of a tree whose words are no gold sentence left
            (saying which sentence was expected there, and the first word that differs), or of one that keeps
            punctuation the word rule drops (without `drop_punctuation`).
    """
    name = "<stdin>" if path == STDIN else path
    text = read_input(path, f"a file of trees ({', '.join(FORMATS.values())})")
    check_lines(text.split("\n"), name)
    fmt, lines = read_lines(text, name, fmt)
    matching = Matching(fmt)
    if fmt == "spans":
        if any(line.given is None for line in lines):
            return _in_treebank_order(name, lines, sentences, matching, max_length)
        if _read_ends(lines, [len(line.given) for line in lines], name, matching):
            for line in lines:
                line.spans = [(start, end + 1) for start, end in line.spans]
    gold = _Gold(sentences)

    # One reading for the whole file: a line read the other way could be another sentence by chance (`((x was)
    # (y money))` with labels is `was money`).
    bracketed = [line for line in lines if line.tokens is not None]
    labelled = all(can_be_labelled(line.tokens) for line in bracketed)
    readings: dict = {}

    def reading(k: int, with_labels: bool) -> tuple[list[str], dict]:
        if (k, with_labels) not in readings:
            words = lines[k].words(with_labels)
            readings[(k, with_labels)] = words, gold.candidates(words)
        return readings[(k, with_labels)]

    if bracketed and labelled:
        found = sum(bool(reading(k, True)[1]) for k in range(len(lines)))
        labelled = found == len(lines) or found >= sum(bool(reading(k, False)[1]) for k in range(len(lines)))
    words, candidates = zip(*(reading(k, labelled) for k in range(len(lines))))
    alignment = align_lines(name, lines, list(words), sentences, matching, words_rule, max_length, drop_punctuation,
                            gold, list(candidates))
    trees: list = [None] * len(sentences)
    for k, (i, dropped) in alignment.placed.items():
        tree = lines[k].build(labelled, words[k], name)
        trees[i] = _without(tree, set(dropped)) if dropped else tree
    return PredictedTrees(name, alignment.missing, len(alignment.placed), alignment.longer, matching, trees)


def align_lines(name: str, lines: list[Line], words: list[list[str]], sentences: list[GoldSentence],
                matching: Matching, words_rule: str = "", max_length: int | None = None,
                drop_punctuation: bool = False, gold: _Gold | None = None, candidates: list[dict] | None = None
                ) -> Alignment:
    """Place the lines of file `name` (`lines`, for their numbers; `words`, each line's words) on `sentences` by
    their words, as the module's doc says, counting in `matching` how each sentence was matched. With `max_length`
    (the sentences are those of a treebank of at most that many words), a line of more words that fits no sentence
    is skipped and counted. `gold` and `candidates` (each line's, `_Gold.candidates`) may be given when computed
    already.

    Raises:
        TreenetsError: naming the line whose words are no gold sentence left (saying which sentence was expected
            there, and the first word that differs), or one that keeps punctuation the word rule drops (without
            `drop_punctuation`); or the file, when none of its lines could be placed.
    """
    gold = gold or _Gold(sentences)
    candidates = candidates if candidates is not None else [gold.candidates(w) for w in words]
    present = [i for i, s in enumerate(sentences) if s.words]
    kept = [k for k in range(len(lines)) if candidates[k] or max_length is None or len(words[k]) <= max_length]
    entries = [candidates[k] for k in kept]
    for k, fits in zip(kept, entries):
        fit = next(iter(fits.values()), None)
        if fit is not None and fit.dropped and not drop_punctuation:
            raise TreenetsError(_punctuation(lines[k].where(name), words[k], fit, sentences[next(iter(fits))],
                                             words_rule))

    def fits_or_differs(k: int, fits: dict, i: int) -> bool:
        """Whether sentence i is one line k fits at its strictest step, or the line fits none but has as many
        words."""
        return i in fits or not fits and len(words[k]) == len(sentences[i].words)

    if len(kept) == len(present) and all(map(fits_or_differs, kept, entries, present)):  # in the treebank's order
        placement = dict(zip(kept, present))
        unplaced: list[int] = []
    else:
        placed, unplaced_entries, failed = _place(entries, gold)
        if failed is not None:
            previous = max((k for k in placed.sentence_of if k < failed), default=None)
            after = placed.sentence_of[previous] + 1 if previous is not None else 0
            raise TreenetsError(_unmatched(
                lines[kept[failed]].where(name), words[kept[failed]], sentences, gold,
                [j is not None for j in placed.line_of], after,
                lines[kept[previous]].number if previous is not None else None, words_rule))
        placement = {kept[k]: i for k, i in placed.sentence_of.items()}
        unplaced = [kept[k] for k in unplaced_entries]
        if not placement and unplaced:
            fits = candidates[unplaced[0]]
            raise TreenetsError(f"{name}: none of its {len(unplaced):,} lines could be placed: each fits several "
                                f"sentences and the file's order does not say which (line {lines[unplaced[0]].number}"
                                f" fits {len(fits)}: {', '.join(str(sentences[i].source) for i in list(fits)[:3])}"
                                f"{', ...' if len(fits) > 3 else ''})")
    placements = {}
    for k, i in placement.items():
        fit = candidates[k].get(i)
        if fit is None:  # placed by the file's order, words that differ
            matching.sentences["order"] += 1
            matching.words["order"] += sum(match_step(w, g) is None for w, g in zip(words[k], sentences[i].forms))
        else:
            matching.sentences[CLASSES[fit.loosest]] += 1
            matching.words.update(STEPS[step] for step in fit.steps if step)
            if fit.dropped:
                matching.words["punctuation"] += len(fit.dropped)
        placements[k] = (i, fit.dropped if fit is not None and fit.dropped else [])
    matching.unplaced = {lines[k].number: [str(sentences[i].source) for i in candidates[k]] for k in unplaced}
    taken = {i for i, _ in placements.values()}
    return Alignment(placements, [i for i in present if i not in taken], len(lines) - len(kept))


def _read_ends(lines: list[Line], lengths: list[int], name: str, matching: Matching) -> bool:
    """Whether the span lists of a file end at their last word (`formats.span_ends`), said in `matching`."""
    inclusive, why = span_ends(lines, lengths, name)
    reading = "inclusive ([0, n - 1] the whole sentence)" if inclusive else "exclusive, as slices ([0, n] the whole " \
        "sentence)"
    matching.ends = f"span ends read {reading}: {why}"
    return inclusive


def _in_treebank_order(name: str, lines: list[Line], sentences: list[GoldSentence], matching: Matching,
                       max_length: int | None) -> PredictedTrees:
    """Span lists without words: each line is the next sentence of the treebank."""
    present = [i for i, s in enumerate(sentences) if s.words]
    given = next((line for line in lines if line.given is not None), None)
    if given is not None:
        without = next(line for line in lines if line.given is None)
        raise TreenetsError(f"{given.where(name)}: the line gives its words where line {without.number} does not "
                            "(expected every line with its words, or none: the treebank's words in order)")
    if len(lines) != len(present):
        limit = f" of at most {max_length} words" if max_length is not None else ""
        raise TreenetsError(f"{name}: {len(lines):,} span lists without words, where the treebank has "
                            f"{len(present):,} sentences{limit}; span lists without words are read as the treebank's "
                            "sentences in order, one a line (give each line its words to match them in any order)")
    inclusive = _read_ends(lines, [len(sentences[i].words) for i in present], name, matching)
    trees: list = [None] * len(sentences)
    for line, i in zip(lines, present):
        spans = [(start, end + 1) for start, end in line.spans] if inclusive else line.spans
        trees[i] = Line(line.number, line.name, spans=spans).build(False, sentences[i].words, name)
    matching.sentences["treebank"] = len(present)
    return PredictedTrees(name, [], len(lines), 0, matching, trees)


def _punctuation(where: str, words: list[str], fit: _Fit, sentence: GoldSentence, words_rule: str) -> str:
    """The message for a line that keeps the words the word rule drops."""
    dropped = [words[p] for p in fit.dropped]
    tags = {tag for _, tag, kept in sentence.leaves if not kept}
    shown = " ".join(f"{w!r}" for w in dict.fromkeys(dropped))
    message = (f"{where}: the line keeps {len(dropped)} word(s) that the treebank's word rule drops ({shown}: "
               f"punctuation or symbols) and is otherwise {sentence.source} ({len(sentence.words)} words)")
    line_leaves = set(fit.leaves)
    choices = [f"--words {name} reads the treebank {what}" for name, what in PTB_RULES_KEEPING.items()
               if tags <= PTB_PUNCTUATION and all(WORD_RULES[name].keeps(tag) == (leaf in line_leaves)
                                                 for leaf, (_, tag, _) in enumerate(sentence.leaves))]
    choices.append("--drop-punctuation drops them from the file's trees, as DIORA's evalb.py and EVALB's "
                   "COLLINS.prm do")
    return message + f"; {'; or '.join(choices)}" + (f"; {words_rule}" if words_rule else "")


def _unmatched(where: str, words: list[str], sentences: list[GoldSentence], gold: _Gold, taken: list[bool],
               after: int, previous: int | None, words_rule: str) -> str:
    """The message for a line whose words are no gold sentence left: the sentence expected there (of those without
    a tree, the one whose first words are most like the line's; of equals, the next in the treebank's order after
    the previous line's) and how the line differs from it."""
    shown = " ".join(words)
    message = f"{where}: no sentence of the treebank without a tree yet has its words: {shown[:200]!r} " \
              f"({len(words)} words)"
    free = [i for i, s in enumerate(sentences) if s.words and not taken[i]]
    if not free:
        return message + "; every sentence of the treebank has a tree already (a sentence given twice?)"
    word_keys = [keys(w) for w in words]

    def same_start(i: int) -> int:
        forms = sentences[i].forms
        return next((k for k, (w, wk, g, gk) in enumerate(zip(words, word_keys, forms, gold.keys[i]))
                     if match_step(w, g, wk, gk) is None), min(len(words), len(forms)))

    expected = max(free, key=lambda i: (same_start(i), i >= after, -i))
    sentence = sentences[expected]
    place = f"after the tree of line {previous}" if previous else "first"
    message += f"; expected ({place}, the closest sentence without a tree): {sentence.source} " \
               f"{' '.join(sentence.forms)[:200]!r} ({len(sentence.words)} words"
    differ = same_start(expected)
    if differ < min(len(words), len(sentence.words)):
        message += f"; word {differ + 1} is {words[differ]!r} where the treebank has {sentence.forms[differ]!r}"
    elif len(words) != len(sentence.words):
        message += f"; the line has {len(words)} words where the treebank has {len(sentence.words)}"
    without = [word for word, tag, kept in sentence.leaves if kept and tag not in PTB_PUNCTUATION]
    if len(without) < len(sentence.words) and len(without) == len(words) and all(
            match_step(w, g) is not None for w, g in zip(words, without)):
        message += "; the line lacks the treebank's punctuation, which the word rule keeps: --words li or ptb " \
                   "reads the treebank without it"
    return message + f"){'; ' + words_rule if words_rule else ''}"
