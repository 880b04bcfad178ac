"""Dependency trees: the tree check, CoNLL reading and writing, attachment scores with punctuation excluded, and
the baseline trees."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from nltk.parse import DependencyGraph

from treenets.core.errors import TreenetsError
from treenets.trees.dependencies import (
    AttachmentScores,
    DependencySentence,
    check_tree,
    conll_text,
    left_chain,
    parse_conll,
    random_projective_tree,
    read_conll,
    right_chain,
    tree_problem,
    word_rule_for,
    write_conll,
)
from treenets.trees.ptb import PTB, WORD_RULES


def is_projective(heads: list[int]) -> bool:
    """Whether every word between a word and its head descends from that head (for heads that make a tree)."""
    def descends(word: int, ancestor: int) -> bool:
        while word != 0 and word != ancestor:
            word = heads[word - 1]
        return word == ancestor

    return all(descends(between, head) for word, head in enumerate(heads, start=1)
               for between in range(min(word, head) + 1, max(word, head)))


def reaches_root(heads: list[int]) -> bool:
    """Whether every word's chain of heads ends at 0 within as many steps as there are words."""
    for word in range(1, len(heads) + 1):
        for _ in range(len(heads)):
            if word == 0:
                break
            word = heads[word - 1]
        if word != 0:
            return False
    return True


# --- the tree check


@pytest.mark.parametrize("heads,single_root,expected", [
    ([2, 0, 2], True, None),
    ([0, 1, 0], False, None),
    ([0], True, None),
    ([2, 0, 4], True, (2, "word 3 has head 4; expected 0 (the root) or a word 1..3")),
    ([2, 0, -1], True, (2, "word 3 has head -1")),
    ([2, 1], True, (None, "no word has head 0")),
    ([], True, (None, "no word has head 0")),
    ([0, 1, 0], True, (2, "2 words have head 0 (1, 3); expected one root")),
    ([0, 3, 4, 2], True, (1, "words 2 -> 3 -> 4 -> 2 form a cycle")),
    ([0, 2], False, (1, "words 2 -> 2 form a cycle")),
])
def test_tree_problem(heads, single_root, expected):
    problem = tree_problem(heads, single_root)
    if expected is None:
        assert problem is None
    else:
        assert problem[0] == expected[0] and problem[1].startswith(expected[1])


def test_check_tree_names_where():
    check_tree([2, 0])
    with pytest.raises(TreenetsError, match=r"^model output, sentence 3: words 1 -> 2 -> 1 form a cycle"):
        check_tree([2, 1, 0], "model output, sentence 3")


def test_tree_check_of_a_long_chain():
    n = 100_000
    assert tree_problem(right_chain(n)) is None
    assert tree_problem([*range(2, n + 1), 1])[1].startswith("no word")
    cycle = [0, *range(3, n + 1), 2]  # words 2..n in one long cycle
    assert tree_problem(cycle)[0] == 1


# --- gold heads over the words scored, and attachment scores

def sentence(tokens: str, heads: list[int], source=None) -> DependencySentence:
    """A sentence from `word/TAG` tokens."""
    words, tags = zip(*(token.rsplit("/", 1) for token in tokens.split()))
    return DependencySentence(list(words), list(tags), heads, source)


# "doctor" hangs from a comma whose head is the other comma, whose head is "left": followed up to "left".
APPOSITION = sentence("John/NNP ,/, a/DT doctor/NN ,/, left/VBD ./.", [6, 6, 4, 5, 2, 0, 6])
# the only word hangs from the final "!", the root: followed up to the root.
EXCLAMATION = sentence("Hello/UH !/.", [2, 0])
SIMPLE = sentence("the/DT dog/NN barks/VBZ", [2, 3, 0])


def test_kept_words_and_their_heads():
    assert APPOSITION.kept() == [0, 2, 3, 5]
    assert APPOSITION.kept_heads() == [4, 3, 4, 0]
    assert EXCLAMATION.kept_heads() == [0]
    # every token kept (Li et al.'s rule with punctuation): the heads as they are
    assert APPOSITION.kept_heads(WORD_RULES["li-punct"]) == APPOSITION.heads


