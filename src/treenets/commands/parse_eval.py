"""`treenets parse-eval`: score a model's induced trees, or any parser's, against a treebank
(`treenets.workflows.parse_eval.evaluate_parsing`)."""

from __future__ import annotations

from treenets.commands import Command, register
from treenets.commands.options import (
    MODEL_HELP,
    add_conventions,
    add_data_root,
    add_decode,
    add_device,
    add_overwrite,
    add_precision,
    add_threads,
    add_tree_files,
    add_treebank,
    gold_treebank,
    path_name,
    positive_int,
)


@register
class ParseEval(Command):
    name, order, long_job = "parse-eval", 60, True
    outputs = ("output",)
    help = "score induced trees, or any parser's trees, against a treebank, beside the baselines"
    description = ("Score the trees of each system against a treebank: a language model's (induced for every "
                   "sentence) or any parser's (a file of bracketed trees, one a line, matched with the treebank's "
                   "sentences by their words), and dependencies where a system gives them (a model that induces "
                   "them, a CoNLL file). By default: sentence-level F1 (the ON-LSTM/PRPN convention), "
                   "corpus-level F1, evalb-style F1 (whole-sentence span counted), per-label recall and average "
                   "depth, beside right- and left-branching, balanced and random trees; --convention scores by the "
                   "literature's other conventions too. With several checkpoints (seeds): mean, std, max and the "
                   "F1 between runs (self-F1). With two systems or more: the paired bootstrap of each pair and "
                   "their agreement.")

    def add_options(self, parser):
        parser.add_argument("checkpoints", nargs="+", metavar="SYSTEM",
                            help="language models (" + MODEL_HELP + "), or files of another parser's trees (- for "
                                 "standard input): one bracketed tree a line, with labels or without ((X (X a) (X "
                                 "b)), ((a b) c)), JSON lines of trees (DIORA's) or of span lists; matched with the "
                                 "treebank's sentences by their words, under the normalisations docs/parsing.md "
                                 "lists (case, numbers, brackets, <unk>); or CoNLL files of dependency trees (.conll, "
                                 ".conllu: the treebank's sentences, matched with them by their words too)")
        add_tree_files(parser)
        parser.add_argument("--gold-dependencies", metavar="FILE",
                            help="a CoNLL file of the treebank's sentences (matched with them by their words) to "
                                 "score dependencies against; default: the treebank's trees converted by Collins' "
                                 "head rules")
        add_treebank(parser)
        add_conventions(parser)
        parser.add_argument("--layer", default="all",
                            help="1-based layer, 'mean', or 'all' (each layer and the mean; default)")
        parser.add_argument("--split", choices=["official", "before"], default="official",
                            help="where the largest distance splits a span (default: official)")
        add_decode(parser)
        parser.add_argument("--output", type=path_name, metavar="DIR",
                            help="write the trees (also in compound-pcfg's format, with the gold trees), "
                                 "per-sentence scores (JSONL), a few figures, summary.json and an HTML report "
                                 "(DIR/index.html: tables, plots, every sentence's trees) to DIR: a new or empty "
                                 "folder, or one holding an earlier report (replaced)")
        add_overwrite(parser, "--output")
        parser.add_argument("--bootstrap", type=positive_int, default=10_000, metavar="N",
                            help="samples of the paired bootstrap between systems (default: 10,000)")
        parser.add_argument("--seed", type=int, default=0, help="the seed of the bootstrap's samples (default: 0)")
        parser.add_argument("--batch-size", type=positive_int, default=64, metavar="N", help="sentences per batch")
        parser.add_argument("--random-draws", type=positive_int, default=5, metavar="N",
                            help="random-tree draws averaged for the random baseline (default: 5)")
        add_precision(parser)
        add_device(parser, default="cpu", default_text="cpu")
        add_threads(parser)
        add_data_root(parser)

    def run(self, args):
        from treenets.workflows.parse_eval import evaluate_parsing

        evaluate_parsing(args.checkpoints, gold_treebank(args), args.layer, args.split, args.output, args.batch_size,
                         args.random_draws, args.device, args.data, args.convention, args.bootstrap, args.seed,
                         args.format, args.drop_punctuation, args.overwrite, args.gold_dependencies, args.decode)
        return 0
