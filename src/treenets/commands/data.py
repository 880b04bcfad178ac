"""`treenets data`: verify, download, prepare or generate data sets (`treenets.data`)."""

from __future__ import annotations

from treenets.commands import Command, register
from treenets.commands.options import add_data_root, path_name, positive_int
from treenets.core.console import note


@register
class Data(Command):
    name, order = "data", 40
    outputs = ("out",)
    help = "verify or download datasets"
    description = "Verify (sizes, sha256) or download the datasets treenets uses."

    def add_options(self, parser):
        actions = parser.add_subparsers(dest="data_command", metavar="ACTION", required=True)
        check = actions.add_parser("check", help="verify sizes and checksums of the files present")
        check.add_argument("names", nargs="*", metavar="DATASET", help="datasets to check (default: all)")
        add_data_root(check)
        download = actions.add_parser(
            "download", help="download missing files, verifying their sha256",
            description="Download the files of datasets that are missing or damaged under the data root, from their "
                        "canonical URLs or from a copy of a data root (--from), each checked against its sha256 and "
                        "renamed into place only then.")
        download.add_argument("names", nargs="*", metavar="DATASET", help="datasets to fetch (default: all)")
        add_data_root(download)
        download.add_argument("--from", dest="source", metavar="DIR|URL",
                              help="a copy of a data root to fetch from: a folder, or a URL serving one (default: "
                                   "each file's canonical URL)")
        _add_prepare(actions.add_parser(
            "prepare", help="turn text files into a prepared corpus that language models train on in constant memory",
            description="Raw or tokenised text (one sentence or document per line; several files; .gz too) into a "
                        "corpus folder: token ids read by memory mapping, vocab.txt and meta.json (docs/data.md). "
                        "Use the folder as a language-model config's data.path."))
        listops = actions.add_parser(
            "listops", help="write a ListOps data set (train.tsv, test.tsv) with the official generator's settings",
            description="Draw distinct ListOps sequences (Nangia & Bowman 2018) with the settings of the official "
                        "generator (operators MIN, MAX, MED, SM; lists of 2 to 5 arguments nested at most 20 deep) "
                        "from a fixed seed, and write them as the official files write them (label<TAB>sequence, the "
                        "binary tree's brackets included), with meta.json recording the settings, sizes and sha256 "
                        "of each file. A listops config reads the folder (data.path).")
        listops.defer(_add_listops)

    def run(self, args):
        from treenets import data

        if args.data_command == "download":
            data.download(args.names or None, args.data, args.source)
            return 0
        if args.data_command == "listops":
            from treenets.data.listops import generate, summary

            out = args.out or data.chosen_root(args.data)[0] / "listops"
            record = generate(out, args.train, args.test, args.seed, args.overwrite)
            print(summary(record, out))
            return 0
        if args.data_command == "prepare":
            from treenets.data.prepare import prepare_corpus, speed, summary

            meta = prepare_corpus(args.texts, args.out, valid=args.valid, test=args.test,
                                  split_fraction=args.split_fraction, seed=args.seed, vocab_size=args.vocab_size,
                                  min_count=args.min_count, vocab_file=args.vocab, normalize=args.normalize,
                                  char=args.char, workers=args.workers, overwrite=args.overwrite,
                                  progress=not args.no_progress)
            print(summary(meta, args.out))
            note(speed(meta))
            return 0
        return 0 if data.print_check(args.names or None, args.data) else 1


def _add_prepare(prepare) -> None:
    """`data prepare`'s options."""
    prepare.add_argument("texts", nargs="+", metavar="TEXT", help="training text files")
    prepare.add_argument("--out", type=path_name, required=True, metavar="DIR", help="the corpus folder to write")
    prepare.add_argument("--valid", nargs="+", default=[], metavar="FILE", help="validation text files")
    prepare.add_argument("--test", nargs="+", default=[], metavar="FILE", help="test text files")
    prepare.add_argument("--split-fraction", type=float, metavar="F",
                         help="without --valid/--test: hold out a fraction F of the lines for each (e.g. 0.01)")
    prepare.add_argument("--seed", type=int, default=1, help="the seed of --split-fraction (default: 1)")
    prepare.add_argument("--vocab-size", type=positive_int, metavar="N",
                         help="keep the N most frequent training tokens, <eos> and <unk> included; the rest -> <unk>")
    prepare.add_argument("--min-count", type=positive_int, metavar="K",
                         help="training tokens seen fewer than K times -> <unk>")
    prepare.add_argument("--vocab", metavar="FILE", help="a given vocabulary, one token per line (e.g. a model "
                         "folder's vocab.txt, to evaluate that model on the corpus)")
    prepare.add_argument("--normalize", default="none", metavar="NAME",
                         help="how lines become tokens (treenets.text): ptb (Mikolov's PTB text: lower case, numbers "
                              "as N, punctuation dropped), lower, tokens, treebank, or none (default: split on white "
                              "space, as typed)")
    prepare.add_argument("--char", action="store_true",
                         help="a character-level corpus: each word spelled out, _ between words (as ptb.char)")
    prepare.add_argument("--workers", type=positive_int, metavar="N", help="processes (default: every core)")
    prepare.add_argument("--overwrite", action="store_true", help="replace a corpus already in --out")
    prepare.add_argument("--no-progress", action="store_true", help="no progress bars")


def _add_listops(listops) -> None:
    """`data listops`'s options, whose defaults come from `treenets.data.listops` (which imports torch)."""
    from treenets.data.listops import TEST_SIZE, TRAIN_SIZE

    listops.add_argument("--out", type=path_name, metavar="DIR",
                         help="the folder to write (default: listops under the data root, where listops configs look)")
    listops.add_argument("--train", type=positive_int, default=TRAIN_SIZE, metavar="N",
                         help=f"training sequences (default: {TRAIN_SIZE:,})")
    listops.add_argument("--test", type=positive_int, default=TEST_SIZE, metavar="N",
                         help=f"test sequences (default: {TEST_SIZE:,}, as the official test file)")
    listops.add_argument("--seed", type=int, default=0, help="the seed of the draws (default: 0)")
    listops.add_argument("--overwrite", action="store_true", help="replace the files of a data set already in --out")
    add_data_root(listops)
