"""The `treenets` command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from dataclasses import asdict
from pathlib import Path

from treenets.errors import TreenetsError
from treenets.files import json_text
from treenets.schema import BACKENDS, PRECISIONS
from treenets.trees.ptb import WORD_RULES

DESCRIPTION = """Tree-structured and tree-inducing recurrent networks (ON-LSTM, ...) in PyTorch.

Data is found through --data DIR, else $TREENETS_DATA, else ../shared/data when it exists."""


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


def _add_data(parser):
    parser.add_argument("--data", metavar="DIR", default=None,
                        help="data root (default: $TREENETS_DATA, else ../shared/data when it exists)")


def _add_device(parser, default="auto", default_text="auto"):
    parser.add_argument("--device", default=default,
                        help=f"where to run: auto (cuda if available), cpu, cuda, cuda:N (default: {default_text})")


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


def _add_treebank(parser):
    parser.add_argument("--treebank", required=True, metavar="PATH",
                        help="treebank file or folder of .mrg files (a path, a path under the data root, or "
                             "nltk-sample, wsj22, wsj24)")
    parser.add_argument("--wsj10", action="store_true", help="only sentences of at most 10 words after filtering")
    parser.add_argument("--words", choices=sorted(WORD_RULES), default="ptb",
                        help="which leaves are words, by POS tag: " + "; ".join(
                            f"{rule.name}: {rule.summary}" for rule in WORD_RULES.values()) + " (default: ptb)")
    parser.add_argument("--drop-tags", metavar="TAGS", default="",
                        help="comma-separated POS tags whose leaves are dropped too (punctuation or empty elements "
                             "of another treebank), e.g. --drop-tags PU,-NONE-")


def _gold_sentences(args):
    """The treebank of `--treebank` read with the rule of `--words` and `--drop-tags`: its path, sentences and
    a line saying which words were kept; an error when no sentence has a phrase to score."""
    from treenets.data.treebanks import resolve_treebank
    from treenets.trees.evaluation import check_scorable
    from treenets.trees.ptb import load_gold

    rule = WORD_RULES[args.words]
    extra = [tag for tag in args.drop_tags.split(",") if tag.strip()]
    if extra:
        rule = rule.dropping(tag.strip() for tag in extra)
    path = resolve_treebank(args.treebank, args.data)
    sentences = load_gold(path, wsj10=args.wsj10, rule=rule)
    check_scorable(sentences, f"{path}{' (WSJ10)' if args.wsj10 else ''}")
    return path, sentences, f"words: {rule.name} ({rule.summary})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="treenets", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    from treenets import __version__

    parser.add_argument("--version", action="version", version=f"treenets {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help="show the traceback of an unexpected error (also: TREENETS_DEBUG=1)")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    train = commands.add_parser(
        "train", help="train a model from a YAML config",
        description="Train a model from a YAML config (see configs/). Writes last.pt (resumable state), "
                    "best.pt (best validation weights), metrics.jsonl and config.yaml to the run folder. "
                    "SIGINT/SIGTERM save last.pt before exiting. Runs under `torchrun --nproc_per_node=N "
                    "-m treenets train ...` with DistributedDataParallel.")
    train.add_argument("config", nargs="?", help="YAML config file; optional with --resume (the saved config is used)")
    train.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="override a config value, e.g. --set optim.lr=10 (repeatable; values are YAML)")
    train.add_argument("--out", metavar="DIR", help="run folder (default: runs/<config name>)")
    train.add_argument("--resume", nargs="?", const="", metavar="CHECKPOINT",
                       help="continue from a last.pt (default: <run folder>/last.pt)")
    train.add_argument("--overwrite", action="store_true",
                       help="start from scratch even if the run folder already holds a checkpoint")
    train.add_argument("--max-steps", type=positive_int, metavar="N",
                       help="stop after N optimizer steps in all, resumed ones included (train.max_steps)")
    train.add_argument("--max-minutes", type=float, metavar="M",
                       help="stop after M minutes of this run (train.max_minutes)")
    train.add_argument("--threads", type=positive_int, metavar="N", help="torch intra-op threads (train.threads)")
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
    download = data_sub.add_parser("download", help="download missing files, verifying their sha256")
    download.add_argument("names", nargs="*", metavar="DATASET", help="datasets to fetch (default: all)")
    download.add_argument("--data", metavar="DIR", required=True, help="where to put them (the data root)")

    parse = commands.add_parser(
        "parse", help="induce trees for sentences with a trained language model",
        description="Print the tree a model induces for each sentence, bracketed and drawn as text, or with --json "
                    "one JSON object per sentence and line. A sentence is first normalised into the words of the "
                    "model's training text (the normaliser its config names; for the PTB models: Penn Treebank "
                    "tokens, lower case, numbers as N, punctuation dropped); what the model read is printed.")
    parse.add_argument("checkpoint", metavar="MODEL", help="a language model: " + MODEL_HELP)
    parse.add_argument("sentences", nargs="*", help="sentences (quote each one)")
    parse.add_argument("--file", metavar="TXT", help="read sentences from a file, one per line")
    parse.add_argument("--layer", default="default",
                       help="1-based layer whose distances build the tree, 'mean', or 'all' (each layer's tree, then "
                            "the mean's; default: the model's default, the second layer of ON-LSTM)")
    parse.add_argument("--split", choices=["official", "before"], default="official",
                       help="where the largest distance splits a span (default: official)")
    parse.add_argument("--distances", action="store_true", help="also print every layer's per-word distances")
    parse.add_argument("--svg", metavar="DIR", help="also write one SVG drawing per sentence to DIR")
    parse.add_argument("--json", action="store_true",
                       help="print one JSON object per sentence and line: text (the input), tokens (what the model "
                            "read), unknown (tokens outside its vocabulary), tree (bracketed), layer; trees (every "
                            "layer's) with --layer all; distances ([layer][token]) with --distances")
    _add_pretokenized(parse)
    _add_precision(parse)
    _add_device(parse, default="cpu", default_text="cpu")

    parse_eval = commands.add_parser(
        "parse-eval", help="score induced trees against a treebank, beside the baselines",
        description="Induce trees for every sentence of a treebank with each checkpoint and score them: "
                    "sentence-level F1 (the ON-LSTM/PRPN convention), corpus-level F1, evalb-style F1 "
                    "(whole-sentence span counted), per-label recall and average depth, beside right- and "
                    "left-branching, balanced and random trees. With several checkpoints (seeds): mean, std, "
                    "max and the F1 between runs (self-F1).")
    parse_eval.add_argument("checkpoints", nargs="+", metavar="MODEL", help="language models: " + MODEL_HELP)
    _add_treebank(parse_eval)
    parse_eval.add_argument("--layer", default="all",
                            help="1-based layer, 'mean', or 'all' (each layer and the mean; default)")
    parse_eval.add_argument("--split", choices=["official", "before"], default="official",
                            help="where the largest distance splits a span (default: official)")
    parse_eval.add_argument("--output", metavar="DIR",
                            help="write predicted trees, per-sentence scores (JSONL), a few figures, summary.json and "
                                 "an HTML report (DIR/index.html: tables, plots, every sentence's trees) to DIR")
    parse_eval.add_argument("--batch-size", type=positive_int, default=64, metavar="N", help="sentences per batch")
    parse_eval.add_argument("--random-draws", type=positive_int, default=5, metavar="N",
                            help="random-tree draws averaged for the random baseline (default: 5)")
    _add_precision(parse_eval)
    _add_device(parse_eval, default="cpu", default_text="cpu")
    _add_data(parse_eval)

    baselines = commands.add_parser("baselines", help="score the baseline trees against a treebank",
                                    description="Right- and left-branching, balanced and random trees, scored "
                                                "like `parse-eval`.")
    _add_treebank(baselines)
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
    _add_data(syneval)

    predict = commands.add_parser(
        "predict", help="score a sentence pair (relatedness), classify a sentence (sentiment) or a formula pair "
                        "(logic), or score a sentence (LM)",
        description="Use a checkpoint on your own input; prints JSON.")
    predict.add_argument("checkpoint", metavar="MODEL", help="a relatedness, sentiment, logic or language model: "
                         + MODEL_HELP)
    predict.add_argument("--pair", nargs=2, metavar=("A", "B"),
                         help="relatedness: two sentences as typed; logic: two bracketed formulas (premise, "
                              "hypothesis)")
    predict.add_argument("--parents", nargs=2, metavar=("PA", "PB"),
                         help="relatedness with a Tree-LSTM: each sentence's parents as in SICK's .parents "
                              "(dependency) or .cparents (constituency) files, over its tokens split on white "
                              "space (default for a constituency model: the trees --parser induces)")
    predict.add_argument("--sentence", help="sentiment: a sentence as typed (a Tree-LSTM reads it over the tree "
                                            "--parser induces); a language model: a sentence to score")
    predict.add_argument("--tree", help="sentiment with a Tree-LSTM, instead of --sentence: a bracketed binary "
                                        "tree of tokens, e.g. '(X (X It) (X works))' (labels are ignored)")
    predict.add_argument("--parser", metavar="LM",
                         help="Tree-LSTMs: the language model that induces the tree of a sentence (a zoo name, "
                              "model folder or checkpoint that gives syntactic distances; default: the model's "
                              "data.parser, onlstm-ptb-small)")
    _add_pretokenized(predict)
    _add_precision(predict)
    _add_device(predict, default="cpu", default_text="cpu")

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
    export.add_argument("--half", action="store_true", help="store the weights in float16 (half the size)")
    export.add_argument("--measure", action="store_true", help="measure the card's figures on the written files")
    _add_device(export, default="cpu", default_text="cpu")
    _add_data(export)

    models = commands.add_parser("models", help="list the trained models that ship with treenets",
                                 description="The model zoo: each model's name, task, headline figures, and "
                                             "where it is (the source checkout's models/, the cache, or to "
                                             "download).")
    models.add_argument("--json", action="store_true", help="print JSON instead of a table")

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
    return parser


def _cmd_train(args) -> int:
    from treenets import checkpoint
    from treenets.config import load_config, saved_config
    from treenets.devices import resolve_device
    from treenets.files import output_folder
    from treenets.nn.precision import check_precision
    from treenets.train import run_folder_lock

    overrides = list(args.overrides)
    for option, key in ((args.max_steps, "train.max_steps"), (args.max_minutes, "train.max_minutes"),
                        (args.threads, "train.threads"), (args.device, "train.device"),
                        (args.backend, "train.backend"), (args.precision, "train.precision"),
                        (args.embeddings, "data.embeddings"),
                        (args.freeze_embeddings or None, "model.freeze_embeddings")):
        if option is not None:
            overrides.append(f"{key}={option}")
    if args.config is None and not args.resume:
        raise TreenetsError("train: give a CONFIG file, or --resume CHECKPOINT")
    if args.config is not None:
        config = load_config(args.config, overrides)
        out = Path(args.out or Path("runs") / Path(args.config).stem)
    else:
        config = saved_config(checkpoint.load(args.resume), args.resume, overrides)
        out = Path(args.out or Path(args.resume).parent)
    check_precision(config.train.precision, resolve_device(config.train.device))  # before the run folder is made
    with run_folder_lock(output_folder(out, "--out")):
        return _train_in(out, config, args)


def _train_in(out: Path, config, args) -> int:
    from treenets.train import Trainer, fmt_metric, prepare_run_folder

    resume = prepare_run_folder(out, args.resume, args.overwrite)
    trainer = Trainer(config, out, root=args.data, resume=resume, progress=not args.no_progress)
    if trainer.is_main:
        words = len(trainer.task.vocab)
        params = sum(p.numel() for p in trainer.model.parameters())
        print(f"treenets: task {config.task}, model {config.model.name}, {params:,} parameters, vocabulary "
              f"{words:,}, device {trainer.device}, {trainer.world} process(es), run folder {out}")
        if resume:
            print(f"resuming from {resume} at step {trainer.state.step} (epoch {trainer.state.epoch})")
    result = trainer.run()
    trainer.close()
    if trainer.is_main:
        key = trainer.task.Metric.key
        valid = fmt_metric(result.valid.score) if result.valid else "n/a"
        print(f"stopped ({result.reason}) at step {result.state.step}, epoch {result.state.epoch}: "
              f"validation {key} {valid}")
        print(f"checkpoint (resume): {out / 'last.pt'}")
        if (out / "best.pt").is_file():
            print(f"best weights:        {out / 'best.pt'} (validation {key} {fmt_metric(result.state.best)})")
        elif result.state.best_step is None:
            print(f"best weights:        none yet ({out / 'best.pt'} is written at the first validation)")
        else:
            print(f"best weights:        {out / 'best.pt'} is missing (deleted during the run?); the next "
                  "validation that improves on the best writes it")
        print(f"metrics:             {out / 'metrics.jsonl'}")
        if result.reason in ("SIGINT", "SIGTERM"):
            print(f"interrupted by {result.reason}; continue with: treenets train --resume {out / 'last.pt'}")
    return result.exit_code


def _cmd_eval(args) -> int:
    from treenets.devices import resolve_device
    from treenets.evaluate import evaluate_model, summarize
    from treenets.files import output_folder, plot_file, read_sentences
    from treenets.runlog import format_breakdown, plot_breakdown

    if args.file and args.split:
        raise TreenetsError("eval: give --split or --file, not both")
    if args.pretokenized and not args.file:
        raise TreenetsError("eval: --pretokenized is for the text of --file")
    device = resolve_device(args.device, "--device")
    if args.plot:
        plot_file(args.plot, "--plot")
    if args.output:
        output_folder(args.output, "--output")
    split = args.split or "valid"
    sentences = read_sentences(args.file, "--file") if args.file else None
    source = {"file": str(args.file), "sentences": len(sentences)} if args.file else {"split": split}
    results, breakdowns = [], {}
    for path in args.checkpoints:
        result = evaluate_model(path, device, split, sentences, args.batch_size, args.pretokenized, args.data)
        results.append(result.values())
        print(json_text({"checkpoint": str(path), **source, **results[-1]}))
        if result.breakdown() is not None:
            title, breakdowns[f"[{len(results)}]"] = result.breakdown()
    if breakdowns:
        print("\n".join(f"[{k}] {path}" for k, path in enumerate(args.checkpoints, start=1)))
        print(format_breakdown(title, breakdowns))
        if args.plot:
            named = {f"{label} {path}": values for (label, values), path in zip(breakdowns.items(), args.checkpoints)}
            plot_breakdown(title, result.key, named, args.plot)
            print(f"plot: {args.plot}")
    elif args.plot:
        raise TreenetsError(f"--plot: the metric {result.key} has no groups to draw")
    summary = summarize(results)
    if summary is not None:
        print(json_text({"checkpoints": len(results), **source, **summary}))
    if args.output:
        from treenets.report import eval_document, write_report

        label = str(args.file) if args.file else split
        document = eval_document(label, args.checkpoints, results, result, breakdowns, summary)
        (Path(args.output) / "eval.json").write_text(json_text(document, indent=1))
        print(f"report: {write_report(args.output, f'treenets eval ({label})', evaluation=document)}")
    return 0


def _cmd_check_golden(args) -> int:
    from treenets.golden import check_golden

    comparisons = []
    for directory in args.dirs:
        for c in check_golden(directory):
            print(f"{c.name}  {c.max_abs_err:.3e}" if c.max_abs_err != float("inf") else f"{c.name}  missing")
            comparisons.append(c)
    passed = sum(c.ok for c in comparisons)
    ok = passed == len(comparisons)
    print(f"{'PASS' if ok else 'FAIL'} {passed}/{len(comparisons)}")
    return 0 if ok else 1


def _cmd_data(args) -> int:
    from treenets import data

    if args.data_command == "download":
        data.download(args.names or None, args.data)
        return 0
    statuses = data.check(args.names or None, args.data)
    root = data.data_root(args.data)
    print(f"data root: {root}")
    for s in statuses:
        print(f"{s.status:12s} {s.file.dataset:16s} {s.file.path}")
    bad = [s for s in statuses if s.status not in ("ok", "missing")]
    present = sum(s.status == "ok" for s in statuses)
    print(f"{present} ok, {sum(s.status == 'missing' for s in statuses)} missing, {len(bad)} wrong")
    return 1 if bad else 0


def _load_lm(path, device):
    from treenets.predictors import LanguageModel

    return LanguageModel.load(path, device=device)


def _parse_record(text: str, parse, layers: list, distances: bool) -> dict:
    """What `parse --json` prints for a sentence: its text, what the model read, the tree of `parse.layer`,
    every layer's tree when several are asked, and with `distances` every row of distances."""
    from treenets.trees.draw import bracketed

    record = {"text": text, "tokens": parse.words, "unknown": parse.unknown, "tree": bracketed(parse.nested),
              "layer": parse.layer}
    if len(layers) > 1:
        record["trees"] = {str(layer): bracketed(parse.at(layer).nested) for layer in layers}
    if distances:
        record["distances"] = [[round(value, 6) for value in row] for row in parse.distances.tolist()]
    return record


