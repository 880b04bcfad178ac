"""Masked language modelling over sentences, as StructFormer's official `main.py` trains it (Shen et al., 2021).

Each line of a Mikolov-format corpus (the PTB text: one sentence a line, `<unk>` and `N` in it) is a sentence read
on its own, without boundary tokens. Sentences are sorted by length and cut into batches of about
`tokens_per_batch` tokens (a batch takes sentences until it holds that many), padded with `<pad>`; every epoch
reads the batches in a new random order. In each batch a `mask_rate` share of the real tokens (neither `<pad>` nor
`<unk>`) is replaced by `<mask>`, each independently, and the loss is the cross-entropy of the original tokens at
those positions. Metric: the perplexity of the masked tokens.

The official evaluation masks the validation sentences anew at every evaluation, so its validation loss moves by
the draw; here an evaluation draws its masks from a generator seeded by the run's seed, the same masks at every
epoch, so that epochs are compared on the same predictions (the best model is chosen on it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F

from treenets.config import TrainConfig
from treenets.core.errors import TreenetsError
from treenets.core.optim import AdamConfig, OptimConfig
from treenets.core.schema import PositiveInt, Section
from treenets.core.vocab import Vocab
from treenets.data.batching import Batch, TokenBudgetBatches
from treenets.data.lm import read_lm_file
from treenets.nn.registry import config_union
from treenets.nn.structformer.model import StructFormerConfig
from treenets.nn.utils import unwrap
from treenets.predictors.mlm import MaskedLanguageModel
from treenets.tasks import register
from treenets.tasks.base import Task, evaluating
from treenets.tasks.metrics import Perplexity
from treenets.text import NormalizerName

PAD, UNK, MASK = "<pad>", "<unk>", "<mask>"  # ids 0, 1, 2 of every vocabulary of this task
# The masked language models: every model folder's config for this task (`treenets.nn.registry`).
MaskedLanguageModelConfig = config_union("mlm")


class MaskedLMDataConfig(Section):
    """A word-level corpus in the Mikolov PTB format: a folder with the three files below."""

    path: str = "ptb_lm"  # folder under the data root, else from the current folder (or absolute)
    train: str = "ptb.train.txt"
    valid: str = "ptb.valid.txt"
    test: str = "ptb.test.txt"
    tokens_per_batch: PositiveInt = 4096  # [batch_size] a batch takes sentences until it holds this many tokens
    eval_tokens_per_batch: PositiveInt = 4096
    # how the model reads text typed by a person: raw sentences into the words of this corpus (treenets.text)
    normalizer: NormalizerName = "ptb"


class MaskedLMConfig(Section):
    task: Literal["mlm"]
    data: MaskedLMDataConfig = MaskedLMDataConfig()
    model: MaskedLanguageModelConfig = StructFormerConfig()
    # the official recipe: Adam, lr 3e-4, eps 1e-9, weight decay 1.2e-6, clipping 0.25, lr halved after 3 epochs
    # in a row without a better validation loss
    optim: OptimConfig = AdamConfig(lr=3e-4, eps=1e-9, weight_decay=1.2e-6, clip=0.25, lr_plateau_factor=0.5,
                                    lr_plateau_patience=2)
    train: TrainConfig = TrainConfig(seed=1111, epochs=100)


@dataclass
class MaskedBatch(Batch):
    tokens: torch.Tensor  # [B, L]: the sentences with some tokens replaced by <mask>, padded with <pad>
    targets: torch.Tensor  # [B, L]: the original token where masked, <pad> elsewhere

    @property
    def size(self) -> int:
        """The masked tokens: what the loss is summed over."""
        return int((self.targets != 0).sum().item())

    @property
    def read(self) -> int:
        """Every real token (not `<pad>`): what the network reads, for speeds comparable with other tasks'."""
        return int((self.tokens != 0).sum().item())


def pad_sentences(sentences: list[np.ndarray], device=None) -> torch.Tensor:
    """Sentences (ids) as one right-padded `[B, L]` batch (`<pad>` is id 0)."""
    width = max(len(s) for s in sentences)
    tokens = torch.zeros(len(sentences), width, dtype=torch.long)
    for row, ids in enumerate(sentences):
        tokens[row, : len(ids)] = torch.from_numpy(np.asarray(ids, dtype=np.int64))
    return tokens.to(device)


