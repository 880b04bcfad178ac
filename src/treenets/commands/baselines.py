"""`treenets baselines`: the baseline trees scored against a treebank
(`treenets.workflows.baselines.print_baselines`)."""

from __future__ import annotations

from treenets.commands import Command, register
from treenets.commands.options import add_conventions, add_data_root, add_treebank, gold_treebank, positive_int


@register
class Baselines(Command):
    name, order = "baselines", 70
    help = "score the baseline trees against a treebank"
    description = "Right- and left-branching, balanced and random trees, scored like `parse-eval`."

    def add_options(self, parser):
        add_treebank(parser)
        add_conventions(parser)
        parser.add_argument("--random-draws", type=positive_int, default=5, metavar="N",
                            help="random-tree draws averaged (default: 5)")
        add_data_root(parser)

    def run(self, args):
        from treenets.workflows.baselines import print_baselines

        print_baselines(gold_treebank(args), args.random_draws, args.data, args.convention)
        return 0
