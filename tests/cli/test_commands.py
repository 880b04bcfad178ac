"""The registry of commands: a command is one file in `treenets/commands/`, found, listed, parsed and run by the
command line with no other file edited."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import treenets
from treenets import commands
from treenets.cli import build_parser
from treenets.commands import Command, all_commands, register

GREET = '''"""`treenets greet`: a throwaway command, the whole of it."""

from treenets.commands import Command, register
from treenets.commands.options import positive_int
from treenets.core.errors import TreenetsError


@register
class Greet(Command):
    name = "greet"
    help = "greet someone, a few times"
    description = "Print a greeting, once a line."

    def add_options(self, parser):
        parser.add_argument("who", help="whom to greet")
        parser.add_argument("--times", type=positive_int, default=1, metavar="N", help="how many greetings")

    def run(self, args):
        if args.who == "nobody":
            raise TreenetsError("greet: nobody to greet")
        for _ in range(args.times):
            print(f"hello, {args.who}")
        return 0
'''


def test_adding_a_command_is_one_file(tmp_path):
    """A module dropped into a copy of the package's `commands/` is a command of that copy's `treenets`: listed in
    `treenets --help`, with its options in its own `--help`, run, its bad values refused by argparse and its errors
    by the error boundary; no other file of the copy differs from the source."""
    copy = tmp_path / "treenets"
    shutil.copytree(Path(treenets.__file__).parent, copy, symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "commands" / "greet.py").write_text(GREET)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "100"}

    def treenets_(*argv):
        return subprocess.run([sys.executable, "-m", "treenets", *argv], env=env, capture_output=True, text=True,
                              cwd=tmp_path)

    listed = treenets_("--help")
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^    greet +greet someone, a few times$", listed.stdout, re.MULTILINE)
    assert listed.stdout.index("    serve ") < listed.stdout.index("    greet ")  # after the shipped commands
    own = treenets_("greet", "--help")
    assert own.returncode == 0 and own.stdout.startswith("usage: treenets greet [-h] [--times N] who\n")
    assert "Print a greeting, once a line." in own.stdout and "--times N   how many greetings" in own.stdout
    ran = treenets_("greet", "world", "--times", "2")
    assert (ran.returncode, ran.stdout, ran.stderr) == (0, "hello, world\nhello, world\n", "")
    refused = treenets_("greet", "world", "--times", "0")
    assert refused.returncode == 2 and "treenets greet: error: argument --times: 0: expected a positive number" \
        in refused.stderr
    failed = treenets_("greet", "nobody")
    assert (failed.returncode, failed.stdout, failed.stderr) == (2, "", "treenets: error: greet: nobody to greet\n")
    extra = treenets_("greet", "world", "again")
    assert extra.returncode == 2 and "treenets greet: error: unrecognized arguments: again" in extra.stderr


def test_commands_are_listed_by_order_then_name(monkeypatch):
    class Zeta(Command):
        name, help, description = "zeta", "z", "Z."

    class Alpha(Command):
        name, help, description = "alpha", "a", "A."

    class First(Command):
        name, help, description, order = "first", "f", "F.", 0

    monkeypatch.setattr(commands, "_COMMANDS", dict(all_commands()))  # the registry is restored afterwards
    for command in (Zeta, Alpha, First):
        register(command)
    names = list(all_commands())
    assert names[0] == "first" and names[-2:] == ["alpha", "zeta"] and names[1:3] == ["train", "eval"]
    usage = build_parser().format_help()
    assert usage.index("    first ") < usage.index("    train ") < usage.index("    alpha ") < usage.index("    zeta ")


def test_two_commands_of_one_name_are_refused(monkeypatch):
    class OtherMetrics(Command):
        name, help, description = "metrics", "m", "M."

    monkeypatch.setattr(commands, "_COMMANDS", dict(all_commands()))
    with pytest.raises(ValueError, match="two commands are named 'metrics'"):
        register(OtherMetrics)
