"""The documented limits on what treenets reads, so that a malformed or hostile file is refused with a clear
error (naming the file and line) instead of exhausting memory or the Python stack.

- `MAX_LINE_CHARS`: no line of a text corpus, treebank, SST, SICK or logic file may be longer. The longest
  line of the staged datasets has 1,703 characters; a longer line is a file of another kind (e.g. one without
  line breaks), and reading one sentence of millions of tokens would build a tree or batch of that size.
- `MAX_TREE_DEPTH`: how deep a treebank tree (read into `nltk.Tree`) or a drawn tree (`ascii_art`, `write_svg`)
  may nest. NLTK's tree methods and drawers recurse once or twice per level, so a deeper tree would end in a
  `RecursionError`; the Penn Treebank's deepest tree has 32 levels. treenets' own tree code (reading SST
  trees, parent pointers and logic formulas, building, scoring and batching trees) walks trees without
  recursion and has no depth limit.
"""

from __future__ import annotations

from treenets.core.errors import TreenetsError

MAX_LINE_CHARS = 1_000_000
MAX_TREE_DEPTH = 300


def check_lines(lines: list[str], path) -> list[str]:
    """`lines` (of file `path`, numbered from 1), or an error naming the first longer than `MAX_LINE_CHARS`."""
    if lines and max(map(len, lines)) > MAX_LINE_CHARS:
        lineno, line = next((i, line) for i, line in enumerate(lines, start=1) if len(line) > MAX_LINE_CHARS)
        raise TreenetsError(f"{path}:{lineno}: line of {len(line):,} characters; lines are limited to "
                            f"{MAX_LINE_CHARS:,} (is this a file of the expected kind, with one item per line?)")
    return lines
