"""Sentiment classification on the Stanford Sentiment Treebank (Tai et al. 2015, section 4.1).

A Tree-LSTM over the binary constituency tree with a softmax classifier on every node, trained on every
labelled node; fine-grained (5 classes) or binary (negative / positive). The sequential encoders (the baselines
LSTM, BiLSTM; Ordered Memory, Shen et al. 2019) classify the sentence from their vector of it and are trained on
the sentence labels, or on every labelled phrase as a sentence (`data.subtrees`). Metrics: root
accuracy (the paper's figure) and, for tree models, accuracy over all labelled phrases; for Ordered Memory, which
induces a tree of each sentence it reads, `tree_f1` and `tree_sentence_f1` of those trees against the treebank's
(`induced_trees`). Model selection on dev.
"""

from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import model_validator

from treenets import data
from treenets.config import TrainConfig
from treenets.core.optim import OptimConfig
from treenets.core.schema import PositiveInt, Section
from treenets.core.vocab import Vocab
from treenets.data.batching import ShuffledBatches
from treenets.data.embeddings import load_embeddings
from treenets.data.sst import NUM_CLASSES, SPLIT_FILES, TreesBatch, labelled_phrases, read_trees
from treenets.nn.registry import InducedTrees, encoder_configs
from treenets.nn.tree_models import SentenceEncoderConfig, SentimentModel, SentimentModelConfig
from treenets.nn.treelstm.encoders import BinaryTreeLSTMConfig
from treenets.nn.utils import unwrap
from treenets.predictors.sentiment import SentimentClassifier
from treenets.predictors.tree_sources import DEFAULT_PARSER, cached_trees, tree_source
from treenets.tasks import register
from treenets.tasks.base import Task, evaluating
from treenets.tasks.metrics import SentimentAccuracy
from treenets.tasks.relatedness import ADAGRAD_OPTIM
from treenets.text import NormalizerName
from treenets.trees.parents import labels_from, nested_words


class SSTDataConfig(Section):
    path: str = "sst/trainDevTestTrees_PTB/trees"  # train.txt, dev.txt, test.txt
    classes: Literal["fine", "binary"] = "fine"
    # The trees the Tree-LSTM reads: the treebank's, those `parser` induces, or a fixed shape
    # (`treenets.predictors.tree_sources`); over other trees than the treebank's, a node is trained on (and
    # scored by) the label of the treebank's phrase over the same words, if there is one.
    trees: Literal["gold", "induced", "right-branching", "balanced"] = "gold"
    parser: str = DEFAULT_PARSER  # the language model that induces trees: for `trees: induced`, and for
    # sentences typed without a tree
    normalizer: NormalizerName = "tokens"  # how a typed sentence becomes SST's tokens (`treenets.text`)
    # sequential encoders: train on every labelled phrase of the training trees as a sentence of its own (Ordered
    # Memory's recipe, `--subtrees`), not on the sentences alone (a Tree-LSTM trains on every phrase in any case)
    subtrees: bool = False
    embeddings: str | None = None  # GloVe-format text file; None: random initialisation
    batch_size: PositiveInt = 25
    eval_batch_size: PositiveInt = 100


class SentimentModelSection(SentimentModelConfig):
    """The task's model: the binary Tree-LSTM (over SST's binary trees) unless `encoder` names another."""

    encoder: SentenceEncoderConfig = BinaryTreeLSTMConfig()


class SentimentConfig(Section):
    task: Literal["sentiment"]
    data: SSTDataConfig = SSTDataConfig()
    model: SentimentModelSection = SentimentModelSection()
    optim: OptimConfig = ADAGRAD_OPTIM
    train: TrainConfig = TrainConfig(epochs=10, log_interval=50, seed=123)

    @model_validator(mode="after")
    def _trees_fit_the_encoder(self):
        if self.model.encoder.reads_trees and self.model.encoder.children is None:
            fit = [name for name, c in encoder_configs("sentences").items() if not c.reads_trees
                   or c.children is not None]
            raise ValueError(f"model.encoder.name: SST trees are binary constituency trees, and {self.model.name} "
                             f"reads trees of any number of children (dependency trees); use {', '.join(fit)}")
        if self.data.subtrees and self.model.encoder.reads_trees:
            raise ValueError(f"data.subtrees: a {self.model.name} trains on every phrase of the trees already; "
                             "subtrees are for the sequential encoders")
        return self