def test_attachment_scores_by_hand():
    scores = AttachmentScores()
    # John -> left and a -> doctor right; doctor -> a wrong, but a -> doctor is gold (undirected); the root right
    assert scores.add([4, 3, 2, 0], APPOSITION) == AttachmentScores(3, 4, 4, 1)
    assert scores.add(np.array([0]), EXCLAMATION) == AttachmentScores(1, 1, 1, 1)
    # the right chain: "the" as root is wrong both ways; dog -> the and barks -> dog reverse gold arcs
    assert scores.add(right_chain(3), SIMPLE) == AttachmentScores(0, 2, 3, 1)
    assert scores == AttachmentScores(4, 7, 8, 3)
    assert scores.dda == 0.5 and scores.uda == 0.875
    assert scores.summary() == {"sentences": 3, "words": 8, "dda": 0.5, "uda": 0.875}


def test_attachment_is_by_position():
    # Each "the" attached to the other's head: the official string pairs would count all 5 arcs correct.
    gold = sentence("the/DT dog/NN saw/VBD the/DT cat/NN", [2, 3, 0, 5, 3])
    assert AttachmentScores().add([5, 3, 0, 2, 3], gold) == AttachmentScores(3, 3, 5, 1)


def test_universal_pos_gold():
    gold = sentence("Hello/INTJ ,/PUNCT world/NOUN ./PUNCT", [0, 3, 1, 1])
    rule = word_rule_for([gold])
    assert rule is WORD_RULES["ud"]
    # Hello -> world: the reverse of the gold arc; world as root: wrong
    assert AttachmentScores().add([2, 0], gold, rule) == AttachmentScores(0, 1, 2, 1)
    assert word_rule_for([gold, SIMPLE]) is PTB


def test_no_words_to_score():
    scores = AttachmentScores()
    assert scores.add([], sentence("./.", [0])) == AttachmentScores(0, 0, 0, 1)
    assert np.isnan(scores.dda) and np.isnan(scores.uda)


@pytest.mark.parametrize("predicted,message", [
    ([4, 3, 0], r"wsj\.mrg:7: 3 predicted heads, but the gold tree has 4 words to score of its 7 tokens \(rule 'ptb'"),
    ([4, 3, 5, 0], r"wsj\.mrg:7: predicted word 3 has head 5; expected 0 \(the root\) or a word 1\.\.4"),
])
def test_predictions_that_do_not_fit(predicted, message):
    from treenets.trees.ptb import TreeSource

    gold = DependencySentence(APPOSITION.words, APPOSITION.tags, APPOSITION.heads, TreeSource("wsj.mrg", 7))
    with pytest.raises(TreenetsError, match=message):
        AttachmentScores().add(predicted, gold)


def test_gold_that_is_no_tree():
    with pytest.raises(TreenetsError, match="^a dependency tree: words 2 -> 3 -> 2 form a cycle"):
        AttachmentScores().add([0, 1, 1], sentence("a/DT b/NN c/NN", [0, 3, 2]))


# --- baselines

def test_chains():
    assert left_chain(4) == [2, 3, 4, 0]
    assert right_chain(4) == [0, 1, 2, 3]
    assert left_chain(1) == right_chain(1) == [0]
    assert left_chain(0) == right_chain(0) == random_projective_tree(0, random.Random(0)) == []


@given(st.integers(1, 60), st.integers(0, 2**32))
def test_random_trees_are_projective_trees(n, seed):
    heads = random_projective_tree(n, random.Random(seed))
    assert len(heads) == n and heads.count(0) == 1 and all(0 <= h <= n for h in heads) and reaches_root(heads)
    assert is_projective(heads)
    assert random_projective_tree(n, random.Random(seed)) == heads


