"""Another parser's trees read from a file (`treenets.trees.predicted`): every format of the field, matched with
the gold sentences by their words in any order, the sentences a file lacks counted, and a line that matches no
sentence refused with its line, the sentence expected and the first word that differs."""

from __future__ import annotations

import io
import json
import random
from collections import Counter

import pytest

from treenets.core.errors import TreenetsError
from treenets.trees.draw import bracketed, preterminal_bracketed
from treenets.trees.formats import tree_of, words_of
from treenets.trees.predicted import Matching, read_predicted
from treenets.trees.ptb import WORD_RULES, load_gold

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
    assert "gold.trees:2 'Mr. Smith paid 1,000 dollars' (5 words; the line has 3 words where the treebank has 5)" \
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
    ("the cat sat", ":1: expected a file of trees: a bracketed tree a line"),
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


PLACEHOLDERS = """\
(TOP (S (NP (PRP He)) (VP (VBD left))))
(TOP (S (NP (PRP She)) (VP (VBD stayed))))
(TOP (S (NP (NNS Prices)) (VP (VBD rose) (NP (CD 5) (NN %)))))
(TOP (S (NP (NNS Sales)) (VP (VBD rose) (NP (CD 7) (NN %)))))
(TOP (S (NP (PRP It)) (VP (VBD ended))))
"""


@pytest.fixture
def short(tmp_path):
    path = tmp_path / "short.trees"
    path.write_text(PLACEHOLDERS)
    return load_gold(path)


def test_lines_that_fit_several_sentences_are_placed_by_the_files_order(tmp_path, short):
    unk2, rose = "(X <unk> <unk>)", "(X <unk> (X rose (X N N)))"
    # Every sentence, in order: each line is its sentence's
    predicted = read_predicted(write(tmp_path, [unk2, unk2, rose, rose, unk2]), short)
    assert predicted.trees == [["<unk>", "<unk>"]] * 2 + [["<unk>", ["rose", ["N", "N"]]]] * 2 + [["<unk>", "<unk>"]]
    assert predicted.matching.sentences == {"unknown": 5}
    assert predicted.matching.words == {"unknown": 8, "numbers": 4}
    # A sentence missing: the line between `he left` and `sales ...` is `she stayed`, the one after it (`rose`, which
    # fits `prices` and `sales`) takes the sentence left of the two
    predicted = read_predicted(write(tmp_path, ["(X he left)", unk2, rose, "(X sales (X rose (X 7 %)))"]), short)
    assert [t is not None for t in predicted.trees] == [True, True, True, True, False] and predicted.missing == [4]
    assert predicted.trees[1] == ["<unk>", "<unk>"] and predicted.trees[2][0] == "<unk>"
    assert predicted.matching.sentences == {"case": 2, "unknown": 2} and not predicted.matching.unplaced
    # Out of order: nothing says which of three sentences the line is; it is not placed, and said
    predicted = read_predicted(write(tmp_path, ["(X sales (X rose (X 7 %)))", unk2, "(X prices (X rose (X 5 %)))"]),
                               short)
    assert predicted.missing == [0, 1, 4] and predicted.lines == 2
    assert predicted.matching.unplaced == {2: [f"{tmp_path / 'short.trees'}:{n}" for n in (1, 2, 5)]}
    assert "lines" not in predicted.matching.summary()  # (said by parse-eval, beside the counts)
    # Numbers written as N make two sentences one: the file's order settles it, or nothing does
    assert read_predicted(write(tmp_path, [rose.replace("<unk>", "Prices"), "(X sales rose 7 %)"]), short).lines == 2
    assert read_predicted(write(tmp_path, ["(X sales rose N N)"]), short).trees[3] is not None  # one fits: sales
    with pytest.raises(TreenetsError, match=r"system.txt: none of its 1 lines could be placed: each fits several "
                                            r"sentences and the file's order does not say which \(line 1 fits 3: "):
        read_predicted(write(tmp_path, [unk2]), short)
    # No sentence left of its length: an error, as for any line of other words
    with pytest.raises(TreenetsError, match=r":4: no sentence of the treebank without a tree yet has its words: "
                                            r"'<unk> <unk>'"):
        read_predicted(write(tmp_path, [unk2, "(X he left)", "(X it ended)", unk2]), short)


