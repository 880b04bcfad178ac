"""`treenets parse`: the trees a model induces for sentences (`treenets.workflows.parse.print_trees`)."""

from __future__ import annotations

from treenets.commands import Command, register
from treenets.commands.options import (
    MODEL_HELP,
    add_decode,
    add_device,
    add_overwrite,
    add_precision,
    add_pretokenized,
    add_threads,
    path_name,
)


@register
class Parse(Command):
    name, order = "parse", 50
    outputs = ("svg",)
    help = "induce trees for sentences with a trained language model or grammar (or an Ordered Memory encoder)"
    description = ("Print the tree a model induces for each sentence, bracketed and drawn as text, or with --json "
                   "one JSON object per sentence and line. A sentence is first normalised into the words of the "
                   "model's training text (the normaliser its config names; for the PTB models: Penn Treebank "
                   "tokens, lower case, numbers as N, punctuation dropped); what the model read is printed. A logic, "
                   "ListOps or sentiment model with an Ordered Memory encoder draws the tree built from its memory "
                   "slots of a formula, a sequence or a sentence (as its predict reads it), with the input's own "
                   "tree where it has one (--json: gold_tree; null for a sentence) and, for a formula, the induced "
                   "tree without its brackets (scored_tree), as its task scores them. A grammar (a model of the "
                   "pcfg task) draws its most probable tree (--decode viterbi) or the tree of the largest summed "
                   "span probabilities (mbr), with each span's nonterminal and each word's preterminal (--json: "
                   "labelled_tree, spans, tags).")

    def add_options(self, parser):
        parser.add_argument("checkpoint", metavar="MODEL",
                            help="a language model, or a logic, ListOps or sentiment model with an Ordered Memory "
                                 "encoder: " + MODEL_HELP)
        parser.add_argument("sentences", nargs="*", help="sentences (quote each one)")
        parser.add_argument("--file", metavar="TXT",
                            help="read sentences from a file, one per line; a line the model cannot read (no word "
                                 "left after normalising, not text) is named on stderr and skipped, and the count "
                                 "said last")
        parser.add_argument("--strict", action="store_true",
                            help="with --file: exit 1 when a line was skipped (the others are parsed all the same)")
        parser.add_argument("--layer", default="default",
                            help="1-based layer whose distances build the tree, 'mean', or 'all' (each layer's tree, "
                                 "then the mean's; default: the model's default, the second layer of ON-LSTM)")
        parser.add_argument("--split", choices=["official", "before"], default="official",
                            help="where the largest distance splits a span (default: official)")
        add_decode(parser)
        parser.add_argument("--ensemble", action="store_true",
                            help="the leading arguments that name models (two or more: zoo names, model folders, "
                                 "checkpoints) are an ensemble: draw the binary tree that agrees most with their "
                                 "trees (as `treenets ensemble` combines them) and each model's agreement with it")
        parser.add_argument("--distances", action="store_true", help="also print every layer's per-word distances")
        parser.add_argument("--svg", type=path_name, metavar="DIR",
                            help="also write one SVG drawing per sentence to DIR: a new or empty folder, or one "
                                 "holding an earlier run's drawings (replaced)")
        add_overwrite(parser, "--svg")
        parser.add_argument("--json", action="store_true",
                            help="print one JSON object per sentence and line: text (the input), tokens (what the "
                                 "model read), unknown (tokens outside its vocabulary), dropped (what of the text it "
                                 "read no token from: each piece's text, start and why), tree (bracketed), layer; "
                                 "trees (every layer's) with --layer all; distances ([layer][token]) with --distances; "
                                 "heads (each token's head, 1-based, 0 the root) for a model that induces dependencies")
        add_pretokenized(parser)
        add_precision(parser)
        add_device(parser, default="cpu", default_text="cpu")
        add_threads(parser)

    def take_extra(self, args, extra):
        # `parse MODEL --layer 2 "a sentence"`: argparse ends the sentences at an option; after the end-of-options
        # marker `--` every argument is a sentence, one starting with `-` too (`-- "-- well, the cat sat"`)
        cut = extra.index("--") if "--" in extra else len(extra)
        before, after = extra[:cut], extra[cut + 1 :]
        if any(a.startswith("-") for a in before):
            return False
        args.sentences += before + after
        return True

    def run(self, args):
        from treenets.workflows.parse import print_trees

        model = args.checkpoint
        if args.ensemble:
            from treenets.zoo.model_folder import names_a_model

            model = [args.checkpoint]
            # the members: the words that name a model, with or without its options (REF:layer=L:decode=D)
            while args.sentences and names_a_model(args.sentences[0].split(":")[0] if ":" in args.sentences[0]
                                                   and "=" in args.sentences[0] else args.sentences[0]):
                model.append(args.sentences.pop(0))
        skipped = print_trees(model, args.sentences, args.file, args.layer, args.split, args.distances,
                              args.svg, args.json, args.pretokenized, args.device, args.overwrite, args.decode)
        return 1 if skipped and args.strict else 0
