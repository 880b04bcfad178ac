"""Trees as parent pointers, the form Tree-LSTMs read: SICK's `*.parents` (dependency) and `*.cparents`
(constituency) lines, and bracketed sentiment trees (SST).

A `ParentTree` has nodes 0..n-1 with `parents[i]` the parent of node i (-1 for the root). Dependency trees
have one node per word (node i = word i). Constituency trees have the words as leaves 0..w-1 and the phrases
after them. Every check names what is wrong: cycles, several or no roots, parents out of range, a line of
the wrong length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from treenets.core.errors import TreenetsError
from treenets.trees.walk import fold


@dataclass(frozen=True)
class ParentTree:
    parents: tuple[int, ...]  # parent of each node, -1 for the root
    words: tuple[str, ...] = ()  # the words; word i is node i
    labels: tuple[int, ...] | None = None  # a label per node (sentiment), -1 where there is none
    children: tuple[tuple[int, ...], ...] = field(init=False, repr=False, compare=False)
    height: tuple[int, ...] = field(init=False, repr=False, compare=False)  # 0 for leaves
    sibling: tuple[int, ...] = field(init=False, repr=False, compare=False)  # position among siblings, root -1

    def __post_init__(self):
        n = len(self.parents)
        kids: list[list[int]] = [[] for _ in range(n)]
        for node, parent in enumerate(self.parents):
            if parent >= 0:
                kids[parent].append(node)
        heights, first = [0] * n, list(range(n))
        for node in _bottom_up(self.parents, kids):
            # Children in sentence order (by their first word), which N-ary cells depend on.
            kids[node].sort(key=lambda k: first[k])
            if kids[node]:
                first[node] = min(node, first[kids[node][0]]) if node < len(self.words) else first[kids[node][0]]
            heights[node] = 1 + max((heights[k] for k in kids[node]), default=-1)
        sibling = [-1] * n
        for node_kids in kids:
            for position, kid in enumerate(node_kids):
                sibling[kid] = position
        object.__setattr__(self, "children", tuple(tuple(k) for k in kids))
        object.__setattr__(self, "height", tuple(heights))
        object.__setattr__(self, "sibling", tuple(sibling))

    @property
    def size(self) -> int:
        return len(self.parents)

    @property
    def root(self) -> int:
        return self.parents.index(-1)


def _bottom_up(parents, kids) -> list[int]:
    """Nodes children-first (post-order from the root)."""
    order, stack = [], [parents.index(-1)]
    while stack:
        node = stack.pop()
        order.append(node)
        stack.extend(kids[node])
    return order[::-1]


def check_parents(parents: list[int], where: str) -> None:
    """Exactly one root, parents in range, no cycle; raises naming `where`."""
    n = len(parents)
    roots = [i for i, p in enumerate(parents) if p == -1]
    if len(roots) != 1:
        raise TreenetsError(f"{where}: {len(roots)} roots (nodes {[r + 1 for r in roots][:5]}); expected exactly one")
    for i, p in enumerate(parents):
        if not -1 <= p < n or p == i:
            raise TreenetsError(f"{where}: node {i + 1} has parent {p + 1}, expected 0 (root) or 1..{n}, "
                                "not itself")
    state = [0] * n  # 0 unseen, 1 on the current path, 2 reaches the root
    for start in range(n):
        path, node = [], start
        while node != -1 and state[node] == 0:
            state[node] = 1
            path.append(node)
            node = parents[node]
        if node != -1 and state[node] == 1:
            raise TreenetsError(f"{where}: cycle through node {node + 1}")
        for visited in path:
            state[visited] = 2


def parse_parents(line: str, words: list[str], where: str, constituency: bool = False) -> ParentTree:
    """A tree from a line of 1-based parent indices (0 = root).

    Args:
        line: e.g. `"2 0 2"`.
        words: the sentence's tokens.
        where: `file:line` for messages.
        constituency: `cparents` form (the words are the first nodes, phrases follow); else one node per word.

    Raises:
        TreenetsError: for non-integers, a wrong number of entries, several roots, or a cycle.
    """
    try:
        parents = [int(x) - 1 for x in line.split()]
    except ValueError:
        raise TreenetsError(f"{where}: expected integers (1-based parents, 0 = root), got {line[:40]!r}") from None
    if constituency:
        if len(parents) < len(words):
            raise TreenetsError(f"{where}: {len(parents)} parents for {len(words)} words; a constituency tree "
                                "lists every word, then its phrases")
    elif len(parents) != len(words):
        raise TreenetsError(f"{where}: {len(parents)} parents for {len(words)} words; expected one per word")
    check_parents(parents, where)
    if constituency and any(parents[i] < len(words) and parents[i] != -1 for i in range(len(parents))):
        raise TreenetsError(f"{where}: a word is the parent of another node; in a constituency tree only "
                            "phrases (nodes after the words) have children")
    return ParentTree(tuple(parents), tuple(words))


def parse_bracketed(text: str, where: str, require_labels: bool = True) -> ParentTree:
    """A labelled tree from `(3 (2 It) (4 (4 works) (2 .)))`: each node `(label child ...)`, words at leaves.

    Words become nodes 0..w-1 in order, phrases follow in post-order; every node keeps its label. With
    `require_labels=False` a label may be any token (`(S (NP It) (VP works))`) and is kept as -1.
    """
    tokens = text.replace("(", " ( ").replace(")", " ) ").split()
    if not tokens or tokens[0] != "(":
        raise TreenetsError(f"{where}: expected '(' at token 1")
    words: list[str] = []
    phrases: list[tuple[int, list]] = []  # (label, children as ("w", i, label) or ("p", j, label))
    open_nodes: list[tuple[int, list]] = []  # (label, children so far) of each open bracket (explicit stack)
    top = None
    pos = 0
    while pos < len(tokens):
        token = tokens[pos]
        if top is not None:
            raise TreenetsError(f"{where}: text after the tree ends")
        if token == "(":
            if pos + 1 >= len(tokens):
                raise TreenetsError(f"{where}: unexpected end after '('")
            text_label = tokens[pos + 1]
            if text_label in ("(", ")"):
                raise TreenetsError(f"{where}: expected a label after '(' at token {pos + 1}, got {text_label!r}")
            try:
                label = int(text_label)
            except ValueError:
                if require_labels:
                    raise TreenetsError(f"{where}: label {text_label!r} is not an integer") from None
                label = -1
            open_nodes.append((label, []))
            pos += 2
            continue
        pos += 1
        if token != ")":
            words.append(token)
            open_nodes[-1][1].append(("w", len(words) - 1, open_nodes[-1][0]))
            continue
        label, kids = open_nodes.pop()
        if not kids:
            raise TreenetsError(f"{where}: empty node with label {label}")
        if len(kids) == 1 and kids[0][0] == "w":  # a preterminal: the word node carries the label
            node = ("w", kids[0][1], label)
        else:
            phrases.append((label, kids))
            node = ("p", len(phrases) - 1, label)
        if open_nodes:
            open_nodes[-1][1].append(node)
        else:
            top = node
    if top is None:
        raise TreenetsError(f"{where}: unbalanced brackets (a ')' is missing)")
    n_words = len(words)
    parents = [-1] * (n_words + len(phrases))
    labels = [-1] * len(parents)

    def index(ref):
        return ref[1] if ref[0] == "w" else n_words + ref[1]

    for j, (label, kids) in enumerate(phrases):
        labels[n_words + j] = label
        for kid in kids:
            parents[index(kid)] = n_words + j
            labels[index(kid)] = kid[2]
    labels[index(top)] = top[2]
    return ParentTree(tuple(parents), tuple(words), tuple(labels))


def binarize(tree: ParentTree) -> ParentTree:
    """The same tree with every node of more than two children split right-branching: children
    `[a, b, c, d]` become `[a, x1]`, `x1 -> [b, x2]`, `x2 -> [c, d]`; new nodes come last, unlabelled (-1)."""
    parents = list(tree.parents)
    labels = list(tree.labels) if tree.labels is not None else None
    for node in range(tree.size):
        kids = tree.children[node]
        if len(kids) <= 2:
            continue
        owner = node
        for kid in kids[1:-1]:
            parents.append(owner)
            if labels is not None:
                labels.append(-1)
            owner = len(parents) - 1
            parents[kid] = owner
        parents[kids[-1]] = owner
    if len(parents) == tree.size:
        return tree
    return ParentTree(tuple(parents), tree.words, tuple(labels) if labels is not None else None)


def from_nested(tree, words: Sequence[str]) -> ParentTree:
    """A constituency `ParentTree` from nested lists of word positions (`attach_dropped`'s form; a lone
    position for one word): the words are nodes 0..w-1, the phrases follow in post-order."""
    parents = [-1] * len(words)

    def phrase(_, children: list[int]) -> int:
        node = len(parents)
        parents.append(-1)
        for child in children:
            parents[child] = node
        return node

    leaves: list[int] = []
    fold(tree, lambda position: leaves.append(position) or position, phrase)
    if leaves != list(range(len(words))):
        raise ValueError(f"the tree does not cover the {len(words)} words once each, in order")
    return ParentTree(tuple(parents), tuple(words))


def from_spans(spans: list[tuple[int, int]], words: Sequence[str]) -> ParentTree:
    """A constituency `ParentTree` from the word span `(start, end)` of every node (as `node_spans` gives them,
    the words' own spans included), words first, phrases after."""
    parents = [-1] * len(words)
    open_nodes: list[tuple[int, int, int]] = []  # (start, end, node) of the phrases that contain the next span
    for start, end in sorted(spans, key=lambda span: (span[0], -span[1])):  # every node before those inside it
        while open_nodes and not (open_nodes[-1][0] <= start and end <= open_nodes[-1][1]):
            open_nodes.pop()
        parent = open_nodes[-1][2] if open_nodes else -1
        if end - start == 1:
            node = start
        else:
            node = len(parents)
            parents.append(-1)
            open_nodes.append((start, end, node))
        parents[node] = parent
    return ParentTree(tuple(parents), tuple(words))


def to_nested(tree: ParentTree):
    """A constituency tree as nested lists of word positions (a lone position for one word): `from_nested`'s
    inverse."""
    nested: dict[int, object] = {}
    for node in sorted(range(tree.size), key=lambda n: tree.height[n]):  # children before their parents
        nested[node] = [nested.pop(child) for child in tree.children[node]] if tree.children[node] else node
    return nested[tree.root]


def nested_words(tree: ParentTree):
    """A constituency tree as nested lists of its words (a lone word for one)."""
    return fold(to_nested(tree), lambda position: tree.words[position], lambda _, children: children)


def node_spans(tree: ParentTree) -> dict[int, tuple[int, int]]:
    """Word span `(start, end)` of every node of a constituency tree (words are nodes 0..w-1)."""
    spans: dict[int, tuple[int, int]] = {}
    stack = [(tree.root, False)]  # an explicit stack: a tree may be deeper than Python's recursion limit
    while stack:
        node, children_done = stack.pop()
        children = tree.children[node]
        if not children:
            spans[node] = (node, node + 1)
        elif children_done:
            spans[node] = (spans[children[0]][0], spans[children[-1]][1])
        else:
            stack.append((node, True))
            stack.extend((child, False) for child in children)
    return spans


def labels_from(tree: ParentTree, gold: ParentTree) -> ParentTree:
    """`tree` (over the same words) labelled as `gold` where a node covers the words of a labelled `gold` node
    (the words and the root always do), -1 elsewhere: how a Tree-LSTM over another tree is trained on SST's
    phrase labels."""
    if tree.words != gold.words:
        raise ValueError("labels_from: the trees have different words")
    gold_labels = {span: gold.labels[node] for node, span in node_spans(gold).items()}
    labels = [-1] * tree.size
    for node, span in node_spans(tree).items():
        labels[node] = gold_labels.get(span, -1)
    return ParentTree(tree.parents, tree.words, tuple(labels))