def mask_tokens(tokens: torch.Tensor, rate: float, mask_id: int, unk_id: int,
                generator: torch.Generator | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """(input, targets): each real token (not `<pad>` or `<unk>`) replaced by `mask_id` with probability `rate`;
    the targets hold the replaced tokens and `<pad>` (0) elsewhere."""
    draw = torch.rand(tokens.shape, generator=generator).to(tokens.device) < rate
    chosen = draw & (tokens != 0) & (tokens != unk_id)
    return tokens.masked_fill(chosen, mask_id), tokens.masked_fill(~chosen, 0)


def masked_loss(model, batch: MaskedBatch) -> torch.Tensor:
    """The summed cross-entropy of the masked tokens (the output layer runs on those positions only)."""
    net = unwrap(model)
    hidden = model(batch.tokens).hidden
    chosen = batch.targets != 0
    logits = net.output_layer(hidden[chosen])
    return F.cross_entropy(logits.float(), batch.targets[chosen], reduction="sum")


@register
class MaskedLMTask(Task):
    """Masked language modelling over sentences (StructFormer)."""

    name = "mlm"
    Config = MaskedLMConfig
    Metric = Perplexity
    Predictor = MaskedLanguageModel
    units = "tokens"
    boundaries = (None, None)  # a sentence is read without boundary tokens

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        cfg = config.data
        folder = self.data_folder(f"a folder with {cfg.train}, {cfg.valid}, {cfg.test}")
        # each line without the `<eos>` the reader appends: StructFormer reads a sentence alone, without boundaries
        words = {split: [line[:-1] for line in read_lm_file(folder / getattr(cfg, split))] for split in self.splits}
        if self.vocab is None:
            if "train" not in words:
                raise TreenetsError("a new masked language model needs the train split for its vocabulary")
            self.vocab = Vocab.from_corpus([[PAD, UNK, MASK], *words["train"]], unk=UNK)
        if self.vocab.words[:3] != [PAD, UNK, MASK]:
            raise TreenetsError(f"a masked language model's vocabulary starts with {PAD}, {UNK}, {MASK}; this one "
                                f"starts with {self.vocab.words[:3]}")
        if config.model.longest is not None:
            for split in self.splits:
                longest = max(range(len(words[split])), key=lambda i: len(words[split][i]))
                if len(words[split][longest]) > config.model.longest:
                    raise TreenetsError(f"{folder / getattr(cfg, split)}:{longest + 1}: a sentence of "
                                        f"{len(words[split][longest])} words; the position embedding reads at most "
                                        f"{config.model.longest} (model.position_embedding: false reads any length)")
        self.sentences = {split: [np.array(self.vocab.encode(s)[0], dtype=np.int64) for s in words[split] if s]
                          for split in self.splits}
        self._unknown = {split: sum(w not in self.vocab for s in words[split] for w in s) for split in self.splits}
        if "train" in self.splits:
            self.batches = TokenBudgetBatches([len(s) for s in self.sentences["train"]], cfg.tokens_per_batch,
                                              config.train.seed, rank=self.rank, world=self.world)

    @classmethod
    def build_net(cls, config, vocab_size: int) -> torch.nn.Module:
        return config.model.build(vocab_size, pad=0)

    def unknown_tokens(self, split: str) -> int:
        """How many words of `split` the model's vocabulary lacks (read as `<unk>`, never masked)."""
        return self._unknown[split]

    def _masked(self, sentences: list[np.ndarray], generator=None) -> MaskedBatch:
        tokens = pad_sentences(sentences)
        rate = self.config.model.mask_rate
        inputs, targets = mask_tokens(tokens, rate, self.vocab.index[MASK], self.vocab.index[UNK], generator)
        return MaskedBatch(inputs.to(self.device), targets.to(self.device))

    def next_batch(self) -> MaskedBatch | None:
        rows = self.batches.next_rows()
        if rows is None:
            return None
        return self._masked([self.sentences["train"][i] for i in rows])

    def train_loss(self, model, batch: MaskedBatch) -> tuple[torch.Tensor, float]:
        """Mean cross-entropy over the masked tokens, and its sum."""
        summed = masked_loss(model, batch)
        return summed / max(batch.size, 1), summed.item()

    def eval_units(self, split: str, batch_size: int | None = None) -> int:
        """The tokens an evaluation reads (the masked share of them is scored)."""
        return sum(len(s) for s in self.sentences[split][self.rank :: self.world])

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None, progress=None) -> Perplexity:
        budget = batch_size or self.config.data.eval_tokens_per_batch
        sentences = self.sentences[split][self.rank :: self.world]
        batches = TokenBudgetBatches([len(s) for s in sentences], budget, seed=0, shuffle=False)
        generator = torch.Generator().manual_seed(self.config.train.seed)  # the same masks at every evaluation
        metric = Perplexity(self.device)
        with evaluating(model) as net:
            while (rows := batches.next_rows()) is not None:
                batch = self._masked([sentences[i] for i in rows], generator)
                metric.add(masked_loss(net, batch), batch.size)
                if progress is not None:
                    progress(sum(len(sentences[i]) for i in rows))
        return metric.reduce(self.world)
