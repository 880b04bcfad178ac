"""ListOps data: values and trees by hand, the official files' form, errors naming file and line, and the generator
(its settings, a fixed seed, the sizes it records)."""

from __future__ import annotations

import hashlib
import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from treenets.cli import main
from treenets.core.errors import TreenetsError
from treenets.data.listops import (
    DIGITS,
    END,
    MAX_ARGS,
    MAX_DEPTH,
    OPERATORS,
    bracketed_text,
    generate,
    gold_tree,
    read_listops_file,
    read_listops_splits,
    read_sequence,
)


@pytest.mark.parametrize("sequence,value,depth", [
    ("7", 7, 0),
    ("[MIN 3 [MAX 1 9 ] 2 ]", 2, 2),
    ("[MAX 3 [MIN 1 9 ] 2 ]", 3, 2),
    ("[MED 1 2 3 4 ]", 2, 1),  # (2 + 3) // 2, as int(np.median)
    ("[MED 9 8 ]", 8, 1),
    ("[MED 4 0 9 ]", 4, 1),
    ("[SM 5 7 9 ]", 1, 1),  # 21 mod 10
    ("[SM [SM 9 9 ] [MED 2 [MIN 6 5 ] ] 0 ]", 1, 3),  # 8 + (2 + 5) // 2 = 11
])
def test_values_and_depths_by_hand(sequence, value, depth):
    tokens, got, nesting = read_sequence(sequence.split(), "here")
    assert (got, nesting) == (value, depth) and tokens == tuple(sequence.split())


def test_the_tree_of_the_lists_is_the_official_files_bracketing():
    tokens = ["[MIN", "3", "[MAX", "1", "9", "]", "2", "]"]
    assert gold_tree(tokens) == [[[["[MIN", "3"], [[["[MAX", "1"], "9"], "]"]], "2"], "]"]
    official = "( ( ( ( [MIN 3 ) ( ( ( [MAX 1 ) 9 ) ] ) ) 2 ) ] )"  # as nyu-mll/spinn's test_d20s.tsv writes it
    assert bracketed_text(tokens) == official
    assert read_sequence(official.split(), "here") == (tuple(tokens), 2, 2)  # the brackets are not read
    assert gold_tree(["4"]) == "4" and bracketed_text(["4"]) == "4"


BRACKETS = "its brackets ( ) must be the tree of its lists"


@pytest.mark.parametrize("sequence,message", [
    ("[MIN 3 [MAX 1 9 ] 2", "ends at token 7; expected a digit, an operator or ']' closing the list opened at token 1"),
    ("[MIN 3 ] ]", "']' at token 4; expected the end of the sequence (it is whole after token 3)"),
    ("[MIN ]", "']' at token 2; expected an argument of the list opened at token 1: a digit or an operator"),
    ("[MIN 3 ] 4", "'4' at token 4; expected the end of the sequence (it is whole after token 3)"),
    ("[MIN 10 ]", "unknown token '10' at token 2; expected an argument of the list opened at token 1"),
    ("[FIRST 1 ]", "unknown token '[FIRST' at token 1; expected a digit or an operator ([MIN, [MAX, [MED, [SM)"),
    ("]", "']' at token 1; expected a digit or an operator"),
    ("( [MIN 3 ) ]", f"'[MIN' at token 2; expected '(': {BRACKETS}"),
    ("( ( [MIN 3 ) ] ) )", f"')' at token 8; expected the end of the sequence: {BRACKETS}"),
    ("( ( [MIN 3 ) ]", f"ends at token 6; expected ')': {BRACKETS}"),
    ("( 7 )", f"'(' at token 1; expected '7': {BRACKETS}"),
    # positions count the brackets, as the sequence is written: the second 4 is token 11, the 5th word
    ("( ( ( [MIN 3 ) 4 ) ] ) 4", "'4' at token 11; expected the end of the sequence (it is whole after token 9)"),
    ("( )", "ends at token 2; expected a digit or an operator"),
])
def test_a_sequence_outside_the_grammar_is_refused_naming_it_the_position_and_what_was_expected(sequence, message):
    with pytest.raises(TreenetsError) as error:
        read_sequence(sequence.split(), "here")
    assert str(error.value).startswith(f"here: sequence {sequence!r}: {message}")
    with pytest.raises(TreenetsError, match="^empty sequence; expected a digit or an operator"):
        read_sequence([])


def in_grammar(tokens: list[str]) -> bool:
    """Whether `tokens` are a sequence of the grammar (the module docstring), by recursive descent: the reference
    `read_sequence` is checked against, on short inputs."""
    def sequence(i: int) -> int | None:  # the end of the sequence starting at i, or None
        if i < len(tokens) and tokens[i] in DIGITS:
            return i + 1
        if i >= len(tokens) or tokens[i] not in OPERATORS:
            return None
        end = sequence(i + 1)  # at least one argument
        while end is not None and end < len(tokens) and tokens[end] != END:
            end = sequence(end)
        return end + 1 if end is not None and end < len(tokens) else None

    return sequence(0) == len(tokens)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["[MIN", "[SM", "3", "7", "]"]), max_size=12))
def test_a_sequence_is_read_exactly_when_it_is_in_the_grammar(tokens):
    try:
        read_sequence(tokens)
    except TreenetsError:
        assert not in_grammar(tokens)
    else:
        assert in_grammar(tokens)


