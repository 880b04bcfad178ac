"""Bowman, Manning & Potts (2015)'s propositional-logic inference data, as the ON-LSTM paper uses it.

Each line of `trainN` / `testN` is `relation<TAB>premise<TAB>hypothesis`. A formula is written in the grammar

    X  :=  a | b | c | d | e | f  |  ( X ( and X ) )  |  ( X ( or X ) )  |  ( not X )

(every formula of the files is; `parse_formula` checks it): a binary tree whose leaves are the variables and the
operators `and`, `or`, `not`, e.g. `( d ( and e ) )`, `( not d )`. The relation is one of MacCartney's seven
(`RELATIONS`). File N holds the pairs whose larger formula has N operators (file 12: 12 or more).

The ON-LSTM setting: train on `train0`..`train6`, every 10th of those examples (in file order) held out for
validation, and test on each of `test0`..`test12`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch

from treenets.core.errors import TreenetsError
from treenets.core.files import read_text
from treenets.core.limits import check_lines
from treenets.core.vocab import Vocab
from treenets.data.batching import Batch, hold_out, require_examples
from treenets.data.grammar import grammar_error
from treenets.trees.parents import ParentTree

# The relations, in the order of the official ON-LSTM code's labels.
RELATIONS = {
    "<": "forward entailment",
    ">": "reverse entailment",
    "=": "equivalence",
    "^": "negation",
    "|": "alternation",
    "#": "independence",
    "v": "cover",
}
LABELS = tuple(RELATIONS)
VARIABLES = ("a", "b", "c", "d", "e", "f")
OPERATORS = ("and", "or", "not")
BINARY = ("and", "or")  # the operators of ( X ( OP Y ) ); `not` takes one formula: ( not X )
# Every token a formula may hold, and the padding the sequence readers use: the vocabulary of the task.
PAD = "<pad>"
TOKENS = ("(", ")") + VARIABLES + OPERATORS + (PAD,)
MAX_FILE = 12  # trainN/testN for N = 0..12


@dataclass(frozen=True)
class Formula:
    tokens: tuple[str, ...]  # as written, brackets included (what the sequence encoders read)
    tree: ParentTree  # its binary tree over the leaves (variables and operators)

    @property
    def operators(self) -> int:
        return sum(token in OPERATORS for token in self.tree.words)


# What each symbol of the grammar (module docstring) expects, for the messages.
_EXPECTED = {
    "formula": f"a formula: a variable ({', '.join(VARIABLES)}) or '('",
    "inside": "'not' or a formula (a variable or '('), as in ( not X ) or ( X ( and Y ) )",
    "operand": "'(' opening the operator's part, as in ( X ( and Y ) )",
    "operator": "'and' or 'or', as in ( X ( and Y ) ) ('not' takes one formula: ( not X ))",
}


def parse_formula(text: str, where: str | None = None) -> Formula:
    """A formula from its bracketed form, checked against the grammar of Bowman's files (a variable, `( X ( and Y
    ) )`, `( X ( or Y ) )` or `( not X )`; every formula of the staged files is one). Read without recursion: a
    formula may nest deeper than Python's stack.

    Raises:
        TreenetsError: starting with `where` (e.g. the file and line) when given, naming the formula, the position
            (token N, from 1) and what the grammar expected there, for any text that is not a formula (an unknown
            token, a bracket of another shape, a formula cut short or followed by more).
    """
    tokens = tuple(text.split())
    words: list[str] = []
    phrases: list[list[tuple[str, int]]] = []  # children of each bracket, as ("w", word) or ("p", phrase)
    open_brackets: list[list[tuple[str, int]]] = []  # children read so far of each open bracket
    # The symbols still to read, the next one last (an LL(1) parser's stack: no recursion); a ")" with the
    # position of the bracket it closes.
    pending: list[tuple[str, int]] = [("formula", 0)]

    def refuse(position: int, expected: str) -> TreenetsError:
        return grammar_error(where, "formula", tokens, position, expected, TOKENS)

    for position, token in enumerate(tokens, start=1):
        if not pending:
            raise refuse(position, f"the end of the formula (it is whole after token {position - 1})")
        symbol, opened = pending.pop()
        if symbol == "inside":  # after a '(' that opens a formula: ( not X ) or ( X ( OP Y ) )
            if token == "not":
                pending += [(")", opened), ("formula", 0)]
            elif token in VARIABLES or token == "(":  # the first formula of ( X ( OP Y ) ) begins here
                pending += [(")", opened), ("operand", 0)]
                symbol = "formula"
            else:
                raise refuse(position, _EXPECTED["inside"])
        if symbol == "formula":
            if token == "(":
                pending.append(("inside", position))
            elif token not in VARIABLES:
                raise refuse(position, _EXPECTED["formula"])
        elif symbol == "operand":
            if token != "(":
                raise refuse(position, _EXPECTED["operand"])
            pending += [(")", position), ("formula", 0), ("operator", 0)]
        elif symbol == "operator" and token not in BINARY:
            raise refuse(position, _EXPECTED["operator"])
        elif symbol == ")" and token != ")":
            raise refuse(position, f"')' closing the bracket opened at token {opened}")
        # the token fits the grammar: its place in the tree
        if token == "(":
            open_brackets.append([])
            continue
        if token == ")":
            phrases.append(open_brackets.pop())  # two parts: the grammar says so
            node = ("p", len(phrases) - 1)
        else:
            words.append(token)
            node = ("w", len(words) - 1)
        if open_brackets:  # (else it is the whole formula)
            open_brackets[-1].append(node)
    if pending:
        symbol, opened = pending[-1]
        raise refuse(len(tokens) + 1, f"')' closing the bracket opened at token {opened}" if symbol == ")" else
                     _EXPECTED[symbol])
    n_words = len(words)
    parents = [-1] * (n_words + len(phrases))
    for j, kids in enumerate(phrases):
        for kind, index in kids:
            parents[index if kind == "w" else n_words + index] = n_words + j
    return Formula(tokens, ParentTree(tuple(parents), tuple(words)))


@dataclass(frozen=True)
class LogicPair:
    label: int  # index into LABELS
    premise: Formula
    hypothesis: Formula

    @property
    def operators(self) -> int:
        """The number of operators of the larger formula (what the files and the paper's figure count)."""
        return max(self.premise.operators, self.hypothesis.operators)


def read_logic_file(path: Path) -> list[LogicPair]:
    """The pairs of one file.

    Raises:
        TreenetsError: naming the file and line for a missing file, a line without three tab-separated fields,
            an unknown relation, or a formula that does not parse.
    """
    if not path.is_file():
        raise TreenetsError(f"{path}: missing (expected Bowman's propositional-logic pairs; "
                            "`treenets data download logic` fetches them)")
    pairs = []
    lines = check_lines(read_text(path, "Bowman's propositional-logic pairs").splitlines(), path)
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        fields = line.split("\t")
        if len(fields) != 3:
            raise TreenetsError(f"{where}: {len(fields)} tab-separated fields; expected relation, premise, "
                                "hypothesis")
        relation, premise, hypothesis = fields
        if relation.strip() not in RELATIONS:
            raise TreenetsError(f"{where}: unknown relation {relation!r}; expected one of {' '.join(LABELS)}")
        pairs.append(LogicPair(LABELS.index(relation.strip()), parse_formula(premise, f"{where} (premise)"),
                               parse_formula(hypothesis, f"{where} (hypothesis)")))
    return pairs


def read_logic_splits(folder: Path, max_train_operators: int, valid_every: int,
                      splits: tuple[str, ...]) -> dict[str, list[LogicPair]]:
    """`train`/`valid` from `train0`..`train{max_train_operators}` (every `valid_every`-th example, in file
    order, to valid) and `test` from `test0`..`test12`."""
    result = {}
    if "train" in splits or "valid" in splits:
        pool = [pair for n in range(max_train_operators + 1) for pair in read_logic_file(folder / f"train{n}")]
        result["train"], result["valid"] = hold_out(pool, valid_every)
    if "test" in splits:
        result["test"] = [pair for n in range(MAX_FILE + 1) for pair in read_logic_file(folder / f"test{n}")]
    return require_examples(result, splits, lambda split: (
        f"{folder}: test0..test{MAX_FILE} hold no pairs" if split == "test" else
        f"{folder}: train0..train{max_train_operators} hold {len(pool)} pair(s), none left for the {split} split "
        f"(every {valid_every}th pair is held out for validation: expected at least {valid_every})"))


def logic_vocab() -> Vocab:
    """The tokens of every formula (no unknown token: anything else is an error)."""
    return Vocab(TOKENS, unk=None)


@dataclass
class LogicBatch(Batch):
    """Pairs, with both forms of every formula: premises first, then hypotheses (2B formulas)."""

    labels: torch.Tensor  # [B]
    operators: torch.Tensor  # [B]: operators of the larger formula
    tokens: torch.Tensor  # [T, 2B]: token ids, right-padded with <pad>
    lengths: torch.Tensor  # [2B]
    trees: list[ParentTree]  # 2B trees over the leaves
    leaf_ids: list[torch.Tensor]  # ids of each tree's leaves, in node order

    @property
    def size(self) -> int:
        return self.labels.numel()

    @classmethod
    def build(cls, pairs: list[LogicPair], vocab: Vocab) -> LogicBatch:
        formulas = formula_inputs([p.premise for p in pairs] + [p.hypothesis for p in pairs], vocab)
        return cls(torch.tensor([p.label for p in pairs]), torch.tensor([p.operators for p in pairs]), *formulas)


def formula_inputs(formulas: list[Formula], vocab: Vocab) -> tuple[torch.Tensor, torch.Tensor, list, list]:
    """What the encoders read of `formulas`: their token ids [T, N], right-padded with <pad>, their lengths [N],
    their trees and the ids of each tree's leaves in node order."""
    lengths = torch.tensor([len(f.tokens) for f in formulas])
    tokens = torch.full((int(lengths.max()), len(formulas)), vocab.index[PAD], dtype=torch.long)
    for j, formula in enumerate(formulas):
        tokens[: len(formula.tokens), j] = torch.tensor(vocab.encode(formula.tokens)[0])
    return tokens, lengths, [f.tree for f in formulas], [torch.tensor(vocab.encode(f.tree.words)[0]) for f in formulas]
