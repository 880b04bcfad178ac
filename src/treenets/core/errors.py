"""The one exception type treenets raises for bad input.

Every message names the file, line, key or field at fault and says what was expected; the CLI prints it
on one line and exits non-zero instead of showing a traceback.
"""


class TreenetsError(Exception):
    """Bad input: a missing or malformed file, an invalid config, an incompatible checkpoint."""
