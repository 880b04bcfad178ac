"""ListOps (Nangia & Bowman, 2018): prefix arithmetic over nested lists of digits, each sequence labelled with its
value, the task Ordered Memory's paper (section 4.2) reads.

A sequence is a digit 0..9 or a list `[OP a_1 ... a_k ]` of k >= 1 sequences, OP one of

    [MIN   the smallest argument          [MAX   the largest
    [MED   the median, rounded down       [SM    the sum modulo 10

(the median of an even number of arguments is the mean of the two middle ones, rounded down, as the official
`int(np.median(...))`). Its value is a digit, the label: ten classes.

Files: `train.tsv` and `test.tsv`, one `label<TAB>sequence` a line, tokens separated by spaces, as the official
files (nyu-mll/spinn `train_d20s.tsv`, `test_d20s.tsv`) write them. The official files also bracket each sequence
as a binary tree, `( ( ( [MAX 2 ) 9 ) ] )`: within a list, the operator takes its first argument, then each further
one, then the closing `]` (left-branching). That tree follows from the lists, so a file may hold the brackets or
not; where it does, they must be that tree's. The brackets are not read by the models (the official code drops
them too); the tree is the gold tree that induced trees are scored against (`gold_tree`).

`generate` writes a data set with the official generator's settings (`make_data.py`): a list has 2 to `MAX_ARGS`
arguments (uniformly), each a list with probability `LIST_PROBABILITY` (the whole sequence too) unless it sits at
depth `MAX_DEPTH`, where it is a digit; operators and digits are drawn uniformly; duplicates are drawn again.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from pathlib import Path

import torch

from treenets.core.errors import TreenetsError
from treenets.core.files import json_text, read_text
from treenets.core.limits import check_lines
from treenets.core.vocab import Vocab
from treenets.data.batching import Batch, hold_out, require_examples
from treenets.data.grammar import grammar_error

OPERATORS = ("[MIN", "[MAX", "[MED", "[SM")
END = "]"
DIGITS = tuple(str(d) for d in range(10))
PAD = "<pad>"
TOKENS = DIGITS + OPERATORS + (END, PAD)  # the vocabulary of the task
SPLIT_FILES = {"train": "train.tsv", "test": "test.tsv"}

# The official generator's settings (nyu-mll/spinn and yikangshen/Ordered-Memory, data/listops/make_data.py).
MAX_DEPTH = 20  # the arguments of a list at depth MAX_DEPTH - 1 are digits (the whole sequence is at depth 1)
MAX_ARGS = 5  # a list has 2..MAX_ARGS arguments
LIST_PROBABILITY = 0.25  # a sequence above MAX_DEPTH is a list with this probability, else a digit
# The sizes `treenets data listops` writes: the official test file (test_d20s.tsv) holds 10,000 sequences; 90,000 for
# training is treenets' choice (the official training file is not at hand to count).
TRAIN_SIZE, TEST_SIZE = 90_000, 10_000


def _apply(operator: str, values: list[int]) -> int:
    if operator == "[MIN":
        return min(values)
    if operator == "[MAX":
        return max(values)
    if operator == "[MED":
        ordered = sorted(values)
        return (ordered[(len(ordered) - 1) // 2] + ordered[len(ordered) // 2]) // 2
    return sum(values) % 10  # [SM


@dataclass(frozen=True)
class ListOpsExample:
    label: int  # the sequence's value, 0..9
    tokens: tuple[str, ...]  # what the models read: operators, digits and `]`
    depth: int  # how deeply its lists nest (0: a lone digit)


def read_sequence(tokens: list[str], where: str | None = None) -> tuple[tuple[str, ...], int, int]:
    """The tokens of a sequence without its brackets `( )`, its value and depth, the sequence checked against the
    grammar of the module docstring (and its brackets, where it has them, against the tree `gold_tree` draws).

    Raises:
        TreenetsError: starting with `where` (e.g. the file and line) when given, naming the sequence, the position
            (token N, from 1, brackets counted) and what the grammar expected there: for an unknown token, a list
            without an argument or not closed, a `]` closing nothing, more than one sequence, or brackets other
            than the tree of its lists.
    """
    positions = [position for position, token in enumerate(tokens, start=1) if token not in ("(", ")")]
    words = tuple(tokens[position - 1] for position in positions)
    open_lists: list[tuple[str, list[int], int]] = []  # (operator, its arguments' values so far, its position)

    def refuse(position: int, expected: str) -> TreenetsError:
        return grammar_error(where, "sequence", tokens, position, expected, (*TOKENS, "(", ")"))

    def expected_here() -> str:
        if not open_lists:
            return f"a digit or an operator ({', '.join(OPERATORS)})"
        if not open_lists[-1][1]:
            return f"an argument of the list opened at token {open_lists[-1][2]}: a digit or an operator"
        return f"a digit, an operator or ']' closing the list opened at token {open_lists[-1][2]}"

    value, depth, whole_at = None, 0, 0
    for position, token in zip(positions, words):
        if value is not None and not open_lists:
            raise refuse(position, f"the end of the sequence (it is whole after token {whole_at})")
        if token in OPERATORS:
            open_lists.append((token, [], position))
            depth = max(depth, len(open_lists))
            continue
        if token == END and open_lists and open_lists[-1][1]:
            operator, values, _ = open_lists.pop()
            value = _apply(operator, values)
        elif token in DIGITS:
            value = int(token)
        else:
            raise refuse(position, expected_here())
        if open_lists:
            open_lists[-1][1].append(value)
        whole_at = position
    if value is None or open_lists:
        raise refuse(len(tokens) + 1, expected_here())
    if len(words) < len(tokens):  # brackets: those of the tree of its lists
        written = bracketed_text(words).split()
        at = next((i for i, (given, drawn) in enumerate(zip(tokens, written)) if given != drawn),
                  min(len(tokens), len(written)))
        if at < max(len(tokens), len(written)):
            raise refuse(at + 1, f"{repr(written[at]) if at < len(written) else 'the end of the sequence'}: its "
                         "brackets ( ) must be the tree of its lists (the operator with its first argument, then "
                         "each further argument, then ']', as ( ( ( [MAX 2 ) 9 ) ] ))")
    return words, value, depth


def gold_tree(tokens: tuple[str, ...] | list[str]):
    """The binary tree of a sequence's tokens (see the module docstring): nested lists, or the lone digit."""
    stack: list[list] = [[]]  # the nodes read of each open list, the outermost first
    for token in tokens:
        if token in OPERATORS:
            stack.append([token])
        elif token == END:
            node = stack.pop()
            tree = node[0]
            for child in node[1:] + [END]:
                tree = [tree, child]
            stack[-1].append(tree)
        else:
            stack[-1].append(token)
    return stack[0][0]


