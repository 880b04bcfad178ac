"""`treenets kernels`: the compiled C++ kernels of the CPU, shown or built (`treenets.nn.backend`)."""

from __future__ import annotations

from treenets.commands import Command, register


@register
class Kernels(Command):
    name, order = "kernels", 140
    help = "show or build the compiled C++ kernels of the CPU"
    description = ("Without ACTION: each kernel the models' folders and the shared layers build (the table names "
                   "them), whether it is built for this machine, this torch installation and these sources, and its "
                   "folder. `build`: build the kernels not "
                   "built yet (about half a minute each, once). Training and the evaluations over a data set (eval, "
                   "parse-eval, syneval, export) build the kernels they run; a parse or a prediction uses the "
                   "built ones and runs the PyTorch code (the same numbers, to float rounding) where they are "
                   "not built, instead of waiting for a compiler.")

    def add_options(self, parser):
        actions = parser.add_subparsers(dest="kernels_command", metavar="ACTION")
        build = actions.add_parser("build", help="build the kernels not built yet (about half a minute each)")
        build.add_argument("names", nargs="*", metavar="NAME", help="kernels to build (default: all)")

    def run(self, args):
        from treenets.nn import backend

        names = getattr(args, "names", ())
        if args.kernels_command == "build":
            backend.build_kernels(names)
        print(backend.kernels_table(names))
        return 0
