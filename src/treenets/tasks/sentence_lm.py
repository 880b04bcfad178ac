"""Sentence-level language modelling on treebank sentences, or on the lines of a corpus prepared by `treenets data
prepare` (the PRPN unsupervised-parsing recipe).

Each sentence is read on its own, `<s> w_1 ... w_n </s>`, from the model's initial state; sentences are
batched with padding, and the loss is averaged over the real tokens only (a mask). Metric: perplexity.
"""

from __future__ import annotations

from collections import Counter
from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import model_validator

from treenets.config import TrainConfig
from treenets.core.errors import TreenetsError
from treenets.core.optim import OptimConfig, SGDConfig
from treenets.core.schema import PositiveInt, Section
from treenets.core.vocab import Vocab
from treenets.data.batching import ShuffledBatches
from treenets.data.sentences import BOS, EOS, UNK, SentenceBatch, SentenceIds, make_batch, read_sentences
from treenets.nn.prpn.model import PRPNConfig
from treenets.nn.utils import unwrap
from treenets.predictors.lm import LanguageModel
from treenets.tasks import register
from treenets.tasks.base import Task, evaluating
from treenets.tasks.lm import LanguageModelConfig, LMLossConfig
from treenets.tasks.metrics import Perplexity
from treenets.text import NormalizerName


class SentenceDataConfig(Section):
    """Sentences of treebanks, one per batch row.

    Treebanks are paths (files or folders of .mrg), paths under the data root, or the names nltk-sample,
    wsj22, wsj24. Words are preprocessed as for parsing evaluation (word tags only, lower-cased, digits -> N).
    Or `path`: a word-level corpus prepared by `treenets data prepare`, each line a sentence (e.g. Mikolov's PTB
    text, WSJ 0-20), whose train and valid splits replace the treebanks and whose vocabulary replaces `min_count`.
    """

    path: str | None = None  # a prepared corpus: a folder under the data root, else from the current folder
    train: list[str] = ["nltk-sample", "wsj22"]
    valid: list[str] = ["wsj24"]
    min_count: PositiveInt = 3  # training words seen fewer times are read as <unk> (official: 3)
    batch_size: PositiveInt = 64
    eval_batch_size: PositiveInt = 64
    shuffle: bool = True  # a new order of the training sentences every epoch
    # batches of sentences of similar length (with `shuffle`): less padding, so faster steps, most of all on lines
    # of very different lengths; the official code batches the sentences in the treebank's order
    by_length: bool = False

    @model_validator(mode="after")
    def _by_length_needs_shuffle(self):
        if self.by_length and not self.shuffle:
            raise ValueError("by_length sorts each epoch's shuffled order into batches of similar length: it needs "
                             "shuffle: true")
        return self
    # how the model reads text typed by a person: raw sentences into treebank words (treenets.text)
    normalizer: NormalizerName = "treebank"


class SentenceLMConfig(Section):
    task: Literal["sentence-lm"]
    data: SentenceDataConfig = SentenceDataConfig()
    model: LanguageModelConfig = PRPNConfig()
    loss: LMLossConfig = LMLossConfig(ar=0.0, tar=0.0)
    optim: OptimConfig = SGDConfig()
    train: TrainConfig = TrainConfig()


def masked_cross_entropy(model, batch: SentenceBatch) -> torch.Tensor:
    """Summed cross-entropy over the real targets, every sentence read from the initial state."""
    net = unwrap(model)
    out = model(batch.input, net.initial_state(batch.input.size(1)))
    logits = net.decoder(out.output)
    losses = F.cross_entropy(logits.view(-1, logits.size(-1)), batch.target.reshape(-1), reduction="none")
    return (losses * batch.mask.reshape(-1)).sum()


