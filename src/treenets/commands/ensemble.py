"""`treenets ensemble`: the tree of every sentence of a treebank that agrees most with several systems' trees
(`treenets.ensembles.ensemble_treebank`)."""

from __future__ import annotations

from treenets.commands import Command, register
from treenets.commands.options import (
    MODEL_HELP,
    add_data_root,
    add_decode,
    add_device,
    add_precision,
    add_threads,
    add_tree_files,
    add_treebank,
    gold_treebank,
    path_name,
    positive_int,
)


@register
class Ensemble(Command):
    name, order, long_job = "ensemble", 65, True
    help = "combine several systems' trees of a treebank into the trees that agree most with them"
    description = ("For each sentence of the treebank, the tree with the largest total agreement (the sentence F1 "
                   "of the official convention, weighted per system) with the systems' trees (Shayegh et al., ICLR "
                   "2024): generative, the best binary tree over the sentence (a CKY over span scores), or "
                   "selective, the best of the systems' own trees. A system is anything parse-eval reads: a file of "
                   "another parser's trees (aligned with the treebank's sentences by their words, what was matched "
                   "how said on stderr) or a model, which parses the treebank's sentences. Writes one bracketed "
                   "tree a line over the treebank's words, in its order (the sentences no system parsed left out "
                   "and counted), which parse-eval scores; prints each system's agreement with the ensemble.")

    def add_options(self, parser):
        parser.add_argument("systems", nargs="+", metavar="SYSTEM",
                            help="files of trees (any format parse-eval reads; - for standard input) or models: "
                                 + MODEL_HELP)
        add_treebank(parser)
        parser.add_argument("--output", type=path_name, required=True, metavar="FILE",
                            help="the file of the ensemble's trees")
        parser.add_argument("--mode", choices=["generative", "selective"], default="generative",
                            help="generative: the best binary tree (default); selective: the best system tree")
        parser.add_argument("--weights", metavar="W,W,...",
                            help="one weight per system, in order (default: 1 each)")
        add_tree_files(parser)
        add_decode(parser)
        parser.add_argument("--save-as", type=path_name, metavar="DIR",
                            help="also write DIR, the zoo folder of this ensemble of zoo models (ensemble.json, its "
                                 "card and metrics.json, measured on WSJ 22 and WSJ 24 beside each member): `treenets "
                                 "parse DIR` and, registered (models/register.py), `treenets parse NAME` use it")
        parser.add_argument("--summary", default="", help="with --save-as: one line for its card")
        parser.add_argument("--notes", metavar="MD", help="with --save-as: a markdown file for its card's Choice "
                                                           "section (how the members were chosen)")
        parser.add_argument("--batch-size", type=positive_int, default=64, metavar="N", help="sentences per batch")
        add_precision(parser)
        add_device(parser, default="cpu", default_text="cpu")
        add_threads(parser)
        add_data_root(parser)

    def run(self, args):
        from pathlib import Path

        from treenets.ensembles import ensemble_treebank, save_ensemble

        ensemble_treebank(args.systems, gold_treebank(args), args.output, args.mode, args.weights, args.format,
                          args.drop_punctuation, args.batch_size, args.device, args.data, args.decode)
        if args.save_as:
            folder = save_ensemble(args.systems, args.save_as, Path(args.save_as).name, args.summary, args.weights,
                                   args.mode, args.data, args.device, args.notes)
            print(f"ensemble folder: {folder}")
        return 0
