"""Sentiment classification on the Stanford Sentiment Treebank (Tai et al. 2015, section 4.1).

A Tree-LSTM over the binary constituency tree with a softmax classifier on every node, trained on every
labelled node; fine-grained (5 classes) or binary (negative / positive: neutral phrases carry no label,
sentences with a neutral root are dropped). The sequential baselines (LSTM, BiLSTM) classify the sentence
from its last state and are trained on the sentence labels. Metrics: root accuracy (the paper's figure)
and, for tree models, accuracy over all labelled phrases. Model selection on dev.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn as nn
import torch.nn.functional as F

from treenets import data
from treenets.errors import TreenetsError
from treenets.nn.treelstm import ChildSumTreeLSTM, NaryTreeLSTM, SequenceLSTM, TreeBatch
from treenets.tasks.base import Task, evaluating
from treenets.tasks.batching import ShuffledBatches
from treenets.tasks.relatedness import load_embeddings
from treenets.trees.parents import ParentTree, parse_bracketed
from treenets.vocab import Vocab

SPLIT_FILES = {"train": "train.txt", "valid": "dev.txt", "test": "test.txt"}
BINARY = {0: 0, 1: 0, 2: -1, 3: 1, 4: 1}  # fine label -> binary label (-1: no label)


def read_trees(path, classes: str) -> list[ParentTree]:
    """Labelled trees of an SST file (one bracketed tree per line), labels mapped for `classes`."""
    if not path.is_file():
        raise TreenetsError(f"{path}: missing (expected SST trees in PTB form, one per line)")
    trees = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        tree = parse_bracketed(line, f"{path}:{lineno}")
        if any(not 0 <= label <= 4 for label in tree.labels):
            raise TreenetsError(f"{path}:{lineno}: labels must be 0..4 on every node")
        if classes == "binary":
            labels = tuple(BINARY[label] for label in tree.labels)
            if labels[tree.root] == -1:
                continue  # a neutral sentence: not part of the binary task
            tree = ParentTree(tree.parents, tree.words, labels)
        trees.append(tree)
    return trees


class SentimentModel(nn.Module):
    """Embedding -> encoder -> dropout -> softmax classifier (on every node for Tree-LSTMs)."""

    def __init__(self, vocab_size: int, config, num_classes: int):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, config.emb_size)
        nn.init.normal_(self.emb.weight, 0.0, 0.05)
        if config.name == "binary-treelstm":
            self.encoder = NaryTreeLSTM(config.emb_size, config.mem_size, 2)
        elif config.name == "childsum-treelstm":
            self.encoder = ChildSumTreeLSTM(config.emb_size, config.mem_size)
        else:
            self.encoder = SequenceLSTM(config.emb_size, config.mem_size, config.name == "bilstm")
        out = self.encoder.out_dim if isinstance(self.encoder, SequenceLSTM) else config.mem_size
        self.classifier = nn.Linear(out, num_classes)
        self.dropout = nn.Dropout(config.dropout)
        if config.freeze_embeddings:
            self.emb.weight.requires_grad_(False)

    @property
    def sequential(self) -> bool:
        return isinstance(self.encoder, SequenceLSTM)

    def forward(self, trees: list[ParentTree], word_ids: list[torch.Tensor]):
        """Log-probabilities: for Tree-LSTMs of every node `[nodes, classes]` with the batch's `TreeBatch`;
        for sequential encoders of every sentence `[B, classes]` (and None)."""
        device = self.emb.weight.device
        if self.sequential:
            padded = nn.utils.rnn.pad_sequence(word_ids).to(device)
            h, _ = self.encoder(self.emb(padded), torch.tensor([len(w) for w in word_ids]))
            return torch.log_softmax(self.classifier(self.dropout(h)), dim=-1), None
        batch = TreeBatch.build(trees, device)
        h, _ = self.encoder(batch, *batch.word_inputs(torch.cat(word_ids).to(device), self.emb))
        return torch.log_softmax(self.classifier(self.dropout(h)), dim=-1), batch


@dataclass
class TreesBatch:
    trees: list[ParentTree]
    word_ids: list[torch.Tensor]
    lr_scale: float = 1.0

    @property
    def size(self) -> int:
        return len(self.trees)


@dataclass
class SentimentTask(Task):
    """SST sentiment for the shared training loop (`treenets.train`)."""

    trees: dict = field(default_factory=dict)

    name = "sentiment"
    units = "sentences"
    metric = "root_accuracy"
    higher_is_better = True

    def __post_init__(self):
        cfg = self.config.data
        folder = self.data_folder("train.txt, dev.txt, test.txt")
        for split in self.splits:
            self.trees[split] = read_trees(folder / SPLIT_FILES[split], cfg.classes)
        if self.vocab is None:
            words = dict.fromkeys(w for tree in self.trees["train"] for w in tree.words)
            self.vocab = Vocab(["<unk>"] + list(words), unk="<unk>")
        self.num_classes = 5 if cfg.classes == "fine" else 2
        if "train" in self.splits:
            self.batches = ShuffledBatches(len(self.trees["train"]), cfg.batch_size, self.config.train.seed,
                                           rank=self.rank, world=self.world)

    def build_model(self) -> SentimentModel:
        model = SentimentModel(len(self.vocab), self.config.model, self.num_classes)
        if self.config.data.embeddings:
            matrix, _ = load_embeddings(data.resolve(self.config.data.embeddings, self.root), self.vocab,
                                        self.config.model.emb_size)
            model.emb.weight.data.copy_(matrix)
        return model

    def _batch(self, trees: list[ParentTree]) -> TreesBatch:
        return TreesBatch(trees, [torch.tensor(self.vocab.encode(t.words)[0]) for t in trees])

    def next_batch(self) -> TreesBatch | None:
        rows = self.batches.next_rows()
        return None if rows is None else self._batch([self.trees["train"][i] for i in rows])

    def _targets(self, model, batch: TreesBatch, tree_batch):
        """Labels aligned with the model's outputs (-1 where a node has none), and the root positions."""
        net = getattr(model, "module", model)
        device = net.emb.weight.device
        if tree_batch is None:
            roots = torch.arange(batch.size, device=device)
            return torch.tensor([t.labels[t.root] for t in batch.trees], device=device), roots
        labels = torch.tensor([label for t in batch.trees for label in t.labels], device=device)
        return labels, tree_batch.roots

    def train_loss(self, model, batch: TreesBatch) -> tuple[torch.Tensor, float]:
        """Negative log-likelihood averaged over the labelled nodes (sentences for sequential models)."""
        log_probs, tree_batch = model(batch.trees, batch.word_ids)
        labels, _ = self._targets(model, batch, tree_batch)
        loss = F.nll_loss(log_probs, labels, ignore_index=-1)
        return loss, loss.item() * batch.size

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None, progress=None) -> dict:
        size = batch_size or self.config.data.eval_batch_size
        trees = self.trees[split]
        counts = torch.zeros(5, dtype=torch.float64)  # root correct, roots, phrase correct, phrases, nll sum
        with evaluating(model) as net:
            for start in range(0, len(trees), size):
                batch = self._batch(trees[start : start + size])
                log_probs, tree_batch = net(batch.trees, batch.word_ids)
                labels, roots = self._targets(net, batch, tree_batch)
                predicted = log_probs.argmax(-1)
                labelled = labels >= 0
                counts += torch.tensor([(predicted[roots] == labels[roots]).sum().item(), len(roots),
                                        (predicted[labelled] == labels[labelled]).sum().item(),
                                        labelled.sum().item(),
                                        F.nll_loss(log_probs[roots], labels[roots], reduction="sum").item()],
                                       dtype=torch.float64)
                if progress is not None:
                    progress(batch.size)
            result = {"root_accuracy": (counts[0] / counts[1]).item(), "loss": (counts[4] / counts[1]).item(),
                      "sentences": int(counts[1].item())}
            if not net.sequential:
                result["phrase_accuracy"] = (counts[2] / counts[3]).item()
        return result