def bracketed_text(tokens: tuple[str, ...] | list[str]) -> str:
    """The sequence as the official files write it, each node of `gold_tree` in brackets: `( ( [MIN 3 ) ] )`."""
    def text(node) -> str:
        pieces, pending = [], [node]  # written without recursion: a tree as deep as its sequence is long
        while pending:
            item = pending.pop()
            if isinstance(item, list):
                pending += [")", item[1], item[0], "("]
            else:
                pieces.append(item)
        return " ".join(pieces)

    return text(gold_tree(tokens))


def read_listops_file(path: Path) -> list[ListOpsExample]:
    """The examples of one file (see the module docstring).

    Raises:
        TreenetsError: naming the file and line for a missing file, a line without two tab-separated fields, a
            label that is not a digit or not the sequence's value, or a sequence that does not read.
    """
    if not path.is_file():
        raise TreenetsError(f"{path}: missing (expected ListOps sequences, `label<TAB>sequence` a line; "
                            "`treenets data listops` writes them)")
    examples = []
    lines = check_lines(read_text(path, "ListOps sequences, label<TAB>sequence a line").splitlines(), path)
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        fields = line.split("\t")
        if len(fields) != 2:
            raise TreenetsError(f"{where}: {len(fields)} tab-separated fields; expected label, sequence")
        label = fields[0].strip()
        if label not in DIGITS:
            raise TreenetsError(f"{where}: label {label!r}; expected a digit 0..9")
        tokens, value, depth = read_sequence(fields[1].split(), where)
        if value != int(label):
            raise TreenetsError(f"{where}: label {label}, but the sequence's value is {value}")
        examples.append(ListOpsExample(value, tokens, depth))
    return examples


def read_listops_splits(folder: Path, valid_every: int, max_train_length: int | None,
                        splits: tuple[str, ...]) -> dict[str, list[ListOpsExample]]:
    """`train` and `valid` from `train.tsv` (every `valid_every`-th example, in file order, to valid; then the
    training examples longer than `max_train_length` tokens left out), `test` from `test.tsv`."""
    result = {}
    if "train" in splits or "valid" in splits:
        pool = read_listops_file(folder / SPLIT_FILES["train"])
        train, result["valid"] = hold_out(pool, valid_every)
        result["train"] = [e for e in train if max_train_length is None or len(e.tokens) <= max_train_length]
    if "test" in splits:
        result["test"] = read_listops_file(folder / SPLIT_FILES["test"])
    return require_examples(result, splits, lambda split: (
        f"{folder / SPLIT_FILES['test' if split == 'test' else 'train']}: no sequence left for the {split} split "
        f"(every {valid_every}th training sequence is held out for validation, those of more than "
        f"{max_train_length} tokens left out of training)"))