def test_random_trees_reach_every_projective_tree():
    # the 7 projective trees of 3 words with one root, drawn with the odds the docstring gives
    rng = random.Random(1)
    drawn = [tuple(random_projective_tree(3, rng)) for _ in range(4000)]
    counts = {heads: drawn.count(heads) for heads in set(drawn)}
    assert set(counts) == {(0, 1, 1), (0, 1, 2), (0, 3, 1), (2, 0, 2), (2, 3, 0), (3, 1, 0), (3, 3, 0)}
    assert 850 < counts[(2, 0, 2)] < 1150 and all(400 < c < 600 for heads, c in counts.items() if heads != (2, 0, 2))


def test_is_projective_oracle():
    assert is_projective([2, 0, 2]) and is_projective([0, 3, 1])
    assert not is_projective([3, 4, 0, 3])  # 2 -> 4 spans 3, the root, which does not descend from 4


# --- CoNLL files

def token(id_, word, tag, head, upos=None) -> str:
    return "\t".join([str(id_), word, "_", upos or tag, tag, "_", str(head), "dep", "_", "_"])


CONLLX = "\n".join([
    token(1, "The", "DT", 2), token(2, "cat", "NN", 3), token(3, "sat", "VBD", 0), token(4, ".", ".", 3), "",
    token(1, "Yes", "UH", 0), "",
])

CONLLU = "\n".join([
    "# sent_id = 1",
    "# text = I can't go.",
    token(1, "I", "PRP", 4, "PRON"),
    "2-3\tcan't\t_\t_\t_\t_\t_\t_\t_\t_",
    token(2, "ca", "MD", 4, "AUX"),
    token(3, "n't", "RB", 4, "PART"),
    token(4, "go", "_", 0, "VERB"),
    "4.1\tgone\t_\t_\t_\t_\t_\t_\t4:dep\t_",
    token(5, ".", ".", 4, "PUNCT"),
])


def test_read_conll_x():
    first, second = parse_conll(CONLLX, "a.conll")
    assert first.words == ["The", "cat", "sat", "."] and first.tags == ["DT", "NN", "VBD", "."]
    assert first.heads == [2, 3, 0, 3] and second.words == ["Yes"] and second.heads == [0]
    assert (str(first.source), str(second.source)) == ("a.conll:1", "a.conll:6")


def test_read_conll_u():
    (read,) = parse_conll(CONLLU.replace("\n", "\r\n"), "b.conllu")
    assert read.words == ["I", "ca", "n't", "go", "."]
    assert read.tags == ["PRP", "MD", "RB", "VERB", "."]  # XPOS, UPOS where XPOS is _
    assert read.heads == [4, 4, 4, 0, 4] and str(read.source) == "b.conllu:3"


def test_several_roots_are_read():
    (read,) = parse_conll("\n".join([token(1, "a", "DT", 0), token(2, ",", ",", 0)]))
    assert read.heads == [0, 0]


GOOD = token(1, "Yes", "UH", 0) + "\n\n"  # a first sentence, so that the faults below are on lines 3 and after