def _cmd_parse(args) -> int:
    import torch

    from treenets.files import output_folder, read_sentences
    from treenets.limits import MAX_TREE_DEPTH
    from treenets.trees.draw import ascii_art, bracketed, write_svg
    from treenets.trees.walk import depth

    sentences = [(None, text) for text in args.sentences]  # (where, text): arguments are quoted in messages
    if args.file:
        sentences += read_sentences(args.file, "--file")
    if not sentences:
        raise TreenetsError("parse: give sentences as arguments or --file")
    if args.svg:
        output_folder(args.svg, "--svg")
    lm = _load_lm(args.checkpoint, args.device)
    layers = lm.layers(args.layer, option="--layer")  # "all": each layer, then their mean
    for where, text in sentences:  # a sentence with nothing to read: an error naming it, before any output
        lm.read(text, args.pretokenized, where)
    first = layers[0] if len(layers) == 1 else lm.default_layer  # --json's `tree` (with --layer all: the default's)
    parses = lm.parse([text for _, text in sentences], first, args.split, pretokenized=args.pretokenized)
    for number, ((where, text), parse) in enumerate(zip(sentences, parses), start=1):
        words = parse.words
        if args.json:
            if not torch.isfinite(parse.distances).all():  # JSON has no NaN
                raise TreenetsError(f"{where or f'sentence {number}'}: the model's distances are not finite numbers "
                                    "(a damaged model?)")
            print(json.dumps(_parse_record(text, parse, layers, args.distances), allow_nan=False), flush=True)
        else:
            print(f"[{number}] {' '.join(words)}")
            if parse.unknown:
                print(f"    unknown words (read as <unk>): {' '.join(parse.unknown)}")
        for layer in layers:
            tree = parse.at(layer).nested
            levels = depth(tree)
            if not args.json:
                if len(layers) > 1:
                    print(f"layer {layer}:")
                print(bracketed(tree))
                if levels > MAX_TREE_DEPTH:  # the bracketed tree above is the whole answer; a drawing would not fit
                    print(f"    (not drawn: {levels} levels deep, drawings stop at {MAX_TREE_DEPTH})")
                    continue
                print(ascii_art(tree, words))
            if args.svg and levels <= MAX_TREE_DEPTH:
                write_svg(tree, Path(args.svg) / (f"{number:04d}.svg" if len(layers) == 1 else
                                                  f"{number:04d}-layer-{layer}.svg"))
        if args.distances and not args.json:
            for i, row in enumerate(parse.distances):
                print(f"    layer {i + 1}: " + " ".join(f"{w}={d:.2f}" for w, d in zip(words, row.tolist())))
            print()
    if args.svg:
        print(f"SVG drawings: {args.svg}", file=sys.stderr if args.json else sys.stdout)
    return 0


