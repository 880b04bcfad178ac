"""The `treenets` command line: the parser built from the commands (`treenets.commands`, one file each), and `main`,
the one error boundary, which runs a command in its precision and kernel blocks."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from treenets.commands import Command, CommandParser, all_commands
from treenets.core.errors import TreenetsError
from treenets.core.version import __version__

DESCRIPTION = """Tree-structured and tree-inducing recurrent networks (ON-LSTM, ...) in PyTorch.

Data is found through --data DIR, else $TREENETS_DATA, else ../shared/data when it exists, else in
~/.cache/treenets/data (`treenets data download` fills it; `treenets data check` names the folder used)."""


def build_parser() -> argparse.ArgumentParser:
    """The parser of `treenets` and of every command in the registry, with its options."""
    parser = argparse.ArgumentParser(prog="treenets", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"treenets {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an unexpected error (also: TREENETS_DEBUG=1)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=CommandParser)
    for command in all_commands().values():
        command.add_options(commands.add_parser(command.name, help=command.help, description=command.description))
    return parser


def _kernel_builds(command: Command):
    """The block a command runs in: for a long job, one that builds the kernels it runs (`backend.long_job`)."""
    if not command.long_job:
        return contextlib.nullcontext()
    from treenets.nn.backend import long_job

    return long_job()


def _precision(command: Command, args):
    """The autocast block of the command's --precision (none for fp32, nor for a command that opens its own)."""
    if not command.autocast or getattr(args, "precision", "fp32") == "fp32":
        return contextlib.nullcontext()
    from treenets.core.devices import resolve_device
    from treenets.nn.precision import autocast

    return autocast(args.precision, resolve_device(args.device, "--device"))


def _command_parser(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The parser of the command (and subcommand: `data prepare`) that `args` ran, whose usage an error in its
    options shows."""
    while True:
        found = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
        if not found or getattr(args, found[0].dest, None) is None:
            return parser
        parser = found[0].choices[getattr(args, found[0].dest)]


def main(argv: list[str] | None = None) -> int:
    """Run a command; bad input and failed file operations end in one `treenets: error:` line (exit 2), any
    other exception, a bug, in one `treenets: internal error:` line (exit 1) unless debugging is asked for."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    command = all_commands()[args.command]
    if extra and not command.take_extra(args, extra):
        _command_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        written = {dest: getattr(args, dest) for dest in command.outputs if getattr(args, dest, None) is not None}
        if written:  # (zoo imports torch: only when there is something to check)
            from treenets.zoo.model_folder import refuse_model_folder

            for dest, path in written.items():
                refuse_model_folder(path, f"--{dest}")
        if command.sets_threads and hasattr(args, "threads"):
            from treenets.core.devices import set_threads

            set_threads(args.threads)
        with _precision(command, args), _kernel_builds(command):
            code = command.run(args)
        sys.stdout.flush()  # here, so that a reader gone away is met below rather than at the interpreter's exit
        return code
    except BrokenPipeError:
        # The reader of the output stopped reading (`treenets configs | head`): end quietly, as other command-line
        # tools do, with nothing more written to the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except TreenetsError as exc:
        print(f"treenets: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("treenets: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug or os.environ.get("TREENETS_DEBUG") == "1":
            raise
        if isinstance(exc, OSError):  # a path the user gave: a read-only folder, a file where a folder belongs, ...
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"treenets: error: {where}{exc.strerror or exc}", file=sys.stderr)
            return 2
        message = (str(exc).strip().splitlines() or [""])[0]
        print(f"treenets: internal error: {type(exc).__name__}: {message} (run with --debug or TREENETS_DEBUG=1 "
              "for the traceback)", file=sys.stderr)
        return 1
