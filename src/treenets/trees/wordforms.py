"""How a word of another system's file stands for a word of the treebank: the normalisations of the field's
preprocessing scripts, each applied to both sides, from the strictest to the loosest (docs/parsing.md lists them
with an example each).

- `exact`: the word as the treebank writes it (`Smith`, `20,000`, `-LRB-`).
- `case`: in lower case (`smith`).
- `symbols`: the bracket tokens as the characters they stand for (`-LRB-` `(`, `-RRB-` `)`, `-LSB-` `[`, `-RSB-`
  `]`, `-LCB-` `{`, `-RCB-` `}`), both double quotes as `"` (` `` ` `''` `“` `”`), the `&`-escapes of HTML and SGML
  read (`AT&amp;T` `AT&T`), and the treebank's escaped `\\/` and `\\*` as `/` and `*`.
- `numbers`: a number however written: thousands separators dropped (`20,000` `20000`), and a run of digits the
  same as any other (`1987` `N`, `0`; `N,N` as the official preprocessing writes `20,000`, `N.N` for `3.5`); a
  word that is a number placeholder (`N`, `<num>`, `[num]`) also stands for any word with a digit (`3.5`,
  `1990-style`) and for `%` (Mikolov's PTB text writes `3.5 %` as `N N`); a capital `N` among small letters is
  a number too (`tNc` for `T34C`, as the official preprocessing writes it); and a number whose digit runs became
  `N` and whose separators were then dropped, one `N` a run (`NN` for `20,000` and `3.5`, `NNN` for `1,234,567`,
  as the ensemble files of Shayegh et al. 2024 write them).
- `unknown`: a placeholder for a word out of the system's vocabulary (`<unk>`, `<UNK>`, `UNK`, `[unk]`) stands
  for any word.

A word matches at the first step where its form equals the treebank's (`match_step`); a sentence at the
loosest step any of its words needed.
"""

from __future__ import annotations

import functools
import html
import re

STEPS = ("exact", "case", "symbols", "numbers", "unknown")
EXACT, CASE, SYMBOLS, NUMBERS, UNKNOWN = range(len(STEPS))

UNKNOWN_WORDS = frozenset({"<unk>", "unk", "[unk]"})  # compared in lower case
NUMBER_WORDS = frozenset({"n", "<num>", "[num]"})  # compared in lower case

BRACKETS = {"-lrb-": "(", "-rrb-": ")", "-lsb-": "[", "-rsb-": "]", "-lcb-": "{", "-rcb-": "}"}
QUOTES = {"``": '"', "''": '"', "\u201c": '"', "\u201d": '"'}
_ESCAPE = re.compile(r"&(?:[a-z]+|#[0-9]+|#x[0-9a-f]+);")
# A digit run the preprocessing wrote as `N` (here in lower case): an `n` after no letter, and before none or
# before the ending of a number (`N`, `N,N`, `N-style`, `Ns` for `1980s`, `Nth` for `50th`).
_N_FOR_DIGITS = re.compile(r"(?<![a-z])n(?=(?:s|st|nd|rd|d|th)?(?![a-z]))")
# The same, where the word keeps its case: an `N` between no capitals (`tNc`: the official preprocessing lower-cases
# `T34C` before it writes its digits as `N`).
_CAPITAL_N_FOR_DIGITS = re.compile(r"(?<![A-Z])N(?![A-Z])")
_DIGITS = re.compile(r"[0-9]+")
_SEPARATOR = re.compile(r"(?<=0),(?=0)")  # a thousands separator, once the digit runs are `0`s
_ZEROS = re.compile(r"0+")
# A number: digit runs between separators (`20,000`, `3.5`, `1\/2`, `10:30`), which a file may write with each run
# as `N` and the separators dropped (`NN`, `NN-point` for `190.58-point`).
_NUMBER = re.compile(r"[0-9]+(?:(?:[.,:/-]|\\/)+[0-9]+)*")


def _symbols(word: str) -> str:
    word = _ESCAPE.sub(lambda escape: html.unescape(escape.group()), word).replace("\\/", "/").replace("\\*", "*")
    return BRACKETS.get(word, QUOTES.get(word, word))


def _numbers(word: str) -> str:
    word = _DIGITS.sub("0", _N_FOR_DIGITS.sub("0", word))
    return _ZEROS.sub("0", _SEPARATOR.sub("", word))


@functools.lru_cache(maxsize=1 << 16)  # a treebank's words repeat, and every line's are looked up
def keys(word: str) -> tuple[str, str, str, str, str]:
    """The forms of `word` under each step but `unknown`, each step's normalisation applied to the last's (so
    that words one at a step are one at every later step): `keys("-LRB-")` starts `("-LRB-", "-lrb-", "(",
    "(")`, `keys("20,000")[NUMBERS]` is `"0"`; and last, its number form read with `N` in its case, where a
    capital `N` among small letters is a number (`t0c` for `tNc` and `T34C`)."""
    lower = word.lower()
    symbols = _symbols(lower)
    return word, lower, symbols, _numbers(symbols), _numbers(_symbols(_CAPITAL_N_FOR_DIGITS.sub("0", word).lower()))


def squeezed_number(word: str, gold: str) -> bool:
    """Whether the file's `word` is the treebank's `gold` with each number's digit runs written `N` and the
    separators between them dropped (`NN` for `20,000`, `NN-point` for `190.58-point`)."""
    lower = word.lower()
    if "nn" not in lower:
        return False
    squeezed = _NUMBER.sub(lambda number: "n" * len(_DIGITS.findall(number.group())), gold.lower())
    return squeezed == lower and squeezed != gold.lower()


def is_unknown(word: str) -> bool:
    """Whether `word` is a placeholder for a word out of the vocabulary (`<unk>`, `UNK`, `[unk]`)."""
    return word.lower() in UNKNOWN_WORDS


def is_number_word(word: str) -> bool:
    """Whether `word` is a placeholder for a number (`N`, `<num>`, `[num]`)."""
    return word.lower() in NUMBER_WORDS


def is_placeholder(word: str) -> bool:
    """Whether `word` stands for words of other forms: an unknown word's or a number's placeholder."""
    return is_unknown(word) or is_number_word(word)


def _numeric(form: str) -> bool:
    return form == "%" or any(char.isdigit() for char in form)


def match_step(word: str, gold: str, word_keys: tuple | None = None, gold_keys: tuple | None = None) -> int | None:
    """The first step (an index of `STEPS`) at which the file's `word` stands for the treebank's `gold` (as the
    treebank writes it), or None when no step makes them one. `word_keys` and `gold_keys`, their `keys`, may be
    given when already computed."""
    word_keys = word_keys or keys(word)
    gold_keys = gold_keys or keys(gold)
    for step in (EXACT, CASE, SYMBOLS, NUMBERS):
        if word_keys[step] == gold_keys[step]:
            return step
    if "N" in word and word_keys[-1] == gold_keys[-1] or is_number_word(word) and _numeric(gold) or \
            squeezed_number(word, gold):
        return NUMBERS
    if is_unknown(word):
        return UNKNOWN
    return None
