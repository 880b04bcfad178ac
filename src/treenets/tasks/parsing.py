"""Parsing learnt from trees: a parser trained to give the trees of a file (the teachers' trees that `treenets
distill` writes, an ensemble's; or any file of bracketed trees), selected by the sentence-F1 of its trees against a
treebank's (WSJ 22 by default; WSJ 24 reports). The student of Shayegh et al. (ICLR 2024): the loss is the
negative log-likelihood of each training tree (made binary where it is not, its children grouped from the right)
under the parser's tree CRF (`treenets.nn.chart.tree_crf_log_z`).

The training file holds one bracketed tree a line over a sentence's words (`(X (X the cat) (X sat))`, labels or
none; an empty line: a sentence without a tree, skipped), read as the words are written: the teachers' trees are
over the words they read (Mikolov's PTB text by default: lower case, numbers as `N`). The vocabulary is the most
frequent words of those trees, `<unk>` for the others (each word also read by its characters: the parser has a
representation for a word it never saw).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch

from treenets import data
from treenets.config import TrainConfig
from treenets.core.errors import TreenetsError
from treenets.core.optim import AdamConfig, OptimConfig
from treenets.core.schema import PositiveInt, Section
from treenets.core.vocab import Vocab
from treenets.data.batching import Batch, ShuffledBatches
from treenets.data.lm import UNK
from treenets.data.treebanks import resolve_treebank
from treenets.nn.chart import tree_crf_log_z, tree_crf_score
from treenets.nn.registry import config_union
from treenets.nn.span_parser.model import SpanParserConfig
from treenets.predictors.parsing import TreeCRFParser, binary_spans, decode_trees
from treenets.tasks import register
from treenets.tasks.base import Task, evaluating
from treenets.tasks.metrics import Metric
from treenets.text import NormalizerName
from treenets.trees.formats import can_be_labelled, tokens_of, tree_of
from treenets.trees.metrics import sentence_prf, spans
from treenets.trees.ptb import load_gold
from treenets.trees.walk import leaves

ParserConfig = config_union("parsing")


class ParsingDataConfig(Section):
    """The training trees and the treebanks whose gold trees validate and test."""

    # a file of bracketed trees, one a line (a path; else under the data root); `treenets distill` sets its own
    train: str = "teachers.txt"
    valid: list[str] = ["wsj22"]  # treebanks: paths, or the names nltk-sample, wsj22, wsj24
    test: list[str] = ["wsj24"]  # (never WSJ 23)
    vocab_size: PositiveInt = 10_000  # the most frequent words of the training trees (ties: the first seen)
    batch_size: PositiveInt = 16
    eval_batch_size: PositiveInt = 64
    max_length: PositiveInt = 40  # training trees of more words are skipped
    # how the model reads text typed by a person: raw sentences into the words of its trees (treenets.text)
    normalizer: NormalizerName = "ptb"


class ParsingConfig(Section):
    task: Literal["parsing"]
    data: ParsingDataConfig = ParsingDataConfig()
    model: ParserConfig = SpanParserConfig()
    optim: OptimConfig = AdamConfig(lr=1e-3, betas=(0.9, 0.999), clip=5.0, weight_decay=0.0)
    train: TrainConfig = TrainConfig()


@dataclass
class TreesBatch(Batch):
    tokens: torch.Tensor  # [B, N] word ids
    words: list[list[str]]  # the sentences (the parser reads their characters too)
    lengths: torch.Tensor  # [B]
    spans: list[list[tuple[int, int]]]  # each training tree's spans (start, end inclusive) of two words or more

    @property
    def size(self) -> int:
        """The sentences the loss is summed over."""
        return len(self.spans)

    @property
    def read(self) -> int:
        return int(self.lengths.sum())


class TreeF1(Metric):
    """The sentence-level F1 (official convention, percent) of the parser's trees against the gold trees, selected on
    (higher is better); `loss` is 1 - F1 / 100 (a validation loss for the schedules)."""

    key, higher_is_better = "sentence_f1", True

    def __init__(self):
        self.f1: list[float] = []

    def values(self) -> dict:
        f1 = 100 * sum(self.f1) / len(self.f1) if self.f1 else math.nan
        return {"sentence_f1": f1, "loss": 1 - f1 / 100, "sentences": len(self.f1)}


def read_trees(path: Path, max_length: int | None = None) -> tuple[list[list[str]], list[list[tuple[int, int]]], int]:
    """The sentences of a file of bracketed trees (one a line) and each tree's binary spans (start, end inclusive;
    `binary_spans`); empty lines and one-word trees skipped, so are trees longer than `max_length`. Returns the
    words, the spans and how many lines were skipped. An unreadable line is an error naming the file and line."""
    words, found, skipped = [], [], 0
    lines = [(number, tokens_of(line, f"{path}:{number}")) for number, line in
             enumerate(path.read_text(encoding="utf-8").splitlines(), start=1) if line.strip()]
    skipped = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if not line.strip())
    # labelled (every node's first token its label, `(X (X a b) c)`) where every line can be read so, as parse-eval
    # reads a file; else every bracket a node, `((a b) c)`
    labelled = all(can_be_labelled(tokens) for _, tokens in lines)
    for number, tokens in lines:
        try:
            tree = tree_of(tokens, labelled)
        except ValueError as exc:
            raise TreenetsError(f"{path}:{number}: not a bracketed tree ({exc})") from None
        words_of = leaves(tree) if isinstance(tree, list) else [tree]
        if len(words_of) < 2 or (max_length is not None and len(words_of) > max_length):
            skipped += 1
            continue
        words.append(words_of)
        found.append(binary_spans(tree))
    return words, found, skipped


@register
class ParsingTask(Task):
    """A parser trained on trees (`treenets distill`'s student)."""

    name = "parsing"
    Config = ParsingConfig
    Metric = TreeF1
    Predictor = TreeCRFParser
    units = "words"  # what a batch's `read` counts, for speeds (the loss is per sentence: `size`)
    all_splits = ("train", "valid", "test")
    boundaries = ("<s>", "</s>")  # (read by the predictors' base; the parser adds its own around a sentence)

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        cfg = config.data
        self.words, self.trees = {}, {}
        if "train" in self.splits:
            path = data.resolve(Path(cfg.train).expanduser(), self.root)
            path = path if path.is_file() else Path(cfg.train).expanduser()
            if not path.is_file():
                raise TreenetsError(f"data.train: {cfg.train} is not a file (expected a file of bracketed trees, one "
                                    "a line: `treenets distill` writes one)")
            self.words["train"], self.trees["train"], skipped = read_trees(path, cfg.max_length)
            if len(self.words["train"]) < cfg.batch_size:
                raise TreenetsError(f"{path}: {len(self.words['train'])} trees of 2 to {cfg.max_length} words "
                                    f"({skipped} lines skipped: empty, one word or longer), fewer than one batch of "
                                    f"data.batch_size {cfg.batch_size}")
        self.gold = {}
        for split in ("valid", "test"):
            if split in self.splits:
                specs = getattr(cfg, split)
                if not specs:
                    raise TreenetsError(f"data.{split}: no treebank (expected treebanks whose gold trees score the "
                                        "parser, e.g. [wsj22])")
                gold = [s for spec in specs for s in load_gold(resolve_treebank(spec, self.root)) if len(s.words) >= 2]
                if not gold:
                    raise TreenetsError(f"data.{split}: {', '.join(specs)}: no sentence of two words or more (expected "
                                        "treebanks of gold trees whose leaves are tagged words, e.g. wsj22)")
                self.gold[split] = [s.gold for s in gold]
                self.words[split] = [s.words for s in gold]
        if self.vocab is None:
            self.vocab = Vocab.most_frequent(self.words["train"], cfg.vocab_size, UNK)
        if "train" in self.splits:
            self.batches = ShuffledBatches(len(self.words["train"]), cfg.batch_size, config.train.seed, rank=self.rank,
                                           world=self.world, lengths=[len(w) for w in self.words["train"]])

    @classmethod
    def build_net(cls, config, vocab_size: int) -> torch.nn.Module:
        return config.model.build(vocab_size)

    def _batch(self, sentences: list[list[str]], trees=None) -> TreesBatch:
        ids = [torch.tensor(self.vocab.encode(words)[0]) for words in sentences]
        lengths = torch.tensor([len(words) for words in sentences])
        tokens = torch.nn.utils.rnn.pad_sequence(ids, batch_first=True)
        return TreesBatch(tokens.to(self.device), sentences, lengths, trees or [])

    def next_batch(self) -> TreesBatch | None:
        rows = self.batches.next_rows()
        if rows is None:
            return None
        return self._batch([self.words["train"][i] for i in rows], [self.trees["train"][i] for i in rows])

    def train_loss(self, model, batch: TreesBatch) -> tuple[torch.Tensor, float]:
        """The mean over the batch of -log p(tree) under the tree CRF, and its sum for the log."""
        scores = model(batch.tokens, batch.words, batch.lengths)
        losses = tree_crf_log_z(scores, batch.lengths) - tree_crf_score(scores, batch.spans)
        if not torch.isfinite(losses).all():
            raise TreenetsError("the parser's loss is not finite")
        return losses.mean(), float(losses.detach().sum())

    def eval_units(self, split: str, batch_size: int | None = None) -> int:
        return sum(len(words) for words in self.words[split])

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None, progress=None) -> TreeF1:
        """The sentence-F1 of the parser's Viterbi trees of the split's sentences (of two words or more) against
        their gold trees, the whole sentence's span left out (the official convention)."""
        size = batch_size or self.config.data.eval_batch_size
        order = sorted(range(len(self.words[split])), key=lambda i: len(self.words[split][i]))
        metric = TreeF1()
        with evaluating(model) as net:
            for start in range(0, len(order), size):
                chunk = order[start : start + size]
                batch = self._batch([self.words[split][i] for i in chunk])
                scores = net(batch.tokens, batch.words, batch.lengths)
                for i, found in zip(chunk, decode_trees(scores, batch.lengths, "viterbi")):
                    n = len(self.words[split][i])
                    predicted = {(s, t + 1) for s, t in found} - {(0, n)}
                    metric.f1.append(sentence_prf(predicted, spans(self.gold[split][i]))[2])
                if progress is not None:
                    progress(int(batch.lengths.sum()))
        return metric
