"""`treenets distill`: teachers' trees of a corpus, and a fast parser trained on them (`treenets.workflows.distill`)."""

from __future__ import annotations

import argparse

from treenets.commands import Command, register
from treenets.commands.options import (
    MODEL_HELP,
    add_data_root,
    add_device,
    add_pretokenized,
    path_name,
    positive_int,
)


def shard_spec(text: str) -> tuple[int, int]:
    """`K/N`: shard K (1-based) of N, as (K - 1, N)."""
    try:
        k, n = (int(part) for part in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected K/N, e.g. 2/8 (the second of 8 shards)") from None
    if not 1 <= k <= n:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 1 <= K <= N")
    return k - 1, n


@register
class Distill(Command):
    name, order, long_job = "distill", 67, True
    outputs = ("out",)
    sets_threads = False  # (the student's training reads train.threads)
    help = "teach one fast parser the trees of an ensemble of models (distillation)"
    description = ("Distillation (Shayegh et al., ICLR 2024): the teachers (models, an ensemble, or files of trees "
                   "over the corpus) parse the corpus and their generative ensemble gives one tree per sentence, "
                   "written once to OUT/teachers.txt (in chunks: a killed run continues where it was; shards for "
                   "processes or other machines, merged when all are there); then a student, a span parser (a tree "
                   "CRF over a BiLSTM's span scores), trains on those trees in OUT/run as `treenets train` trains "
                   "(resumed where it was; `treenets export OUT/run/best.pt DIR` makes it a model folder).")

    def add_options(self, parser):
        parser.add_argument("teachers", nargs="+", metavar="TEACHER",
                            help="models (" + MODEL_HELP + "; REF:layer=L, REF:decode=D as in `treenets ensemble`), "
                                 "an ensemble (its folder or zoo name, e.g. ptb-small-ensemble), or files of trees "
                                 "over the corpus, one a line in its order")
        parser.add_argument("--corpus", default="ptb", metavar="TEXT",
                            help="the sentences to parse: ptb (the PTB training text the shipped models read; the "
                                 "default), a text of one sentence a line, or a folder prepared by `treenets data "
                                 "prepare`")
        parser.add_argument("--out", type=path_name, required=True, metavar="DIR",
                            help="the distillation's folder: teachers.txt, teachers.json, run/")
        parser.add_argument("--config", metavar="YAML",
                            help="the student's training config (default: the shipped ptb-distilled; its "
                                 "data.train is set to OUT/teachers.txt)")
        parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                            help="override a value of the student's config, e.g. --set train.epochs=3 (repeatable)")
        parser.add_argument("--mode", choices=["generative", "selective"], default="generative",
                            help="how the teachers' trees combine (default: generative, the best binary tree)")
        parser.add_argument("--weights", metavar="W,W,...", help="one weight per teacher, in order (default: 1 each)")
        parser.add_argument("--workers", type=positive_int, default=1, metavar="N",
                            help="the teachers parse the corpus in N processes (N shards, merged; default 1)")
        parser.add_argument("--shard", type=shard_spec, metavar="K/N",
                            help="parse only shard K of N (the corpus's K-th share) into its own file and stop: "
                                 "for other machines; a run over OUT holding every shard merges them")
        parser.add_argument("--teachers-only", action="store_true", help="stop after the teachers' trees")
        parser.add_argument("--overwrite", action="store_true",
                            help="start again where OUT holds teachers' trees of other teachers or another corpus, "
                                 "or a student's run")
        parser.add_argument("--threads", type=positive_int, metavar="N",
                            help="compute on N threads (each worker's; the student's train.threads)")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar while the student trains")
        add_pretokenized(parser)
        add_device(parser, default="cpu", default_text="cpu")
        add_data_root(parser)

    def run(self, args):
        from treenets.core.devices import set_threads
        from treenets.core.errors import TreenetsError
        from treenets.workflows.distill import distill
        from treenets.workflows.ensemble import parse_weights

        if args.shard is not None and args.workers > 1:
            raise TreenetsError("--shard with --workers: a shard is one process's share (give one)")
        set_threads(args.threads)
        return distill(args.teachers, args.corpus, args.out, args.config, args.overrides, args.shard, args.workers,
                       args.teachers_only, args.pretokenized or None, parse_weights(args.weights,
                                                                                     len(args.teachers)),
                       args.mode, args.device, args.data, args.overwrite, args.threads, not args.no_progress)
