"""The `treenets` command line: each command's options, and one call of the library function that does its work
(`COMMANDS`); `main` is the one error boundary. Modules that import torch are imported by the commands that use
them, so that `treenets --help` answers at once.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from dataclasses import asdict

from treenets.console import note
from treenets.data.treebanks import GoldTreebank
from treenets.errors import TreenetsError
from treenets.files import json_text
from treenets.runlog import print_metrics
from treenets.schema import BACKENDS, PRECISIONS
from treenets.trees.ptb import WORD_RULES
from treenets.version import __version__

DESCRIPTION = """Tree-structured and tree-inducing recurrent networks (ON-LSTM, ...) in PyTorch.

Data is found through --data DIR, else $TREENETS_DATA, else ../shared/data when it exists, else in
~/.cache/treenets/data (`treenets data download` fills it; `treenets data check` names the folder used)."""


MODEL_HELP = "checkpoint files (best.pt), model folders (treenets export) or zoo names (treenets models)"


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (argparse names the option and exits 2 otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: expected a positive number")
    return value


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (a free one) to 65535."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{value}: expected a port from 0 (a free one) to 65535")
    return value


def tag_list(text: str) -> tuple[str, ...]:
    """An argparse type: comma-separated POS tags (`PU,-NONE-`), blanks dropped."""
    return tuple(tag.strip() for tag in text.split(",") if tag.strip())


def _add_data(parser):
    parser.add_argument("--data", metavar="DIR", default=None,
                        help="data root (default: $TREENETS_DATA, else ../shared/data when it exists, else "
                             "data/ in the cache: `treenets data check` names it)")


def _add_device(parser, default="auto", default_text="auto"):
    parser.add_argument("--device", default=default,
                        help=f"where to run: auto (cuda if available), cpu, cuda, cuda:N (default: {default_text})")


def _add_threads(parser):
    parser.add_argument("--threads", type=positive_int, metavar="N",
                        help="compute on N threads (default: $TREENETS_THREADS, else every core)")


def _add_precision(parser, default="fp32", default_text="fp32"):
    parser.add_argument("--precision", choices=PRECISIONS, default=default,
                        help="fp32, or bf16: matrix products in bfloat16, the rest in float32 (for CPUs with "
                             f"AVX512-BF16/AMX and for GPUs; default: {default_text})")


def _add_pretokenized(parser):
    parser.add_argument("--pretokenized", action="store_true",
                        help="the text is tokenised already: split it on white space, keeping only the "
                             "vocabulary's case and numbers (a PTB model: lower case, digits as N) (default: "
                             "normalise it as the model's training text, e.g. for a PTB model Penn Treebank "
                             "tokens, lower case, numbers as N, punctuation dropped)")


def convention_list(text: str) -> list[str]:
    """An argparse type: comma-separated names of scoring conventions (`official,kim`), or `all`."""
    from treenets.trees.conventions import CONVENTIONS

    names = list(CONVENTIONS) if text.strip() == "all" else [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONVENTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or repr(text)}: expected conventions among "
                                         f"{', '.join(CONVENTIONS)} (comma-separated), or all")
    return list(dict.fromkeys(names))


def _add_conventions(parser):
    parser.add_argument("--convention", type=convention_list, default=["official"], metavar="NAMES",
                        help="how trees are scored, comma-separated, or all: official (the ON-LSTM/PRPN sentence F1, "
                             "with its corpus and evalb-style F1), kim (Kim et al. 2019, compound-pcfg's "
                             "compare_trees.py), evalb (EVALB, unlabelled), li-micro and li-macro (Li et al. 2020); "
                             "the first is the one systems are compared under (default: official; docs/parsing.md "
                             "gives the rules)")


def _add_treebank(parser):
    parser.add_argument("--treebank", required=True, metavar="PATH",
                        help="treebank file or folder of .mrg files (a path, a path under the data root, or "
                             "nltk-sample, wsj22, wsj24)")
    parser.add_argument("--wsj10", action="store_true", help="only sentences of at most 10 words after filtering")
    parser.add_argument("--max-length", type=positive_int, metavar="N",
                        help="only sentences of at most N words after filtering")
    parser.add_argument("--words", choices=sorted(WORD_RULES), default="ptb",
                        help="which leaves are words, by POS tag: " + "; ".join(
                            f"{rule.name}: {rule.summary}" for rule in WORD_RULES.values()) + " (default: ptb)")
    parser.add_argument("--drop-tags", type=tag_list, metavar="TAGS", default=(),
                        help="comma-separated POS tags whose leaves are dropped too (punctuation or empty elements "
                             "of another treebank), e.g. --drop-tags PU,-NONE-")


def _gold_treebank(args) -> GoldTreebank:
    """The treebank the options of `_add_treebank` name."""
    return GoldTreebank(args.treebank, args.wsj10, args.words, args.drop_tags, args.max_length)


def _add_predict_options(predict):
    """`predict`'s options: the inputs the predictors declare (`Predictor.inputs`), then how to read and run."""
    from treenets.predictors import prediction_inputs

    for spec in prediction_inputs():
        predict.add_argument(spec.option, nargs=spec.values if spec.values > 1 else None, metavar=spec.metavar,
                             help=spec.help)
    predict.add_argument("--json", action="store_true",
                         help="print JSON: what predict prints in any case (one object), as parse --json does")
    _add_pretokenized(predict)
    _add_precision(predict)
    _add_device(predict, default="cpu", default_text="cpu")
    _add_threads(predict)


