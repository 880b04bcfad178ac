"""Every command's `--help`, byte for byte as `help_texts.json` holds it, and what its parser makes of each option
(its name in the arguments, type, number of values, default: also those the help does not show): what a user reads
and gets of the command line changes only on purpose.

After such a change, write the fixture again and read its diff: `.venv/bin/python tests/cli/test_help.py`.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from pathlib import Path

import pytest

from treenets.cli import build_parser

FIXTURE = Path(__file__).with_name("help_texts.json")
COLUMNS = "100"  # argparse wraps its help to the terminal's width, $COLUMNS: fixed here
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"  # argparse's layout changes between versions


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()):
    """Every command and subcommand of a parser, as the words that name it (`("data", "check")`)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name)
                yield from _commands(sub, (*prefix, name))


def _parser(parser: argparse.ArgumentParser, command: tuple[str, ...]) -> argparse.ArgumentParser:
    for name in command:
        parser = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[name]
    return parser


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """Each argument of a parser as it parses it: flags, destination, values, constant, default, type, choices,
    whether required."""
    return [repr((action.option_strings, action.dest, action.nargs, action.const, action.default,
                  getattr(action.type, "__name__", action.type), list(action.choices or ()), action.required))
            for action in parser._actions]


def help_texts() -> tuple[dict[str, str], dict[str, list[str]]]:
    """`treenets [COMMAND...] --help`'s standard output, and the options of its parser, by the words of the
    command (`""`: `treenets --help`)."""
    texts, options = {}, {}
    for command in [(), *_commands(build_parser())]:
        parser, out, err = build_parser(), io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), pytest.raises(SystemExit) as info:
            parser.parse_args([*command, "--help"])
        assert info.value.code == 0 and err.getvalue() == "", command
        texts[" ".join(command)] = out.getvalue()
        options[" ".join(command)] = _options(_parser(parser, command))
    return texts, options


def test_every_help_text_is_unchanged(monkeypatch):
    fixture = json.loads(FIXTURE.read_text())
    if fixture["python"] != PYTHON:
        pytest.skip(f"help_texts.json holds Python {fixture['python']}'s argparse layout, this is {PYTHON}")
    monkeypatch.setenv("COLUMNS", COLUMNS)
    texts, options = help_texts()
    assert list(texts) == list(fixture["help"])  # the same commands, listed in the same order
    for command, text in texts.items():
        assert text == fixture["help"][command], f"treenets {command} --help"
        assert options[command] == fixture["options"][command], f"treenets {command}'s options"


if __name__ == "__main__":  # write the fixture from the current command line
    os.environ["COLUMNS"] = COLUMNS
    texts, options = help_texts()
    FIXTURE.write_text(json.dumps({"python": PYTHON, "columns": int(COLUMNS), "help": texts, "options": options},
                                  indent=1) + "\n")
    print(f"wrote {FIXTURE}: {len(texts)} help texts")
