"""`treenets metrics`: a run's validation curve (`treenets.core.runlog.print_metrics`)."""

from __future__ import annotations

from treenets.commands import Command, register
from treenets.commands.options import path_name
from treenets.core.runlog import print_metrics


@register
class Metrics(Command):
    name, order = "metrics", 100
    outputs = ("plot",)
    help = "print a run's validation curve, optionally plot it"
    description = "Read RUN/metrics.jsonl and print every evaluation."

    def add_options(self, parser):
        parser.add_argument("run", help="run folder (or its metrics.jsonl)")
        parser.add_argument("--plot", type=path_name, metavar="PNG",
                            help="also draw training and validation perplexity to PNG")

    def run(self, args):
        print_metrics(args.run, args.plot)
        return 0