def _cmd_parse_eval(args) -> int:
    from treenets.files import output_folder
    from treenets.trees.evaluation import (
        evaluate_baselines,
        evaluate_model,
        format_table,
        multi_run_lines,
        write_outputs,
    )

    if args.output:
        output_folder(args.output, "--output")
    path, sentences, words = _gold_sentences(args)
    rows, results, distances, notes, figure_layer = [], [], {}, [], None
    for checkpoint in args.checkpoints:
        lm = _load_lm(checkpoint, args.device)
        figure_layer = figure_layer or str(lm.default_layer)
        layers = lm.layers(args.layer, "--layer")
        model_results, model_distances, counts = evaluate_model(lm, checkpoint, sentences, layers, args.split,
                                                                args.batch_size)
        results += model_results
        distances[checkpoint] = model_distances
        rows += [(checkpoint, r.layer, r.scores.summary()) for r in model_results]
        notes.append(f"{checkpoint}: {counts['unknown']} of {counts['words']} words not in the vocabulary "
                     "(read as <unk>)")
    rows += [(name, "", summary) for name, summary in evaluate_baselines(sentences, args.random_draws).items()]
    summary = rows[0][2]
    print(f"treebank: {path}{' (WSJ10)' if args.wsj10 else ''}: {summary['n']} sentences scored, "
          f"{summary['empty']} empty after filtering; split: {args.split}; {words}")
    print(format_table(rows))
    for line in notes + multi_run_lines(results):
        print(line)
    if args.output:
        write_outputs(Path(args.output), sentences, results, distances, figure_layer)
        summary = [{"model": name, "layer": layer, **values} for name, layer, values in rows]
        (Path(args.output) / "summary.json").write_text(json_text(summary, indent=1))
        from treenets.report import parsing_section, write_report

        section = parsing_section(f"{path}; {words}", args.split, args.wsj10, sentences, results, distances, rows,
                                  figure_layer)
        print(f"report: {write_report(args.output, f'treenets parse-eval: {args.treebank}', parsing=section)}")
        print(f"outputs: {args.output}")
    return 0


