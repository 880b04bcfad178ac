"""Where a command's lines go. Its results (trees, JSON lines, tables, the files it wrote) go to stdout, with
`print`; every other line (a note, progress, a timing, a cache path, a warning) goes to stderr, with `note`. So
`treenets ... > file` or a pipe gets the results alone, the same from one run to the next, whether or not a
cache was filled before.
"""

from __future__ import annotations

import sys


def note(message: str) -> None:
    """Print a line that is not a result on stderr: beside, never inside, a command's output."""
    print(message, file=sys.stderr, flush=True)
