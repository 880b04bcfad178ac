"""Showing trees: as `nltk.Tree`, bracketed, ASCII art, SVG (svgling), and the figure of the papers (predicted
tree beside the gold tree, syntactic distances plotted under the words)."""

from __future__ import annotations

import itertools
from pathlib import Path

import nltk

from treenets.core.errors import TreenetsError
from treenets.core.limits import MAX_TREE_DEPTH
from treenets.trees.walk import depth, fold


class WordTree(nltk.Tree):
    """An `nltk.Tree` whose `pretty_print` draws the words in sentence order. nltk's own, given a tree whose leaves
    are words, may not: `(X (X (X (X the u.s.) economy) ...) ...)` came out as `economy the u.s. ...` (nltk 3.10);
    here, as `ascii_art` draws, the leaves are positions and the words are put under them."""

    def pretty_print(self, sentence=None, highlight=(), stream=None, **kwargs):
        if sentence is not None:  # (positions as leaves, the words given: nltk's own way is right)
            return super().pretty_print(sentence, highlight, stream, **kwargs)
        from nltk.tree.prettyprinter import TreePrettyPrinter

        position = itertools.count()
        indexed = fold(_nested(self), lambda _: next(position), lambda _, children: nltk.Tree(self.label(), children))
        print(TreePrettyPrinter(indexed, self.leaves(), highlight).text(**kwargs), file=stream)


def _nested(tree):
    """An `nltk.Tree` as nested lists (its labels dropped)."""
    return [_nested(child) if isinstance(child, nltk.Tree) else child for child in tree]


def to_nltk(tree, label: str = "X") -> nltk.Tree | str:
    """A nested-list tree as an `nltk.Tree` (a `WordTree`: its `pretty_print` keeps the words in order) with every
    node labelled `label` (a lone word stays a string)."""
    return fold(tree, lambda word: word, lambda _, children: WordTree(label, children))


def bracketed(tree) -> str:
    """`(X (X the cat) sat)`; a lone word as `(X word)`."""
    # Written here rather than by `nltk.Tree.pformat`, which recurses once per level; one pass over the tree,
    # its pieces joined once (`fold` would join every node's text again in its parent's)
    if not isinstance(tree, list):
        return f"(X {tree})"
    pieces, stack = [], [tree]
    while stack:
        item = stack.pop()
        if item is _CLOSE:
            pieces[-1] += ")"
        elif isinstance(item, list) and not item:
            pieces.append("(X )")
        elif isinstance(item, list):
            pieces.append("(X")
            stack.append(_CLOSE)
            stack.extend(reversed(item))
        else:
            pieces.append(str(item))
    return " ".join(pieces)


_CLOSE = object()  # (`bracketed`: the end of a node)


def preterminal_bracketed(tree, label: str = "X") -> str:
    """`(X (X the) (X cat))`: every word in a bracket of its own, every node labelled `label`; the one-tree-a-line
    format of compound-pcfg and ED4UCP, whose scripts read a word only inside such a bracket. A node of one child
    stays (a unary chain); a lone word is `(X word)`."""
    return fold(tree, lambda word: f"({label} {word})", lambda _, children: f"({label} {' '.join(children)})")


def _drawable(tree) -> list:
    """The tree as a list (a lone word under one node), refused when deeper than the drawing libraries reach."""
    tree = tree if isinstance(tree, list) else [tree]
    levels = depth(tree)
    if levels > MAX_TREE_DEPTH:
        raise TreenetsError(f"tree deeper than {MAX_TREE_DEPTH} levels ({levels}): too deep to draw "
                            "(`bracketed` writes it as text)")
    return tree


def ascii_art(tree, words: list[str]) -> str:
    """The tree drawn with text characters, words along the bottom in sentence order.

    Raises:
        TreenetsError: for a tree deeper than `treenets.core.limits.MAX_TREE_DEPTH` levels.
    """
    from nltk.tree.prettyprinter import TreePrettyPrinter

    position = itertools.count()  # leaves become word positions: the printer puts `words` under them
    indexed = fold(_drawable(tree), lambda _: next(position), lambda _, children: nltk.Tree("X", children))
    return TreePrettyPrinter(indexed, sentence=list(words)).text()


def write_svg(tree, path: str | Path) -> None:
    """The tree drawn as SVG (svgling) to `path`.

    Raises:
        TreenetsError: for a tree deeper than `treenets.core.limits.MAX_TREE_DEPTH` levels.
    """
    import svgling

    node = to_nltk(_drawable(tree))
    Path(path).write_text(svgling.draw_tree(node).get_svg().tostring())