def _cmd_baselines(args) -> int:
    from treenets.trees.evaluation import evaluate_baselines, format_table

    path, sentences, words = _gold_sentences(args)
    rows = [(name, "", summary) for name, summary in evaluate_baselines(sentences, args.random_draws).items()]
    print(f"treebank: {path}{' (WSJ10)' if args.wsj10 else ''}: {rows[0][2]['n']} sentences scored, "
          f"{rows[0][2]['empty']} empty after filtering; {words}")
    print(format_table(rows))
    return 0


def _cmd_syneval(args) -> int:
    from treenets.data.syneval import load_case, select_cases, templates_folder
    from treenets.devices import resolve_device
    from treenets.files import output_file
    from treenets.syneval import evaluate_syneval, format_table

    if args.output:
        output_file(args.output, "--output")
    cases = [load_case(case, args.data, args.limit) for case in select_cases(args.cases)]
    device = resolve_device(args.device, "--device")
    items = sum(len(case.items) for case in cases)
    limit = f", the first {args.limit} of each condition" if args.limit else ""
    print(f"syneval: {templates_folder(args.data)}: {len(cases)} case(s), {items:,} items{limit}")
    results, notes = [], []
    for k, checkpoint in enumerate(args.checkpoints, start=1):
        result = evaluate_syneval(_load_lm(checkpoint, device), cases, args.batch_size)
        results.append(result)
        notes.append(f"[{k}] {len(result.unknown_types)} of {len(result.word_types)} test word types not in the "
                     f"vocabulary (read as <unk>); {result.sentences:,} sentences scored in {result.seconds:.1f} s")
    print(format_table(args.checkpoints, results))
    for line in notes:
        print(line)
    if args.output:
        document = {"data": str(templates_folder(args.data)), "limit": args.limit,
                    "checkpoints": [{"checkpoint": str(path), **result.to_dict()}
                                    for path, result in zip(args.checkpoints, results)]}
        Path(args.output).write_text(json_text(document, indent=1))
        print(f"output: {args.output}")
        from treenets.report import report_beside, write_report

        html = report_beside(args.output)
        print(f"report: {write_report(html.parent, 'treenets syneval', syneval=document, name=html.name)}")
    return 0


