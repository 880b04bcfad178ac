"""Dependency trees from Penn Treebank constituency trees by head rules: the head table of Collins (1999, Appendix
A), the table that Yamada & Matsumoto (2003) and Penn2Malt start from (this module applies Collins' table itself,
not their changes to it).

The head word of a phrase is the head word of its head child, and the head word of each other child depends on it;
the head word of the whole tree is the root. A phrase's head child is found by the row of its label (function tags
and indices stripped, `NP-SBJ-1` -> `NP`; of alternatives, `ADVP|PRT`, the first): for each label of the priority
list in turn, the first child with that label (a phrase's, or a word's POS tag) searching from the row's side,
`left` from the first child, `right` from the last; when no child has any of them, the first child from that side.

    Phrase  Side   Priority
    ADJP    left   NNS QP NN $ ADVP JJ VBN VBG ADJP JJR NP JJS DT FW RBR RBS SBAR RB
    ADVP    right  RB RBR RBS FW ADVP TO CD JJR JJ IN NP JJS NN
    CONJP   right  CC RB IN
    FRAG    right
    INTJ    left
    LST     right  LS :
    NAC     left   NN NNS NNP NNPS NP NAC EX $ CD QP PRP VBG JJ JJS JJR ADJP FW
    PP      right  IN TO VBG VBN RP FW
    PRN     left
    PRT     right  RP
    QP      left   $ IN NNS NN JJ RB DT CD NCD QP JJR JJS
    RRC     right  VP NP ADVP ADJP PP
    S       left   TO IN VP S SBAR ADJP UCP NP
    SBAR    left   WHNP WHPP WHADVP WHADJP IN DT S SQ SINV SBAR FRAG
    SBARQ   left   SQ S SINV SBARQ FRAG
    SINV    left   VBZ VBD VBP VB MD VP S SINV ADJP NP
    SQ      left   VBZ VBD VBP VB MD VP SQ
    UCP     right
    VP      left   TO VBD VBN MD VBZ VB VBG VBP VP ADJP NN NNS NP
    WHADJP  left   CC WRB JJ ADJP
    WHADVP  right  CC WRB
    WHNP    left   WDT WP WP$ WHADJP WHPP WHNP
    WHPP    right  IN TO FW

NP (Collins' special rule), the first of these that finds a child: searching from the right, the first child
labelled any of NN NNP NNPS NNS NX POS JJR (so a final POS, `'s`, heads the NP); from the left, the first NP; from
the right, the first of $ ADJP PRN; from the right, the first CD; from the right, the first of JJ JJS RB QP; else
the last child.

Coordination (Collins): when the head child found is preceded by a CC and is not the first or second child, the
head child is the one before the CC (`cats and dogs`: `cats`). Collins' parser took punctuation out of phrases
before, so that child was never punctuation; here punctuation stays, and the first child before the CC that is not
punctuation (`, . : `` '' -LRB- -RRB-`) is taken (`apples , pears , and plums`: `pears`), the head found kept when
there is none.

Labels without a row (NX, X, the treebank's wrapper root, any other): the first child.

Empty elements (words tagged `-NONE-`) are removed first, and so are the phrases left empty. Punctuation is attached
by the rules like any other word (the attachment scores leave it out: `treenets.trees.dependencies`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import nltk

from treenets.trees.dependencies import DependencySentence
from treenets.trees.ptb import TreeSource, label_of
from treenets.trees.walk import fold, leaves

# Penn Treebank punctuation tags (those of StructFormer's `data_ptb.PUNCTUATION_TAGS`): never a coordination's head.
PUNCTUATION_TAGS = frozenset({",", ".", ":", "``", "''", "-LRB-", "-RRB-"})


@dataclass(frozen=True)
class HeadRule:
    """How a phrase's head child is found: `searches` in turn, each `(side, labels)` the first child from that side
    (`left` or `right`) labelled one of `labels`; the first child from `default`'s side when none finds one."""

    default: str
    searches: tuple[tuple[str, frozenset[str]], ...]


def _row(side: str, priority: str = "") -> HeadRule:
    """A row of Collins' table: each label of `priority` in turn, searched for from `side`."""
    return HeadRule(side, tuple((side, frozenset({label})) for label in priority.split()))


