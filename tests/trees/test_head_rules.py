"""Dependency trees from constituency trees by Collins' head rules: trees converted by hand from the table, the
table against its documentation, and every tree of the NLTK WSJ sample."""

from __future__ import annotations

import re

import nltk
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_dependencies import is_projective, reaches_root

from treenets.trees import head_rules
from treenets.trees.dependencies import conll_text, parse_conll
from treenets.trees.head_rules import HEAD_RULES, dependencies_by_head_rules, head_child
from treenets.trees.ptb import parse_trees, read_treebank

# (tree, heads written by hand from the table of `head_rules`' docstring)
HAND_CONVERTED = {
    "simple": ("(S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat)) (. .))",
               # The->cat (NP: last NN), cat->sat (S: its VP), sat the root, .->sat
               [2, 3, 0, 3]),
    "possessive": ("(S (NP-SBJ (NP (NNP John) (POS 's)) (NN dog)) (VP (VBZ barks)) (. .))",
                   # (John 's): the final POS heads it; (NP dog): NN before NP
                   [2, 3, 4, 0, 4]),
    "pp-on-the-noun": ("(S (NP-SBJ (PRP She)) (VP (VBD saw) (NP (NP (DT the) (NN man)) (PP (IN with) (NP (DT a) "
                       "(NN telescope))))) (. .))",
                       # She: no NP step finds PRP, the last child; (NP PP): its first NP; PP: its IN
                       [2, 0, 4, 2, 4, 7, 5, 2]),
    "pp-on-the-verb": ("(S (NP-SBJ (PRP She)) (VP (VBD ate) (NP (NN pizza)) (PP-MNR (IN with) (NP (NNS friends)))) "
                       "(. .))",
                       [2, 0, 2, 2, 4, 2]),
    "sbar": ("(S (NP-SBJ (PRP I)) (VP (VBP think) (SBAR (IN that) (S (NP-SBJ (PRP he)) (VP (VBD left))))) (. .))",
             # SBAR: IN before S, so "that" heads the clause and "left" depends on it
             [2, 0, 2, 5, 3, 2]),
    "coordination": ("(S (NP-SBJ (NNS Cats) (CC and) (NNS dogs)) (VP (VBP play)) (. .))",
                     # NP: the last NNS, "dogs", preceded by CC: the child before it, "Cats"
                     [4, 1, 1, 0, 4]),
    "coordination-with-commas": ("(S (NP-SBJ (PRP We)) (VP (VBD bought) (NP (NNS apples) (, ,) (NNS pears) (, ,) "
                                 "(CC and) (NNS plums))) (. .))",
                                 # "plums" preceded by CC; the comma before the CC skipped: "pears"
                                 [2, 0, 5, 5, 2, 5, 5, 5, 2]),
    "coordination-by-default": ("(NP (UCP (JJ federal) (CC and) (NN state)) (NNS agencies))",
                                # UCP: no priority, its last child, preceded by CC: "federal"
                                [4, 1, 1, 0]),
    "quotes-and-trace": ("(S (`` ``) (S-TPC-1 (NP-SBJ (PRP We)) (VP (VBP win))) (, ,) ('' '') (NP-SBJ (PRP he)) "
                         "(VP (VBD said) (S (-NONE- *T*-1))) (. .))",
                         # the empty S removed; S: its first VP, "said" (the topicalised S comes later in the list)
                         [7, 3, 7, 7, 7, 7, 0, 7]),
    "relative-clause-trace": ("(S (NP-SBJ (NP (DT The) (NN book)) (SBAR (WHNP-1 (WDT that)) (S (NP-SBJ (PRP I)) "
                              "(VP (VBD read) (NP (-NONE- *T*-1)))))) (VP (VBD was) (ADJP-PRD (JJ long))) (. .))",
                              # SBAR: WHNP first; the object trace and its NP removed
                              [2, 6, 2, 5, 3, 0, 6, 6]),
    "wsj_0001.1": ("( (S (NP-SBJ (NP (NNP Pierre) (NNP Vinken)) (, ,) (ADJP (NP (CD 61) (NNS years)) (JJ old)) (, ,)) "
                   "(VP (MD will) (VP (VB join) (NP (DT the) (NN board)) (PP-CLR (IN as) (NP (DT a) (JJ nonexecutive) "
                   "(NN director))) (NP-TMP (NNP Nov.) (CD 29)))) (. .)) )",
                   # ADJP: JJ "old" (no NNS QP NN $ ADVP child); NP-SBJ: its first NP; VP: MD before VP, VB first
                   [2, 8, 2, 5, 6, 2, 2, 0, 8, 11, 9, 9, 15, 15, 12, 9, 16, 8]),
}


@pytest.mark.parametrize("name", HAND_CONVERTED)
def test_hand_converted_trees(name):
    text, heads = HAND_CONVERTED[name]
    (tree, source), = parse_trees(text, "hand.mrg")
    converted = dependencies_by_head_rules(tree, source)
    assert converted.heads == heads
    assert list(zip(converted.words, converted.tags)) == [pair for pair in tree.pos() if pair[1] != "-NONE-"]
    assert str(converted.source) == "hand.mrg:1"


