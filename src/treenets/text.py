"""Text normalisers: a sentence as a person types it, turned into the words of a model's training text.

A language model knows only the conventions of the text it was trained on: Mikolov's Penn Treebank text
(`ptb_lm/ptb.*.txt`) is lower-cased, has `N` for every number, no punctuation, and `'s` and `n't` split off.
A model records the name of its normaliser in its config (`data.normalizer`; a model saved before the name
was recorded gets its task's default: `ptb` for the PTB language models, `treebank` for the sentence-level
one), and every command and method that takes sentences applies it (`treenets parse`, `eval --file`,
`predict`, `serve`; `score`, `distances` and `parse` of `treenets.load(...)`), unless told that the text is
pretokenized: then it is split on white space and only the vocabulary's case and numbers are kept
(`LanguageModel.tokenize`).

- `ptb`: Mikolov's PTB language-model text. Penn Treebank tokenisation (`treebank_tokens`: `don't` -> `do n't`,
  `company's` -> `company 's`, `3.5%` -> `3.5 %`, `$5` -> `$ 5`, every currency symbol split off as `$` is:
  `€3.2` -> `€ 3.2`; hyphenated words, `U.S.`, `S&P` and `US$` whole), then Mikolov's preprocessing: lower
  case; every number (`3.5`, `1,000`, `1987`, `1:30`, `1/2`, `1985-86`) and `%` become `N`, while words of
  digits and letters stay (`30-year`, `1980s`); punctuation is dropped, but not the symbols the text keeps as
  words (`$ # & '`, the last the possessive of a plural: `investors '`) nor any currency symbol (`£` written
  `#`, as the treebank writes the pound sign; `€`, `¥`, ... as they are, which a PTB model reads as `<unk>`);
  `/` is written `\\/` as the treebank escapes it (`mgm\\/ua`).
- `treebank`: the words of a treebank tree as the parsing evaluation keeps them (`treenets.trees.tree_words`:
  word tags only, lower-cased, digit runs -> `N`), on which the sentence-level language model trains: the
  same tokenisation; punctuation, currency symbols (`$`, `US$`, `€`) and `#` dropped, `%` kept, `3.5` -> `N.N`.
- `tokens`: the Penn Treebank tokens as typed (case, numbers and punctuation kept; brackets written `-LRB-`),
  as SST's trees and SICK's `.toks` files write their sentences: what the Tree-LSTMs read.
- `lower`: lower case, split on white space.
- `none`: split on white space, as typed.

A character-level model reads the words of its normaliser spelled out (its task's `split_words`:
`t h e _ c a t`), as Mikolov's character-level files spell the word-level ones. A text is one sentence: the
tokeniser splits a period off its end only. `<unk>` and `<eos>` typed in a text are the tokens of Mikolov's PTB
text (`SPECIAL_TOKENS`), kept whole by every normaliser, so that a line pasted from it reads as the model read
it in training: the unknown-word token, and the sentence boundary.

Nothing of a text is lost without a word (`Normalizer.read`, which `treenets parse --json`, `predict`, `serve`
and the language models' `score` and `parse` use): every character is in a word (`Reading.spans`, however
rewritten: `The` -> `the`, `3.5` -> `N`), in what was dropped (`Reading.dropped`: the tokens the normaliser
drops, such as punctuation, symbols and emoji, and the invisible format characters, Unicode's Cf: zero-width
joiners and spaces, direction marks, the byte-order mark, soft hyphens, which are no part of a word), or white
space between them.

`benchmarks/normalizer_agreement.py` measures both PTB normalisers on the NLTK WSJ sample.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Literal

from nltk.tokenize import NLTKWordTokenizer, TreebankWordTokenizer

from treenets.core.errors import TreenetsError
from treenets.trees.ptb import normalize_word

# Typographic quotes, dashes and the ellipsis as the ASCII the Treebank tokeniser reads (it would leave `don’t`
# whole and glue `“` to the next word).
_TYPOGRAPHIC = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'",
                              "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u2033": '"',
                              "\u2013": "-", "\u2014": " -- ", "\u2015": " -- ", "\u2026": "..."})


# Every currency symbol (Unicode's Sc, `$ £ € ¥ ₹` and 58 more; all of them lie in the first two planes, 0.01 s
# to list), as a regular expression's character class.
CURRENCY_SYMBOLS = "".join(chr(c) for c in range(0x20000) if unicodedata.category(chr(c)) == "Sc")
_CURRENCY_CLASS = "[" + "".join(re.escape(char) for char in CURRENCY_SYMBOLS) + "]"
POUND_SIGNS = frozenset("£￡")  # which the Penn Treebank writes `#` (`# N billion`)
SPECIAL_TOKENS = ("<unk>", "<eos>")  # the tokens of Mikolov's PTB text, kept whole when typed


def _punctuation_rules() -> list:
    """nltk's Treebank punctuation rules, its rule that splits each of `;@#$%&` off replaced by two that leave
    `&` inside a word (`S&P`, `AT&T`) and a currency symbol after letters (`US$`, `C$`) whole, as the treebank
    writes them, and split every other currency symbol off as `$` (`€3.2` -> `€ 3.2`)."""
    rules = list(TreebankWordTokenizer.PUNCTUATION)
    found = [i for i, (regexp, _) in enumerate(rules) if regexp.pattern == r"[;@#$%&]"]
    if not found:
        raise ImportError("treenets.text: this nltk's TreebankWordTokenizer has no rule `[;@#$%&]` to adapt; "
                          "treenets needs nltk>=3.8 as its pyproject.toml says")
    rules[found[0] : found[0] + 1] = [
        (re.compile(rf"[;@#%]|(?<!\w)&|&(?!\w)|(?<![A-Za-z]){_CURRENCY_CLASS}"), r" \g<0> "),
        (re.compile(rf"(?<=[A-Za-z]){_CURRENCY_CLASS}"), r"\g<0> ")]
    return rules


def _plain(pattern):
    """`pattern` compiled by the standard library's `re`. nltk 3.9 and later compile the tokeniser's rules with
    the `regex` module under a time limit per call (against patterns that backtrack without end), which made
    tokenising 1.8x slower; these rules are linear in the text, and `re` reads them the same (the flags both
    modules share have the same values)."""
    if isinstance(pattern, re.Pattern):
        return pattern
    return re.compile(pattern.pattern, pattern.flags & (re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE))


def _plain_rules(rules):
    """A rule `(pattern, replacement)`, or a list of them, with `_plain` patterns."""
    if isinstance(rules, tuple):
        return (_plain(rules[0]), rules[1])
    return [_plain_rules(rule) for rule in rules]


class _TreebankTokenizer(TreebankWordTokenizer):
    """nltk's Treebank tokeniser with `_punctuation_rules`, the opening-quote rules of nltk's newer
    `NLTKWordTokenizer` (a backtick, or a single quote opening a word as in `'soft landing'`, split off), and
    `SPECIAL_TOKENS` split off whole where nltk splits off every bracket (`<`, `>` too)."""

    STARTING_QUOTES = _plain_rules(NLTKWordTokenizer.STARTING_QUOTES)
    PUNCTUATION = _plain_rules(_punctuation_rules())
    PARENS_BRACKETS = (re.compile("|".join(map(re.escape, SPECIAL_TOKENS)) + r"|[\]\[\(\)\{\}<>]"), r" \g<0> ")
    CONVERT_PARENTHESES = _plain_rules(TreebankWordTokenizer.CONVERT_PARENTHESES)
    DOUBLE_DASHES = _plain_rules(TreebankWordTokenizer.DOUBLE_DASHES)
    ENDING_QUOTES = _plain_rules(TreebankWordTokenizer.ENDING_QUOTES)


_TOKENIZER = _TreebankTokenizer()
_ABBREVIATION = re.compile(r"[A-Za-z]+(?:\.[A-Za-z]+)+")  # U.S, N.J, a.m: letters with periods between them
_NUMBER = re.compile(r"[-+]?[.,]?[0-9][0-9.,:\\/-]*")  # 3.5 1,000 1987 1:30 1\/2 1985-86 .5 -3 (and a list's 1.)
_CURRENCY = re.compile(rf"[A-Za-z]*{_CURRENCY_CLASS}")  # $ US$ C$ €
PTB_SYMBOLS = frozenset("$#&'")  # the tokens without a letter or digit that Mikolov's PTB text keeps
TREEBANK_SYMBOLS = frozenset("%&'")  # those the parsing evaluation keeps (tagged NN, CC, POS)


def treebank_tokens(text: str, brackets: bool = False) -> list[str]:
    """The Penn Treebank tokens of a sentence, written as the treebank writes them: `/` escaped as `\\/`, a
    single quotation mark as `` ` `` (opening) or `''` (closing) but the possessive of a plural as `'` (a quote
    after a word ending in s while no quotation is open: `investors '`), and the period of an abbreviation
    that ends the sentence both kept and repeated (`the U.S.` -> `the U.S. .`). With `brackets`, `( ) [ ] { }`
    are written `-LRB- -RRB- -LSB- -RSB- -LCB- -RCB-` as in the treebank's trees (and SST's)."""
    return _treebank_form(_TOKENIZER.tokenize(text.translate(_TYPOGRAPHIC), convert_parentheses=brackets))


def treebank_token_spans(text: str, brackets: bool = False) -> list[tuple[str, int, int]]:
    """`treebank_tokens` with where each is in `text`: `(token, start, end)`, `text[start:end]` the characters it
    was written from (`"` for `''`, `(` for `-LRB-`, `—` for `--`; the period that ends both an abbreviation and
    the sentence is the repeated `.`'s only)."""
    if text.isascii():  # nothing typographic to translate (every such character is beyond ASCII): as typed
        tokens = _TOKENIZER.tokenize(text, convert_parentheses=brackets)
        return [(token, start, end) for token, (start, end) in zip(_treebank_form(tokens), _aligned(tokens, text))]
    translated = [_TYPOGRAPHIC.get(ord(char), char) for char in text]
    origin = [i for i, piece in enumerate(translated) for _ in piece]  # the character of `text` each came from
    translated = "".join(translated)
    tokens = _TOKENIZER.tokenize(translated, convert_parentheses=brackets)
    return [(token, origin[start], origin[end - 1] + 1)
            for token, (start, end) in zip(_treebank_form(tokens), _aligned(tokens, translated))]


# What nltk's tokeniser writes for what: a double quote as `` (opening) or '' (closing), a bracket as -LRB- ...
_WRITTEN_FOR = {"``": ('"', "''"), "''": ('"',), "-LRB-": ("(",), "-RRB-": (")",), "-LSB-": ("[",),
                "-RSB-": ("]",), "-LCB-": ("{",), "-RCB-": ("}",)}


def _aligned(tokens: list[str], text: str) -> list[tuple[int, int]]:
    """Where each of nltk's `tokens` of `text` is in it, in order: `(start, end)`. The tokeniser only inserts
    white space, and rewrites quotes and brackets (`_WRITTEN_FOR`); any other difference is a bug here."""
    spans, point = [], 0
    for token in tokens:
        while point < len(text) and text[point].isspace():
            point += 1
        found = token if text.startswith(token, point) else next(
            (typed for typed in _WRITTEN_FOR.get(token, ()) if text.startswith(typed, point)), None)
        if found is None:
            raise RuntimeError(f"treenets.text: the token {token!r} is not at character {point} of {text!r}")
        spans.append((point, point + len(found)))
        point += len(found)
    return spans


def _treebank_form(tokens: list[str]) -> list[str]:
    """nltk's Treebank tokens as the treebank writes them (`treebank_tokens`), one for one."""
    tokens = [token.replace("/", "\\/") for token in tokens]
    quoted = False  # a single quotation is open
    for i, token in enumerate(tokens):
        if token == "`":
            quoted = True
        elif token == "'" and (quoted or i == 0 or tokens[i - 1][-1:] not in ("s", "S")):
            tokens[i], quoted = ("''", False) if quoted else ("`", True)
    if len(tokens) > 1 and tokens[-1] == "." and _ABBREVIATION.fullmatch(tokens[-2]):
        tokens[-2] += "."  # the tokeniser splits a sentence's last period off `U.S.` too
    return tokens


BRACKETS = frozenset({"-LRB-", "-RRB-", "-LSB-", "-RSB-", "-LCB-", "-RCB-"})  # the treebank's brackets


def _is_symbol(token: str) -> bool:
    """Punctuation or another symbol: a token without a letter or a digit, or a bracket written `-LRB-`."""
    return _ALNUM.search(token) is None or token in BRACKETS


_ALNUM = re.compile(r"[^\W_]")  # a character for which str.isalnum() holds (every code point checked)


def is_number(token: str) -> bool:
    """Whether Mikolov's PTB text writes the token as `N`: a number (`3.5`, `1,000`, `1987`, `1:30`) or `%`."""
    return token == "%" or bool(_NUMBER.fullmatch(token))


def ptb_word(token: str) -> str | None:
    """A Penn Treebank token as Mikolov's PTB text writes it (see the module's docstring); None if dropped."""
    word = token.lower()
    if is_number(word):
        return "N"
    if word in POUND_SIGNS:
        return "#"
    return word if not _is_symbol(token) or word in PTB_SYMBOLS or _CURRENCY.fullmatch(token) else None


def treebank_word(token: str) -> str | None:
    """A Penn Treebank token as the parsing evaluation keeps a treebank tree's words; None if dropped."""
    if (_is_symbol(token) and token not in TREEBANK_SYMBOLS) or _CURRENCY.fullmatch(token):
        return None
    return normalize_word(token)


def whitespace_token_spans(text: str) -> list[tuple[str, int, int]]:
    """`text.split()` with where each token is: `(token, start, end)`."""
    return [(found[0], found.start(), found.end()) for found in re.finditer(r"\S+", text)]


@dataclass(frozen=True)
class Dropped:
    """A piece of a text that a normaliser read no word from."""

    text: str  # as typed
    start: int  # where it starts in the text, in characters
    why: str  # e.g. "punctuation or symbol", "invisible: U+200D ZERO WIDTH JOINER"


@dataclass(frozen=True)
class Reading:
    """A text as a normaliser reads it (`Normalizer.read`): every character is in a word's span, in a piece
    dropped, or white space between them."""

    words: list[str]
    spans: list[tuple[int, int]]  # where each word came from: `text[start:end]` (a period may serve two words)
    dropped: list[Dropped] = field(default_factory=list)  # in the order of the text


def invisible(char: str) -> bool:
    """Whether `char` is a format character (Unicode's Cf: zero-width spaces and joiners, direction marks, the
    byte-order mark, soft hyphens), which is no part of a word: the normalisers drop it (and say so)."""
    return unicodedata.category(char) == "Cf"


@dataclass(frozen=True)
class Normalizer:
    """A named way of turning a sentence into the words of a model's training text: split it into tokens, then
    write each token as that text does (or drop it). Keeping the two steps apart lets a caller align the words
    with the tokens they came from (`aligned`), as a Tree-LSTM does when a language model parses its tokens,
    and say of every character of the text what became of it (`read`)."""

    name: str
    summary: str  # what it does, in a few words
    tokens: Callable[[str], list[str]]  # the text split into tokens
    word: Callable[[str], str | None]  # a token as a word of the training text; None: dropped
    token_spans: Callable[[str], list[tuple[str, int, int]]]  # `tokens` with where each is: (token, start, end)

    def __call__(self, text: str) -> list[str]:
        return [word for word in self.aligned(self.tokens(text)) if word is not None]

    def aligned(self, tokens: list[str]) -> list[str | None]:
        """Each token's word (None where the normaliser drops it): tokens already split, e.g. another model's."""
        return [self.word(token) for token in tokens]

    def read(self, text: str) -> Reading:
        """The words of `text` (those of `self(text)` once its invisible characters are dropped), where each came
        from, and what was dropped: each invisible character (`invisible`), each token without a word. The last
        texts' readings are kept (a file's lines are read to check them, then again to parse them); each call
        gets lists of its own."""
        words, spans, dropped = self._read(text)
        return Reading(list(words), list(spans), list(dropped))

    @functools.lru_cache(maxsize=1 << 14)  # noqa: B019 (the normalisers live as long as the program)
    def _read(self, text: str) -> tuple[tuple, tuple, tuple]:
        """`read`'s words, spans and dropped pieces, as tuples (kept by the cache: nobody can change them)."""
        dropped, kept = [], None  # kept: the offset in `text` of each character that is not invisible (None: all)
        if not text.isascii():  # (no format character is ASCII)
            kept = []
            for offset, char in enumerate(text):
                if invisible(char):
                    dropped.append(Dropped(char, offset, f"invisible: U+{ord(char):04X} "
                                                         f"{unicodedata.name(char, 'format character')}"))
                else:
                    kept.append(offset)
        words, spans = [], []
        for token, start, end in self.token_spans(text if kept is None else "".join(text[offset] for offset in kept)):
            if kept is not None:
                start, end = kept[start], kept[end - 1] + 1
            word = self.word(token)
            if word is None:
                dropped.append(Dropped(text[start:end], start, "punctuation or symbol"))
            else:
                words.append(word)
                spans.append((start, end))
        return tuple(words), tuple(spans), tuple(sorted(dropped, key=lambda piece: piece.start))


def _same(token: str) -> str:
    return token


def ptb_words(text: str) -> list[str]:
    """A sentence as Mikolov's Penn Treebank text has it (see the module's docstring)."""
    return NORMALIZERS["ptb"](text)


def treebank_words(text: str) -> list[str]:
    """A sentence as the parsing evaluation keeps a treebank tree's words (see the module's docstring)."""
    return NORMALIZERS["treebank"](text)


NORMALIZERS = {normalizer.name: normalizer for normalizer in (
    Normalizer("ptb", "Penn Treebank tokens in lower case, numbers as N, punctuation dropped, as in Mikolov's PTB "
                      "text", treebank_tokens, ptb_word, treebank_token_spans),
    Normalizer("treebank", "Penn Treebank tokens in lower case, digits as N, punctuation dropped, as the parsing "
                           "evaluation keeps a treebank's words", treebank_tokens, treebank_word,
               treebank_token_spans),
    Normalizer("tokens", "Penn Treebank tokens as typed (case, numbers and punctuation kept, brackets as -LRB-), "
                         "as SST and SICK write their sentences", partial(treebank_tokens, brackets=True), _same,
               partial(treebank_token_spans, brackets=True)),
    Normalizer("lower", "lower case, split on white space", str.split, str.lower, whitespace_token_spans),
    Normalizer("none", "split on white space, as typed", str.split, _same, whitespace_token_spans),
)}

NormalizerName = Literal[tuple(NORMALIZERS)]  # what a config's `data.normalizer` may be


def checked_text(text, where: str) -> str:
    """`text` without its invisible characters (`invisible`), once `check_text` found it to be text."""
    return "".join(char for char in check_text(text, where) if not invisible(char))


def check_text(text, where: str) -> str:
    """`text`, or an error naming `where` for what is not text: not a string, bytes that were not UTF-8 (read
    from a command line as lone surrogates), control characters other than tabs and line breaks."""
    if not isinstance(text, str):
        raise TreenetsError(f"{where}: expected a string, not {type(text).__name__}")
    found = _NOT_TEXT.search(text)
    if found and "\ud800" <= found.group() <= "\udfff":
        raise TreenetsError(f"{where}: not text (bytes that are not UTF-8, or a lone surrogate); expected a sentence")
    if found:
        raise TreenetsError(f"{where}: not text (the control character U+{ord(found.group()):04X}); expected a "
                            "sentence")
    return text


# What no sentence holds: a surrogate (bytes that were not UTF-8, read from a command line), or a control character
# (Unicode's Cc, U+0000-001F and U+007F-009F) other than a tab or a line break
_NOT_TEXT = re.compile("[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def get_normalizer(name: str) -> Normalizer:
    """The normaliser called `name`; an error naming the known ones otherwise."""
    try:
        return NORMALIZERS[name]
    except KeyError:
        raise TreenetsError(f"normalizer {name!r}: expected one of {', '.join(NORMALIZERS)}") from None
