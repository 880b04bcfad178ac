"""`treenets ensemble`: the tree of every sentence of a treebank that agrees most with several systems' trees
(`treenets.workflows.ensemble.ensemble_treebank`)."""

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
    outputs = ("output",)
    help = "combine several systems' trees of a treebank into the trees that agree most with them"
    description = ("For each sentence of the treebank, the tree with the largest total agreement (the sentence F1 "
                   "of the official convention, weighted per system) with the systems' trees (Shayegh et al., ICLR "
                   "2024): generative, the best binary tree over the sentence (a CKY over span scores), or "
                   "selective, the best of the systems' own trees. A system is anything parse-eval reads: a file of "
                   "another parser's trees (aligned with the treebank's sentences by their words, what was matched "
                   "how said on stderr) or a model, which parses the treebank's sentences. Writes one bracketed "
                   "tree a line over the treebank's words, in its order (the sentences no system parsed left out "
                   "and counted), which parse-eval scores; prints each system's agreement with the ensemble. "
                   "With --choose-on, the ensemble of the systems is chosen on a development treebank first (each "
                   "model's best layer and decoder, then every combination and mode, ranked).")

    def add_options(self, parser):
        parser.add_argument("systems", nargs="+", metavar="SYSTEM",
                            help="files of trees (any format parse-eval reads; - for standard input) or models: "
                                 + MODEL_HELP + "; a model may name how it parses, REF:layer=L and/or "
                                 "REF:decode=D (e.g. onlstm-ptb-small:layer=2, compound-pcfg-ptb:decode=mbr)")
        add_treebank(parser, required=False)
        parser.add_argument("--choose-on", metavar="TREEBANK",
                            help="choose the ensemble on this treebank (a development set, e.g. wsj22): each model "
                                 "under each of its layers and decoders alone, its best kept, then every "
                                 "combination of two systems or more, generative and selective, scored by sentence "
                                 "F1 and ranked (stdout); --output then holds the chosen ensemble's trees of "
                                 "--treebank (default: this treebank), --save-as saves it")
        parser.add_argument("--output", type=path_name, metavar="FILE",
                            help="the file of the ensemble's trees (required without --choose-on)")
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

        from treenets.core.errors import TreenetsError
        from treenets.workflows.ensemble import choose_ensemble, ensemble_treebank, save_ensemble

        if args.choose_on is None and (args.treebank is None or args.output is None):
            raise TreenetsError("ensemble: give --treebank and --output (the treebank whose sentences the systems "
                                "parse, the file of the ensemble's trees), or --choose-on TREEBANK")
        if args.choose_on is not None and args.weights is not None:
            raise TreenetsError("--weights with --choose-on: the combinations are chosen unweighted (choose first, "
                                "then give the chosen members their weights)")
        if args.choose_on is not None:
            args.systems, args.mode = choose_ensemble(args.systems, gold_treebank(args, args.choose_on), args.format,
                                                      args.drop_punctuation, args.batch_size, args.device, args.data)
        if args.output is not None:
            ensemble_treebank(args.systems, gold_treebank(args, args.treebank or args.choose_on), args.output,
                              args.mode, args.weights, args.format, args.drop_punctuation, args.batch_size,
                              args.device, args.data, args.decode)
        if args.save_as:
            folder = save_ensemble(args.systems, args.save_as, Path(args.save_as).name, args.summary, args.weights,
                                   args.mode, args.data, args.device, args.notes)
            print(f"ensemble folder: {folder}")
        return 0
