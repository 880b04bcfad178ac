"""Grammar induction: a probabilistic context-free grammar trained on sentences alone by maximising their
likelihood, summed over every tree by the inside algorithm (Kim, Dyer & Rush, ACL 2019: the Neural and Compound
PCFGs; the official `train.py` is the recipe).

Sentences come one per line from a text (Mikolov's PTB by default: lower case, numbers as `N`, no punctuation,
10,000 words; `<unk>` for the others), in batches of sentences of one length, as the official code batches them.
A curriculum on length: the first epoch reads the sentences of at most `max_length` words, each later one
`length_increment` more, up to `final_max_length`; one-word sentences, which have no tree under a grammar whose root
is a nonterminal, are never read. The loss is the mean over the batch of -log p(sentence) (the Compound PCFG's:
-ELBO, with the KL). Evaluation (`valid`: treebanks, WSJ 22 by default, their words as the parsing evaluation
reads them; `test`: WSJ 24) gives the perplexity per word and closing `</s>` as the official code counts them
(exact for the Neural PCFG, the ELBO's bound for the Compound PCFG), which selects the model on `valid`, and the
sentence-level F1 of the Viterbi trees (the whole sentence's span left out, as `official`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch
from pydantic import model_validator

from treenets.config import TrainConfig
from treenets.core.errors import TreenetsError
from treenets.core.optim import AdamConfig, OptimConfig
from treenets.core.schema import NonNegativeInt, PositiveInt, Section
from treenets.core.vocab import Vocab
from treenets.data.batching import Batch, EpochOrder
from treenets.data.lm import UNK, read_lm_file
from treenets.data.treebanks import resolve_treebank
from treenets.nn.chart import viterbi
from treenets.nn.neural_pcfg.model import NeuralPCFGConfig
from treenets.nn.registry import config_union
from treenets.nn.utils import unwrap
from treenets.predictors.pcfg import GrammarModel
from treenets.tasks import register
from treenets.tasks.base import Task, evaluating
from treenets.tasks.metrics import Perplexity
from treenets.text import NormalizerName
from treenets.trees.metrics import sentence_prf, spans
from treenets.trees.ptb import load_gold

# The grammars: every model folder's config for this task (`treenets.nn.registry`), told apart by `name`.
GrammarConfig = config_union("pcfg")


class PCFGDataConfig(Section):
    """Training sentences, one per line of `path/train` (Mikolov's PTB text by default), and the treebanks whose
    sentences validate and test (their words as the parsing evaluation reads them: lower case, digit runs as `N`)."""

    path: str = "ptb_lm"  # folder under the data root, else from the current folder (or absolute)
    train: str = "ptb.train.txt"
    valid: list[str] = ["wsj22"]  # treebanks: paths, or the names nltk-sample, wsj22, wsj24
    test: list[str] = ["wsj24"]  # (never WSJ 23, the benchmark of the papers)
    # [vocabsize] the most frequent words of the training text (ties: the first seen), the others read as <unk>;
    # Mikolov's PTB text has 10,000 with <unk>
    vocab_size: PositiveInt = 10_000
    batch_size: PositiveInt = 4  # [batch_size] sentences of one length a batch
    eval_batch_size: PositiveInt = 16
    max_length: PositiveInt = 30  # [max_length] the curriculum's first epoch: sentences of at most this many words
    length_increment: NonNegativeInt = 1  # [len_incr] words more each epoch
    final_max_length: PositiveInt = 40  # [final_max_length]
    # how the model reads text typed by a person: raw sentences into the words of this corpus (treenets.text)
    normalizer: NormalizerName = "ptb"

    @model_validator(mode="after")
    def _curriculum_grows(self):
        if self.final_max_length < self.max_length:
            raise ValueError(f"final_max_length {self.final_max_length} is below max_length {self.max_length}, the "
                             "curriculum's first length (expected the length it grows to, at least its first)")
        if not self.valid:
            raise ValueError("valid is [], no treebank: a grammar is validated and selected on the perplexity of a "
                             "treebank's sentences (expected one or more treebanks: paths, or the names "
                             "nltk-sample, wsj22, wsj24)")
        return self


class PCFGConfig(Section):
    task: Literal["pcfg"]
    data: PCFGDataConfig = PCFGDataConfig()
    model: GrammarConfig = NeuralPCFGConfig()
    optim: OptimConfig = AdamConfig(lr=1e-3, betas=(0.75, 0.999), clip=3.0, weight_decay=0.0)
    train: TrainConfig = TrainConfig()


@dataclass
class SentencesOfOneLength(Batch):
    tokens: torch.Tensor  # [B, n] word ids

    @property
    def size(self) -> int:
        """The words and closing `</s>` the loss is summed over (the official count: n + 1 a sentence)."""
        return self.tokens.numel() + self.tokens.size(0)

    @property
    def lengths(self) -> torch.Tensor:
        return torch.full((self.tokens.size(0),), self.tokens.size(1), dtype=torch.long, device=self.tokens.device)


class LengthBatches(EpochOrder):
    """Sentences in batches of one length, the batches read in a new random order every epoch (the official
    `data.py` batches so), each epoch's sentences those of 2 to `limit(epoch)` words: `order` [batches,
    batch_size] holds an epoch's batches (-1 filling a short one), `position` the next, `epoch` the epoch."""

    def __init__(self, lengths, batch_size: int, limit, seed: int):
        self.lengths, self.batch_size, self.limit = torch.as_tensor(lengths), batch_size, limit
        self.generator = torch.Generator().manual_seed(seed)
        self.order, self.position, self.epoch = torch.zeros(0, batch_size, dtype=torch.long), 0, 0

    def _epoch_order(self) -> torch.Tensor:
        batches = []
        kept = (self.lengths >= 2) & (self.lengths <= self.limit(self.epoch))
        for length in self.lengths[kept].unique().tolist():
            rows = torch.nonzero(self.lengths == length).flatten()
            rows = rows[torch.randperm(len(rows), generator=self.generator)]
            batches += list(rows.split(self.batch_size))
        order = torch.full((len(batches), self.batch_size), -1, dtype=torch.long)
        for i, rows in enumerate(batches):
            order[i, : len(rows)] = rows
        return order[torch.randperm(len(batches), generator=self.generator)]

    def __len__(self) -> int:
        return len(self.order) if len(self.order) else int(((self.lengths >= 2) & (self.lengths <= self.limit(0)))
                                                           .sum().item() // self.batch_size)

    def next_rows(self) -> list[int] | None:
        if self.position == 0:
            self.order = self._epoch_order()
        if self.position >= len(self.order):
            self.position, self.epoch = 0, self.epoch + 1
            return None
        rows = self.order[self.position]
        self.position += 1
        return rows[rows >= 0].tolist()

    def state_dict(self) -> dict:
        return {**super().state_dict(), "epoch": self.epoch}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.epoch = int(state["epoch"])


class GrammarMetric(Perplexity):
    """Perplexity per word and closing `</s>` (the model selection value: exact for a Neural PCFG, `ppl`; for a
    Compound PCFG the upper bound of the ELBO that Kim et al. report, `ppl_bound`), the mean KL per sentence, and
    the sentence-level F1 of the Viterbi trees where the sentences have gold trees."""

    lower_is_better = frozenset({"loss", "ppl", "ppl_bound"})

    def __init__(self, device=None, bound: bool = False):
        super().__init__(device)
        self.kl, self.sentences, self.f1 = 0.0, 0, []
        self.key = "ppl_bound" if bound else "ppl"

    def add_batch(self, nll: torch.Tensor, kl: torch.Tensor, words: int) -> None:
        self.add((nll + kl).sum(), words)
        self.kl += float(kl.sum())
        self.sentences += len(nll)

    def values(self) -> dict:
        values = super().values()
        if self.key != "ppl":
            values = {(self.key if k == "ppl" else k): v for k, v in values.items()}
        values["kl"] = self.kl / max(self.sentences, 1)
        if self.f1:
            values["sentence_f1"] = 100 * sum(self.f1) / len(self.f1)
        return values


def _noise(net, batch: int, draws: torch.Generator, device) -> dict:
    """A Compound PCFG's standard normal draws of z for `batch` sentences from `draws` (`noise=`); nothing for a
    grammar without z."""
    size = unwrap(net).z_dim
    return {"noise": torch.randn(batch, size, generator=draws).to(device)} if size else {}


def score_sentences(model, ids: list[torch.Tensor], device, batch_size: int, gold: list | None = None,
                    progress=None) -> GrammarMetric:
    """The `GrammarMetric` of a grammar on sentences of word ids (those of at least two words; `gold`: their gold
    trees, aligned with `ids`, or None), in batches of similar length: perplexity per word and closing `</s>`
    (z drawn for a Compound PCFG's bound), the mean KL per sentence, and the F1 of the Viterbi trees (z its
    posterior mean), as the official `train.py` evaluates. What a split's evaluation and `eval --file` share."""
    sentences = [(i, s) for i, s in enumerate(ids) if len(s) >= 2]
    sentences.sort(key=lambda item: len(item[1]))
    draws = torch.Generator().manual_seed(0)  # z's draws: the same every evaluation, and not training's
    with evaluating(model) as net:
        metric = GrammarMetric(device, bound=bool(unwrap(net).z_dim))
        for start in range(0, len(sentences), batch_size):
            chunk = sentences[start : start + batch_size]
            lengths = torch.tensor([len(s) for _, s in chunk])
            tokens = torch.nn.utils.rnn.pad_sequence([s for _, s in chunk], batch_first=True).to(device)
            run = net(tokens, lengths, **_noise(net, len(chunk), draws, device))
            metric.add_batch(run.nll, run.kl, int((lengths + 1).sum()))
            if gold is not None:
                trees = viterbi(net(tokens, lengths, use_mean=True).grammar if unwrap(net).z_dim else run.grammar,
                                lengths)
                for (i, _), tree in zip(chunk, trees):
                    predicted = {(s, t + 1) for s, t, _ in tree.spans} - {(0, len(ids[i]))}
                    metric.f1.append(sentence_prf(predicted, spans(gold[i]))[2])
            if progress is not None:
                progress(int((lengths + 1).sum()))
    return metric


@register
class PCFGTask(Task):
    """Grammar induction on sentences (the Neural and Compound PCFGs)."""

    name = "pcfg"
    Config = PCFGConfig
    Metric = GrammarMetric
    Predictor = GrammarModel
    units = "words"
    all_splits = ("train", "valid", "test")
    boundaries = ("<s>", "</s>")  # none is read: a sentence's probability includes no boundary token

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        cfg = config.data
        words = {}
        if "train" in self.splits:
            path = self.data_folder(f"a folder with {cfg.train}") / cfg.train
            lines = [sentence[:-1] for sentence in read_lm_file(path)]  # (each one's <eos> dropped)
            words["train"] = [sentence for sentence in lines if sentence]
            read = sum(2 <= len(sentence) <= self.length_limit(0) for sentence in words["train"])
            if not read:  # (the first epoch would have no batch)
                longer = sum(len(sentence) >= 2 for sentence in words["train"])
                raise TreenetsError(f"{path}: no sentence to train on: a grammar reads sentences of 2 words or more "
                                    "(one word has no tree under its nonterminal root), the first epoch those of at "
                                    f"most data.max_length {cfg.max_length}; of the text's {len(lines):,} line(s), "
                                    f"{longer:,} have 2 words or more, none of them within the length limit"
                                    if longer else
                                    f"{path}: no sentence to train on: a grammar reads sentences of 2 words or more "
                                    "(one word has no tree under its nonterminal root), and none of the text's "
                                    f"{len(lines):,} line(s) has two")
        self.gold = {}
        for split in ("valid", "test"):
            if split in self.splits:
                specs = getattr(cfg, split)
                gold = [s for spec in specs for s in load_gold(resolve_treebank(spec, self.root)) if s.words]
                self.gold[split] = [s.gold for s in gold]
                words[split] = [s.words for s in gold]
        if self.vocab is None:
            self.vocab = Vocab.most_frequent(words["train"], cfg.vocab_size, UNK)
        self.ids = {split: [torch.tensor(self.vocab.encode(s)[0]) for s in sentences]
                    for split, sentences in words.items()}
        self._unknown = {split: sum(w not in self.vocab for s in sentences for w in s)
                         for split, sentences in words.items()}
        if "valid" in self.splits:  # (validation selects the model: refused before training; test, when read)
            self._check_evaluable("valid")
        if "train" in self.splits:
            lengths = [len(s) for s in self.ids["train"]]
            self.batches = LengthBatches(lengths, cfg.batch_size, self.length_limit, config.train.seed)

    def length_limit(self, epoch: int) -> int:
        """The longest sentence read in `epoch` (0-based): the curriculum."""
        cfg = self.config.data
        return min(cfg.final_max_length, cfg.max_length + epoch * cfg.length_increment)

    @classmethod
    def build_net(cls, config, vocab_size: int) -> torch.nn.Module:
        return config.model.build(vocab_size)

    def unknown_tokens(self, split: str) -> int:
        return self._unknown[split]

    def next_batch(self) -> SentencesOfOneLength | None:
        rows = self.batches.next_rows()
        if rows is None:
            return None
        return SentencesOfOneLength(torch.stack([self.ids["train"][i] for i in rows]).to(self.device))

    def train_loss(self, model, batch: SentencesOfOneLength) -> tuple[torch.Tensor, float]:
        """The mean over the batch of -log p(sentence) (+ KL), and its sum for the log (per word and </s> there)."""
        run = model(batch.tokens, batch.lengths)
        losses = run.nll + run.kl
        if not torch.isfinite(losses).all():
            raise TreenetsError("the grammar's loss is not finite (a sentence of probability 0?)")
        return losses.mean(), float(losses.detach().sum())

    def eval_units(self, split: str, batch_size: int | None = None) -> int:
        return sum(len(s) + 1 for s in self.ids[split] if len(s) >= 2)

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None, progress=None) -> GrammarMetric:
        """Perplexity (and KL, and the Viterbi trees' F1 against the gold) of the sentences of `split` of at
        least two words (`score_sentences`)."""
        self._check_evaluable(split)
        metric = score_sentences(model, self.ids[split], self.device, batch_size or self.config.data.eval_batch_size,
                                 self.gold.get(split), progress)
        if not math.isfinite(metric.values()["loss"]):
            raise TreenetsError(f"{split}: the grammar gives a sentence probability 0 (perplexity infinite)")
        return metric

    def _check_evaluable(self, split: str) -> None:
        """An error naming `data.<split>` where its treebanks hold no sentence a grammar scores (2 words or more)."""
        if not any(len(sentence) >= 2 for sentence in self.ids[split]):
            raise TreenetsError(f"data.{split} {getattr(self.config.data, split)}: no sentence of 2 words or more to "
                                f"evaluate on ({len(self.ids[split]):,} with words; a grammar scores sentences of 2 "
                                "words or more)")

    @classmethod
    def evaluate_text(cls, predictor, sentences: list[tuple[str, str]], batch_size: int | None = None,
                      pretokenized: bool = False, source: str = "--file", log=None) -> GrammarMetric:
        """`treenets eval --file`: the metric of the grammar `predictor` on the lines of a text (`(where, text)`
        pairs), as on a split (`score_sentences`: the KL and a Compound PCFG's bound included). A grammar scores
        sentences of two words or more (no tree has a nonterminal root over one word): the others are counted and
        said to `log`, and a text without one is an error naming `source`."""
        tokens = [predictor.read(text, pretokenized, where) for where, text in sentences]
        kept = [words for words in tokens if len(words) >= 2]
        why = "a grammar scores sentences of two words or more: no tree has a nonterminal root over one word"
        if not kept:
            raise TreenetsError(f"{source}: none of its {len(tokens)} line(s) reads as two words or more ({why}); "
                                "nothing to score")
        if len(kept) < len(tokens) and log is not None:
            log(f"note: {source}: {len(tokens) - len(kept)} of {len(tokens)} line(s) skipped, of one word ({why}); "
                f"{len(kept)} scored")
        ids = [torch.tensor(predictor.vocab.encode(words)[0]) for words in kept]
        metric = score_sentences(predictor.net, ids, predictor.device,
                                 batch_size or predictor.config.data.eval_batch_size)
        if not math.isfinite(metric.values()["loss"]):
            raise TreenetsError(f"{source}: the grammar gives a sentence probability 0 (perplexity infinite)")
        return metric

    def state_dict(self) -> dict:
        return self.batches.state_dict()
