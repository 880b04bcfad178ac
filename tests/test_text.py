"""Text normalisers: raw sentences into the words of Mikolov's PTB text and of treebank trees, by hand-computed
cases checked against the conventions of `ptb_lm/ptb.train.txt`, and measured on the NLTK WSJ sample."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treenets.core.errors import TreenetsError
from treenets.text import (
    CURRENCY_SYMBOLS,
    NORMALIZERS,
    get_normalizer,
    invisible,
    ptb_word,
    ptb_words,
    treebank_tokens,
    treebank_words,
)

# The examples' forms as ptb.train.txt writes them (counts in the file): `u.s.` (1,701 lines), `rose N N` for
# `rose 3.5 %`, `do n't` and `ca n't` (186), `'s` split off (8,579), `$ N`, `us$ N` (61), `# N` (110),
# `s&p`, `at&t`, `investors '` (19), `mgm\/ua` (20), `30-year`, `1980s`, `p.m.`; no punctuation at all.
PTB_CASES = [
    ("The U.S. economy grew 3.5% in 2019, analysts said.",
     ["the", "u.s.", "economy", "grew", "N", "N", "in", "N", "analysts", "said"]),
    ("I don't think the company's shares rose.",
     ["i", "do", "n't", "think", "the", "company", "'s", "shares", "rose"]),
    ("It can't be 1987; they're sure, we'll see, I'm told.",
     ["it", "ca", "n't", "be", "N", "they", "'re", "sure", "we", "'ll", "see", "i", "'m", "told"]),
    ("IBM and General Motors", ["ibm", "and", "general", "motors"]),
    ("1,000 shares at $5.25, 1/2 point, 1:30 p.m., a 30-year bond in the 1980s",
     ["N", "shares", "at", "$", "N", "N", "point", "N", "p.m.", "a", "30-year", "bond", "in", "the", "1980s"]),
    ('"Yes," he said -- (really) ... ; ok?!', ["yes", "he", "said", "really", "ok"]),
    ("S&P and AT&T paid US$5 to investors' funds, #3.",
     ["s&p", "and", "at&t", "paid", "us$", "N", "to", "investors", "'", "funds", "#", "N"]),
    ("the 'soft landing' scenario", ["the", "soft", "landing", "scenario"]),
    ("the `soft landing' scenario", ["the", "soft", "landing", "scenario"]),  # the WSJ's own quotes
    ("Dell’s “new” plan—cheaper…", ["dell", "'s", "new", "plan", "cheaper"]),  # typographic quotes and dashes
    ("He moved to the U.S.", ["he", "moved", "to", "the", "u.s."]),  # the abbreviation keeps its period
    ("MGM/UA rose.", ["mgm\\/ua", "rose"]),
]


@pytest.mark.parametrize(("text", "words"), PTB_CASES)
def test_ptb_reads_text_as_mikolovs_ptb_text_has_it(text, words):
    assert ptb_words(text) == words
    assert NORMALIZERS["ptb"](text) == words


def test_treebank_reads_text_as_the_parsing_evaluation_keeps_a_trees_words():
    # `tree_words`: word tags only (`$`, `#`, punctuation dropped; `%` is NN), lower case, digit runs -> N
    assert treebank_words("The U.S. economy grew 3.5% in 2019, analysts said.") == [
        "the", "u.s.", "economy", "grew", "N.N", "%", "in", "N", "analysts", "said"]
    assert treebank_words("It paid US$5 and $1,000 for a 30-year bond, #3.") == [
        "it", "paid", "N", "and", "N,N", "for", "a", "N-year", "bond", "N"]


def test_the_treebank_tokens_keep_what_the_treebank_keeps_whole_and_tell_quotes_from_possessives():
    assert treebank_tokens("AT&T's S&P deal, US$5 or C$6 & more.") == [
        "AT&T", "'s", "S&P", "deal", ",", "US$", "5", "or", "C$", "6", "&", "more", "."]
    # a quotation mark opens or closes a quotation; after a word ending in s, outside one, it is a possessive
    assert treebank_tokens("the 'bonds' yields and the bonds' yields") == [
        "the", "`", "bonds", "''", "yields", "and", "the", "bonds", "'", "yields"]
    assert treebank_tokens("He left the U.S.") == ["He", "left", "the", "U.S.", "."]
    assert treebank_tokens("He left at 5.") == ["He", "left", "at", "5", "."]  # a number is no abbreviation


def test_every_currency_symbol_is_split_off_a_number_as_the_dollar_is():
    # Before: `€3.2` stayed one (unknown) token while `$5.50` became `$ N`.
    text = "€3.2 and $5.50, £4 or ¥5 and US$5"
    assert treebank_tokens(text) == ["€", "3.2", "and", "$", "5.50", ",", "£", "4", "or", "¥", "5", "and", "US$", "5"]
    # PTB: kept as words (the pound sign written `#`, as the treebank writes it); the parsing words: dropped
    assert ptb_words(text) == ["€", "N", "and", "$", "N", "#", "N", "or", "¥", "N", "and", "us$", "N"]
    assert treebank_words(text) == ["N.N", "and", "N.N", "N", "or", "N", "and", "N"]
    assert len(CURRENCY_SYMBOLS) == 63 and all(symbol in CURRENCY_SYMBOLS for symbol in "$€£¥₹₩₽")


def test_unk_and_eos_typed_are_the_special_tokens_of_the_ptb_text():
    # Before: `<unk>` read as the word `unk` (the brackets split off and dropped as punctuation).
    for name in ("ptb", "treebank", "tokens", "lower", "none"):
        assert NORMALIZERS[name]("the <unk> company <eos> it") == ["the", "<unk>", "company", "<eos>", "it"], name
    assert ptb_words("a<unk>b and <b> or <UNK>") == ["a", "<unk>", "b", "and", "b", "or", "unk"]  # whole tokens only


def test_what_a_normaliser_drops_is_said_with_where_and_why():
    # Before: an emoji vanished from both the tokens and the unknown words, and a zero-width joiner inside a
    # word changed it (`a‍b` -> `ab`) without a word.
    reading = NORMALIZERS["ptb"].read("a‍b 😀 ok!")
    assert reading.words == ["ab", "ok"] and reading.spans == [(0, 3), (6, 8)]
    assert [(piece.text, piece.start, piece.why) for piece in reading.dropped] == [
        ("‍", 1, "invisible: U+200D ZERO WIDTH JOINER"), ("😀", 4, "punctuation or symbol"),
        ("!", 8, "punctuation or symbol")]
    tokens = NORMALIZERS["tokens"].read("‏It’s “good” (😀)")  # SST's tokens keep an emoji, as a token
    assert tokens.words == ["It", "'s", "``", "good", "''", "-LRB-", "😀", "-RRB-"]
    assert tokens.spans == [(1, 3), (3, 5), (6, 7), (7, 11), (11, 12), (13, 14), (14, 15), (15, 16)]
    assert [piece.text for piece in tokens.dropped] == ["‏"]


@pytest.mark.parametrize("text", ["", "   ", "?!", "-- ... --", "(“”)"])
def test_text_without_words_normalises_to_nothing(text):
    assert ptb_words(text) == [] and treebank_words(text) == []


def test_the_whitespace_normalisers_and_the_registry():
    assert NORMALIZERS["lower"]("The Cat sat.") == ["the", "cat", "sat."]
    assert NORMALIZERS["none"]("The Cat  sat.") == ["The", "Cat", "sat."]
    assert list(NORMALIZERS) == ["ptb", "treebank", "tokens", "lower", "none"]
    assert get_normalizer("ptb").word is ptb_word
    with pytest.raises(TreenetsError, match="normalizer 'nope': expected one of ptb, treebank, tokens, lower, none"):
        get_normalizer("nope")


def test_a_5000_word_line_is_normalised_quickly():
    text = " ".join(["The", "company's", "3.5%", "stake,", "analysts", "said."] * 834)
    start = time.perf_counter()
    words = ptb_words(text)
    assert time.perf_counter() - start < 2.0
    # one sentence: only its last period is split off
    assert words[:8] == ["the", "company", "'s", "N", "N", "stake", "analysts", "said."]
    assert len(words) == 834 * 8 and words[-1] == "said"


@pytest.mark.slow
def test_the_ptb_normaliser_agrees_with_the_training_text_on_the_wsj_sample(data_root, monkeypatch):
    # The README's figure: benchmarks/normalizer_agreement.py over the 3,914 sentences of WSJ 00-01.
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from normalizer_agreement import measure

    result = measure(data_root)
    assert result.sentences == 3914 and result.matched >= 3900
    assert result.ptb_exact / result.matched >= 0.98
    assert result.treebank_exact / result.sentences >= 0.98


# What trips a tokeniser: quotes of every kind, brackets, dashes, currency, the special tokens, periods,
# contractions, format characters, emoji and combining marks, among any other character.
PIECES = ['"', "'", "''", "``", "`", "(", ")", "[", "}", "<", ">", "<unk>", "<eos>", "--", "—", "…", "...", ".",
          "U.S.", "don't", "cannot", "'s", "$", "€", "£", "US$", "3.5", "1/2", "%", "&", "“", "”", "‘", "’",
          "\u200d", "\u200f", "\ufeff", "\u00ad", "😀", "e\u0301", " ", "\t", "\u00a0", "a", "The"]


@settings(max_examples=600, deadline=None)
@given(text=st.lists(st.one_of(st.sampled_from(PIECES), st.text(max_size=3)), max_size=12).map("".join))
def test_every_character_of_a_text_is_in_a_word_in_what_was_dropped_or_white_space(text):
    for normalizer in NORMALIZERS.values():
        reading = normalizer.read(text)
        accounted = set()
        for start, end in reading.spans:
            assert 0 <= start < end <= len(text)
            accounted.update(range(start, end))
        for piece in reading.dropped:
            assert text[piece.start : piece.start + len(piece.text)] == piece.text and piece.text
            accounted.update(range(piece.start, piece.start + len(piece.text)))
        assert {i for i, char in enumerate(text) if not char.isspace()} <= accounted, normalizer.name
        # the same words as the normaliser reads without accounting, once the invisible characters are gone
        visible = "".join(char for char in text if not invisible(char))
        assert reading.words == normalizer(visible) and len(reading.spans) == len(reading.words), normalizer.name
        assert [token for token, _, _ in normalizer.token_spans(visible)] == normalizer.tokens(visible)


def test_a_reading_kept_for_the_next_read_of_the_same_text_is_not_shared():
    """The normalisers keep their last readings (a file's lines are read to check them, then to parse them): each
    call gets lists of its own, so a caller that changes its words changes nobody else's."""
    from treenets.text import NORMALIZERS

    first = NORMALIZERS["ptb"].read("The cat, 3 years old, sat.")
    first.words.append("changed")
    first.dropped.clear()
    again = NORMALIZERS["ptb"].read("The cat, 3 years old, sat.")
    assert again.words == ["the", "cat", "N", "years", "old", "sat"] and len(again.dropped) == 3
    assert again.words is not first.words


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 0x10FFFF).map(chr), min_size=1, max_size=6).map("".join))
def test_symbols_and_what_is_not_text_are_told_by_their_characters(token):
    """`_is_symbol` (a regular expression) is the per-character definition: no character for which `str.isalnum`
    holds, or a bracket written `-LRB-`; `check_text` refuses exactly the texts holding a surrogate or a control
    character (Unicode's Cc) other than a tab or a line break."""
    import unicodedata

    from treenets.core.errors import TreenetsError
    from treenets.text import BRACKETS, _is_symbol, check_text

    assert _is_symbol(token) == (not any(char.isalnum() for char in token) or token in BRACKETS)
    bad = any("\ud800" <= char <= "\udfff" or (unicodedata.category(char) == "Cc" and char not in "\t\n\r")
              for char in token)
    if bad:
        with pytest.raises(TreenetsError, match="not text"):
            check_text(token, "here")
    else:
        assert check_text(token, "here") == token
    assert _is_symbol("-LRB-") and _is_symbol("--") and _is_symbol("_") and not _is_symbol("a.") and not _is_symbol("²")
    for refused in ("a\x07", "\x9f", "\udc80b"):
        with pytest.raises(TreenetsError, match="not text"):
            check_text(refused, "here")
    assert check_text("a\tb\r\n\x7e\xa0", "here") == "a\tb\r\n\x7e\xa0"