def test_a_file_in_the_treebanks_order_is_read_in_it_where_words_differ(tmp_path, short):
    lines = ["(X he left)", "(X she (X has gone))", "(X prices (X rose (X 5 %)))", "(X sales rose 7 %)", "(X it ended)"]
    with pytest.raises(TreenetsError, match=r":2: no sentence .* 'she has gone' \(3 words\)"):
        read_predicted(write(tmp_path, lines), short)  # three words where the treebank has two: not by order
    lines[1] = "(X she went)"
    predicted = read_predicted(write(tmp_path, lines), short)
    assert predicted.trees[1] == ["she", "went"] and predicted.missing == []
    assert predicted.matching.sentences == {"case": 4, "order": 1} and predicted.matching.words["order"] == 1
    assert predicted.matching.summary().startswith("4 sentences after lower-casing, 1 by the file's order")
    assert Matching("bracketed", Counter(case=1, numbers=2)).summary() == \
        "1 sentence after lower-casing, 2 after normalising numbers"
    # Out of order, or a line missing: refused, naming the line
    for changed in (lines[:-1], [lines[1], lines[0], *lines[2:]]):
        with pytest.raises(TreenetsError, match=r"no sentence of the treebank without a tree yet has its words: "
                                                r"'she went'"):
            read_predicted(write(tmp_path, changed), short)


def test_a_file_that_keeps_punctuation_is_refused_with_the_choices_that_read_it(tmp_path, sentences):
    line = "(X (X (X The) (X cat)) (X (X sat) (X (X on) (X (X the) (X mat)))) (X .))"
    with pytest.raises(TreenetsError) as info:
        read_predicted(write(tmp_path, ["(X (X go) (X home))", line]), sentences, "words: ptb")
    assert str(info.value) == (
        f"{tmp_path / 'system.txt'}:2: the line keeps 1 word(s) that the treebank's word rule drops ('.': punctuation "
        f"or symbols) and is otherwise {tmp_path / 'gold.trees'}:1 (6 words); --words li-punct reads the treebank "
        "with its punctuation (Li et al. 2020's setting); or --drop-punctuation drops them from the file's trees, as "
        "DIORA's evalb.py and EVALB's COLLINS.prm do; words: ptb")
    predicted = read_predicted(write(tmp_path, [line, "(X (X A) (X dog) (X ran) (X ,) (X (X it) (X barked)))"]),
                               sentences, drop_punctuation=True)
    # A node left with one child is that child: the trees of the words alone
    assert predicted.trees[0] == [["The", "cat"], ["sat", ["on", ["the", "mat"]]]]
    assert predicted.trees[5] == ["A", "dog", "ran", ["it", "barked"]]
    assert predicted.matching.sentences == {"punctuation": 2} and predicted.matching.words == {"punctuation": 2}
    # With the treebank's punctuation (li-punct), a file without it is told which rule reads it
    path = tmp_path / "gold.trees"
    with_punctuation = load_gold(path, rule=WORD_RULES["li-punct"])
    assert read_predicted(write(tmp_path, [line]), with_punctuation).matching.sentences == {"exact": 1}
    with pytest.raises(TreenetsError, match=r"the line lacks the treebank's punctuation, which the word rule keeps: "
                                            r"--words li or ptb reads the treebank without it"):
        read_predicted(write(tmp_path, ["(X (X (X The) (X cat)) (X (X sat) (X (X on) (X (X the) (X mat)))))"]),
                       with_punctuation)


