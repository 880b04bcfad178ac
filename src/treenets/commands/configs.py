"""`treenets configs`: the configs shipped with treenets, listed, printed or copied (`treenets.config`)."""

from __future__ import annotations

from treenets.commands import Command, register
from treenets.commands.options import path_name
from treenets.core.errors import TreenetsError


@register
class Configs(Command):
    name, order = "configs", 130
    outputs = ("out",)
    help = "list the configs shipped with treenets, or print or copy one"
    description = ("The training recipes shipped with treenets (the configs of the shipped models and of the "
                   "papers), which `treenets train NAME` takes by name. Without NAME: list them; with NAME: "
                   "print it, or write a copy to edit (--out).")

    def add_options(self, parser):
        parser.add_argument("name", nargs="?", metavar="NAME", help="a shipped config to print or copy")
        parser.add_argument("--out", type=path_name, metavar="FILE",
                            help="write the copy here (a new .yaml file) instead of printing it")

    def run(self, args):
        from treenets.config import copy_config, print_configs

        if args.name is None:
            if args.out is not None:
                raise TreenetsError("--out: give the NAME of the config to copy (`treenets configs` lists them)")
            print_configs()
        else:
            copy_config(args.name, args.out)
        return 0
