"""Another parser's trees read from a file (`treenets.trees.predicted`): every format of the field, matched with
the gold sentences by their words in any order, the sentences a file lacks counted, and a line that matches no
sentence refused with its line, the sentence expected and the first word that differs."""

from __future__ import annotations

import random

import pytest

from treenets.errors import TreenetsError
from treenets.trees.draw import bracketed, preterminal_bracketed
from treenets.trees.predicted import read_predicted, tree_of, words_of
from treenets.trees.ptb import load_gold

TREEBANK = """\
(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)))
(TOP (S (NP (NNP Mr.) (NNP Smith)) (VP (VBD paid) (NP (CD 1,000) (NNS dollars))) (. .)))
(TOP (S (VP (VB Go) (ADVP (RB home))) (. !)))
(TOP (INTJ (UH Yes) (. .)))
(TOP (S (NP (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)))
(TOP (S (NP (DT A) (NN dog)) (VP (VBD ran)) (, ,) (S (NP (PRP it)) (VP (VBD barked)))))
"""


@pytest.fixture
def sentences(tmp_path):
    path = tmp_path / "gold.trees"
    path.write_text(TREEBANK)
    return load_gold(path)


def write(tmp_path, lines: list[str]):
    path = tmp_path / "system.txt"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize(("line", "words", "tree"), [
    ("(X (X a) (X b))", ["a", "b"], ["a", "b"]),  # ED4UCP, treenets' export
    ("(NT-1 (T-1 a) (T-2 b) (T-1 c))", ["a", "b", "c"], ["a", "b", "c"]),  # compound-pcfg
    ("(S (NP the cat) sat)", ["the", "cat", "sat"], [["the", "cat"], "sat"]),  # treenets' bracketed
    ("(TOP (S (NP (DT the) (NN cat)) (VP (VBD sat))))", ["the", "cat", "sat"], [["the", "cat"], ["sat"]]),
    ("( (S (VP (VB go) (ADVP (RB home)))))", ["go", "home"], [["go", ["home"]]]),  # wrapper dropped, S -> VP kept
    ("(X (X (X (X i) (X say)) (X 1992)))", ["i", "say", "1992"], [[["i", "say"], "1992"]]),  # a unary root stays
])
def test_formats_read_with_labels(line, words, tree):
    tokens = line.replace("(", " ( ").replace(")", " ) ").split()
    assert words_of(tokens, True) == words and tree_of(tokens, True) == tree


def test_trees_without_labels_are_read_as_words():
    tokens = ["(", "(", "a", "b", ")", "c", ")"]
    assert words_of(tokens, True) == ["b", "c"]  # with labels: `a` would be a label
    assert words_of(tokens, False) == ["a", "b", "c"] and tree_of(tokens, False) == [["a", "b"], "c"]


def test_every_format_is_matched_with_its_sentence_in_any_order(tmp_path, sentences):
    lines = [
        "(X (X the) (X cat) (X (X sat) (X (X on) (X (X the) (X mat)))))",  # lower case
        "(NT-1 (T-1 go) (T-1 home))",
        "(X Yes)",  # one word
        "(S (NP The cat) (VP sat (PP on (NP the mat))))",  # the same sentence again: the next one of its words
        "(X (X a) (X <unk>) (X ran) (X (X it) (X barked)))",  # a placeholder for a word
    ]
    order = list(range(len(lines)))
    random.Random(0).shuffle(order)
    predicted = read_predicted(write(tmp_path, [lines[k] for k in order]), sentences)
    assert predicted.missing == [1] and predicted.lines == 5
    # The sentence the treebank has twice: a tree for each (which one where, by the lines' order)
    assert sorted(map(str, (predicted.trees[0], predicted.trees[4]))) == sorted(map(str, (
        ["the", "cat", ["sat", ["on", ["the", "mat"]]]], [["The", "cat"], ["sat", ["on", ["the", "mat"]]]])))
    assert predicted.trees[2] == ["go", "home"] and predicted.trees[3] == "Yes"
    assert predicted.trees[5] == ["a", "<unk>", "ran", ["it", "barked"]]
    # In the treebank's order, the first of two lines of the same words is the first sentence's
    in_order = read_predicted(write(tmp_path, lines), sentences)
    assert in_order.trees[0] == ["the", "cat", ["sat", ["on", ["the", "mat"]]]]
    assert in_order.trees[4] == [["The", "cat"], ["sat", ["on", ["the", "mat"]]]]
    # Without labels, the treebank's case and numbers
    bare = read_predicted(write(tmp_path, ["((Mr. Smith) (paid (1,000 dollars)))", "(go home)"]), sentences)
    assert bare.trees[1] == [["Mr.", "Smith"], ["paid", ["1,000", "dollars"]]] and bare.trees[2] == ["go", "home"]
    assert sentences[1].words == ["mr.", "smith", "paid", "N,N", "dollars"]  # what the numbers were compared with