HEAD_RULES = {
    "ADJP": _row("left", "NNS QP NN $ ADVP JJ VBN VBG ADJP JJR NP JJS DT FW RBR RBS SBAR RB"),
    "ADVP": _row("right", "RB RBR RBS FW ADVP TO CD JJR JJ IN NP JJS NN"),
    "CONJP": _row("right", "CC RB IN"),
    "FRAG": _row("right"),
    "INTJ": _row("left"),
    "LST": _row("right", "LS :"),
    "NAC": _row("left", "NN NNS NNP NNPS NP NAC EX $ CD QP PRP VBG JJ JJS JJR ADJP FW"),
    "PP": _row("right", "IN TO VBG VBN RP FW"),
    "PRN": _row("left"),
    "PRT": _row("right", "RP"),
    "QP": _row("left", "$ IN NNS NN JJ RB DT CD NCD QP JJR JJS"),
    "RRC": _row("right", "VP NP ADVP ADJP PP"),
    "S": _row("left", "TO IN VP S SBAR ADJP UCP NP"),
    "SBAR": _row("left", "WHNP WHPP WHADVP WHADJP IN DT S SQ SINV SBAR FRAG"),
    "SBARQ": _row("left", "SQ S SINV SBARQ FRAG"),
    "SINV": _row("left", "VBZ VBD VBP VB MD VP S SINV ADJP NP"),
    "SQ": _row("left", "VBZ VBD VBP VB MD VP SQ"),
    "UCP": _row("right"),
    "VP": _row("left", "TO VBD VBN MD VBZ VB VBG VBP VP ADJP NN NNS NP"),
    "WHADJP": _row("left", "CC WRB JJ ADJP"),
    "WHADVP": _row("right", "CC WRB"),
    "WHNP": _row("left", "WDT WP WP$ WHADJP WHPP WHNP"),
    "WHPP": _row("right", "IN TO FW"),
    "NP": HeadRule("right", (("right", frozenset({"NN", "NNP", "NNPS", "NNS", "NX", "POS", "JJR"})),
                             ("left", frozenset({"NP"})),
                             ("right", frozenset({"$", "ADJP", "PRN"})),
                             ("right", frozenset({"CD"})),
                             ("right", frozenset({"JJ", "JJS", "RB", "QP"})))),
}
_FIRST_CHILD = _row("left")


def head_child(label: str, children: list[str]) -> int:
    """The position of the head child of a phrase labelled `label` (function tags stripped) whose children have the
    labels `children` (phrases' labels, words' POS tags), by the rules of the module's docstring."""
    rule = HEAD_RULES.get(label, _FIRST_CHILD)
    sides = {"left": range(len(children)), "right": range(len(children) - 1, -1, -1)}
    head = next((i for side, labels in rule.searches for i in sides[side] if children[i] in labels),
                sides[rule.default][0])
    if head >= 2 and children[head - 1] == "CC":
        before = next((i for i in range(head - 2, -1, -1) if children[i] not in PUNCTUATION_TAGS), None)
        if before is not None:
            head = before
    return head


def dependencies_by_head_rules(tree: nltk.Tree, source: TreeSource | None = None) -> DependencySentence:
    """The dependency tree of a Penn Treebank tree by Collins' head rules (the module's docstring): every word but
    the empty elements (`-NONE-`), punctuation included, with its POS tag (the label right above it) and its head
    (1-based, 0 for the root). Walks the tree without recursion.

    Args:
        tree: a treebank tree (`treenets.trees.ptb.read_treebank`), its wrapper root (`( ...)`, `(TOP ...)`)
            included or not.
        source: where it came from, kept with the result.

    Returns:
        a `DependencySentence` with one root; without words when every word of the tree is an empty element.
    """
    head_of: dict[int, int] = {}  # word (its position among all leaves) -> its head word's
    tags: dict[int, str] = {}  # every word kept -> its tag
    positions = itertools.count()

    def node(phrase: nltk.Tree, values: list) -> tuple[str, int] | None:
        """(label, head word) of a phrase, of a word tagged with its label for a preterminal; None when empty."""
        label = phrase.label()
        parts = []
        for value in values:
            if isinstance(value, int):  # a word right under `phrase`, tagged with its label
                if label != "-NONE-":
                    tags[value] = label
                    parts.append((label, value))
            elif value is not None:
                parts.append(value)
        if (len(values) == 1 and isinstance(values[0], int)) or not parts:
            return parts[0] if parts else None
        label = label_of(phrase).split("|")[0]
        head = parts[head_child(label, [part_label for part_label, _ in parts])][1]
        for _, word in parts:
            if word != head:
                head_of[word] = head
        return label, head

    fold(tree, lambda _: next(positions), node)
    kept = sorted(tags)
    rank = {position: k + 1 for k, position in enumerate(kept)}
    words = leaves(tree)
    return DependencySentence([words[p] for p in kept], [tags[p] for p in kept],
                              [rank[head_of[p]] if p in head_of else 0 for p in kept], source)
