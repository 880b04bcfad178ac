"""The formats other systems write their trees in, one sentence a line, read into `Line`s (matched with the gold
sentences by `treenets.trees.predicted`).

- `bracketed`: one bracketed tree a line, with labels or without: `(X (X a) (X b))` (ED4UCP), `(NT-1 (T-1 a)
  (T-2 b))` (compound-pcfg), `(S (NP the cat) sat)` (treenets), `((a b) c)`.
- `jsonl`: JSON lines of trees, as DIORA's `parse.py` writes them: `{"example_id": "...", "tree": [["the", "cat"],
  "sat"]}`, the tree a nested list of words or a bracketed tree as a string (`"tree": "(S (NP the cat) sat)"`),
  or a bare nested list a line. A list of one word is that word, as a bracket around one word is.
- `spans`: span lists, one sentence a line: `[[0, 5], [1, 3], [1, 2]]` (the words are the treebank's, its
  sentences in order), or `{"words": [...], "spans": [...]}` (also `tokens`, or `sentence` as a string). A span
  `[start, end]` covers words `start` to `end - 1`, as a Python slice, or words `start` to `end`, as the file's
  spans say (`span_ends`: `[0, n]` or `[0, n - 1]` for the whole sentence, `[i, i]` for one word); a file whose
  spans do not say, and that the two readings give other trees, is refused. Spans of one word, and spans given
  twice, add nothing; the whole sentence is the root whether listed or not; spans that cross are an error.

`read_lines` detects the format from the first line (`(`: bracketed; JSON: trees or span lists by what it holds)
unless it is named, and checks every line against it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from treenets.core.errors import TreenetsError
from treenets.trees.ptb import Nested, unwrapped
from treenets.trees.walk import fold, leaves

FORMATS = {
    "bracketed": "bracketed trees, one a line",
    "jsonl": "JSON lines of trees (DIORA's: a nested list of words or a bracketed tree, with an example id)",
    "spans": "span lists, one sentence a line",
}
_TOKEN = re.compile(r"\(|\)|[^\s()]+")


@dataclass
class Line:
    """One sentence's tree as a file gives it: its line `number` and `name` (the example id of a JSON line, or
    ""), and one of `tokens` (a bracketed tree's brackets and items, read with labels or without), `tree` (nested
    lists of words) or `spans` (`(start, end)` pairs, end exclusive, with the `given` words or None: the
    treebank's)."""

    number: int
    name: str = ""
    tokens: list[str] | None = None
    tree: Nested | None = None
    spans: list[tuple[int, int]] | None = None
    given: list[str] | None = None

    def words(self, labelled: bool) -> list[str] | None:
        """The line's words (a bracketed tree's read with labels or without), None for spans without words."""
        if self.tokens is not None:
            return words_of(self.tokens, labelled)
        if self.tree is not None:
            return leaves(self.tree)
        return self.given

    def build(self, labelled: bool, words: list[str], path: str) -> Nested:
        """The line's tree as nested lists over its words (`words`: the treebank's, for spans without words);
        `path`, the file's, for messages."""
        if self.tokens is not None:
            return tree_of(self.tokens, labelled)
        if self.tree is not None:
            return self.tree
        return tree_from_spans(words, self.spans, self.where(path))

    def where(self, path: str) -> str:
        """`path:line` for messages, with the example id where the line has one."""
        return f"{path}:{self.number}" + (f" (example {self.name})" if self.name else "")


def tokens_of(text: str, where: str) -> list[str]:
    """The brackets and items of one bracketed tree, checked to be one tree."""
    tokens = _TOKEN.findall(text)
    depth = 0
    for k, token in enumerate(tokens):
        if token == "(":
            depth += 1
        elif token == ")":
            if depth == 0:
                raise TreenetsError(f"{where}: unexpected ')' (no bracket is open)")
            if tokens[k - 1] == "(":
                raise TreenetsError(f"{where}: empty brackets '()'")
            depth -= 1
        if depth == 0 and k < len(tokens) - 1:
            break
    if depth > 0:
        raise TreenetsError(f"{where}: {depth} bracket(s) never closed; expected one bracketed tree a line")
    if not tokens or tokens[0] != "(" or k < len(tokens) - 1:
        raise TreenetsError(f"{where}: expected one bracketed tree a line, found {text.strip()[:60]!r}")
    return tokens


def can_be_labelled(tokens: list[str]) -> bool:
    """Whether a bracketed tree can be read with labels: no bracket is a label alone, `(a)`."""
    return not any(a == "(" and c == ")" for a, c in zip(tokens, tokens[2:]))


def words_of(tokens: list[str], labelled: bool) -> list[str]:
    """The words of a tree's tokens: every item, or (`labelled`) every item but the first of a bracket."""
    return [t for t, before in zip(tokens, ["", *tokens]) if t not in "()" and not (labelled and before == "(")]


def tree_of(tokens: list[str], labelled: bool) -> Nested | list:
    """The nested-list tree of a line's tokens, read with labels (dropped) or without. A bracket around one word
    is that word (a preterminal); around one bracket, a unary node; a wrapper root (`ptb.WRAPPERS`) around one
    phrase is dropped."""
    # Each open bracket: its trees so far, and whether its items so far are one word and nothing else.
    stack: list[list] = []
    root_label = ""
    for k, token in enumerate(tokens):
        if token == "(":
            stack.append([[], True, 0])
        elif token == ")":
            children, one_word, items = stack.pop()
            tree = children[0] if one_word and items == 1 else children
            if not stack:
                return unwrapped(tree, root_label) if labelled else tree
            frame = stack[-1]
            frame[0].append(tree)
            frame[1], frame[2] = False, frame[2] + 1
        elif labelled and tokens[k - 1] == "(":
            if len(stack) == 1:
                root_label = token
        else:
            frame = stack[-1]
            frame[0].append(token)
            frame[1], frame[2] = frame[2] == 0, frame[2] + 1
    raise AssertionError("unbalanced tokens")  # `tokens_of` checked them


def tree_from_spans(words: list[str], spans: list[tuple[int, int]], where: str) -> Nested:
    """The tree over `words` whose phrases are `spans` (`(start, end)`, end exclusive; spans of one word and
    repeated ones add nothing, the whole sentence is the root).

    Raises:
        TreenetsError: naming `where` and the spans when two of them cross, or one lies outside the sentence.
    """
    n = len(words)
    for start, end in spans:
        if not 0 <= start < end <= n:
            raise TreenetsError(f"{where}: span [{start}, {end}] lies outside the sentence of {n} words "
                                f"(expected 0 <= start < end <= {n})")
    if n == 1:
        return words[0]
    order = sorted({(s, e) for s, e in spans if e - s > 1} | {(0, n)}, key=lambda span: (span[0], -span[1]))
    inside: dict[tuple[int, int], list] = {span: [] for span in order}
    open_spans: list[tuple[int, int]] = []
    for span in order:
        while open_spans and open_spans[-1][1] <= span[0]:
            open_spans.pop()
        if open_spans:
            parent = open_spans[-1]
            if span[1] > parent[1]:
                raise TreenetsError(f"{where}: spans [{parent[0]}, {parent[1]}] and [{span[0]}, {span[1]}] cross "
                                    "(no tree has both)")
            inside[parent].append(span)
        open_spans.append(span)
    built: dict[tuple[int, int], list] = {}
    for span in reversed(order):  # children before their parents, without recursion
        items, position = [], span[0]
        for child in inside[span]:
            items += words[position : child[0]]
            items.append(built.pop(child))
            position = child[1]
        built[span] = items + words[position : span[1]]
    return built[(0, n)]


def _nested(value, where: str) -> Nested:
    """A JSON tree (nested lists of words) checked, a list of one word read as that word."""
    def leaf(item):
        if not isinstance(item, str) or not item or item.split() != [item]:
            raise TreenetsError(f"{where}: expected a tree of words (nested lists of strings without spaces), "
                                f"found {json.dumps(item)[:40]}")
        return item

    def node(_, children: list):
        if not children:
            raise TreenetsError(f"{where}: empty list in the tree (expected nested lists of words)")
        return children[0] if len(children) == 1 and isinstance(children[0], str) else children

    return fold(value, leaf, node) if isinstance(value, list) else leaf(value)


def _span_pairs(value, where: str) -> list[tuple[int, int]]:
    if not isinstance(value, list) or not all(
            isinstance(pair, list) and len(pair) == 2 and all(type(x) is int for x in pair) for pair in value):
        raise TreenetsError(f"{where}: expected a span list, [[start, end], ...] of whole numbers, found "
                            f"{json.dumps(value)[:60]}")
    return [(start, end) for start, end in value]


def _is_span_list(value) -> bool:
    return isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 and all(type(x) is int for x in p)
                                           for p in value)


