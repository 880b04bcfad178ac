"""Treebank sentences read one by one, `<s> w_1 ... w_n </s>`, in right-padded batches with a loss mask
(the PRPN unsupervised-parsing recipe)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from treenets.data.batching import Batch
from treenets.data.treebanks import resolve_treebank
from treenets.trees.ptb import load_gold
from treenets.vocab import Vocab

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


def make_batch(sentences: list[list[str]], vocab: Vocab, device) -> SentenceBatch:
    """A right-padded batch of `<s> ... </s>` sentences (padding is `<unk>`, masked out)."""
    ids = [vocab.encode([BOS] + words + [EOS])[0] for words in sentences]
    width = max(len(x) for x in ids) - 1
    pad = vocab.index[UNK]
    tokens = torch.full((width + 1, len(ids)), pad, dtype=torch.long)
    mask = torch.zeros(width, len(ids))
    for j, x in enumerate(ids):
        tokens[: len(x), j] = torch.tensor(x)
        mask[: len(x) - 1, j] = 1.0
    return SentenceBatch(tokens[:-1].to(device), tokens[1:].to(device), mask.to(device))