@register
class SentenceLMTask(Task):
    """Sentence-level language modelling."""

    name = "sentence-lm"
    Config = SentenceLMConfig
    Metric = Perplexity
    Predictor = LanguageModel
    units = "tokens"
    all_splits = ("train", "valid")
    boundaries = (BOS, EOS)
    level = "word"  # the prepared corpora it reads

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        cfg = config.data
        if cfg.batch_size % self.world:
            raise TreenetsError(f"data.batch_size {cfg.batch_size} is not divisible by the {self.world} processes")
        self.corpus = None
        if cfg.path is not None:
            self.sentences = self._read_prepared(self.data_folder("a corpus prepared by `treenets data prepare`"))
        else:
            specs = {"train": cfg.train, "valid": cfg.valid}
            words = {split: read_sentences(specs[split], self.root) for split in self.splits}
            if self.vocab is None:
                counts = Counter(w for s in words["train"] for w in s)
                frequent = [w for w in dict.fromkeys(w for s in words["train"] for w in s)
                            if counts[w] >= cfg.min_count]
                self.vocab = Vocab([UNK, BOS, EOS] + frequent, unk=UNK)
            self.sentences = {split: SentenceIds.from_words(words[split], self.vocab) for split in self.splits}
            self._unknown = {split: sum(word not in self.vocab for sentence in words[split] for word in sentence)
                             for split in self.splits}
        if "train" in self.splits:
            if not len(self.sentences["train"]):
                raise TreenetsError(f"data.train: no sentences in {cfg.path or cfg.train}")
            lengths = self.sentences["train"].lengths() if cfg.by_length else None
            self.batches = ShuffledBatches(len(self.sentences["train"]), cfg.batch_size, config.train.seed,
                                           shuffle=cfg.shuffle, rank=self.rank, world=self.world, lengths=lengths)

    def _read_prepared(self, folder) -> dict[str, SentenceIds]:
        """The lines of a prepared corpus as sentences, memory-mapped. A new model's vocabulary is the corpus's
        with the sentence boundaries this task reads (`<eos>` written `</s>`, `<s>` and `<unk>` added where
        missing), so that the corpus's ids are the model's; a trained model reads it through its own ids."""
        corpus = self.corpus = self.open_corpus(folder)
        if self.vocab is None:
            words = [EOS if word == corpus.eos else word for word in corpus.vocab.words]
            self.vocab = Vocab(words + [token for token in (BOS, UNK) if token not in words], unk=UNK)
        id_map, eos = corpus.id_map(self.vocab, eos=EOS), corpus.vocab.index[corpus.eos]
        return {split: SentenceIds.from_stream(corpus.ids(split), eos, len(corpus.vocab), id_map,
                                               where=f"{folder} ({split})") for split in self.splits}

    @classmethod
    def build_net(cls, config, vocab_size: int) -> torch.nn.Module:
        return config.model.build(vocab_size)

    def unknown_tokens(self, split: str) -> int:
        """How many words of `split` the model's vocabulary lacks, which it reads as `<unk>` (a corpus of other
        words: `treenets eval --corpus`)."""
        if self.corpus is None:
            return self._unknown[split]
        return self.corpus.unknown_tokens(split, self.vocab, eos=EOS)

    def next_batch(self) -> SentenceBatch | None:
        rows = self.batches.next_rows()
        if rows is None:
            return None
        return make_batch([self.sentences["train"][i] for i in rows], self.vocab, self.device)

    def train_loss(self, model, batch: SentenceBatch) -> tuple[torch.Tensor, float]:
        """Mean cross-entropy over the real tokens, and its sum."""
        summed = masked_cross_entropy(model, batch)
        loss = summed / batch.mask.sum()
        return loss, summed.item()

    def eval_units(self, split: str, batch_size: int | None = None) -> int:
        """The targets an evaluation reads: each sentence's words and its closing `</s>`."""
        return int((self.sentences[split].lengths()[self.rank :: self.world] + 1).sum())

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None, progress=None) -> Perplexity:
        size = batch_size or self.config.data.eval_batch_size
        sentences = self.sentences[split]
        mine = range(self.rank, len(sentences), self.world)
        metric = Perplexity(self.device)
        with evaluating(model) as net:
            for start in range(0, len(mine), size):
                batch = make_batch([sentences[i] for i in mine[start : start + size]], self.vocab, self.device)
                metric.add(masked_cross_entropy(net, batch), batch.mask.sum().double())
                if progress is not None:
                    progress(batch.size)
        return metric.reduce(self.world)
