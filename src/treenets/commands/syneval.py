"""`treenets syneval`: targeted syntactic evaluation of language models (`treenets.workflows.syneval`)."""

from __future__ import annotations

from treenets.commands import Command, register
from treenets.commands.options import (
    MODEL_HELP,
    add_data_root,
    add_device,
    add_precision,
    add_threads,
    path_name,
    positive_int,
)


@register
class Syneval(Command):
    name, order, long_job = "syneval", 80, True
    outputs = ("output",)
    help = "targeted syntactic evaluation (Marvin & Linzen 2018) of language models"
    description = ("Score the minimal pairs of Marvin & Linzen (2018) (syneval/EMNLP2018/templates under the data "
                   "root) with each checkpoint: an item is correct when the grammatical sentence has the higher "
                   "log-probability. Prints, per case of the ON-LSTM paper's Table 3 and per model, the accuracy "
                   "on all pairs, on the pairs without out-of-vocabulary words, and the count of pairs with one; "
                   "NPI triples compare the grammatical sentence with the second, 'intrusive' one (the case's "
                   "row) and with the third, 'ungrammatical' one (the row below).")

    def add_options(self, parser):
        parser.add_argument("checkpoints", nargs="+", metavar="MODEL", help="language models: " + MODEL_HELP)
        parser.add_argument("--cases", nargs="+", metavar="NAME",
                            help="cases to run, e.g. simple prep npi_across (default: all 15)")
        parser.add_argument("--limit", type=positive_int, metavar="N", help="only the first N items of each condition")
        parser.add_argument("--batch-size", type=positive_int, default=256, metavar="N", help="sentences per batch")
        parser.add_argument("--output", type=path_name, metavar="JSON",
                            help="also write every count and accuracy to JSON, and an HTML report beside it (x.json: "
                                 "x.html)")
        add_precision(parser)
        add_device(parser)
        add_threads(parser)
        add_data_root(parser)

    def run(self, args):
        from treenets.workflows import syneval

        syneval.evaluate_models(args.checkpoints, args.cases, args.limit, args.batch_size, args.output, args.device,
                                args.data)
        return 0
