"""Trees walked without recursion: a sentence of thousands of words can give a tree thousands of levels deep
(a right-branching tree, or the tree of monotone syntactic distances), deeper than Python's recursion limit."""

from __future__ import annotations


def fold(tree, leaf, node):
    """Bottom-up over a nested-list tree (an `nltk.Tree` is one too: a list of children with a label).

    Args:
        tree: a word, or a list of subtrees.
        leaf: `leaf(word)`, called for every word in sentence order.
        node: `node(subtree, values)`, called for every list with its children's values in order, after the
            calls for its children and before those for the words that follow it.

    Returns:
        the value of the root.
    """
    values: list = []
    stack = [(tree, False)]
    while stack:
        item, children_done = stack.pop()
        if children_done:
            start = len(values) - len(item)
            values[start:] = [node(item, values[start:])]
        elif isinstance(item, list):
            stack.append((item, True))
            stack.extend((child, False) for child in reversed(item))
        else:
            values.append(leaf(item))
    return values[0]


def depth(tree) -> int:
    """The number of levels of lists above the deepest word (0 for a word)."""
    return fold(tree, lambda _: 0, lambda _, children: 1 + max(children, default=0))


def leaves(tree) -> list:
    """The words of a nested-list tree in sentence order (a word alone: itself)."""
    found, stack = [], [tree]
    while stack:
        item = stack.pop()
        if isinstance(item, list):
            stack.extend(reversed(item))
        else:
            found.append(item)
    return found


def with_words(tree, words: list):
    """The tree with its words replaced by `words`, in order (as many as it has)."""
    replacement = iter(words)
    return fold(tree, lambda _: next(replacement), lambda _, children: children)
