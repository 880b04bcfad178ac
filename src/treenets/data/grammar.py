"""The one message of the readers that check an input against the grammar of its dataset (a logic formula,
`treenets.data.logic.parse_formula`; a ListOps sequence, `treenets.data.listops.read_sequence`): where it was
read, the input, the position (token N, from 1, as written) and what the grammar expected there.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from treenets.core.errors import TreenetsError

SHOWN_TOKENS = 24  # an input of more tokens is shown by those around the position


def excerpt(tokens: Sequence[str], position: int) -> str:
    """`tokens` quoted for a message: all of them, or the `SHOWN_TOKENS` around `position` (1-based)."""
    if len(tokens) <= SHOWN_TOKENS:
        return repr(" ".join(tokens))
    first = min(max(position - SHOWN_TOKENS + 4, 0), len(tokens) - SHOWN_TOKENS)
    last = first + SHOWN_TOKENS
    return repr(("... " if first else "") + " ".join(tokens[first:last]) + (" ..." if last < len(tokens) else ""))


def grammar_error(where: str | None, kind: str, tokens: Sequence[str], position: int, expected: str,
                  known: Collection[str]) -> TreenetsError:
    """The error for `tokens` (a `kind` of input, e.g. "formula") that leave the grammar at token `position`
    (1-based; past the last token: the input ended too soon), which should have been `expected` there; a token
    not in the vocabulary `known` is called unknown. `where` (e.g. the file and line) starts the message."""
    prefix = f"{where}: " if where else ""
    if not tokens:
        return TreenetsError(f"{prefix}empty {kind}; expected {expected}")
    if position > len(tokens):
        return TreenetsError(f"{prefix}{kind} {excerpt(tokens, len(tokens))}: ends at token {len(tokens)}; "
                             f"expected {expected}")
    token = tokens[position - 1]
    what = repr(token) if token in known else f"unknown token {token!r}"
    return TreenetsError(f"{prefix}{kind} {excerpt(tokens, position)}: {what} at token {position}; expected {expected}")