@pytest.mark.parametrize("text,line,message", [
    (GOOD + "1\tThe\tDT\t2", 3, r"4 tab-separated columns; expected 10 \(ID FORM LEMMA"),
    (GOOD + "1 The the DT DT _ 0 root _ _", 3, "1 tab-separated columns; .*these seem separated by spaces"),
    (GOOD + token(1, "", "DT", 0), 3, r"column 2 \(FORM\) is empty"),
    (GOOD + token(1, "a", "DT", 0) + "\n" + token(3, "b", "NN", 1), 4, "token id '3'; expected 2"),
    (GOOD + token("x", "a", "DT", 0), 3, "token id 'x'; expected 1"),
    (GOOD + token(1, "a", "DT", 0) + "\n" + token(1, "b", "NN", 1), 4, "token id '1'; expected 2 .*blank line"),
    (GOOD + token(1, "a", "DT", "_"), 3, "head '_' is not an integer"),
    (GOOD + token(1, "a", "DT", 0) + "\n" + token(2, "b", "NN", 9), 4,
     r"word 2 has head 9; expected 0 \(the root\) or a word 1\.\.2 \(in the sentence of lines 3-4\)"),
    (GOOD + token(1, "a", "DT", -1), 3, "word 1 has head -1"),
    (GOOD + token(1, "a", "DT", 2) + "\n" + token(2, "b", "NN", 1), 3, "no word has head 0"),
    (GOOD + token(1, "a", "DT", 0) + "\n" + token(2, "b", "NN", 3) + "\n" + token(3, "c", "NN", 2), 4,
     "words 2 -> 3 -> 2 form a cycle"),
])
def test_malformed_conll(text, line, message):
    with pytest.raises(TreenetsError, match=rf"^c\.conll:{line}: {message}"):
        parse_conll(text, "c.conll")


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_conll_without_sentences(text, tmp_path):
    path = tmp_path / "empty.conllu"
    path.write_text(text)
    with pytest.raises(TreenetsError, match=rf"^{path}: no sentence in it \(expected a CoNLL-X or CoNLL-U file"):
        read_conll(path)


def test_missing_conll_file(tmp_path):
    with pytest.raises(TreenetsError, match="does not exist"):
        read_conll(tmp_path / "missing.conll")


def test_write_and_read_back(tmp_path):
    sentences = parse_conll(CONLLX) + parse_conll(CONLLU)
    path = tmp_path / "out.conll"
    write_conll(path, sentences)
    lines = path.read_text().split("\n")
    assert lines[0] == "1\tThe\t_\tDT\tDT\t_\t2\tdep\t_\t_" and lines[2] == "3\tsat\t_\tVBD\tVBD\t_\t0\troot\t_\t_"
    read = read_conll(path)
    assert [(s.words, s.tags, s.heads) for s in read] == [(s.words, s.tags, s.heads) for s in sentences]
    assert [str(s.source) for s in read] == [f"{path}:1", f"{path}:6", f"{path}:8"]
    with pytest.raises(TreenetsError, match="exists already"):
        write_conll(path, sentences[:1])
    assert read_conll(path)[2].words == sentences[2].words  # left as it was
    write_conll(path, sentences[:1], overwrite=True)
    assert len(read_conll(path)) == 1 and not [p for p in tmp_path.iterdir() if p.name != "out.conll"]


def test_other_tools_read_what_is_written():
    # NLTK's reader, as StructFormer's evaluation reads its gold files (`tree_utils.evald`)
    (written,) = parse_conll(CONLLU)
    graph = DependencyGraph(conll_text([written]), top_relation_label="root")
    assert [graph.nodes[i]["head"] for i in range(1, 6)] == written.heads
    assert [graph.nodes[i]["word"] for i in range(1, 6)] == written.words


@pytest.mark.parametrize("word", ["a\tb", "a\nb", "a\rb", "", "a\x00b"])
def test_unwritable_words(word, tmp_path):
    with pytest.raises(TreenetsError, match=r"^a dependency tree: word 1 .* cannot be written as a CoNLL column"):
        write_conll(tmp_path / "x.conll", [DependencySentence([word], ["NN"], [0])])
    assert not list(tmp_path.iterdir())


def writable(text: str) -> bool:
    return bool(text) and "\t" not in text and "\x00" not in text and text.splitlines() == [text]


@given(st.lists(st.tuples(st.text(min_size=1, max_size=6).filter(writable),
                          st.text(min_size=1, max_size=4).filter(writable)), min_size=1, max_size=12),
       st.integers(0, 2**32))
def test_conll_round_trip(tokens, seed):
    words, tags = map(list, zip(*tokens))
    written = DependencySentence(words, tags, random_projective_tree(len(words), random.Random(seed)))
    (read,) = parse_conll(conll_text([written]))
    assert (read.words, read.tags, read.heads) == (written.words, written.tags, written.heads)
