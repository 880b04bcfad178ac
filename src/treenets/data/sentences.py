"""Treebank sentences read one by one, `<s> w_1 ... w_n </s>`, in right-padded batches with a loss mask
(the PRPN unsupervised-parsing recipe)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from treenets.core.vocab import Vocab
from treenets.data.batching import Batch
from treenets.data.lm import check_ids
from treenets.data.treebanks import resolve_treebank
from treenets.trees.ptb import load_gold

UNK, BOS, EOS = "<unk>", "<s>", "</s>"


@dataclass
class SentenceBatch(Batch):
    input: torch.Tensor  # [T, B]: <s> w_1 ... w_n, padded
    target: torch.Tensor  # [T, B]: w_1 ... w_n </s>, padded
    mask: torch.Tensor  # [T, B]: 1 on real targets

    @property
    def size(self) -> int:
        return int(self.mask.sum().item())


def read_sentences(specs: list[str], root=None) -> list[list[str]]:
    """The preprocessed words of every non-empty sentence of the given treebanks."""
    sentences = []
    for spec in specs:
        sentences += [s.words for s in load_gold(resolve_treebank(spec, root)) if s.words]
    return sentences


class SentenceIds:
    """Sentences as one array of ids: sentence i is `ids[starts[i]:ends[i]]`, its words without boundaries. A
    prepared corpus (`treenets.data.corpus`) is read this way without copying it: its lines end at `<eos>`; a
    sentence's ids are checked against `vocab_size` and mapped by `id_map` (as `treenets.data.lm.StreamColumns`)
    when it is read."""

    def __init__(self, ids: np.ndarray, starts: np.ndarray, ends: np.ndarray, vocab_size: int | None = None,
                 id_map: np.ndarray | None = None, where: str = "the corpus"):
        self.ids, self.starts, self.ends = ids, starts, ends
        self.vocab_size, self.id_map, self.where = vocab_size, id_map, where

    @classmethod
    def from_words(cls, sentences: list[list[str]], vocab: Vocab) -> SentenceIds:
        """Word lists encoded with `vocab` (unknown words -> its `<unk>`)."""
        lengths = np.array([len(words) for words in sentences], dtype=np.int64)
        ends = np.cumsum(lengths)
        ids = np.array([i for words in sentences for i in vocab.encode(words)[0]], dtype=np.int64)
        return cls(ids, ends - lengths, ends)

    @classmethod
    def from_stream(cls, stream: np.ndarray, eos_id: int, vocab_size: int | None = None,
                    id_map: np.ndarray | None = None, where: str = "the corpus") -> SentenceIds:
        """The lines of a token stream in which each line ends with `eos_id`, found a block at a time (never a
        copy of the stream); lines with no word are left out."""
        block = 1 << 24
        ends = np.concatenate([np.flatnonzero(stream[start : start + block] == eos_id) + start
                               for start in range(0, len(stream), block)] or [np.zeros(0, dtype=np.int64)])
        starts = np.concatenate([[0], ends[:-1] + 1])
        kept = ends > starts
        return cls(stream, starts[kept], ends[kept], vocab_size, id_map, where)

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, index: int) -> np.ndarray:
        ids = self.ids[self.starts[index] : self.ends[index]]
        check_ids(ids, self.vocab_size, self.where)
        return ids if self.id_map is None else self.id_map[ids]

    def lengths(self) -> np.ndarray:
        return self.ends - self.starts


def make_batch(sentences: list[np.ndarray], vocab: Vocab, device) -> SentenceBatch:
    """A right-padded batch of `<s> ... </s>` sentences, each given as the ids of its words (padding is `<unk>`,
    masked out)."""
    bos, eos, pad = (vocab.index[token] for token in (BOS, EOS, UNK))
    width = max(len(x) for x in sentences) + 1
    tokens = torch.full((width + 1, len(sentences)), pad, dtype=torch.long)
    mask = torch.zeros(width, len(sentences))
    for j, x in enumerate(sentences):
        tokens[0, j], tokens[len(x) + 1, j] = bos, eos
        tokens[1 : len(x) + 1, j] = torch.from_numpy(x.astype(np.int64))
        mask[: len(x) + 1, j] = 1.0
    return SentenceBatch(tokens[:-1].to(device), tokens[1:].to(device), mask.to(device))