def _json_line(text: str, number: int, path: str, fmt: str) -> Line:
    """One JSON line as a `Line` of format `fmt` (`jsonl` or `spans`)."""
    where = f"{path}:{number}"
    try:
        value = json.loads(text)
    except RecursionError:
        raise TreenetsError(f"{where}: the JSON nests too deep to read") from None
    except json.JSONDecodeError as exc:
        raise TreenetsError(f"{where}: not JSON ({exc.msg} at character {exc.pos + 1}); expected "
                            f"{FORMATS[fmt]}") from None
    name = ""
    if isinstance(value, dict):
        name = str(value.get("example_id", value.get("id", "")))
        key = "tree" if fmt == "jsonl" else "spans"
        if key not in value:
            raise TreenetsError(f"{where}: no {key!r} in the object (keys: {', '.join(map(str, value))[:80]}); "
                                f"expected {FORMATS[fmt]}")
        body = value[key]
    else:
        body = value
    where = Line(number, name).where(path)
    if fmt == "jsonl":
        if isinstance(body, str) and body.lstrip().startswith("("):
            return Line(number, name, tokens=tokens_of(body, where))
        if _is_span_list(body) and body:
            raise TreenetsError(f"{where}: a span list where a tree was expected ({FORMATS['jsonl']}); "
                                "--format spans reads span lists")
        return Line(number, name, tree=_nested(body, where))
    given = value.get("words", value.get("tokens", value.get("sentence"))) if isinstance(value, dict) else None
    if isinstance(given, str):
        given = given.split()
    if given is not None and not (isinstance(given, list) and given and all(
            isinstance(w, str) and w.split() == [w] for w in given)):
        raise TreenetsError(f"{where}: expected the words as a list of strings without spaces, found "
                            f"{json.dumps(given)[:60]}")
    return Line(number, name, spans=_span_pairs(body, where), given=given)