@pytest.mark.parametrize("text,head", [
    ("(NP (DT the) (NN cat))", "cat"),  # the rightmost NN NNP NNPS NNS NX POS JJR
    ("(NP (NP (NNP Mary) (POS 's)) (NNS books))", "books"),  # before any NP
    ("(NP (NP (NNP John)) (, ,) (NP (DT a) (NN doctor)))", "John"),  # else the first NP
    ("(NP (DT the) (ADJP (RB very) (JJ rich)))", "rich"),  # else the rightmost $ ADJP PRN
    ("(NP ($ $) (CD 5) (-NONE- *U*))", "$"),  # ... before CD
    ("(NP (DT the) (CD two))", "two"),  # else the rightmost CD
    ("(NP (DT the) (JJS best))", "best"),  # else the rightmost JJ JJS RB QP
    ("(NP (DT all) (DT these))", "these"),  # else the last child
])
def test_np_rule(text, head):
    converted = dependencies_by_head_rules(nltk.Tree.fromstring(text))
    assert converted.words[converted.heads.index(0)] == head


def test_labels_without_a_row_and_wrappers():
    assert head_child("NX", ["NN", "NN"]) == head_child("X", ["NN", "NN"]) == head_child("TOP", ["S"]) == 0
    assert head_child("PRN", ["-LRB-", "NP", "-RRB-"]) == 0  # PRN: left, no priority: the first child
    heads = [2, 0]
    for text in ("( (S (NP-SBJ-1 (NNP John)) (VP (VBD left))) )", "(TOP (S (NP-SBJ-1 (NNP John)) (VP (VBD left))))",
                 "(S (NP-SBJ=2 (NNP John)) (VP (VBD left)))"):
        (tree, _), = parse_trees(text)
        assert dependencies_by_head_rules(tree).heads == heads
    # alternative labels: the first (ADVP: the rightmost RB; PRT would have found no RP and taken the last child)
    tree = nltk.Tree.fromstring("(VP (VBD came) (ADVP|PRT (RB back) (NN home)))")
    assert dependencies_by_head_rules(tree).heads == [0, 1, 2]


def test_only_empty_elements():
    converted = dependencies_by_head_rules(nltk.Tree.fromstring("(S (NP-SBJ (-NONE- *)) (VP (-NONE- *?*)))"))
    assert converted.words == converted.heads == []


def test_the_docstring_shows_the_table():
    rows = re.findall(r"^    ([A-Z]+) +(left|right) *(.*)$", head_rules.__doc__, re.MULTILINE)
    documented = {label: head_rules.HeadRule(side, tuple((side, frozenset({p})) for p in priority.split()))
                  for label, side, priority in rows}
    assert documented == {label: rule for label, rule in HEAD_RULES.items() if label != "NP"}


def test_a_deep_tree():
    # a right-branching tree as deep as its 5,000 words (the walk uses no recursion)
    tree = nltk.Tree("NN", ["last"])
    for i in range(5000):
        tree = nltk.Tree("NP", [nltk.Tree("NN", [f"w{i}"]), tree])
    # each NP: its own NN (the NN step before the NP step), on which the inner NP's head word depends: each word
    # hangs from the word before it, but in the innermost NP, (w0 last), whose head is its rightmost NN, "last"
    assert dependencies_by_head_rules(tree).heads == [*range(4999), 5001, 4999]


TAGS = ["NN", "NNS", "VBD", "IN", "DT", "CC", ",", ".", "POS", "CD", "JJ", "-NONE-"]
LABELS = ["NP", "NP-SBJ-1", "VP", "S", "SBAR", "PP", "UCP", "ADJP", "QP", "NX", "FRAG", "ADVP|PRT"]


def _phrase(label_and_children) -> nltk.Tree:
    label, children = label_and_children
    return nltk.Tree(label, children)


TREES = st.recursive(st.sampled_from(TAGS).map(lambda tag: nltk.Tree(tag, ["w"])),
                     lambda children: st.tuples(st.sampled_from(LABELS), st.lists(children, min_size=1, max_size=4))
                     .map(_phrase), max_leaves=25)


@given(TREES)
def test_any_tree_gives_a_projective_tree(tree):
    converted = dependencies_by_head_rules(tree)
    n = sum(tag != "-NONE-" for _, tag in tree.pos())
    assert len(converted.heads) == n
    if n:
        assert converted.heads.count(0) == 1 and all(0 <= h <= n for h in converted.heads)
        assert reaches_root(converted.heads) and is_projective(converted.heads)


def test_every_tree_of_the_nltk_sample(data_root):
    # 3,914 trees of WSJ sections 00-01 with traces, function tags and punctuation
    trees = read_treebank(data_root / "nltk_data" / "corpora" / "treebank" / "combined")
    converted = [dependencies_by_head_rules(tree, source) for tree, source in trees]
    assert len(converted) == 3914 and sum(len(s.heads) for s in converted) == 94_084
    for (tree, _), sentence in zip(trees, converted):
        n = len(sentence.heads)
        assert list(zip(sentence.words, sentence.tags)) == [pair for pair in tree.pos() if pair[1] != "-NONE-"]
        assert sentence.heads.count(0) == 1 and all(0 <= h <= n for h in sentence.heads), sentence.source
        assert reaches_root(sentence.heads) and is_projective(sentence.heads), sentence.source
    # and they go through a CoNLL file unchanged
    read = parse_conll(conll_text(converted[:200]))
    assert [(s.words, s.tags, s.heads) for s in read] == [(s.words, s.tags, s.heads) for s in converted[:200]]