def test_a_file_is_read_one_way(tmp_path):
    # Before: each line was read with labels first, and `((x was) (y money))` so read is `was money`, another
    # sentence of the treebank: it took that sentence's place, and the next line found none left.
    path = tmp_path / "gold.trees"
    path.write_text("(TOP (S (NP (NN x)) (VP (VBD was) (NP (NN y) (NN money)))))\n(TOP (S (VBD was) (NN money)))\n")
    sentences = load_gold(path)
    predicted = read_predicted(write(tmp_path, ["((x was) (y money))", "(was money)"]), sentences)
    assert predicted.trees == [[["x", "was"], ["y", "money"]], ["was", "money"]]


def test_what_treenets_writes_reads_back(tmp_path, sentences):
    trees = [s.gold for s in sentences]
    for write_tree in (bracketed, preterminal_bracketed):
        predicted = read_predicted(write(tmp_path, [write_tree(t) for t in trees]), sentences)
        assert predicted.trees == trees


def test_the_sentences_a_file_lacks_are_counted(tmp_path, sentences):
    predicted = read_predicted(write(tmp_path, ["(X (X go) (X home))", "", "(X (X Yes))"]), sentences)
    assert predicted.missing == [0, 1, 4, 5] and predicted.trees[2] == ["go", "home"] and predicted.lines == 2


def test_a_line_of_other_words_names_its_line_and_the_sentence_expected(tmp_path, sentences):
    path = write(tmp_path, ["(X (X the) (X cat) (X sat) (X on) (X the) (X mat))", "(X (X mr.) (X smith) (X paid))"])
    with pytest.raises(TreenetsError) as info:
        read_predicted(path, sentences)
    message = str(info.value)
    assert message.startswith(f"{path}:2: no sentence of the treebank without a tree yet has its words: "
                              "'mr. smith paid' (3 words); expected (after the tree of line 1, the closest sentence "
                              "without a tree): ")
    assert "gold.trees:2 'mr. smith paid N,N dollars' (5 words; the line has 3 words where the treebank has 5)" \
        in message
    with pytest.raises(TreenetsError, match=r":1: .*word 2 is 'dog' where the treebank has 'cat'"):
        read_predicted(write(tmp_path, ["(X (X the) (X dog) (X sat) (X on) (X the) (X mat))"]), sentences)
    # Punctuation the word rule drops, kept by the parser: the line names it
    with pytest.raises(TreenetsError, match=r"word 3 is ',' where the treebank has 'ran'.*words: ptb"):
        read_predicted(write(tmp_path, ["(X (X a) (X dog) (X ,) (X ran))"]), sentences, "words: ptb")


def test_a_sentence_given_more_often_than_the_treebank_has_it(tmp_path, sentences):
    line = "(X (X go) (X home))"
    with pytest.raises(TreenetsError, match=r":2: no sentence of the treebank without a tree yet has its words"):
        read_predicted(write(tmp_path, [line, line]), sentences)


@pytest.mark.parametrize(("line", "message"), [
    ("(X (X a) (X b)", r":1: 1 bracket\(s\) never closed"),
    ("(X a) (X b)", r":1: expected one bracketed tree a line, found '\(X a\) \(X b\)'"),
    ("(X ())", r":1: empty brackets '\(\)'"),
    (") (X a)", r":1: unexpected '\)'"),
    ("the cat sat", ":1: expected one bracketed tree a line"),
])
def test_malformed_lines(tmp_path, sentences, line, message):
    with pytest.raises(TreenetsError, match=message):
        read_predicted(write(tmp_path, [line]), sentences)


def test_lines_longer_than_the_sentences_scored_are_skipped(tmp_path):
    path = tmp_path / "gold.trees"
    path.write_text(TREEBANK)
    short = load_gold(path, max_length=3)
    assert [s.words for s in short] == [["go", "home"], ["yes"]]
    lines = ["(X (X the) (X cat) (X sat) (X on) (X the) (X mat))", "(X (X go) (X home))", "(X yes)"]
    predicted = read_predicted(write(tmp_path, lines), short, max_length=3)
    assert predicted.longer == 1 and predicted.missing == []
    with pytest.raises(TreenetsError, match=":1: no sentence"):
        read_predicted(write(tmp_path, lines), short)