def detect(numbered: list[tuple[int, str]], path: str) -> str:
    """The format of a file from its lines (`(number, text)`): `bracketed` when the first starts with `(`; for JSON
    lines, `spans` or `jsonl` by the first line that says which (an object with `spans` or `tree`, or a list of
    span pairs or of words)."""
    number, first = numbered[0]
    text = first.strip()
    if text.startswith(("(", ")")):
        return "bracketed"
    if not text.startswith(("{", "[")):
        raise TreenetsError(f"{path}:{number}: expected a file of trees: a bracketed tree a line (`(`), or JSON "
                            f"lines of trees or span lists; found {text[:60]!r}")
    for _, line in numbered:
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            return "jsonl"  # (its reader names what is wrong)
        if isinstance(value, dict) and ("spans" in value or "tree" in value):
            return "spans" if "spans" in value else "jsonl"
        if isinstance(value, list) and value:
            return "spans" if _is_span_list(value) else "jsonl"
    return "jsonl"


def read_lines(text: str, path: str, fmt: str = "auto") -> tuple[str, list[Line]]:
    """The format (`fmt`, or detected from the first line when `auto`) and the lines of a file's `text`, blank
    lines skipped.

    Raises:
        TreenetsError: naming the line that is not one tree of the format, or a file without one.
    """
    numbered = [(number, line) for number, line in enumerate(text.split("\n"), start=1) if line.strip()]
    if not numbered:
        raise TreenetsError(f"{path}: no tree in it (expected {FORMATS.get(fmt, 'one bracketed tree a line')})")
    if fmt == "auto":
        fmt = detect(numbered, path)
    if fmt == "bracketed":
        return fmt, [Line(number, tokens=tokens_of(line, f"{path}:{number}")) for number, line in numbered]
    return fmt, [_json_line(line, number, path, fmt) for number, line in numbered]


