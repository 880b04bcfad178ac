"""`treenets sample`: sentences drawn from a trained grammar, with their trees (`GrammarModel.sample`)."""

from __future__ import annotations

import argparse
import json
import secrets
import sys

from treenets.commands import Command, register
from treenets.commands.options import MODEL_HELP, add_device, add_threads, positive_int

SEEDS = 1 << 64  # torch's generators take seeds 0 .. 2^64 - 1


def seed_number(text: str) -> int:
    """An argparse type: a generator's seed, a whole number from 0 to 2^64 - 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value < SEEDS:
        raise argparse.ArgumentTypeError(f"{value}: expected a seed from 0 to 2^64 - 1")
    return value


def sentence_length(text: str) -> int:
    """An argparse type: the longest sentence to draw, at least 2 words (a grammar's root spans two or more)."""
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"{value}: expected at least 2 (a grammar's root is a nonterminal, over "
                                         "two or more words)")
    return value


@register
class Sample(Command):
    name, order = "sample", 55
    help = "draw sentences, and the trees they were drawn with, from a trained grammar"
    description = ("Draw sentences from a grammar (a model of the pcfg task) top-down: the root's nonterminal, each "
                   "nonterminal's two children, each preterminal's word (a Compound PCFG first draws each sentence's "
                   "z from its prior, N(0, I)). Prints one sentence a line; with --tree each one's labelled tree, "
                   "bracketed and drawn as text as parse draws a grammar's tree, with its log-probability; with "
                   "--json one JSON object a line. A tree longer than --max-length words is drawn again. The same "
                   "--seed, -n and --max-length give the same sentences; without --seed, a seed is chosen and named "
                   "on stderr.")

    def add_options(self, parser):
        parser.add_argument("checkpoint", metavar="MODEL", help="a grammar (a model of the pcfg task): " + MODEL_HELP)
        parser.add_argument("-n", dest="count", type=positive_int, default=1, metavar="N",
                            help="how many sentences to draw (default: 1)")
        parser.add_argument("--seed", type=seed_number, metavar="S",
                            help="the seed of the draws, 0 to 2^64 - 1 (default: a new one, named on stderr)")
        parser.add_argument("--max-length", type=sentence_length, default=100, metavar="L",
                            help="draw a tree of more than L words again (default: 100)")
        shown = parser.add_mutually_exclusive_group()
        shown.add_argument("--tree", action="store_true",
                           help="print each sentence's labelled tree: bracketed, drawn as text, then with its "
                                "labels (NT-k the nonterminals, T-k the preterminals) and log p(words, tree)")
        shown.add_argument("--json", action="store_true",
                           help="print one JSON object per sentence and line: words, tree (bracketed), "
                                "labelled_tree, spans ([start, end inclusive, nonterminal]), tags (each word's "
                                "preterminal), log_prob (log p(words, tree), natural log)")
        add_device(parser, default="cpu", default_text="cpu")
        add_threads(parser)

    def run(self, args):
        print_samples(args.checkpoint, args.count, args.seed, args.max_length, args.tree, args.json, args.device)
        return 0


def print_samples(ref: str, count: int, seed: int | None = None, max_length: int = 100, tree: bool = False,
                  as_json: bool = False, device="cpu") -> None:
    """`treenets sample`: `count` sentences drawn from the grammar `ref`, one a line; with `tree` each one's tree as
    `treenets parse` draws a grammar's (bracketed, drawn as text, labelled); with `as_json` one JSON object a line.
    The seed (chosen when None) and the trees drawn again for `max_length` are named on stderr."""
    from treenets.core.console import note
    from treenets.core.errors import TreenetsError
    from treenets.core.limits import MAX_TREE_DEPTH
    from treenets.predictors import Predictor
    from treenets.predictors.pcfg import GrammarModel
    from treenets.trees.draw import ascii_art, bracketed
    from treenets.trees.walk import depth

    model = Predictor.load(ref, device=device)
    if not isinstance(model, GrammarModel):
        raise TreenetsError(f"{ref}: not a grammar (its model is {model.config.model.name}, of the "
                            f"{model.config.task} task): sample draws sentences from a grammar (a model of the "
                            "pcfg task, e.g. compound-pcfg-ptb or simple-pcfg-ptb)")
    if seed is None:
        seed = secrets.randbelow(1 << 32)
        note(f"seed {seed} (--seed {seed} draws these sentences again)")
    samples = model.sample(count, seed, max_length)
    for number, sample in enumerate(samples, start=1):
        if as_json:
            print(json.dumps({"words": sample.words, "tree": bracketed(sample.nested), **sample.record_fields()},
                             allow_nan=False))
        elif tree:
            print(f"[{number}] {' '.join(sample.words)}")
            print(bracketed(sample.nested))
            levels = depth(sample.nested)
            if levels > MAX_TREE_DEPTH:  # the bracketed tree is the whole answer; a drawing would not fit
                print(f"    (not drawn: {levels} levels deep, drawings stop at {MAX_TREE_DEPTH})")
            else:
                print(ascii_art(sample.nested, sample.words))
            for line in sample.notes():
                print(f"    {line}")
        else:
            print(" ".join(sample.words))
    sys.stdout.flush()
    redrawn = sum(sample.redraws for sample in samples)
    if redrawn:
        trees = "tree" if redrawn == 1 else "trees"
        note(f"{redrawn:,} {trees} longer than --max-length {max_length} words drawn again in their place")
