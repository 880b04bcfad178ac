"""The normalisations under which a word of another system's file stands for the treebank's
(`treenets.trees.wordforms`): each step on the forms the field's preprocessing writes, the first step that makes
two words one, and words that no step makes one."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from treenets.trees.wordforms import NUMBERS, STEPS, keys, match_step


def step(word: str, gold: str) -> str | None:
    found = match_step(word, gold)
    return None if found is None else STEPS[found]


@pytest.mark.parametrize(("word", "gold", "expected"), [
    ("Smith", "Smith", "exact"),
    ("smith", "Smith", "case"),
    ("SMITH", "Smith", "case"),
    ("(", "-LRB-", "symbols"), ("-lrb-", "-LRB-", "case"), (")", "-RRB-", "symbols"),
    ("{", "-LCB-", "symbols"), ("}", "-RCB-", "symbols"), ("[", "-LSB-", "symbols"), ("]", "-RSB-", "symbols"),
    ('"', "``", "symbols"), ('"', "''", "symbols"), ("\u201c", "``", "symbols"), ("``", "''", "symbols"),
    ("AT&T", "AT&amp;T", "symbols"), ("at&amp;t", "AT&T", "symbols"), ("<", "&lt;", "symbols"),
    ("1/2", "1\\/2", "symbols"), ("*", "\\*", "symbols"),
    ("20000", "20,000", "numbers"),  # thousands separators dropped
    ("N", "20,000", "numbers"),  # Mikolov's PTB text: the number as `N`
    ("N,N", "20,000", "numbers"),  # the official preprocessing: digit runs as `N`
    ("n,n", "20,000", "numbers"),
    ("00,000", "20,000", "numbers"), ("0", "1987", "numbers"),  # digits as 0
    ("N.N", "3.5", "numbers"), ("N", "3.5", "numbers"), ("<num>", "3.5", "numbers"), ("[num]", "1,000", "numbers"),
    ("N-style", "1990-style", "numbers"), ("N", "1990-style", "numbers"), ("Ns", "1980s", "numbers"),
    ("mid-ns", "mid-1980s", "numbers"), ("Nth", "50th", "numbers"), ("Nst", "1st", "numbers"),
    ("tNc", "T34C", "numbers"), ("bNNN", "B-52", None), ("b-N", "B-52", "numbers"), ("tnc", "T34C", None),
    ("New", "New", "exact"), ("new", "New", "case"), ("ns", "NS", "case"),
    ("N", "%", "numbers"),  # Mikolov's PTB text: `3.5 %` is `N N`
    ("N\\/N", "1\\/2", "numbers"), ("N/N", "1\\/2", "numbers"),
    ("NN", "20,000", "numbers"), ("NN", "3.5", "numbers"), ("nnn", "1,234,567", "numbers"),  # runs as N, no separators
    ("NN", "1\\/2", "numbers"), ("NN", "1987", None), ("NNN", "3.5", None), ("NN", "NN", "exact"),
    ("<unk>", "troublesome", "unknown"), ("<UNK>", "Smith", "unknown"), ("UNK", "20,000", "unknown"),
    ("[unk]", "-LRB-", "unknown"),
    # No step makes these one
    ("cat", "dog", None), ("cats", "cat", None), ("N", "Smith", None), ("<num>", "dollars", None),
    ("20,001", "20,000", "numbers"),  # (a number is any number: a system that wrote numbers as N cannot tell)
    ("(", "-LCB-", None), ("{", "-LRB-", None), ("'", "``", None),
    ("and", "&", None), ("N", "n't", None), ("20", "twenty", None),
])
def test_each_step_on_the_forms_of_the_field(word, gold, expected):
    assert step(word, gold) == expected


def test_the_first_step_that_makes_two_words_one_is_theirs():
    assert step("-LRB-", "-LRB-") == "exact"  # not `symbols`, though it holds there too
    assert step("n", "n") == "exact" and step("N", "n") == "case"  # a letter, not a number
    assert step("<unk>", "<unk>") == "exact"  # the treebank's own `<unk>` (Mikolov's text)


_letters = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMOPQRSTUVWXYZ.'-", min_size=1, max_size=8)
_numbers = st.builds(lambda head, groups: head + "".join(f",{g:03d}" for g in groups),
                     st.integers(1, 999).map(str), st.lists(st.integers(0, 999), min_size=0, max_size=3))


@given(_letters)
def test_a_word_in_another_case_is_the_same_word_and_one_letter_changed_is_not(word):
    assert step(word, word) == "exact"
    assert step(word.lower(), word) == ("exact" if word.lower() == word else "case")
    changed = word[:-1] + ("q" if word[-1].lower() != "q" else "z")
    assert step(changed, word) is None


@given(_numbers, st.sampled_from(["", "-year", "s"]))
def test_a_number_however_the_preprocessing_wrote_it(number, suffix):
    gold = number + suffix
    for written in (number.replace(",", ""),  # separators dropped
                    re.sub(r"[0-9]+", "N", number),  # digit runs as N
                    re.sub(r"[0-9]+", "N", number.replace(",", "")),  # both: Mikolov's N
                    re.sub(r"[0-9]", "0", number)):  # every digit as 0
        expected = "exact" if written + suffix == gold else "numbers"
        assert step(written + suffix, gold) == expected
    assert step("<num>", gold) == "numbers" and step("<unk>", gold) == "unknown"
    assert step(number + "x" + suffix, gold) is None  # a letter more: another word
    assert step(suffix or "word", gold) is None


@given(st.text(alphabet="aNn0123456789,.-&;ampltLRB()sth'%", min_size=1, max_size=10))
def test_words_one_at_a_step_are_one_at_every_later_step(word):
    # (what lets a line without placeholders be looked up by its words' `numbers` forms alone)
    for other in (word.lower(), word.upper(), word.replace("&amp;", "&")):
        a, b = keys(word)[: NUMBERS + 1], keys(other)[: NUMBERS + 1]
        for step in range(len(a)):
            if a[step] == b[step]:
                assert a[step:] == b[step:]