def _add_listops_options(listops):
    """`data listops`'s options, whose defaults come from `treenets.data.listops` (which imports torch)."""
    from treenets.data.listops import TEST_SIZE, TRAIN_SIZE

    listops.add_argument("--out", metavar="DIR",
                         help="the folder to write (default: listops under the data root, where listops configs look)")
    listops.add_argument("--train", type=positive_int, default=TRAIN_SIZE, metavar="N",
                         help=f"training sequences (default: {TRAIN_SIZE:,})")
    listops.add_argument("--test", type=positive_int, default=TEST_SIZE, metavar="N",
                         help=f"test sequences (default: {TEST_SIZE:,}, as the official test file)")
    listops.add_argument("--seed", type=int, default=0, help="the seed of the draws (default: 0)")
    listops.add_argument("--overwrite", action="store_true", help="replace the files of a data set already in --out")
    _add_data(listops)


class CommandParser(argparse.ArgumentParser):
    """The parser of a command, which can add options when it is first used (`defer`): `predict`'s options come
    from the predictors, which import torch, and neither `treenets --help` nor another command waits for that."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._deferred = []

    def defer(self, add_options) -> None:
        """Call `add_options(self)` before this parser first parses arguments (its `--help` included)."""
        self._deferred.append(add_options)

    def parse_known_args(self, args=None, namespace=None):
        while self._deferred:
            self._deferred.pop(0)(self)
        return super().parse_known_args(args, namespace)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="treenets", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"treenets {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an unexpected error (also: TREENETS_DEBUG=1)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=CommandParser)

    train = commands.add_parser(
        "train", help="train a model from a YAML config",
        description="Train a model from a YAML config file, or a config shipped with treenets given by its name "
                    "(`treenets configs` lists them). Writes last.pt (resumable state), "
                    "best.pt (best validation weights), metrics.jsonl and config.yaml to the run folder. "
                    "SIGINT/SIGTERM save last.pt before exiting. Runs under `torchrun --nproc_per_node=N "
                    "-m treenets train ...` with DistributedDataParallel.")
    train.add_argument("config", nargs="?", help="YAML config file or a shipped config's name (onlstm-ptb-small); "
                                                 "optional with --resume or --init (the saved config is used)")
    train.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="override a config value, e.g. --set optim.lr=10 (repeatable; values are YAML)")
    train.add_argument("--out", metavar="DIR", help="run folder (default: runs/<config name>; with --init and no "
                                                    "config, runs/<model>-init)")
    train.add_argument("--resume", nargs="?", const="", metavar="CHECKPOINT",
                       help="continue from a last.pt (default: <run folder>/last.pt)")
    train.add_argument("--init", metavar="MODEL",
                       help="start from the weights and vocabulary of a trained model (a checkpoint, a model folder "
                            "or a zoo name), with a fresh optimizer and counters, under CONFIG or the model's own: "
                            "fine-tuning, or more epochs for a shipped model")
    train.add_argument("--overwrite", action="store_true",
                       help="start from scratch even if the run folder already holds a checkpoint")
    train.add_argument("--max-steps", type=positive_int, metavar="N",
                       help="stop after N optimizer steps in all, resumed ones included (train.max_steps)")
    train.add_argument("--max-minutes", type=float, metavar="M",
                       help="stop after M minutes of this run (train.max_minutes)")
    train.add_argument("--threads", type=positive_int, metavar="N",
                       help="compute on N threads (train.threads; default: $TREENETS_THREADS, else every core)")
    train.add_argument("--embeddings", metavar="FILE",
                       help="word vectors for relatedness/sentiment: a GloVe-format text file, or a .pth matrix in "
                            "vocabulary order (data.embeddings)")
    train.add_argument("--freeze-embeddings", action="store_true",
                       help="keep the word vectors fixed (model.freeze_embeddings)")
    train.add_argument("--backend", choices=BACKENDS,
                       help="kernels: the C++ CPU kernels where they apply (auto), PyTorch only, the C++ "
                            "kernels required, or steps fused by torch.compile (for GPUs) (train.backend)")
    train.add_argument("--no-progress", action="store_true", help="no progress bar")
    _add_precision(train, default=None, default_text="train.precision of the config, fp32")
    _add_device(train, default=None, default_text="train.device of the config, auto")
    _add_data(train)

    evaluate = commands.add_parser(
        "eval", help="evaluate checkpoints (perplexity, Pearson/Spearman/MSE, accuracy)",
        description="Evaluate checkpoints on a split of their dataset, or language models on a text file: one JSON "
                    "line each; with several (e.g. seeds), a last line with the mean and standard deviation of "
                    "every metric.")
    evaluate.add_argument("checkpoints", nargs="+", metavar="MODEL", help=MODEL_HELP)
    evaluate.add_argument("--split", choices=["valid", "test"], help="which split (default: valid)")
    evaluate.add_argument("--file", metavar="TXT",
                          help="language models: score a text file instead of a split, one sentence per line (blank "
                               "lines skipped), each read on its own and normalised as the model's training text")
    evaluate.add_argument("--corpus", metavar="DIR",
                          help="language models: the split of this corpus instead of the training one (a folder from "
                               "`treenets data prepare`, or of Mikolov files as the model's config names them); "
                               "words the model lacks read as <unk>, and counted (unknown)")
    _add_pretokenized(evaluate)
    evaluate.add_argument("--batch-size", type=positive_int, metavar="N",
                          help="evaluation batch size (default: the config's eval/test batch size)")
    evaluate.add_argument("--plot", metavar="PNG",
                          help="for metrics by group (logic: accuracy by number of operators), draw every checkpoint's "
                               "values to PNG")
    evaluate.add_argument("--output", metavar="DIR",
                          help="also write every value to DIR/eval.json and an HTML report, DIR/index.html")
    _add_precision(evaluate)
    _add_device(evaluate)
    _add_threads(evaluate)
    _add_data(evaluate)

    golden = commands.add_parser(
        "check-golden", help="compare treenets with reference outputs of the official code",
        description="For each fixture folder (config.json, params.npz, inputs.npz, outputs.npz), rebuild the "
                    "model from the official constructor arguments, run the inputs and compare every output. "
                    "Prints `name  max_abs_err` per output and `PASS k/k` or `FAIL k/n`; exits 0 only if "
                    "every output is within 1e-5, 1 if some differ, 2 for an unusable fixture.")
    golden.add_argument("dirs", nargs="+", metavar="DIR", help="fixture folders")

    data_cmd = commands.add_parser("data", help="verify or download datasets",
                                   description="Verify (sizes, sha256) or download the datasets treenets uses.")
    data_sub = data_cmd.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    check = data_sub.add_parser("check", help="verify sizes and checksums of the files present")
    check.add_argument("names", nargs="*", metavar="DATASET", help="datasets to check (default: all)")
    _add_data(check)
    download = data_sub.add_parser(
        "download", help="download missing files, verifying their sha256",
        description="Download the files of datasets that are missing or damaged under the data root, from their "
                    "canonical URLs or from a copy of a data root (--from), each checked against its sha256 and "
                    "renamed into place only then.")
    download.add_argument("names", nargs="*", metavar="DATASET", help="datasets to fetch (default: all)")
    _add_data(download)
    download.add_argument("--from", dest="source", metavar="DIR|URL",
                          help="a copy of a data root to fetch from: a folder, or a URL serving one (default: each "
                               "file's canonical URL)")
    prepare = data_sub.add_parser(
        "prepare", help="turn text files into a prepared corpus that language models train on in constant memory",
        description="Raw or tokenised text (one sentence or document per line; several files; .gz too) into a "
                    "corpus folder: token ids read by memory mapping, vocab.txt and meta.json (docs/data.md). "
                    "Use the folder as a language-model config's data.path.")
    prepare.add_argument("texts", nargs="+", metavar="TEXT", help="training text files")
    prepare.add_argument("--out", required=True, metavar="DIR", help="the corpus folder to write")
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

    listops = data_sub.add_parser(
        "listops", help="write a ListOps data set (train.tsv, test.tsv) with the official generator's settings",
        description="Draw distinct ListOps sequences (Nangia & Bowman 2018) with the settings of the official "
                    "generator (operators MIN, MAX, MED, SM; lists of 2 to 5 arguments nested at most 20 deep) from "
                    "a fixed seed, and write them as the official files write them (label<TAB>sequence, the binary "
                    "tree's brackets included), with meta.json recording the settings, sizes and sha256 of each "
                    "file. A listops config reads the folder (data.path).")
    listops.defer(_add_listops_options)

    parse = commands.add_parser(
        "parse", help="induce trees for sentences with a trained language model (or an Ordered Memory encoder)",
        description="Print the tree a model induces for each sentence, bracketed and drawn as text, or with --json "
                    "one JSON object per sentence and line. A sentence is first normalised into the words of the "
                    "model's training text (the normaliser its config names; for the PTB models: Penn Treebank "
                    "tokens, lower case, numbers as N, punctuation dropped); what the model read is printed. A logic, "
                    "ListOps or sentiment model with an Ordered Memory encoder draws the tree built from its memory "
                    "slots of a formula, a sequence or a sentence (as its predict reads it), with the input's own "
                    "tree where it has one (--json: gold_tree; null for a sentence) and, for a formula, the induced "
                    "tree without its brackets (scored_tree), as its task scores them.")
    parse.add_argument("checkpoint", metavar="MODEL",
                       help="a language model, or a logic, ListOps or sentiment model with an Ordered Memory "
                            "encoder: "
                            + MODEL_HELP)
    parse.add_argument("sentences", nargs="*", help="sentences (quote each one)")
    parse.add_argument("--file", metavar="TXT",
                       help="read sentences from a file, one per line; a line the model cannot read (no word left "
                            "after normalising, not text) is named on stderr and skipped, and the count said last")
    parse.add_argument("--strict", action="store_true",
                       help="with --file: exit 1 when a line was skipped (the others are parsed all the same)")
    parse.add_argument("--layer", default="default",
                       help="1-based layer whose distances build the tree, 'mean', or 'all' (each layer's tree, then "
                            "the mean's; default: the model's default, the second layer of ON-LSTM)")
    parse.add_argument("--split", choices=["official", "before"], default="official",
                       help="where the largest distance splits a span (default: official)")
    parse.add_argument("--distances", action="store_true", help="also print every layer's per-word distances")
    parse.add_argument("--svg", metavar="DIR", help="also write one SVG drawing per sentence to DIR")
    parse.add_argument("--json", action="store_true",
                       help="print one JSON object per sentence and line: text (the input), tokens (what the model "
                            "read), unknown (tokens outside its vocabulary), dropped (what of the text it read no "
                            "token from: each piece's text, start and why), tree (bracketed), layer; trees (every "
                            "layer's) with --layer all; distances ([layer][token]) with --distances")
    _add_pretokenized(parse)
    _add_precision(parse)
    _add_device(parse, default="cpu", default_text="cpu")
    _add_threads(parse)

    parse_eval = commands.add_parser(
        "parse-eval", help="score induced trees, or any parser's trees, against a treebank, beside the baselines",
        description="Score the trees of each system against a treebank: a language model's (induced for every "
                    "sentence) or any parser's (a file of bracketed trees, one a line, matched with the treebank's "
                    "sentences by their words). By default: sentence-level F1 (the ON-LSTM/PRPN convention), "
                    "corpus-level F1, evalb-style F1 (whole-sentence span counted), per-label recall and average "
                    "depth, beside right- and left-branching, balanced and random trees; --convention scores by the "
                    "literature's other conventions too. With several checkpoints (seeds): mean, std, max and the "
                    "F1 between runs (self-F1). With two systems or more: the paired bootstrap of each pair and "
                    "their agreement.")
    parse_eval.add_argument("checkpoints", nargs="+", metavar="SYSTEM",
                            help="language models (" + MODEL_HELP + "), or files of another parser's trees (- for "
                                 "standard input): one bracketed tree a line, with labels or without ((X (X a) (X "
                                 "b)), ((a b) c)), JSON lines of trees (DIORA's) or of span lists; matched with the "
                                 "treebank's sentences by their words, under the normalisations docs/parsing.md "
                                 "lists (case, numbers, brackets, <unk>); or CoNLL files of dependency trees (.conll, "
                                 ".conllu: a sentence per treebank sentence, in its order)")
    parse_eval.add_argument("--format", choices=["auto", "bracketed", "jsonl", "spans"], default="auto",
                            help="the format of the files of trees: bracketed, jsonl (JSON lines of trees: a nested "
                                 "list of words or a bracketed string, with an example id), spans (JSON lines of "
                                 "span lists, [[0, 5], [1, 3], ...], with the words or the treebank's in order); "
                                 "default: detected from the file")
    parse_eval.add_argument("--drop-punctuation", action="store_true",
                            help="a file's trees that keep the punctuation the word rule drops: drop it from them "
                                 "(as DIORA's evalb.py does) instead of refusing the file")
    parse_eval.add_argument("--gold-dependencies", metavar="FILE",
                            help="a CoNLL file of the treebank's sentences (in its order) to score dependencies "
                                 "against; default: the treebank's trees converted by Collins' head rules")
    _add_treebank(parse_eval)
    _add_conventions(parse_eval)
    parse_eval.add_argument("--layer", default="all",
                            help="1-based layer, 'mean', or 'all' (each layer and the mean; default)")
    parse_eval.add_argument("--split", choices=["official", "before"], default="official",
                            help="where the largest distance splits a span (default: official)")
    parse_eval.add_argument("--output", metavar="DIR",
                            help="write the trees (also in compound-pcfg's format, with the gold trees), per-sentence "
                                 "scores (JSONL), a few figures, summary.json and an HTML report (DIR/index.html: "
                                 "tables, plots, every sentence's trees) to DIR: a new or empty folder, or one "
                                 "holding an earlier report (replaced)")
    parse_eval.add_argument("--overwrite", action="store_true",
                            help="with --output: write into a folder holding other files too (those of the names "
                                 "written are replaced, the others kept)")
    parse_eval.add_argument("--bootstrap", type=positive_int, default=10_000, metavar="N",
                            help="samples of the paired bootstrap between systems (default: 10,000)")
    parse_eval.add_argument("--seed", type=int, default=0, help="the seed of the bootstrap's samples (default: 0)")
    parse_eval.add_argument("--batch-size", type=positive_int, default=64, metavar="N", help="sentences per batch")
    parse_eval.add_argument("--random-draws", type=positive_int, default=5, metavar="N",
                            help="random-tree draws averaged for the random baseline (default: 5)")
    _add_precision(parse_eval)
    _add_device(parse_eval, default="cpu", default_text="cpu")
    _add_threads(parse_eval)
    _add_data(parse_eval)

    baselines = commands.add_parser("baselines", help="score the baseline trees against a treebank",
                                    description="Right- and left-branching, balanced and random trees, scored "
                                                "like `parse-eval`.")
    _add_treebank(baselines)
    _add_conventions(baselines)
    baselines.add_argument("--random-draws", type=positive_int, default=5, metavar="N",
                           help="random-tree draws averaged (default: 5)")
    _add_data(baselines)

    syneval = commands.add_parser(
        "syneval", help="targeted syntactic evaluation (Marvin & Linzen 2018) of language models",
        description="Score the minimal pairs of Marvin & Linzen (2018) (syneval/EMNLP2018/templates under the data "
                    "root) with each checkpoint: an item is correct when the grammatical sentence has the higher "
                    "log-probability. Prints, per case of the ON-LSTM paper's Table 3 and per model, the accuracy "
                    "on all pairs, on the pairs without out-of-vocabulary words, and the count of pairs with one; "
                    "NPI triples compare the grammatical sentence with the second, 'intrusive' one (the case's "
                    "row) and with the third, 'ungrammatical' one (the row below).")
    syneval.add_argument("checkpoints", nargs="+", metavar="MODEL", help="language models: " + MODEL_HELP)
    syneval.add_argument("--cases", nargs="+", metavar="NAME",
                         help="cases to run, e.g. simple prep npi_across (default: all 15)")
    syneval.add_argument("--limit", type=positive_int, metavar="N", help="only the first N items of each condition")
    syneval.add_argument("--batch-size", type=positive_int, default=256, metavar="N", help="sentences per batch")
    syneval.add_argument("--output", metavar="JSON",
                         help="also write every count and accuracy to JSON, and an HTML report beside it (x.json: "
                              "x.html)")
    _add_precision(syneval)
    _add_device(syneval)
    _add_threads(syneval)
    _add_data(syneval)

    predict = commands.add_parser(
        "predict", help="score a sentence pair (relatedness), classify a sentence (sentiment) or a formula pair "
                        "(logic), or score a sentence (LM)",
        description="Use a checkpoint on your own input; prints one JSON object: a class with its name (sentiment: "
                    "very negative ... very positive, or negative, positive; logic: the relation), a relatedness score "
                    "with its scale (SICK: 1, completely unrelated, to 5, very related), or a sentence's "
                    "log-probabilities.")
    predict.add_argument("checkpoint", metavar="MODEL", help="a relatedness, sentiment, logic or language model: "
                         + MODEL_HELP)
    predict.defer(_add_predict_options)

    metrics = commands.add_parser("metrics", help="print a run's validation curve, optionally plot it",
                                  description="Read RUN/metrics.jsonl and print every evaluation.")
    metrics.add_argument("run", help="run folder (or its metrics.jsonl)")
    metrics.add_argument("--plot", metavar="PNG", help="also draw training and validation perplexity to PNG")

    export = commands.add_parser(
        "export", help="write a trained model as a model folder (config.json, model.safetensors, vocab.txt, card)",
        description="Write a checkpoint as a model folder in the Hugging Face layout, loadable with "
                    "treenets.load(FOLDER) and by every command: config.json, model.safetensors, vocab.txt, "
                    "metrics.json and a README.md model card. The card holds the run's training figures; with "
                    "--measure it is filled with figures measured on the written files (every held-out split; for "
                    "a language model that parses, every layer on the NLTK sample, WSJ 22 and WSJ 24 and their "
                    "WSJ10 subsets beside the baselines).")
    export.add_argument("checkpoint", metavar="MODEL", help="a checkpoint (best.pt) or model folder")
    export.add_argument("out", metavar="DIR", help="the folder to write: a new or empty folder (or, with --overwrite, "
                                                   "a model folder)")
    export.add_argument("--overwrite", action="store_true",
                        help="replace the model files of an existing model folder (config.json, model.safetensors, "
                             "vocab.txt, metrics.json, README.md); other files in it are kept")
    export.add_argument("--name", help="the model's name in its card (default: the folder's name)")
    export.add_argument("--summary", default="", help="one line for the card: what the model is")
    export.add_argument("--notes", metavar="MD", help="a markdown file for the card's Training section (recipe, "
                                                      "hardware, time, the command that reproduces it)")
    export.add_argument("--config", metavar="YAML", help="the config file that reproduces the model, written as the "
                                                         "folder's config in place of the run's (only its `train` "
                                                         "section may differ: time limits of resumed runs)")
    export.add_argument("--half", action="store_true", help="store the weights in float16 (half the size)")
    export.add_argument("--measure", action="store_true", help="measure the card's figures on the written files")
    _add_device(export, default="cpu", default_text="cpu")
    _add_threads(export)
    _add_data(export)

    models = commands.add_parser("models", help="list the trained models that ship with treenets, or install them",
                                 description="The model zoo: each model's name, task, headline figures, and "
                                             "where it is (the source checkout's models/, the cache, or to "
                                             "download); `treenets models download` installs them.")
    models.add_argument("--json", action="store_true", help="print JSON instead of a table")
    models_sub = models.add_subparsers(dest="models_command", metavar="ACTION")
    models_download = models_sub.add_parser(
        "download", help="install zoo models into the cache, verifying their sha256",
        description="Download zoo models into the cache ($TREENETS_CACHE, default ~/.cache/treenets), where "
                    "every command finds them by name, each file checked against its sha256 and the folder "
                    "renamed into place only when whole; a damaged copy in the cache is replaced. Prints each "
                    "model's folder.")
    models_download.add_argument("names", nargs="*", metavar="NAME", help="models to install (default: all)")
    models_download.add_argument("--from", dest="source", metavar="DIR|URL",
                                 help="a copy of treenets' models/ folder (NAME/FILE under it): a folder, or a URL "
                                      "serving one (default: $TREENETS_MODELS_URL, else the URLs of the registry)")

    configs = commands.add_parser(
        "configs", help="list the configs shipped with treenets, or print or copy one",
        description="The training recipes shipped with treenets (the configs of the shipped models and of the "
                    "papers), which `treenets train NAME` takes by name. Without NAME: list them; with NAME: "
                    "print it, or write a copy to edit (--out).")
    configs.add_argument("name", nargs="?", metavar="NAME", help="a shipped config to print or copy")
    configs.add_argument("--out", metavar="FILE", help="write the copy here (a new .yaml file) instead of printing it")

    kernels = commands.add_parser(
        "kernels", help="show or build the compiled C++ kernels of the CPU",
        description="Without ACTION: each kernel (onlstm, prpn, treelstm), whether it is built for this machine, "
                    "this torch installation and these sources, and its folder. `build`: build the kernels not "
                    "built yet (about half a minute each, once). Training and the evaluations over a data set (eval, "
                    "parse-eval, syneval, export) build the kernels they run; a parse or a prediction uses the "
                    "built ones and runs the PyTorch code (the same numbers, to float rounding) where they are "
                    "not built, instead of waiting for a compiler.")
    kernels_actions = kernels.add_subparsers(dest="kernels_command", metavar="ACTION")
    kernels_build = kernels_actions.add_parser("build",
                                               help="build the kernels not built yet (about half a minute each)")
    kernels_build.add_argument("names", nargs="*", metavar="NAME", help="kernels to build (default: all)")

    serve = commands.add_parser(
        "serve", help="a local web page: type a sentence, see the models' trees, distances and surprisal",
        description="Serve a web page where you type a sentence and see, for one model or two side by side, the tree "
                    "of every layer (split official or before), the syntactic distances under the words, each "
                    "word's surprisal, and links to the reports found in the models' run folders. The page uses "
                    "the JSON API POST /api/parse ({\"sentence\": ..., \"models\": [...]}). Ctrl-C stops it.")
    serve.add_argument("checkpoints", nargs="+", metavar="MODEL", help="language models: " + MODEL_HELP)
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default: 127.0.0.1, this machine only)")
    serve.add_argument("--port", type=port_number, default=8000,
                       help="port to listen on (default: 8000; 0: a free one)")
    _add_device(serve, default="cpu", default_text="cpu")
    _add_precision(serve)
    _add_threads(serve)
    return parser


def _cmd_train(args) -> int:
    from treenets.train import run_training

    overrides = list(args.overrides)  # the options that stand for a config key, after --set
    for option, key in ((args.max_steps, "train.max_steps"), (args.max_minutes, "train.max_minutes"),
                        (args.threads, "train.threads"), (args.device, "train.device"),
                        (args.backend, "train.backend"), (args.precision, "train.precision"),
                        (args.embeddings, "data.embeddings"),
                        (args.freeze_embeddings or None, "model.freeze_embeddings")):
        if option is not None:
            overrides.append(f"{key}={option}")
    return run_training(args.config, overrides, args.out, args.resume, args.overwrite, args.data,
                        progress=not args.no_progress, init=args.init)


def _cmd_eval(args) -> int:
    from treenets.evaluate import evaluate_models

    evaluate_models(args.checkpoints, args.split, args.file, args.pretokenized, args.batch_size, args.plot,
                    args.output, args.device, args.data, args.corpus)
    return 0


def _cmd_check_golden(args) -> int:
    from treenets.golden import check_golden_folders

    return 0 if check_golden_folders(args.dirs) else 1


def _cmd_data(args) -> int:
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
                              min_count=args.min_count, vocab_file=args.vocab, normalize=args.normalize, char=args.char,
                              workers=args.workers, overwrite=args.overwrite, progress=not args.no_progress)
        print(summary(meta, args.out))
        note(speed(meta))
        return 0
    return 0 if data.print_check(args.names or None, args.data) else 1


def _cmd_parse(args) -> int:
    from treenets.parsing import print_trees

    skipped = print_trees(args.checkpoint, args.sentences, args.file, args.layer, args.split, args.distances,
                          args.svg, args.json, args.pretokenized, args.device)
    return 1 if skipped and args.strict else 0


def _cmd_parse_eval(args) -> int:
    from treenets.parsing import evaluate_parsing

    evaluate_parsing(args.checkpoints, _gold_treebank(args), args.layer, args.split, args.output, args.batch_size,
                     args.random_draws, args.device, args.data, args.convention, args.bootstrap, args.seed,
                     args.format, args.drop_punctuation, args.overwrite, args.gold_dependencies)
    return 0


def _cmd_baselines(args) -> int:
    from treenets.parsing import print_baselines

    print_baselines(_gold_treebank(args), args.random_draws, args.data, args.convention)
    return 0


def _cmd_syneval(args) -> int:
    from treenets import syneval

    syneval.evaluate_models(args.checkpoints, args.cases, args.limit, args.batch_size, args.output, args.device,
                            args.data)
    return 0


def _cmd_predict(args) -> int:
    from treenets.predictors import Predictor, prediction_inputs

    given = {spec.name: getattr(args, spec.name) for spec in prediction_inputs()
             if getattr(args, spec.name) is not None}
    result = Predictor.load(args.checkpoint, device=args.device).predict_inputs(given, args.pretokenized)
    print(json_text({k: v for k, v in asdict(result).items() if v is not None}))
    return 0


def _cmd_metrics(args) -> int:
    print_metrics(args.run, args.plot)
    return 0


def _cmd_export(args) -> int:
    from treenets.cards import export_model

    export_model(args.checkpoint, args.out, args.name, args.summary, args.notes, args.half, args.measure,
                 args.device, args.data, args.overwrite, config_file=args.config)
    return 0


def _cmd_models(args) -> int:
    from treenets import zoo

    if args.models_command == "download":
        zoo.download(args.names or None, args.source)
    else:
        zoo.print_models(args.json)
    return 0


def _cmd_configs(args) -> int:
    from treenets.config import copy_config, print_configs

    if args.name is None:
        if args.out is not None:
            raise TreenetsError("--out: give the NAME of the config to copy (`treenets configs` lists them)")
        print_configs()
    else:
        copy_config(args.name, args.out)
    return 0


def _cmd_kernels(args) -> int:
    from treenets.nn import backend

    names = getattr(args, "names", ())
    if args.kernels_command == "build":
        backend.build_kernels(names)
    print(backend.kernels_table(names))
    return 0


def _cmd_serve(args) -> int:
    try:
        from treenets.serve import serve
    except ImportError as exc:  # Starlette and uvicorn are the optional extra `serve`
        raise TreenetsError(f"serve: {exc.name} is not installed (pip install 'treenets[serve]')") from None
    return serve(args.checkpoints, args.host, args.port, args.device, args.precision)


COMMANDS = {"train": _cmd_train, "eval": _cmd_eval, "check-golden": _cmd_check_golden, "data": _cmd_data,
            "parse": _cmd_parse, "parse-eval": _cmd_parse_eval, "baselines": _cmd_baselines, "syneval": _cmd_syneval,
            "predict": _cmd_predict, "metrics": _cmd_metrics, "export": _cmd_export, "models": _cmd_models,
            "kernels": _cmd_kernels, "configs": _cmd_configs, "serve": _cmd_serve}


# The commands that run long enough to pay for building the CPU kernels where they are not built yet (training, the
# evaluations over a data set); the others (a parse, a prediction) run the PyTorch code until then, at once.
LONG_JOBS = {"train", "eval", "parse-eval", "syneval", "export"}


def _kernel_builds(args):
    """The block a command runs in: for `LONG_JOBS`, one that builds the kernels it runs (`backend.long_job`)."""
    if args.command not in LONG_JOBS:
        return contextlib.nullcontext()
    from treenets.nn.backend import long_job

    return long_job()


def _precision(args):
    """The precision block an evaluating command runs in (`train` takes its precision from the config)."""
    # (`serve` opens its block in the threads that answer requests: autocast holds for one thread)
    if args.command in ("train", "serve") or getattr(args, "precision", "fp32") == "fp32":
        return contextlib.nullcontext()
    from treenets.devices import resolve_device
    from treenets.nn.precision import autocast

    return autocast(args.precision, resolve_device(args.device, "--device"))


def _command_parser(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The parser of the command (and subcommand: `data prepare`) that `args` ran, whose usage an error in its
    options shows."""
    while True:
        found = [action for action in parser._actions if isinstance(action, argparse._SubParsersAction)]
        if not found or getattr(args, found[0].dest, None) is None:
            return parser
        parser = found[0].choices[getattr(args, found[0].dest)]


