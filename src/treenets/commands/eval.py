"""`treenets eval`: evaluate checkpoints on a split or a text file (`treenets.workflows.eval.evaluate_models`)."""

from __future__ import annotations

from treenets.commands import Command, register
from treenets.commands.options import (
    MODEL_HELP,
    add_data_root,
    add_device,
    add_overwrite,
    add_precision,
    add_pretokenized,
    add_threads,
    path_name,
    positive_int,
)


@register
class Eval(Command):
    name, order, long_job = "eval", 20, True
    outputs = ("output", "plot")
    help = "evaluate checkpoints (perplexity, Pearson/Spearman/MSE, accuracy)"
    description = ("Evaluate checkpoints on a split of their dataset, or language models on a text file: one JSON "
                   "line each; with several (e.g. seeds), a last line with the mean and standard deviation of "
                   "every metric.")

    def add_options(self, parser):
        parser.add_argument("checkpoints", nargs="+", metavar="MODEL", help=MODEL_HELP)
        parser.add_argument("--split", choices=["valid", "test"], help="which split (default: valid)")
        parser.add_argument("--file", metavar="TXT",
                            help="language models: score a text file instead of a split, one sentence per line "
                                 "(blank lines skipped), each read on its own and normalised as the model's training "
                                 "text")
        parser.add_argument("--corpus", metavar="DIR",
                            help="language models: the split of this corpus instead of the training one (a folder "
                                 "from `treenets data prepare`, or of Mikolov files as the model's config names "
                                 "them); words the model lacks read as <unk>, and counted (unknown)")
        add_pretokenized(parser)
        parser.add_argument("--batch-size", type=positive_int, metavar="N",
                            help="evaluation batch size (default: the config's eval/test batch size)")
        parser.add_argument("--plot", type=path_name, metavar="PNG",
                            help="for metrics by group (logic: accuracy by number of operators), draw every "
                                 "checkpoint's values to PNG")
        parser.add_argument("--output", type=path_name, metavar="DIR",
                            help="also write every value to DIR/eval.json and an HTML report, DIR/index.html: a new "
                                 "or empty folder, or one holding an earlier report (replaced)")
        add_overwrite(parser, "--output")
        add_precision(parser)
        add_device(parser)
        add_threads(parser)
        add_data_root(parser)

    def run(self, args):
        from treenets.workflows.eval import evaluate_models

        evaluate_models(args.checkpoints, args.split, args.file, args.pretokenized, args.batch_size, args.plot,
                        args.output, args.device, args.data, args.corpus, args.overwrite)
        return 0
