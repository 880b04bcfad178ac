"""`treenets check-golden`: compare treenets with the official code's outputs (`treenets.workflows.check_golden`)."""

from __future__ import annotations

from treenets.commands import Command, register


@register
class CheckGolden(Command):
    name, order = "check-golden", 30
    help = "compare treenets with reference outputs of the official code"
    description = ("For each fixture folder (config.json, params.npz, inputs.npz, outputs.npz), rebuild the "
                   "model from the official constructor arguments, run the inputs and compare every output. "
                   "Prints `name  max_abs_err` per output and `PASS k/k` or `FAIL k/n`; exits 0 only if "
                   "every output is within 1e-5, 1 if some differ, 2 for an unusable fixture.")

    def add_options(self, parser):
        parser.add_argument("dirs", nargs="+", metavar="DIR", help="fixture folders")

    def run(self, args):
        from treenets.workflows.check_golden import check_golden_folders

        return 0 if check_golden_folders(args.dirs) else 1