def listops_vocab() -> Vocab:
    """The tokens of every sequence (no unknown token: anything else is an error)."""
    return Vocab(TOKENS, unk=None)


@dataclass
class ListOpsBatch(Batch):
    labels: torch.Tensor  # [B]
    depths: torch.Tensor  # [B]
    tokens: torch.Tensor  # [T, B]: token ids, right-padded with <pad>
    lengths: torch.Tensor  # [B]
    words: list[tuple[str, ...]]  # each sequence's tokens

    @property
    def size(self) -> int:
        return self.labels.numel()

    @classmethod
    def build(cls, examples: list[ListOpsExample], vocab: Vocab) -> ListOpsBatch:
        lengths = torch.tensor([len(e.tokens) for e in examples])
        tokens = torch.full((int(lengths.max()), len(examples)), vocab.index[PAD], dtype=torch.long)
        for j, example in enumerate(examples):
            tokens[: len(example.tokens), j] = torch.tensor(vocab.encode(example.tokens)[0])
        return cls(torch.tensor([e.label for e in examples]), torch.tensor([e.depth for e in examples]), tokens,
                   lengths, [e.tokens for e in examples])


# --- writing a data set -------------------------------------------------------------------------------------
def random_sequence(rng: random.Random, depth: int = 1) -> list[str]:
    """The tokens of a sequence drawn with the official settings (module docstring), at `depth`."""
    if depth >= MAX_DEPTH or rng.random() >= LIST_PROBABILITY:
        return [rng.choice(DIGITS)]
    arguments = [random_sequence(rng, depth + 1) for _ in range(rng.randint(2, MAX_ARGS))]
    return [rng.choice(OPERATORS)] + [token for argument in arguments for token in argument] + [END]


def generate(folder: str | Path, train: int = TRAIN_SIZE, test: int = TEST_SIZE, seed: int = 0,
             overwrite: bool = False) -> dict:
    """Write `train.tsv` and `test.tsv` of `train` and `test` distinct sequences (none in both) drawn from `seed`,
    and `meta.json` recording the settings, sizes, token lengths and each file's sha256; returns that record.
    The files are those `read_listops_file` reads, in the official files' form (brackets included). A folder
    that holds them already is an error unless `overwrite`."""
    if train < 1 or test < 1:
        raise TreenetsError(f"--train {train} --test {test}: expected at least one sequence in each")
    folder = Path(folder)
    present = [name for name in (*SPLIT_FILES.values(), "meta.json") if (folder / name).exists()]
    if present and not overwrite:
        raise TreenetsError(f"{folder}: holds {', '.join(present)} already (--overwrite replaces them)")
    rng = random.Random(seed)
    seen: dict[str, None] = {}  # the distinct sequences, in the order drawn
    draws = 0
    while len(seen) < train + test:
        seen.setdefault(" ".join(random_sequence(rng)))
        draws += 1
        if draws > 100 * (train + test):  # the settings give about a million distinct sequences and more
            raise TreenetsError(f"only {len(seen):,} distinct sequences in {draws:,} draws: fewer sequences asked "
                                "for, please")
    sequences = list(seen)
    rng.shuffle(sequences)  # the splits alike: the later draws hold fewer short sequences, the short ones seen already
    folder.mkdir(parents=True, exist_ok=True)
    record = {"generator": "ListOps (Nangia & Bowman 2018), the official make_data.py settings",
              "operators": list(OPERATORS), "max_depth": MAX_DEPTH, "max_args": MAX_ARGS,
              "list_probability": LIST_PROBABILITY, "seed": seed, "draws": draws, "splits": {}}
    for split, chosen in (("train", sequences[:train]), ("test", sequences[train:])):
        lines = []
        for text in chosen:
            tokens, value, _ = read_sequence(text.split(), "generated")
            lines.append(f"{value}\t{bracketed_text(tokens)}\n")
        data = "".join(lines).encode()
        path = folder / SPLIT_FILES[split]
        path.write_bytes(data)
        lengths = [len(text.split()) for text in chosen]
        record["splits"][split] = {"file": path.name, "sequences": len(chosen), "min_tokens": min(lengths),
                                   "max_tokens": max(lengths), "mean_tokens": round(sum(lengths) / len(lengths), 2),
                                   "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (folder / "meta.json").write_text(json_text(record, indent=1) + "\n")
    return record


def summary(record: dict, folder) -> str:
    """One line saying what `generate` wrote."""
    parts = [f"{s['sequences']:,} {split} sequences ({s['min_tokens']}..{s['max_tokens']} tokens, mean "
             f"{s['mean_tokens']})" for split, s in record["splits"].items()]
    return f"{folder}: {' and '.join(parts)}, seed {record['seed']}; meta.json records the settings and checksums"
