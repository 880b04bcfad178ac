"""The options that several commands take, each defined once (`add_device(parser)`), and the argparse types of the
commands' values (`positive_int`: argparse names the option and exits 2 for a value the type refuses)."""

from __future__ import annotations

import argparse

from treenets.core.schema import PRECISIONS
from treenets.data.treebanks import GoldTreebank
from treenets.trees.ptb import WORD_RULES

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


def path_name(text: str) -> str:
    """An argparse type: the name of a file or folder to write (not empty: `--output ''` was taken as no
    `--output`, and nothing was written or said)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: expected a file or folder name")
    return text


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


def convention_list(text: str) -> list[str]:
    """An argparse type: comma-separated names of scoring conventions (`official,kim`), or `all`."""
    from treenets.trees.conventions import CONVENTIONS

    names = list(CONVENTIONS) if text.strip() == "all" else [n.strip() for n in text.split(",") if n.strip()]
    unknown = [n for n in names if n not in CONVENTIONS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or repr(text)}: expected conventions among "
                                         f"{', '.join(CONVENTIONS)} (comma-separated), or all")
    return list(dict.fromkeys(names))


def add_overwrite(parser, option: str) -> None:
    """`--overwrite`: let `option`, a folder of outputs, be one holding files no earlier run wrote
    (`treenets.core.files.report_folder`)."""
    parser.add_argument("--overwrite", action="store_true",
                        help=f"with {option}: write into a folder holding other files too (those of the names "
                             "written are replaced, the others kept)")


def add_tree_files(parser) -> None:
    """`--format` and `--drop-punctuation`: how the files of other parsers' trees are read (`parse-eval`,
    `ensemble`)."""
    parser.add_argument("--format", choices=["auto", "bracketed", "jsonl", "spans"], default="auto",
                        help="the format of the files of trees: bracketed, jsonl (JSON lines of trees: a nested "
                             "list of words or a bracketed string, with an example id), spans (JSON lines of "
                             "span lists, [[0, 5], [1, 3], ...], with the words or the treebank's in order); "
                             "default: detected from the file")
    parser.add_argument("--drop-punctuation", action="store_true",
                        help="a file's trees that keep the punctuation the word rule drops: drop it from them "
                             "(as DIORA's evalb.py does) instead of refusing the file")


def add_decode(parser) -> None:
    """`--decode`: how a grammar finds its trees (`parse`, `parse-eval`, `ensemble`)."""
    parser.add_argument("--decode", choices=["viterbi", "mbr"],
                        help="a grammar's trees: viterbi (the most probable labelled tree; the default, as Kim et al. "
                             "parse) or mbr (the tree of the largest summed span marginals, each span labelled by its "
                             "most probable nonterminal, as TN-PCFG and SimplePCFG parse)")


def add_data_root(parser) -> None:
    """`--data DIR`: the data root."""
    parser.add_argument("--data", metavar="DIR", default=None,
                        help="data root (default: $TREENETS_DATA, else ../shared/data when it exists, else "
                             "data/ in the cache: `treenets data check` names it)")


def add_device(parser, default="auto", default_text="auto") -> None:
    """`--device`: where the command runs its networks."""
    parser.add_argument("--device", default=default,
                        help=f"where to run: auto (cuda if available), cpu, cuda, cuda:N (default: {default_text})")


def add_threads(parser) -> None:
    """`--threads N`: how many threads the command computes on."""
    parser.add_argument("--threads", type=positive_int, metavar="N",
                        help="compute on N threads (default: $TREENETS_THREADS, else every core)")


def add_precision(parser, default="fp32", default_text="fp32") -> None:
    """`--precision`: fp32 or bf16."""
    parser.add_argument("--precision", choices=PRECISIONS, default=default,
                        help="fp32, or bf16: matrix products in bfloat16, the rest in float32 (for CPUs with "
                             f"AVX512-BF16/AMX and for GPUs; default: {default_text})")


def add_pretokenized(parser) -> None:
    """`--pretokenized`: how the command reads the text it is given."""
    parser.add_argument("--pretokenized", action="store_true",
                        help="the text is tokenised already: split it on white space, keeping only the "
                             "vocabulary's case and numbers (a PTB model: lower case, digits as N) (default: "
                             "normalise it as the model's training text, e.g. for a PTB model Penn Treebank "
                             "tokens, lower case, numbers as N, punctuation dropped)")


def add_conventions(parser) -> None:
    """`--convention NAMES`: the conventions trees are scored under."""
    parser.add_argument("--convention", type=convention_list, default=["official"], metavar="NAMES",
                        help="how trees are scored, comma-separated, or all: official (the ON-LSTM/PRPN sentence F1, "
                             "with its corpus and evalb-style F1), kim (Kim et al. 2019, compound-pcfg's "
                             "compare_trees.py), evalb (EVALB, unlabelled), li-micro and li-macro (Li et al. 2020); "
                             "the first is the one systems are compared under (default: official; docs/parsing.md "
                             "gives the rules)")


def add_treebank(parser, required: bool = True) -> None:
    """`--treebank PATH` and the options that choose its sentences and words (`gold_treebank` reads them)."""
    parser.add_argument("--treebank", required=required, metavar="PATH",
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


def gold_treebank(args, name: str | None = None) -> GoldTreebank:
    """The treebank the options of `add_treebank` name (`name`: another treebank read under the same options)."""
    return GoldTreebank(name or args.treebank, args.wsj10, args.words, args.drop_tags, args.max_length)
