"""Sentence-level language modelling on treebank sentences (the PRPN unsupervised-parsing recipe).

Each sentence is read on its own, `<s> w_1 ... w_n </s>`, from the model's initial state; sentences are
batched with padding, and the loss is averaged over the real tokens only (a mask).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from treenets.errors import TreenetsError
from treenets.tasks.base import Task, evaluating, perplexity
from treenets.tasks.batching import ShuffledBatches
from treenets.tasks.lm import LanguageModel, _unwrap
from treenets.tasks.parsing import load_gold, resolve_treebank
from treenets.vocab import Vocab

UNK, BOS, EOS = "<unk>", "<s>", "</s>"


@dataclass
class SentenceBatch:
    input: torch.Tensor  # [T, B]: <s> w_1 ... w_n, padded
    target: torch.Tensor  # [T, B]: w_1 ... w_n </s>, padded
    mask: torch.Tensor  # [T, B]: 1 on real targets
    lr_scale: float = 1.0

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


def masked_cross_entropy(model, batch: SentenceBatch):
    """Summed cross-entropy over the real targets, the model's output, and the logits."""
    net = _unwrap(model)
    out = model(batch.input, net.initial_state(batch.input.size(1)))
    logits = net.decoder(out.output)
    losses = F.cross_entropy(logits.view(-1, logits.size(-1)), batch.target.reshape(-1), reduction="none")
    return (losses * batch.mask.reshape(-1)).sum(), out


@dataclass
class SentenceLMTask(Task):
    """Sentence-level language modelling for the shared training loop (`treenets.train`)."""

    splits: tuple[str, ...] = ("train", "valid")
    sentences: dict = field(default_factory=dict)

    name = "sentence-lm"
    units = "tokens"
    metric = "ppl"

    def __post_init__(self):
        cfg = self.config.data
        if cfg.batch_size % self.world:
            raise TreenetsError(f"data.batch_size {cfg.batch_size} is not divisible by the {self.world} processes")
        specs = {"train": cfg.train, "valid": cfg.valid}
        for split in self.splits:
            if split not in specs:
                raise TreenetsError(f"task sentence-lm has the splits train and valid, not {split!r}")
        self.sentences = {split: read_sentences(specs[split], self.root) for split in self.splits}
        if self.vocab is None:
            counts = Counter(w for s in self.sentences["train"] for w in s)
            frequent = [w for w in dict.fromkeys(w for s in self.sentences["train"] for w in s)
                        if counts[w] >= cfg.min_count]
            self.vocab = Vocab([UNK, BOS, EOS] + frequent, unk=UNK)
        if "train" in self.splits:
            if not self.sentences["train"]:
                raise TreenetsError(f"data.train: no sentences in {cfg.train}")
            self.batches = ShuffledBatches(len(self.sentences["train"]), cfg.batch_size, self.config.train.seed,
                                           shuffle=cfg.shuffle, rank=self.rank, world=self.world)

    def build_model(self):
        return LanguageModel.build_net(self.config, len(self.vocab))

    def next_batch(self) -> SentenceBatch | None:
        rows = self.batches.next_rows()
        if rows is None:
            return None
        return make_batch([self.sentences["train"][i] for i in rows], self.vocab, self.device)

    def train_loss(self, model, batch: SentenceBatch) -> tuple[torch.Tensor, float]:
        """Mean cross-entropy over the real tokens (every sentence from the initial state), and its sum."""
        summed, _ = masked_cross_entropy(model, batch)
        loss = summed / batch.mask.sum()
        return loss, summed.item()

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None, progress=None) -> dict:
        size = batch_size or self.config.data.eval_batch_size
        sentences = self.sentences[split][self.rank :: self.world]
        total = torch.zeros(2, dtype=torch.float64, device=self.device)
        with evaluating(model) as net:
            for start in range(0, len(sentences), size):
                batch = make_batch(sentences[start : start + size], self.vocab, self.device)
                summed, _ = masked_cross_entropy(net, batch)
                total += torch.stack([summed.double(), batch.mask.sum().double()])
                if progress is not None:
                    progress(batch.size)
        return perplexity(total, self.world)