def _cmd_predict(args) -> int:
    from treenets.predictors import Predictor

    result = Predictor.load(args.checkpoint, device=args.device).predict_command(args)
    print(json_text({k: v for k, v in asdict(result).items() if v is not None}))
    return 0


def _cmd_metrics(args) -> int:
    from treenets.files import plot_file
    from treenets.runlog import plot_curve, read_metrics
    from treenets.train import fmt_metric

    if args.plot:
        plot_file(args.plot, "--plot")
    records = read_metrics(args.run)
    if args.plot and not records:
        raise TreenetsError(f"--plot: {args.run} holds no records yet, so there is no curve to draw")
    evals = [r for r in records if r["event"] == "eval"]
    skip = {"event", "step", "epoch", "split", "averaged"}
    print(f"{'step':>8} {'epoch':>6} {'split':>6}  metrics")
    for r in evals:
        values = "  ".join(f"{k} {fmt_metric(v)}" for k, v in r.items() if k not in skip and isinstance(v, float))
        print(f"{r['step']:8d} {r['epoch']:6d} {r['split']:>6}  {values}")
    if args.plot:
        plot_curve(records, args.plot)
        print(f"plot: {args.plot}")
    return 0


def _cmd_export(args) -> int:
    from treenets import cards
    from treenets.files import read_text

    notes = read_text(args.notes, "a markdown file of notes") if args.notes else ""
    metrics = cards.export_model(args.checkpoint, args.out, args.name, args.summary, notes, args.half, args.measure,
                                 args.device, args.data, args.overwrite, log=lambda m: print(m, file=sys.stderr))
    print(f"model folder: {args.out}")
    for key, value in metrics["headline"].items():
        print(f"  {key}: {cards.format_figure(value)}")
    return 0


