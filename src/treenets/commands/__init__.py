"""The commands of `treenets`, one file each, and the one registry from command name to command.

A command (a subclass of `Command`, decorated with `@register`) declares everything about itself in its file: its
name, its line in `treenets --help` and its description, the options it takes (`add_options`) and what it does
(`run`: a few lines calling the library function that does its work). `treenets.cli` builds the command line from
this registry; adding a command is adding a module to this package (it is found and imported by `all_commands`).
Options that several commands take are defined once, in `treenets.commands.options`.

A command imports the modules that import torch inside `run` (and adds options that need them with
`CommandParser.defer`), so that `treenets --help` and the other commands answer without waiting for torch.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
from functools import cache
from typing import ClassVar


class CommandParser(argparse.ArgumentParser):
    """The parser of a command, which can add options when it is first used (`defer`): `predict`'s options come
    from the predictors, which import torch, and neither `treenets --help` nor another command waits for that."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._deferred = []

    def defer(self, add_options) -> None:
        """Call `add_options(self)` before this parser first parses arguments (its `--help` included)."""
        self._deferred.append(add_options)

    def parse_known_args(self, args=None, namespace=None):
        while self._deferred:
            self._deferred.pop(0)(self)
        return super().parse_known_args(args, namespace)


class Command:
    """A command of `treenets`: `treenets NAME ...` parses its options into an `argparse.Namespace` and runs it.

    Attributes:
        name: the word that runs it.
        help: its line in `treenets --help`.
        description: the opening of `treenets NAME --help`.
        order: where `treenets --help` lists it: by order, then by name (default: after the shipped commands).
        long_job: runs long enough to pay for building the CPU kernels it runs where they are not built yet
            (`backend.long_job`: training, the evaluations over a data set); the others (a parse, a prediction)
            run the PyTorch code until then, at once.
        sets_threads: `main` sets the threads its `--threads` option names before it runs (`train` reads it into
            its config instead).
        autocast: `main` runs it in the autocast block its `--precision` option names (`train` reads it into its
            config; `serve` opens the block in the threads that answer requests: autocast holds for one thread).
        outputs: the options naming what it writes (files or folders; `--output` is `output`): `main` refuses one
            that is or lies in a model folder before it runs (`treenets.zoo.model_folder.refuse_model_folder`).
    """

    name: ClassVar[str]
    help: ClassVar[str]
    description: ClassVar[str]
    order: ClassVar[int] = 1000
    long_job: ClassVar[bool] = False
    sets_threads: ClassVar[bool] = True
    autocast: ClassVar[bool] = True
    outputs: ClassVar[tuple[str, ...]] = ()

    def add_options(self, parser: CommandParser) -> None:
        """Add the command's arguments and options (and subcommands: `data check`) to its parser."""

    def take_extra(self, args: argparse.Namespace, extra: list[str]) -> bool:
        """Take arguments the parser left over into `args`, or refuse them (False: `main` says they are not
        recognised)."""
        return False

    def run(self, args: argparse.Namespace) -> int:
        """Do the command's work; returns the exit status."""
        raise NotImplementedError


_COMMANDS: dict[str, Command] = {}


def register(command: type[Command]) -> type[Command]:
    """Class decorator: add (an instance of) `command` to the registry under `command.name`."""
    if command.name in _COMMANDS and type(_COMMANDS[command.name]) is not command:
        raise ValueError(f"two commands are named {command.name!r}: {type(_COMMANDS[command.name])} and {command}")
    _COMMANDS[command.name] = command()
    return command


@cache
def _import_command_modules() -> None:
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{module.name}")


def all_commands() -> dict[str, Command]:
    """Command name -> command, for every command module of this package, in the order `treenets --help` lists
    them."""
    _import_command_modules()
    return dict(sorted(_COMMANDS.items(), key=lambda item: (item[1].order, item[0])))