def span_ends(lines: list[Line], lengths: list[int], path: str) -> tuple[bool, str]:
    """Whether a file's spans give the last word of a span (`[0, n - 1]`, inclusive) rather than the one after it
    (`[0, n]`, a Python slice), and what said so, from the spans of each line over a sentence of `lengths[k]`
    words: a span that ends after the last word (`[i, n]`) says the one after it; a span of one word (`[i, i]`),
    or the whole sentence as `[0, n - 1]` in every line of two words or more, say the last word. Where no span says,
    the reading that makes no spans cross in any line; where both do, the slice if both give the same trees.

    Raises:
        TreenetsError: naming the lines whose spans say one and the other; or, where no span says and both
            readings give trees but other ones, the file and a line they differ in.
    """
    exclusive = next(((line, n) for line, n in zip(lines, lengths) if any(end == n for _, end in line.spans)), None)
    inclusive = next((line for line in lines if any(start == end for start, end in line.spans)), None)
    if inclusive is not None and exclusive is not None:
        raise TreenetsError(f"{exclusive[0].where(path)}: a span ends after the last word (end exclusive, as a "
                            f"slice), where at {inclusive.where(path)} a span ends at its own last word (end "
                            "inclusive); expected one convention in a file")
    if exclusive is not None:
        line, n = exclusive
        start, end = next(span for span in line.spans if span[1] == n)
        return False, f"line {line.number}'s span [{start}, {end}] ends after the last of its {n} words"
    if inclusive is not None:
        start, end = next(span for span in inclusive.spans if span[0] == span[1])
        return True, f"line {inclusive.number}'s span [{start}, {end}] is one word"
    long = [(line, n) for line, n in zip(lines, lengths) if n > 1]
    if long and all((0, n - 1) in line.spans for line, n in long):
        return True, "every line gives its whole sentence as [0, n - 1]"

    def trees(shift: int) -> list | None:  # every line's tree with its ends read `end + shift` (None: spans cross)
        try:
            return [tree_from_spans(list(range(n)), [(start, end + shift) for start, end in line.spans], "")
                    for line, n in zip(lines, lengths)]
        except TreenetsError:
            return None

    as_slices, as_inclusive = trees(0), trees(1)
    if as_slices is None or as_inclusive is None:  # the reading that fits (none: the slices', whose error is said)
        inclusive = as_slices is None and as_inclusive is not None
        return inclusive, f"no span says, and read {'as slices' if inclusive else 'with inclusive ends'} spans cross " \
                          "or lie outside their sentence"
    if as_slices == as_inclusive:
        return False, "no span says, and both readings give the same trees"
    line = next(line for line, one, other in zip(lines, as_slices, as_inclusive) if one != other)
    raise TreenetsError(f"{path}: its spans do not say where a span ends (none ends after its sentence's last word, "
                        "none is one word written [i, i], and not every line gives its whole sentence), and the two "
                        f"readings give other trees (at line {line.number}: {[list(s) for s in line.spans][:4]}); "
                        "expected each line to give its whole sentence, [0, n] (end exclusive, as a slice) or "
                        "[0, n - 1] (inclusive)")