def _cmd_models(args) -> int:
    from treenets import zoo
    from treenets.cards import format_figure

    rows = []
    for model in zoo.registry().values():
        local = [f for f in (zoo.repository_models() / model.name, zoo.cache_dir() / model.name)
                 if (f / "model.safetensors").is_file()]
        where = str(local[0]) if local else ("download" if all(f.url for f in model.files.values()) else "absent")
        rows.append({"name": model.name, "task": model.task, "summary": model.summary, "where": where,
                     "size_mb": round(sum(f.bytes for f in model.files.values()) / 1e6, 1), **model.headline})
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    for row in rows:
        print(f"{row['name']}  ({row['task']}, {row['size_mb']} MB, {row['where']})\n  {row['summary']}")
        figures = [f"{k} {100 * v:.1f}" if "F1" in k else f"{k} {format_figure(v)}"  # F1 in percent, as parse-eval
                   for k, v in row.items() if isinstance(v, float) and k != "size_mb"]
        print("  " + "; ".join(figures))
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
            "serve": _cmd_serve}


def _precision(args):
    """The precision block an evaluating command runs in (`train` takes its precision from the config)."""
    # (`serve` opens its block in the threads that answer requests: autocast holds for one thread)
    if args.command in ("train", "serve") or getattr(args, "precision", "fp32") == "fp32":
        return contextlib.nullcontext()
    from treenets.devices import resolve_device
    from treenets.nn.precision import autocast

    return autocast(args.precision, resolve_device(args.device, "--device"))


def main(argv: list[str] | None = None) -> int:
    """Run a command; bad input and failed file operations end in one `treenets: error:` line (exit 2), any
    other exception, a bug, in one `treenets: internal error:` line (exit 1) unless debugging is asked for."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and getattr(args, "sentences", None) is not None and not any(a.startswith("-") for a in extra):
        args.sentences += extra  # `parse MODEL --layer 2 "a sentence"`: argparse ends the sentences at an option
    elif extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    try:
        with _precision(args):
            return COMMANDS[args.command](args)
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
