"""The formats other systems write their trees in (`treenets.trees.formats`): bracketed trees, DIORA's JSON lines
and span lists, each detected and read, and every way a line can be malformed named with its line."""

from __future__ import annotations

import json

import pytest

from treenets.core.errors import TreenetsError
from treenets.trees.formats import read_lines, span_ends, tree_from_spans


def read(lines: list, fmt: str = "auto"):
    text = "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n"
    return read_lines(text, "sys.txt", fmt)


def test_bracketed_trees_are_detected_and_read_with_labels_or_without():
    fmt, lines = read(["(X (X the) (X cat))", "", "((a b) c)"])
    assert fmt == "bracketed" and [line.number for line in lines] == [1, 3]
    assert lines[0].words(True) == ["the", "cat"] and lines[0].build(True, [], "f") == ["the", "cat"]
    assert lines[1].words(False) == ["a", "b", "c"] and lines[1].build(False, [], "f") == [["a", "b"], "c"]


def test_diora_json_lines_are_detected_and_read():
    fmt, lines = read([{"example_id": "ptb-3", "tree": [["the", "cat"], ["sat", ["on", ["the", "mat"]]]]},
                       {"example_id": 7, "tree": "(S (NP the cat) (VP sat))"},
                       [["a", "b"], "c"],  # a bare nested list
                       {"tree": [["x"], ["y", "z"]]}])  # a list of one word is that word
    assert fmt == "jsonl"
    assert lines[0].name == "ptb-3" and lines[0].words(True) == ["the", "cat", "sat", "on", "the", "mat"]
    assert lines[0].build(True, [], "f") == [["the", "cat"], ["sat", ["on", ["the", "mat"]]]]
    assert lines[1].name == "7" and lines[1].build(True, [], "f") == [["the", "cat"], "sat"]  # a bracketed string
    assert lines[2].build(True, [], "f") == [["a", "b"], "c"] and lines[2].name == ""
    assert lines[3].build(True, [], "f") == ["x", ["y", "z"]]
    assert lines[0].where("sys.txt") == "sys.txt:1 (example ptb-3)"


def test_span_lists_are_detected_with_their_words_or_without():
    fmt, lines = read([[[0, 3], [1, 3]], [[0, 2]]])
    assert fmt == "spans" and lines[0].spans == [(0, 3), (1, 3)] and lines[0].words(True) is None
    assert lines[0].build(True, ["a", "b", "c"], "f") == ["a", ["b", "c"]]
    fmt, lines = read([{"words": ["a", "b", "c"], "spans": [[0, 3], [0, 2]]},
                       {"sentence": "x y", "spans": []}, {"tokens": ["z"], "spans": [[0, 1]], "example_id": "z1"}])
    assert fmt == "spans" and lines[0].words(True) == ["a", "b", "c"]
    assert lines[0].build(True, lines[0].given, "f") == [["a", "b"], "c"]
    assert lines[1].build(True, lines[1].given, "f") == ["x", "y"] and lines[2].build(True, ["z"], "f") == "z"
    # An empty list says nothing: the next line does
    assert read([[], [[0, 2]]])[0] == "spans"
    with pytest.raises(TreenetsError, match="sys.txt:1: empty list in the tree"):  # JSON lines of trees
        read([[], ["a", ["b"]]])


def test_a_tree_from_its_spans():
    words = ["a", "b", "c", "d", "e"]
    assert tree_from_spans(words, [(0, 5), (1, 3), (1, 5), (3, 5)], "l") == ["a", [["b", "c"], ["d", "e"]]]
    # the root added, one-word spans and repeated spans add nothing, a flat node where spans leave words
    assert tree_from_spans(words, [(1, 4), (2, 3), (1, 4)], "l") == ["a", ["b", "c", "d"], "e"]
    assert tree_from_spans(words, [], "l") == words
    with pytest.raises(TreenetsError, match=r"^l: spans \[0, 3\] and \[2, 5\] cross \(no tree has both\)"):
        tree_from_spans(words, [(0, 3), (2, 5)], "l")
    with pytest.raises(TreenetsError, match=r"^l: span \[2, 6\] lies outside the sentence of 5 words"):
        tree_from_spans(words, [(2, 6)], "l")
    with pytest.raises(TreenetsError, match=r"span \[3, 3\] lies outside"):
        tree_from_spans(words, [(3, 3)], "l")