def test_a_line_that_keeps_some_punctuation_and_symbols_and_drops_others(tmp_path):
    # Mikolov's PTB text keeps `$` and drops commas: before, no sentence fitted (`word 4 is '$'`), with
    # --drop-punctuation too (its match took every punctuation token or none)
    path = tmp_path / "gold.trees"
    path.write_text("(TOP (S (NP (DT The) (NN fee)) (, ,) (ADVP (RB too)) (, ,) (VP (VBD was) (NP ($ $) (CD 5))) "
                    "(. .)))\n(TOP (S (NP (PRP It)) (VP (VBD was) (ADJP (JJ low))) (. .)))\n")
    sentences = load_gold(path)
    line = "(X (X (X the) (X fee)) (X too) (X (X was) (X (X $) (X N))))"
    with pytest.raises(TreenetsError) as info:
        read_predicted(write(tmp_path, [line]), sentences)
    assert str(info.value) == (
        f"{tmp_path / 'system.txt'}:1: the line keeps 1 word(s) that the treebank's word rule drops ('$': punctuation "
        f"or symbols) and is otherwise {path}:1 (5 words); --words li reads the treebank with its symbol $ (Li et al. "
        "2020's setting without punctuation); or --drop-punctuation drops them from the file's trees, as DIORA's "
        "evalb.py and EVALB's COLLINS.prm do")
    predicted = read_predicted(write(tmp_path, ["(X it (X was low) (X .))", line]), sentences, drop_punctuation=True)
    assert predicted.trees == [[["the", "fee"], "too", ["was", "N"]], ["it", ["was", "low"]]]
    assert predicted.matching.sentences == {"punctuation": 2} and predicted.matching.words == {
        "case": 2, "numbers": 1, "punctuation": 2}
    # With the treebank's `$` (Li et al.'s rule), the line is the sentence's words
    assert read_predicted(write(tmp_path, [line]), load_gold(path, rule=WORD_RULES["li"])).trees[0] == \
        [["the", "fee"], "too", ["was", ["$", "N"]]]


def test_standard_input_is_a_file(tmp_path, sentences, monkeypatch):
    lines = '{"example_id": "a", "tree": ["go", "home"]}\n{"example_id": "b", "tree": "(X yes)"}\n'
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(lines.encode())))
    predicted = read_predicted("-", sentences)
    assert predicted.path == "<stdin>" and predicted.trees[2] == ["go", "home"] and predicted.trees[3] == "yes"
    assert predicted.matching.format == "jsonl"
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(b"(X go \xff)\n")))
    with pytest.raises(TreenetsError, match=r"<stdin>:1: not UTF-8 text"):
        read_predicted("-", sentences)


def test_span_lists_are_matched_by_their_words_or_read_in_the_treebanks_order(tmp_path, sentences):
    path = tmp_path / "spans.jsonl"
    path.write_text('{"words": ["go", "home"], "spans": [[0, 1], [1, 1]]}\n'  # inclusive ends
                    '{"words": ["a", "dog", "ran", "it", "barked"], "spans": [[0, 4], [3, 4], [0, 2]]}\n')
    predicted = read_predicted(str(path), sentences)
    assert predicted.trees[2] == ["go", "home"] and predicted.trees[5] == [["a", "dog", "ran"], ["it", "barked"]]
    assert predicted.matching.format == "spans" and predicted.matching.sentences == {"case": 2}
    lengths = [len(s.words) for s in sentences]
    path.write_text("".join(json.dumps([[0, n], [n - 2, n]] if n > 1 else []) + "\n" for n in lengths))
    predicted = read_predicted(str(path), sentences)
    assert predicted.trees[0] == ["the", "cat", "sat", "on", ["the", "mat"]] and predicted.trees[3] == "yes"
    assert predicted.matching.sentences == {"treebank": 6}
    path.write_text("[[0, 9]]\n" + "[]\n" * 5)
    with pytest.raises(TreenetsError, match=r"spans.jsonl:1: span \[0, 9\] lies outside the sentence of 6 words"):
        read_predicted(str(path), sentences)
    path.write_text('[[0, 2]]\n{"words": ["go", "home"], "spans": []}\n')
    with pytest.raises(TreenetsError, match=r"spans.jsonl:2: the line gives its words where line 1 does not"):
        read_predicted(str(path), sentences)
    path.write_text("[[0, 2]]\n")
    with pytest.raises(TreenetsError, match=r"spans.jsonl: 1 span lists without words, where the treebank has 6 "
                                            r"sentences; span lists without words are read as the treebank's "
                                            r"sentences in order"):
        read_predicted(str(path), sentences)