def node_targets(model, batch: TreesBatch, tree_batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Labels aligned with the model's outputs (-1 where a node has none), and the roots' positions."""
    device = unwrap(model).emb.weight.device
    if tree_batch is None:  # sequential encoders: one output per sentence
        return torch.tensor([t.labels[t.root] for t in batch.trees], device=device), torch.arange(batch.size,
                                                                                                 device=device)
    labels = torch.tensor([label for t in batch.trees for label in t.labels], device=device)
    return labels, tree_batch.roots


@register
class SentimentTask(Task):
    """SST sentiment."""

    name = "sentiment"
    Config = SentimentConfig
    Metric = SentimentAccuracy
    Predictor = SentimentClassifier
    units = "sentences"

    def __init__(self, config, **kwargs):
        super().__init__(config, **kwargs)
        cfg = config.data
        folder = self.data_folder("train.txt, dev.txt, test.txt")
        # (binary phrases from every training sentence, those of the neutral ones too, as torchtext's subtrees)
        self.trees = {split: read_trees(folder / SPLIT_FILES[split], cfg.classes, cfg.subtrees and split == "train")
                      for split in self.splits}
        if cfg.trees != "gold" and config.model.encoder.reads_trees:
            source = tree_source(cfg.trees, cfg.parser)
            for split, gold in self.trees.items():
                built = cached_trees(source, [list(tree.words) for tree in gold], f"SST {split}")
                self.trees[split] = [labels_from(tree, labelled) for tree, labelled in zip(built, gold)]
        if cfg.subtrees and "train" in self.splits:
            self.trees["train"] = labelled_phrases(self.trees["train"])
        if self.vocab is None:
            words = dict.fromkeys(w for tree in self.trees["train"] for w in tree.words)
            self.vocab = Vocab(["<unk>"] + list(words), unk="<unk>")
        if "train" in self.splits:
            # Phrases in batches of similar length, as the official recipe's torchtext BucketIterator batches them
            # (a sequential encoder runs as many steps as a batch's longest phrase).
            lengths = [len(tree.words) for tree in self.trees["train"]] if cfg.subtrees else None
            self.batches = ShuffledBatches(len(self.trees["train"]), cfg.batch_size, config.train.seed,
                                           rank=self.rank, world=self.world, lengths=lengths)

    @classmethod
    def build_net(cls, config, vocab_size: int) -> SentimentModel:
        return config.model.build(vocab_size, NUM_CLASSES[config.data.classes])

    def build_model(self) -> SentimentModel:
        model = self.build_net(self.config, len(self.vocab))
        if self.config.data.embeddings:
            matrix, _ = load_embeddings(data.resolve(self.config.data.embeddings, self.root), self.vocab,
                                        self.config.model.emb_size)
            model.emb.weight.data.copy_(matrix)
        return model

    def next_batch(self) -> TreesBatch | None:
        rows = self.batches.next_rows()
        return None if rows is None else TreesBatch.build([self.trees["train"][i] for i in rows], self.vocab)

    def train_loss(self, model, batch: TreesBatch) -> tuple[torch.Tensor, float]:
        """Negative log-likelihood averaged over the labelled nodes (sentences for sequential models)."""
        log_probs, tree_batch = model(batch.trees, batch.word_ids)
        labels, _ = node_targets(model, batch, tree_batch)
        loss = F.nll_loss(log_probs, labels, ignore_index=-1)
        return loss, loss.item() * batch.size

    def eval_units(self, split: str, batch_size: int | None = None) -> int:
        return len(self.trees[split])

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None,
                 progress=None) -> SentimentAccuracy:
        size = batch_size or self.config.data.eval_batch_size
        trees = self.trees[split]
        with evaluating(model) as net:
            metric = SentimentAccuracy(phrases=not net.sequential)
            for start in range(0, len(trees), size):
                batch = TreesBatch.build(trees[start : start + size], self.vocab)
                if net.induces_trees:
                    log_probs, induced = net.forward_inducing(batch.word_ids)
                    tree_batch = None
                    metric.add_trees(*induced_trees(batch, induced))
                else:
                    log_probs, tree_batch = net(batch.trees, batch.word_ids)
                labels, roots = node_targets(net, batch, tree_batch)
                metric.add(log_probs, labels, roots)
                if progress is not None:
                    progress(batch.size)
        return metric


def induced_trees(batch: TreesBatch, induced: InducedTrees) -> tuple[list, list]:
    """The trees the encoder induced of a batch's sentences (what it declares of them: `InducedTrees`), over every
    word, and the treebank's trees of them: nested lists of their words. Unlike a
    formula's brackets, no token is left out, as in the ListOps task: SST has no bracket tokens, and its
    punctuation is a word of the treebank's trees, scored where they bracket it. Sentences of every length are
    scored: the evaluation splits hold whole sentences (phrases are trained on, not scored), and a one-word
    sentence, with no bracket to find, is left out by the metric (`InducedTreeScores.add_trees`)."""
    return induced.trees([list(tree.words) for tree in batch.trees]), [nested_words(tree) for tree in batch.trees]