def test_a_file_is_read_with_its_errors_naming_the_line(tmp_path):
    path = tmp_path / "test.tsv"
    path.write_text("2\t( ( ( ( [MIN 3 ) ( ( ( [MAX 1 ) 9 ) ] ) ) 2 ) ] )\n\n7\t7\n1\t[SM 5 7 9 ]\n")
    examples = read_listops_file(path)
    assert [(e.label, e.depth, len(e.tokens)) for e in examples] == [(2, 2, 8), (7, 0, 1), (1, 1, 5)]
    for line, message in (("3\t[SM 5 7 9 ]", "label 3, but the sequence's value is 1"),
                          ("x\t7", "label 'x'; expected a digit 0..9"),
                          ("7", "1 tab-separated fields; expected label, sequence")):
        path.write_text(f"7\t7\n{line}\n")
        with pytest.raises(TreenetsError, match=f"^{re.escape(f'{path}:2: {message}')}"):
            read_listops_file(path)
    with pytest.raises(TreenetsError, match="missing .*`treenets data listops` writes them"):
        read_listops_file(tmp_path / "absent.tsv")


@pytest.mark.parametrize("max_length,split,message", [
    (None, "valid", "train.tsv: no sequence left for the valid split (every 10th training sequence is held out"),
    (2, "train", "train.tsv: no sequence left for the train split (every 10th training sequence is held out for "
                 "validation, those of more than 2 tokens left out of training)"),
])
def test_an_empty_split_is_named(tmp_path, max_length, split, message):
    # An empty split would have no accuracy (0 / 0): nine training sequences, none held out for validation at
    # every 10th; each of 5 tokens, none kept under a limit of 2.
    (tmp_path / "train.tsv").write_text("1\t[SM 5 7 9 ]\n" * 9)
    (tmp_path / "test.tsv").write_text("7\t7\n")
    with pytest.raises(TreenetsError, match=re.escape(f"{tmp_path / message}")):
        read_listops_splits(tmp_path, valid_every=10, max_train_length=max_length, splits=("train", "valid", "test"))
    assert len(read_listops_splits(tmp_path, 10, None, ("train", "test"))["train"]) == 9


def _lists(tokens: list[str]) -> list[tuple[int, int]]:
    """(depth, arguments) of every list of a sequence, counted here without the module's reader."""
    found, open_lists = [], []  # each open list: [its depth, its arguments so far]
    for token in tokens:
        if open_lists and token != "]":  # an argument of the innermost list starts: a digit or a list
            open_lists[-1][1] += 1
        if token in OPERATORS:
            open_lists.append([len(open_lists) + 1, 0])
        elif token == "]":
            found.append(tuple(open_lists.pop()))
    return found


def test_the_generator_draws_with_the_official_settings_from_a_fixed_seed(tmp_path):
    record = generate(tmp_path / "a", train=400, test=100, seed=3)
    again = generate(tmp_path / "b", train=400, test=100, seed=3)
    other = generate(tmp_path / "c", train=400, test=100, seed=4)
    for split in ("train", "test"):
        data = (tmp_path / "a" / f"{split}.tsv").read_bytes()
        assert record["splits"][split]["sha256"] == hashlib.sha256(data).hexdigest()
        assert data == (tmp_path / "b" / f"{split}.tsv").read_bytes()  # the same seed, the same files
        assert data != (tmp_path / "c" / f"{split}.tsv").read_bytes()
    assert record == again != other
    assert json.loads((tmp_path / "a" / "meta.json").read_text()) == record
    train, test = (read_listops_file(tmp_path / "a" / f"{split}.tsv") for split in ("train", "test"))
    assert (len(train), len(test)) == (400, 100) == (record["splits"]["train"]["sequences"],
                                                     record["splits"]["test"]["sequences"])
    sequences = [e.tokens for e in train + test]
    assert len(set(sequences)) == 500  # distinct, none in both splits
    lengths = [len(e.tokens) for e in train]
    assert (record["splits"]["train"]["min_tokens"], record["splits"]["train"]["max_tokens"]) == (min(lengths),
                                                                                                   max(lengths))
    lists = [found for tokens in sequences for found in _lists(list(tokens))]
    assert all(1 <= depth < MAX_DEPTH and 2 <= arguments <= MAX_ARGS for depth, arguments in lists)
    assert {arguments for _, arguments in lists} == set(range(2, MAX_ARGS + 1))
    assert {tokens[0] for tokens in sequences} >= set(OPERATORS)
    assert (record["max_depth"], record["max_args"], record["list_probability"]) == (20, 5, 0.25)


def test_data_listops_writes_a_folder_a_listops_task_reads(tmp_path, capsys):
    out = tmp_path / "listops"
    assert main(["data", "listops", "--out", str(out), "--train", "60", "--test", "20", "--seed", "1"]) == 0
    assert capsys.readouterr().out.startswith(f"{out}: 60 train sequences (")
    splits = read_listops_splits(out, 10, None, ("train", "valid", "test"))
    assert (len(splits["train"]), len(splits["valid"]), len(splits["test"])) == (54, 6, 20)
    short = read_listops_splits(out, 10, 5, ("train", "valid"))
    assert all(len(e.tokens) <= 5 for e in short["train"]) and len(short["valid"]) == 6  # validation keeps all
    assert main(["data", "listops", "--out", str(out), "--train", "60", "--test", "20"]) == 2
    assert "holds train.tsv, test.tsv, meta.json already (--overwrite replaces them)" in capsys.readouterr().err
    assert main(["data", "listops", "--out", str(out), "--train", "60", "--test", "20", "--overwrite"]) == 0