def test_where_span_lists_end():
    def lines(*spans):
        return read([list(map(list, s)) for s in spans])[1]

    def inclusive(*spans, lengths):
        return span_ends(lines(*spans), lengths, "f")[0]

    assert not inclusive([(0, 3), (1, 3)], lengths=[3])  # ends after the last word: a slice
    assert inclusive([(0, 2), (1, 1)], lengths=[3])  # a span of one word, [1, 1]
    assert inclusive([(0, 2), (0, 1)], [(0, 3)], lengths=[3, 4])  # the whole sentence as [0, n - 1]
    assert span_ends(lines([(0, 4), (1, 3)], [(0, 2)]), [4, 2], "f") == (
        False, "line 1's span [0, 4] ends after the last of its 4 words")
    with pytest.raises(TreenetsError, match=r"^f:2: a span ends after the last word .* at f:1 a span ends at its "
                                            r"own last word"):
        span_ends(lines([(1, 1)], [(0, 4)]), [3, 4], "f")


def test_span_lists_whose_ends_no_span_says():
    def lines(*spans):
        return read([list(map(list, s)) for s in spans], "spans")[1]

    # Before: read as slices, whatever the trees; both readings fit these, and give other trees: refused
    with pytest.raises(TreenetsError, match=r"^f: its spans do not say where a span ends .* the two readings give "
                                            r"other trees \(at line 1: \[\[0, 2\]\]\); expected each line to give its "
                                            r"whole sentence, \[0, n\] \(end exclusive, as a slice\) or \[0, n - 1\]"):
        span_ends(lines([(0, 2)], [(1, 3)]), [3, 5], "f")
    # Read inclusive, [0, 2] and [2, 4] cross (both hold word 2); as slices they are two phrases side by side
    assert span_ends(lines([(0, 2), (2, 4)]), [5], "f") == (
        False, "no span says, and read with inclusive ends spans cross or lie outside their sentence")
    # Flat trees (no span but one word's and the whole sentence's) are the same trees either way
    assert span_ends(lines([], []), [3, 1], "f") == (False, "no span says, and both readings give the same trees")


@pytest.mark.parametrize(("lines", "fmt", "message"), [
    (["the cat sat"], "auto", r"sys.txt:1: expected a file of trees: a bracketed tree a line"),
    (["(X a) (X b)"], "auto", r"sys.txt:1: expected one bracketed tree a line"),
    (["{not json"], "auto", r"sys.txt:1: not JSON \(.*\); expected JSON lines of trees"),
    ([{"example_id": 1}], "jsonl", r"sys.txt:1: no 'tree' in the object \(keys: example_id\)"),
    ([{"tree": ["a", []]}], "auto", r"sys.txt:1: empty list in the tree"),
    ([{"tree": ["a", 3]}], "jsonl", r"sys.txt:1: expected a tree of words .* found 3"),
    ([{"example_id": "e9", "tree": ["a", "b c"]}], "jsonl", r"sys.txt:1 \(example e9\): expected a tree of words"),
    ([[[0, 2]]], "jsonl", r"sys.txt:1: a span list where a tree was expected .*--format spans"),
    ([["a", "b"]], "spans", r"sys.txt:1: expected a span list, \[\[start, end\], ...\] of whole numbers"),
    ([{"words": "a b", "spans": [[0, 2.5]]}], "spans", r"expected a span list"),
    ([{"words": ["a", 2], "spans": []}], "spans", r"sys.txt:1: expected the words as a list of strings"),
    (["(X a)", "[[0, 1]]"], "bracketed", r"sys.txt:2: expected one bracketed tree a line"),
    ([[[0, 1]], ["a"]], "auto", r"sys.txt:2: expected a span list"),
])
def test_malformed_lines_are_named(lines, fmt, message):
    with pytest.raises(TreenetsError, match=message):
        read(lines, fmt)


def test_a_file_without_a_tree():
    with pytest.raises(TreenetsError, match=r"sys.txt: no tree in it"):
        read_lines("\n \n", "sys.txt")
