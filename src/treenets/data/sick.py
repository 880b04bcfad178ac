"""SICK sentence pairs as the Tree-LSTM preprocessing writes them: per split folder `a.toks`, `b.toks`,
`a.parents`/`b.parents` (dependency) or `a.cparents`/`b.cparents` (constituency), `sim.txt`; the vocabulary
`sick.vocab` after four special tokens."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain
from pathlib import Path

import torch

from treenets.core.errors import TreenetsError
from treenets.core.files import read_text
from treenets.core.limits import check_lines
from treenets.core.vocab import Vocab
from treenets.data.batching import Batch
from treenets.trees.parents import ParentTree, binarize, parse_parents

# The special tokens in front of `sick.vocab`, in the order of the official port (rows 0..3 of sick_embed.pth).
SPECIALS = ["<blank>", "<unk>", "<s>", "</s>"]
SPLIT_FOLDERS = {"train": "train", "valid": "dev", "test": "test"}  # valid = dev = SICK trial


def read_lines(path: Path) -> list[str]:
    if not path.exists():
        raise TreenetsError(f"{path}: missing (expected the SICK files of the treelstm preprocessing)")
    return check_lines(read_text(path, "a SICK file of the treelstm preprocessing").splitlines(), path)


def read_vocab(path: Path) -> Vocab:
    """`sick.vocab` (one word per line) after the four special tokens."""
    words, seen = [], {}
    for number, word in enumerate(read_lines(path), start=1):
        if not word:
            continue
        if word in seen or word in SPECIALS:
            where = f"line {seen[word]}" if word in seen else "a special token"
            raise TreenetsError(f"{path}:{number}: {word!r} again (already {where}); expected one word per line, "
                                "each once")
        seen[word] = number
        words.append(word)
    return Vocab(SPECIALS + words, unk="<unk>")


@dataclass
class Pair:
    left: ParentTree
    right: ParentTree
    score: float


def read_split(folder: Path, trees: str, build=None) -> list[Pair]:
    """The pairs of one split folder, with `trees` "dependency" or "constituency" (binarised) read from the
    folder's parents files, or, given `build` (token lists -> `ParentTree`s, e.g. induced trees), built over
    the `.toks` sentences."""
    suffix = "parents" if trees == "dependency" else "cparents"
    sides = []
    for side in ("a", "b"):
        toks = read_lines(folder / f"{side}.toks")
        if build is not None:
            for lineno, words in enumerate(toks, start=1):
                if not words.split():
                    raise TreenetsError(f"{folder / f'{side}.toks'}:{lineno}: empty sentence")
            sides.append(build([words.split() for words in toks], f"SICK {folder.name}/{side}.toks"))
            continue
        parents = read_lines(folder / f"{side}.{suffix}")
        if len(toks) != len(parents):
            raise TreenetsError(f"{folder / f'{side}.{suffix}'}: {len(parents)} lines for {len(toks)} sentences")
        built = []
        for lineno, (words, line) in enumerate(zip(toks, parents), start=1):
            tree = parse_parents(line, words.split(), f"{folder / f'{side}.{suffix}'}:{lineno}",
                                 constituency=trees == "constituency")
            built.append(binarize(tree) if trees == "constituency" else tree)
        sides.append(built)
    scores = read_lines(folder / "sim.txt")
    if len(scores) != len(sides[0]):
        raise TreenetsError(f"{folder / 'sim.txt'}: {len(scores)} scores for {len(sides[0])} pairs")
    pairs = []
    for lineno, (left, right, score) in enumerate(zip(*sides, scores), start=1):
        try:
            value = float(score)
        except ValueError:
            raise TreenetsError(f"{folder / 'sim.txt'}:{lineno}: {score!r} is not a number") from None
        if not 1 <= value <= 5:  # also NaN; the targets of the loss are distributions over the scores 1..5
            raise TreenetsError(f"{folder / 'sim.txt'}:{lineno}: relatedness {score.strip()} is outside 1-5 "
                                "(expected a SICK score from 1 to 5)")
        pairs.append(Pair(left, right, value))
    return pairs


@dataclass
class PairBatch(Batch):
    pairs: list[Pair]
    left_ids: list[torch.Tensor]  # word ids of each left sentence, in node order
    right_ids: list[torch.Tensor]
    scores: torch.Tensor  # [B] gold relatedness

    @property
    def size(self) -> int:
        return len(self.pairs)

    @classmethod
    def build(cls, pairs: list[Pair], vocab: Vocab) -> PairBatch:
        sentences = [p.left.words for p in pairs] + [p.right.words for p in pairs]
        # one tensor for the batch, split into views (a tensor per sentence cost more than the rest of building)
        ids = torch.tensor(vocab.encode(list(chain.from_iterable(sentences)))[0], dtype=torch.long)
        ids = list(ids.split([len(words) for words in sentences]))
        return cls(pairs, ids[: len(pairs)], ids[len(pairs) :], torch.tensor([p.score for p in pairs]))
