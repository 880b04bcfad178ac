"""Bowman's propositional-logic pairs: formulas as trees, operator counts, the ON-LSTM split, clear errors."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from treenets.core.errors import TreenetsError
from treenets.data.logic import (
    LABELS,
    VARIABLES,
    LogicBatch,
    logic_vocab,
    parse_formula,
    read_logic_file,
    read_logic_splits,
)
from treenets.trees.parents import nested_words


def test_a_formula_is_a_binary_tree_over_variables_and_operators():
    formula = parse_formula("( d ( and e ) )", "x")
    assert formula.tokens == ("(", "d", "(", "and", "e", ")", ")")
    assert formula.tree.words == ("d", "and", "e")
    # leaves 0..2, then the brackets in the order they close: ( and e ) is node 3, the whole formula node 4
    assert formula.tree.parents == (4, 3, 3, 4, -1)
    assert formula.operators == 1
    assert parse_formula("( not ( ( f ( or e ) ) ( and c ) ) )", "x").operators == 3


def test_a_lone_variable_is_a_one_node_tree():
    formula = parse_formula("a", "x")
    assert formula.tree.parents == (-1,) and formula.operators == 0


@pytest.mark.parametrize("text, message", [
    # the formulas the probe of issue 57 had answered: each reads as a bracket of two parts
    ("and", "'and' at token 1; expected a formula: a variable (a, b, c, d, e, f) or '('"),
    ("( and a )", "'and' at token 2; expected 'not' or a formula (a variable or '('), as in "
                  "( not X ) or ( X ( and Y ) )"),
    ("( a b )", "'b' at token 3; expected '(' opening the operator's part, as in ( X ( and Y ) )"),
    ("( a ( not b ) )", "'not' at token 4; expected 'and' or 'or', as in ( X ( and Y ) ) "
                        "('not' takes one formula: ( not X ))"),
    ("( ( a ) )", "')' at token 4; expected '(' opening the operator's part"),
    ("( not a b )", "'b' at token 4; expected ')' closing the bracket opened at token 1"),
    ("( a ( and b c ) )", "'c' at token 6; expected ')' closing the bracket opened at token 3"),
    ("( a ( and g ) )", "unknown token 'g' at token 5; expected a formula: a variable"),
    ("( a b c )", "'b' at token 3; expected '(' opening the operator's part"),
    ("( not a", "ends at token 3; expected ')' closing the bracket opened at token 1"),
    ("( not a ) )", "')' at token 5; expected the end of the formula (it is whole after token 4)"),
    ("a b", "'b' at token 2; expected the end of the formula (it is whole after token 1)"),
    ("", "empty formula; expected a formula: a variable (a, b, c, d, e, f) or '('"),
])
def test_a_formula_outside_the_grammar_is_refused_naming_it_the_position_and_what_was_expected(text, message):
    with pytest.raises(TreenetsError) as info:
        parse_formula(text, "where")
    assert str(info.value).startswith(f"where: formula {text!r}: {message}" if text else f"where: {message}")


def test_a_long_formula_is_shown_around_the_position():
    text = "( not " * 40 + "a" + " )" * 40 + " b"
    with pytest.raises(TreenetsError) as info:
        parse_formula(text)
    assert str(info.value) == ("formula '... ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) ) b': 'b' at token 122; "
                               "expected the end of the formula (it is whole after token 121)")


def in_grammar(tokens: list[str]) -> bool:
    """Whether `tokens` are a formula of the grammar (the module docstring), by recursive descent: the reference
    `parse_formula` is checked against, on short inputs."""
    def formula(i: int) -> int | None:  # the end of the formula starting at i, or None
        if i < len(tokens) and tokens[i] in VARIABLES:
            return i + 1
        if i + 1 >= len(tokens) or tokens[i] != "(":
            return None
        if tokens[i + 1] == "not":
            end = formula(i + 2)
            return end + 1 if end is not None and end < len(tokens) and tokens[end] == ")" else None
        end = formula(i + 1)
        if end is None or tokens[end : end + 1] != ["("] or tokens[end + 1 : end + 2] not in (["and"], ["or"]):
            return None
        end = formula(end + 2)
        return end + 2 if end is not None and tokens[end : end + 2] == [")", ")"] else None

    return formula(0) == len(tokens)


@st.composite
def formulas(draw, depth: int = 4) -> str:
    """A formula of the grammar, drawn."""
    kind = draw(st.sampled_from(["variable", "not", "and", "or"] if depth else ["variable"]))
    if kind == "variable":
        return draw(st.sampled_from(VARIABLES))
    if kind == "not":
        return f"( not {draw(formulas(depth - 1))} )"
    return f"( {draw(formulas(depth - 1))} ( {kind} {draw(formulas(depth - 1))} ) )"


@settings(max_examples=200, deadline=None)
@given(formulas())
def test_every_formula_of_the_grammar_is_read_into_its_tree(text):
    formula = parse_formula(text)
    assert formula.tokens == tuple(text.split())
    assert to_bracketed(formula) == text


TOKENS = ["(", ")", "a", "b", "and", "or", "not"]


@st.composite
def near_formulas(draw) -> list[str]:
    """The tokens of a formula of the grammar after up to three edits (a token replaced, deleted or inserted): mostly
    formulas of another shape, some still in the grammar."""
    tokens = draw(formulas(3)).split()
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(tokens)))
        edit = draw(st.sampled_from(["replace", "delete", "insert"]))
        token = draw(st.sampled_from(TOKENS))
        if edit == "insert" or at == len(tokens):
            tokens.insert(at, token)
        elif edit == "replace":
            tokens[at] = token
        else:
            del tokens[at]
    return tokens


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.lists(st.sampled_from(TOKENS), max_size=14), near_formulas()))
def test_a_formula_is_read_exactly_when_it_is_in_the_grammar(tokens):
    try:
        parse_formula(" ".join(tokens))
    except TreenetsError:
        assert not in_grammar(tokens)
    else:
        assert in_grammar(tokens)


def to_bracketed(formula) -> str:
    """The formula written back from its tree: each phrase in brackets."""
    nested = nested_words(formula.tree)

    def text(node) -> str:
        return node if isinstance(node, str) else f"( {text(node[0])} {text(node[1])} )"

    return text(nested)


def test_file_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "train1"
    path.write_text("<\ta\t( not a )\nX\ta\tb\n")
    with pytest.raises(TreenetsError, match=r"train1:2: unknown relation 'X'; expected one of < > = \^ \| # v"):
        read_logic_file(path)
    path.write_text("<\ta ( not a )\n")
    with pytest.raises(TreenetsError, match="train1:1: 2 tab-separated fields"):
        read_logic_file(path)
    path.write_text("=\t( a ( or b ) )\t( a ( xor b ) )\n")
    with pytest.raises(TreenetsError, match=r"train1:1 \(hypothesis\): formula '\( a \( xor b \) \)': unknown "
                                           "token 'xor' at token 4; expected 'and' or 'or'"):
        read_logic_file(path)
    with pytest.raises(TreenetsError, match="missing"):
        read_logic_file(tmp_path / "train9")


def test_a_batch_holds_both_forms_premises_first(tmp_path):
    vocab = logic_vocab()
    (tmp_path / "test1").write_text("<\ta\t( not b )\n#\t( c ( or d ) )\te\n")
    pairs = read_logic_file(tmp_path / "test1")
    batch = LogicBatch.build(pairs, vocab)
    assert batch.labels.tolist() == [LABELS.index("<"), LABELS.index("#")]
    assert batch.operators.tolist() == [1, 1]
    assert batch.lengths.tolist() == [1, 7, 4, 1]
    assert batch.tokens.shape == (7, 4)
    assert [vocab.words[i] for i in batch.tokens[:, 1].tolist()] == ["(", "c", "(", "or", "d", ")", ")"]
    assert vocab.words[batch.tokens[1, 0]] == "<pad>"
    assert [t.words for t in batch.trees] == [("a",), ("c", "or", "d"), ("not", "b"), ("e",)]
    assert torch.equal(batch.leaf_ids[2], torch.tensor([vocab.index["not"], vocab.index["b"]]))


def test_the_real_files_give_the_on_lstm_split_and_their_operator_counts(data_root):
    folder = data_root / "logic"
    splits = read_logic_splits(folder, max_train_operators=6, valid_every=10, splits=("train", "valid", "test"))
    assert (len(splits["train"]), len(splits["valid"]), len(splits["test"])) == (121_977, 13_552, 37_367)
    # File N holds the pairs whose larger formula has N operators (file 12: 12 or more): our count agrees.
    for n in (1, 7, 11, 12):
        counts = {pair.operators for pair in read_logic_file(folder / f"test{n}")}
        assert counts == {n} if n < 12 else min(counts) >= 12


def test_the_real_files_beyond_the_split_are_in_the_grammar_too(data_root):
    """Every line of the staged files reads (the test above reads train0..train6 and test0..test12)."""
    for n in range(7, 13):
        path = data_root / "logic" / f"train{n}"
        lines = sum(1 for line in path.read_text().splitlines() if line.strip())
        assert len(read_logic_file(path)) == lines > 0


@pytest.mark.parametrize("test_lines,split,message", [
    (3, "valid", "train0..train6 hold 7 pair\\(s\\), none left for the valid split .* expected at least 10"),
    (0, "test", "test0..test12 hold no pairs"),
])
def test_an_empty_split_is_named(tmp_path, test_lines, split, message):
    # Before: training ran, then ended in ZeroDivisionError from the accuracy of an empty validation split.
    for kind, count in (("train", 1), ("test", test_lines)):
        for n in range(13):
            (tmp_path / f"{kind}{n}").write_text("=\ta\ta\n" * count)
    with pytest.raises(TreenetsError, match=message):
        read_logic_splits(tmp_path, max_train_operators=6, valid_every=10, splits=("train", split))