def main(argv: list[str] | None = None) -> int:
    """Run a command; bad input and failed file operations end in one `treenets: error:` line (exit 2), any
    other exception, a bug, in one `treenets: internal error:` line (exit 1) unless debugging is asked for."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and getattr(args, "sentences", None) is not None and not any(a.startswith("-") for a in extra):
        args.sentences += extra  # `parse MODEL --layer 2 "a sentence"`: argparse ends the sentences at an option
    elif extra:
        _command_parser(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        if hasattr(args, "threads") and args.command != "train":  # (train: the config's train.threads)
            from treenets.devices import set_threads

            set_threads(args.threads)
        with _precision(args), _kernel_builds(args):
            code = COMMANDS[args.command](args)
        sys.stdout.flush()  # here, so that a reader gone away is met below rather than at the interpreter's exit
        return code
    except BrokenPipeError:
        # The reader of the output stopped reading (`treenets configs | head`): end quietly, as other command-line
        # tools do, with nothing more written to the closed pipe.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except TreenetsError as exc:
        print(f"treenets: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("treenets: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug or os.environ.get("TREENETS_DEBUG") == "1":
            raise
        if isinstance(exc, OSError):  # a path the user gave: a read-only folder, a file where a folder belongs, ...
            where = f"{exc.filename}: " if exc.filename else ""
            print(f"treenets: error: {where}{exc.strerror or exc}", file=sys.stderr)
            return 2
        message = (str(exc).strip().splitlines() or [""])[0]
        print(f"treenets: internal error: {type(exc).__name__}: {message} (run with --debug or TREENETS_DEBUG=1 "
              "for the traceback)", file=sys.stderr)
        return 1