class SentimentPredictor:
    """A trained sentiment model with its vocabulary (from `treenets.load`): classifies sentences/phrases."""

    def __init__(self, net: SentimentModel, vocab: Vocab, config, device="cpu"):
        self.net, self.vocab, self.config, self.device = net.eval(), vocab, config, torch.device(device)
        self.classes = 5 if config.data.classes == "fine" else 2

    @staticmethod
    def build_net(config, vocab_size: int) -> SentimentModel:
        return SentimentModel(vocab_size, config.model, 5 if config.data.classes == "fine" else 2)

    @torch.no_grad()
    def predict(self, text: str) -> dict:
        """Classify a sentence: for Tree-LSTMs a bracketed binary tree (`(3 (2 It) (4 works))`; labels are
        ignored and may be any token), for LSTMs a plain sentence.

        Returns:
            {"label": the sentence's class, "probabilities": per class, "phrases": [(words, label), ...] for
            every phrase of a tree, "unknown": words read as <unk>}
        """
        if self.net.sequential:
            words = text.split()
            if not words:
                raise TreenetsError("empty sentence")
            tree = ParentTree(tuple(range(-1, len(words) - 1)), tuple(words))
        else:
            tree = parse_bracketed(text, "tree", require_labels=False)
        ids, unknown = self.vocab.encode(tree.words)
        log_probs, batch = self.net([tree], [torch.tensor(ids)])
        root = 0 if batch is None else int(batch.roots[0])
        result = {"label": int(log_probs[root].argmax()), "probabilities": [round(p, 6) for p in
                                                                             log_probs[root].exp().tolist()],
                  "unknown": unknown}
        if batch is not None:
            spans = _spans(tree)
            result["phrases"] = [(" ".join(tree.words[s:e]), int(log_probs[node].argmax()))
                                 for node, (s, e) in sorted(spans.items(), key=lambda x: (x[1][0], -x[1][1]))]
        return result


def _spans(tree: ParentTree) -> dict[int, tuple[int, int]]:
    """Word span of every node of a constituency tree (words are nodes 0..w-1)."""
    spans: dict[int, tuple[int, int]] = {}

    def walk(node: int) -> tuple[int, int]:
        if not tree.children[node]:
            spans[node] = (node, node + 1)
        else:
            parts = [walk(k) for k in tree.children[node]]
            spans[node] = (parts[0][0], parts[-1][1])
        return spans[node]

    walk(tree.root)
    return spans
