"""Bowman's propositional-logic pairs: formulas as trees, operator counts, the ON-LSTM split, clear errors."""

from __future__ import annotations

import pytest
import torch

from treenets.data.logic import LABELS, LogicBatch, logic_vocab, parse_formula, read_logic_file, read_logic_splits
from treenets.errors import TreenetsError


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
    ("( a ( and g ) )", "unknown token 'g' at token 5"),
    ("( a b c )", "has 3 parts; expected two"),
    ("( not a", "1 bracket(s) not closed"),
    ("( not a ) )", "')' at token 5 closes no bracket"),
    ("a b", "2 formulas side by side"),
    ("", "empty formula"),
])
def test_bad_formulas_are_named(text, message):
    with pytest.raises(TreenetsError, match="where: ") as info:
        parse_formula(text, "where")
    assert message in str(info.value)


def test_file_errors_name_the_file_and_line(tmp_path):
    path = tmp_path / "train1"
    path.write_text("<\ta\t( not a )\nX\ta\tb\n")
    with pytest.raises(TreenetsError, match=r"train1:2: unknown relation 'X'; expected one of < > = \^ \| # v"):
        read_logic_file(path)
    path.write_text("<\ta ( not a )\n")
    with pytest.raises(TreenetsError, match="train1:1: 2 tab-separated fields"):
        read_logic_file(path)
    path.write_text("=\t( a ( or b ) )\t( a ( xor b ) )\n")
    with pytest.raises(TreenetsError, match=r"train1:1 \(hypothesis\): unknown token 'xor'"):
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