def _layout(tree) -> tuple[int, list]:
    """Node coordinates: leaves at x = word index, y = 0; a node at the mean x of its children, one above
    the highest. Returns the height and the edges ((x1, y1), (x2, y2))."""
    position = itertools.count()
    edges = []

    def node(_, children):
        xs, ys = zip(*children)
        parent = sum(xs) / len(xs), max(ys) + 1
        edges.extend((parent, child) for child in children)
        return parent

    _, height = fold(tree if isinstance(tree, list) else [tree], lambda _: (next(position), 0), node)
    return height, edges


def _draw(ax, tree, words, title):
    height, edges = _layout(tree)
    for (x1, y1), (x2, y2) in edges:
        ax.plot([x1, x2], [y1, y2], color="black", linewidth=1)
    ax.set_xticks(range(len(words)))
    ax.set_xticklabels(words, rotation=45, ha="right", fontsize=9)
    ax.set_yticks([])
    ax.set_xlim(-0.5, len(words) - 0.5)
    ax.set_ylim(-0.3, height + 0.3)
    ax.set_title(title, fontsize=10)
    for side in ("top", "right", "left"):
        ax.spines[side].set_visible(False)


def parse_figure(words, predicted, gold, distances, path: str | Path, layer_names=None, title: str = "") -> None:
    """Predicted tree beside the gold tree, and under them each layer's distances as bars, to PNG or SVG.

    Args:
        words: the sentence.
        predicted, gold: nested-list trees over `words`.
        distances: `[layers][words]` distances (the one used for `predicted` among them).
        path: output file; its suffix chooses the format.
        layer_names: a label per row of `distances`.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = len(distances)
    width = max(6.0, 0.55 * len(words))
    fig = plt.figure(figsize=(2 * width, 3.2 + 1.2 * rows))
    grid = fig.add_gridspec(1 + rows, 2, height_ratios=[3] + [1] * rows)
    _draw(fig.add_subplot(grid[0, 0]), predicted, words, "predicted")
    _draw(fig.add_subplot(grid[0, 1]), gold, words, "gold")
    names = layer_names or [f"layer {i + 1}" for i in range(rows)]
    for row, (values, name) in enumerate(zip(distances, names)):
        ax = fig.add_subplot(grid[1 + row, 0])
        ax.bar(range(len(words)), values, color="tab:blue", width=0.6)
        ax.set_xlim(-0.5, len(words) - 0.5)
        ax.set_ylabel(name, fontsize=8)
        ax.set_xticks(range(len(words)))
        ax.set_xticklabels(words if row == rows - 1 else [], rotation=45, ha="right", fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def arc_art(words: list[str], heads: list[int]) -> str:
    """A dependency tree drawn with text characters: the words along the bottom, each arc a bracket above them from
    its head down to its dependent (`v`), shorter arcs lower, the root's line from the top (`ROOT`). `heads` are
    CoNLL's: 1-based, 0 for the root."""
    starts = list(itertools.accumulate((len(w) + 2 for w in words[:-1]), initial=0))
    centre = [start + len(word) // 2 for start, word in zip(starts, words)]
    arcs = sorted(((d, h - 1) for d, h in enumerate(heads) if h), key=lambda a: abs(centre[a[0]] - centre[a[1]]))
    levels: list[list[tuple[int, int]]] = []  # the columns each level's arcs span, lowest level first
    placed = []
    for dependent, head in arcs:
        lo, hi = sorted((centre[dependent], centre[head]))
        level = next((k for k, taken in enumerate(levels) if all(hi < a or lo > b for a, b in taken)), len(levels))
        if level == len(levels):
            levels.append([])
        levels[level].append((lo, hi))
        placed.append((level, dependent, head))
    rows = len(levels) + 2  # ROOT, the levels (highest first), the arrows
    width = max(starts[-1] + len(words[-1]), max(centre) + 4) if words else 0
    grid = [[" "] * width for _ in range(rows)]

    def down(column: int, first: int) -> None:  # a vertical line from row `first` to the arrows' row
        for row in range(first, rows - 1):
            grid[row][column] = "+" if grid[row][column] in "-+" else "|"

    for level, dependent, head in placed:
        row = rows - 2 - level
        lo, hi = sorted((centre[dependent], centre[head]))
        for column in range(lo, hi + 1):
            grid[row][column] = "+" if grid[row][column] in "|+" else "-"
        grid[row][lo] = grid[row][hi] = "+"
        down(centre[dependent], row + 1)
        down(centre[head], row + 1)
        grid[rows - 1][centre[head]] = grid[rows - 1][centre[head]] if grid[rows - 1][centre[head]] == "v" else "|"
    for dependent, head in enumerate(heads):
        if head == 0:
            root = centre[dependent]
            label = max(0, root - 2)
            grid[0][label : label + 4] = list("ROOT")
            down(root, 1)
        grid[rows - 1][centre[dependent]] = "v"
    lines = ["".join(row).rstrip() for row in grid] + ["  ".join(words)]
    return "\n".join(line for line in lines if line)