def test_span_lists_without_words_are_read_as_their_spans_say_and_it_is_said(tmp_path, sentences):
    path = tmp_path / "spans.jsonl"
    lengths = [len(s.words) for s in sentences]  # 6, 5, 2, 1, 6, 5
    # Every line's whole sentence [0, n]: ends exclusive, as slices
    path.write_text("".join(json.dumps([[0, n], [1, n]] if n > 1 else [[0, 1]]) + "\n" for n in lengths))
    predicted = read_predicted(str(path), sentences)
    assert predicted.trees[2] == ["go", "home"] and predicted.trees[1] == ["mr.", ["smith", "paid", "N,N", "dollars"]]
    assert predicted.matching.summary().startswith(
        "span ends read exclusive, as slices ([0, n] the whole sentence): line 1's span [0, 6] ends after the last "
        "of its 6 words; 6 sentences in the treebank's order")
    # Every line's whole sentence [0, n - 1]: inclusive
    path.write_text("".join(json.dumps([[0, n - 1], [1, n - 1]] if n > 2 else [[0, n - 1]] if n > 1 else []) + "\n"
                            for n in lengths))
    predicted = read_predicted(str(path), sentences)
    assert predicted.trees[1] == ["mr.", ["smith", "paid", "N,N", "dollars"]]
    assert predicted.matching.summary().startswith("span ends read inclusive ([0, n - 1] the whole sentence): every "
                                                   "line gives its whole sentence as [0, n - 1]; 6 sentences")
    # No span says, and the readings give other trees: refused (before: read as slices)
    path.write_text("".join(json.dumps([[0, 2]] if n > 2 else []) + "\n" for n in lengths))
    with pytest.raises(TreenetsError, match=r"spans.jsonl: its spans do not say where a span ends .* the two readings "
                                            r"give other trees \(at line 1: \[\[0, 2\]\]\)"):
        read_predicted(str(path), sentences)


def test_a_line_is_the_sentence_it_fits_at_the_strictest_step(tmp_path):
    # `It rose 7 %` fits its own sentence exactly and the other at the `numbers` step (a number is any number): it is
    # its own, in any order, and so is `It rose 5 %`
    path = tmp_path / "gold.trees"
    path.write_text("(TOP (S (NP (PRP It)) (VP (VBD rose) (NP (CD 5) (NN %)))))\n"
                    "(TOP (S (NP (PRP It)) (VP (VBD rose) (NP (CD 7) (NN %)))))\n")
    sentences = load_gold(path)
    lines = ["(X It (X rose (X 7 %)))", "(X (X It rose) (X 5 %))"]
    predicted = read_predicted(write(tmp_path, lines), sentences)
    assert predicted.trees == [[["It", "rose"], ["5", "%"]], ["It", ["rose", ["7", "%"]]]]
    assert predicted.matching.sentences == {"exact": 2}
    # Written as N, the line fits both alike: placed by the file's order, in the treebank's
    predicted = read_predicted(write(tmp_path, [line.replace("7", "N").replace("5", "N") for line in lines]),
                               sentences)
    assert predicted.trees == [["It", ["rose", ["N", "%"]]], [["It", "rose"], ["N", "%"]]]
