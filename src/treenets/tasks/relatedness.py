"""Semantic relatedness on SICK (Tai et al. 2015, section 4.2): two sentences, each encoded by a Tree-LSTM
over its dependency (Child-Sum) or binarised constituency (N-ary) tree, or by an LSTM; the similarity head
predicts a distribution over the scores 1..5, trained with the KL divergence to the sparse target of the
paper; the prediction is the expected score. Metrics: Pearson, Spearman, MSE (scipy.stats); model selection
on the dev split (SICK trial), never on test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from scipy import stats

from treenets import data
from treenets.errors import TreenetsError
from treenets.nn.treelstm import ChildSumTreeLSTM, NaryTreeLSTM, SequenceLSTM, SimilarityHead, TreeBatch
from treenets.tasks.base import Task, evaluating
from treenets.tasks.batching import ShuffledBatches
from treenets.trees.parents import ParentTree, binarize, parse_parents
from treenets.vocab import Vocab

# The special tokens in front of `sick.vocab`, in the order of the official port (rows 0..3 of sick_embed.pth).
SPECIALS = ["<blank>", "<unk>", "<s>", "</s>"]
SPLITS = {"train": "train", "valid": "dev", "test": "test"}  # valid = dev = SICK trial


def sparse_target(score: torch.Tensor, num_classes: int) -> torch.Tensor:
    """The paper's target distribution p for a score y in [1, K]: p_{floor(y)} = floor(y) - y + 1,
    p_{floor(y)+1} = y - floor(y), zero elsewhere, so that sum_i i p_i = y."""
    floor = score.floor().clamp(1, num_classes)
    upper = (floor + 1).clamp(max=num_classes)
    target = score.new_zeros(score.numel(), num_classes)
    frac = score - floor
    rows = torch.arange(score.numel())
    target[rows, (floor - 1).long()] += 1 - frac
    target[rows, (upper - 1).long()] += frac
    return target


def read_lines(path: Path) -> list[str]:
    if not path.is_file():
        raise TreenetsError(f"{path}: missing (expected the SICK files of the treelstm preprocessing)")
    return path.read_text(encoding="utf-8").splitlines()


@dataclass
class Pair:
    left: ParentTree
    right: ParentTree
    score: float


def read_split(folder: Path, trees: str) -> list[Pair]:
    """The pairs of one split folder: `a/b.toks`, `a/b.parents` (dependency) or `a/b.cparents`, `sim.txt`."""
    suffix = "parents" if trees == "dependency" else "cparents"
    sides = []
    for side in ("a", "b"):
        toks = read_lines(folder / f"{side}.toks")
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
        pairs.append(Pair(left, right, value))
    return pairs


def load_embeddings(path: Path, vocab: Vocab, dim: int) -> tuple[torch.Tensor, int]:
    """Word vectors for `vocab`: a `.pth` matrix aligned with it (rows = vocabulary ids, as `sick_embed.pth`),
    or a GloVe-format text file (`word v1 v2 ...`): known words get their vector, the others N(0, 0.05) and
    the specials zeros (the official recipe). Returns the matrix and how many words had a vector."""
    if not path.is_file():
        raise TreenetsError(f"{path}: embeddings file not found")
    if path.suffix in (".pth", ".pt"):
        try:
            matrix = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - any unreadable file gets the same message
            raise TreenetsError(f"{path}: not a readable tensor file ({str(exc).splitlines()[0][:120]})") from None
        if not isinstance(matrix, torch.Tensor) or tuple(matrix.shape) != (len(vocab), dim):
            shape = tuple(matrix.shape) if isinstance(matrix, torch.Tensor) else type(matrix).__name__
            raise TreenetsError(f"{path}: holds {shape}, expected a [{len(vocab)}, {dim}] matrix for the vocabulary")
        return matrix.float(), len(vocab)
    generator = torch.Generator().manual_seed(0)
    matrix = torch.randn(len(vocab), dim, generator=generator) * 0.05
    found = 0
    with open(path, encoding="utf-8", errors="replace") as fh:
        for lineno, line in enumerate(fh, start=1):
            parts = line.rstrip("\n").split(" ")
            if len(parts) != dim + 1:
                raise TreenetsError(f"{path}:{lineno}: {len(parts) - 1} values, expected {dim} (model.emb_size)")
            index = vocab.index.get(parts[0])
            if index is not None:
                matrix[index] = torch.tensor([float(v) for v in parts[1:]])
                found += 1
    for special in SPECIALS:
        if special in vocab:
            matrix[vocab.index[special]] = 0.0
    return matrix, found


class RelatednessModel(nn.Module):
    """Embedding -> encoder (Child-Sum or N-ary Tree-LSTM, or (Bi)LSTM) -> similarity head."""

    def __init__(self, vocab_size, config):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, config.emb_size)
        self.kind, self.head_state = config.name, config.head_state
        if config.name == "childsum-treelstm":
            self.encoder = ChildSumTreeLSTM(config.emb_size, config.mem_size)
        elif config.name == "binary-treelstm":
            self.encoder = NaryTreeLSTM(config.emb_size, config.mem_size, 2)
        else:
            self.encoder = SequenceLSTM(config.emb_size, config.mem_size, config.name == "bilstm")
        out = self.encoder.out_dim if isinstance(self.encoder, SequenceLSTM) else config.mem_size
        self.similarity = SimilarityHead(out, config.hidden_size, config.num_classes)
        if config.freeze_embeddings:
            self.emb.weight.requires_grad_(False)

    def encode(self, trees: list[ParentTree], word_ids: list[torch.Tensor]) -> torch.Tensor:
        """Sentence vectors [len(trees), dim]: the root's h (or c, `head_state: c`, as the official port)."""
        device = self.emb.weight.device
        if isinstance(self.encoder, SequenceLSTM):
            lengths = torch.tensor([len(w) for w in word_ids])
            padded = nn.utils.rnn.pad_sequence(word_ids).to(device)
            h, c = self.encoder(self.emb(padded), lengths)
            return c if self.head_state == "c" else h
        batch = TreeBatch.build(trees, device)
        h, c = self.encoder(batch, *batch.word_inputs(torch.cat(word_ids).to(device), self.emb))
        return (c if self.head_state == "c" else h)[batch.roots]

    def forward(self, left, right):
        """(trees, word ids) of the left and right sentences -> log-probabilities [B, num_classes]."""
        both = self.encode(left[0] + right[0], left[1] + right[1])
        half = len(left[0])
        return self.similarity(both[:half], both[half:])


@dataclass
class PairBatch:
    pairs: list[Pair]
    left_ids: list[torch.Tensor]
    right_ids: list[torch.Tensor]
    scores: torch.Tensor
    lr_scale: float = 1.0

    @property
    def size(self) -> int:
        return len(self.pairs)


@dataclass
class RelatednessTask(Task):
    """SICK relatedness for the shared training loop (`treenets.train`)."""

    pairs: dict = field(default_factory=dict)

    name = "relatedness"
    units = "pairs"
    metric = "pearson"
    higher_is_better = True

    def __post_init__(self):
        cfg = self.config.data
        folder = self.data_folder("SICK with train/, dev/, test/")
        if self.vocab is None:
            words = [w for w in read_lines(folder / cfg.vocab) if w]
            self.vocab = Vocab(SPECIALS + words, unk="<unk>")
        for split in self.splits:
            self.pairs[split] = read_split(folder / SPLITS[split], cfg.trees)
        self.folder = folder
        if "train" in self.splits:
            self.batches = ShuffledBatches(len(self.pairs["train"]), cfg.batch_size, self.config.train.seed,
                                           rank=self.rank, world=self.world)

    def build_model(self) -> RelatednessModel:
        model = RelatednessModel(len(self.vocab), self.config.model)
        path = self.config.data.embeddings
        if path:
            matrix, found = load_embeddings(data.resolve(path, self.root), self.vocab, self.config.model.emb_size)
            model.emb.weight.data.copy_(matrix)
        return model

    def _batch(self, pairs: list[Pair]) -> PairBatch:
        left = [torch.tensor(self.vocab.encode(p.left.words)[0]) for p in pairs]
        right = [torch.tensor(self.vocab.encode(p.right.words)[0]) for p in pairs]
        return PairBatch(pairs, left, right, torch.tensor([p.score for p in pairs]))

    def next_batch(self) -> PairBatch | None:
        rows = self.batches.next_rows()
        return None if rows is None else self._batch([self.pairs["train"][i] for i in rows])

    def _log_probs(self, model, batch: PairBatch) -> torch.Tensor:
        return model(([p.left for p in batch.pairs], batch.left_ids), ([p.right for p in batch.pairs], batch.right_ids))

    def train_loss(self, model, batch: PairBatch) -> tuple[torch.Tensor, float]:
        """KL divergence from the sparse target (summed over classes, averaged over the batch)."""
        log_probs = self._log_probs(model, batch)
        target = sparse_target(batch.scores, log_probs.size(1)).to(log_probs.device)
        loss = F.kl_div(log_probs, target, reduction="batchmean")
        return loss, loss.item() * batch.size

    def predict(self, model, pairs: list[Pair], batch_size: int = 100) -> np.ndarray:
        """Expected scores `sum_r r p(r)` for the pairs."""
        scores = []
        with evaluating(model) as net:
            for start in range(0, len(pairs), batch_size):
                log_probs = self._log_probs(net, self._batch(pairs[start : start + batch_size]))
                classes = torch.arange(1, log_probs.size(1) + 1, dtype=log_probs.dtype, device=log_probs.device)
                scores.append((log_probs.exp() @ classes).cpu())
        return torch.cat(scores).numpy()

    def evaluate(self, model, split: str = "valid", batch_size: int | None = None, progress=None) -> dict:
        pairs = self.pairs[split]
        predicted = self.predict(model, pairs, batch_size or self.config.data.eval_batch_size)
        gold = np.array([p.score for p in pairs])
        if progress is not None:
            progress(len(pairs))
        return relatedness_metrics(predicted, gold)

def relatedness_metrics(predicted: np.ndarray, gold: np.ndarray) -> dict:
    """Pearson's r, Spearman's rho and the mean squared error, with `loss` = MSE for the training loop."""
    mse = float(np.mean((predicted - gold) ** 2))
    return {"pearson": float(stats.pearsonr(predicted, gold)[0]),
            "spearman": float(stats.spearmanr(predicted, gold)[0]), "mse": mse, "loss": mse,
            "pairs": int(len(gold))}


class RelatednessPredictor:
    """A trained relatedness model with its vocabulary (from `treenets.load`): scores sentence pairs."""

    def __init__(self, net: RelatednessModel, vocab: Vocab, config, device="cpu"):
        self.net, self.vocab, self.config, self.device = net.eval(), vocab, config, torch.device(device)

    @staticmethod
    def build_net(config, vocab_size: int) -> RelatednessModel:
        return RelatednessModel(vocab_size, config.model)

    def _tree(self, sentence: str, parents: str | None, side: str) -> ParentTree:
        words = sentence.split()
        if not words:
            raise TreenetsError(f"sentence {side} is empty")
        if self.config.model.name in ("lstm", "bilstm"):
            return ParentTree(tuple(range(-1, len(words) - 1)), tuple(words))  # a chain; the order is what counts
        if parents is None:
            kind = "dependency (one parent per word)" if self.config.data.trees == "dependency" else \
                "constituency (cparents: the words, then the phrases)"
            raise TreenetsError(f"sentence {side}: this model reads {kind} trees; give its parents")
        constituency = self.config.data.trees == "constituency"
        tree = parse_parents(parents, words, f"parents of sentence {side}", constituency)
        return binarize(tree) if constituency else tree

    @torch.no_grad()
    def predict(self, a: str, b: str, a_parents: str | None = None, b_parents: str | None = None) -> dict:
        """Relatedness of sentences `a` and `b` (tokens separated by spaces; parents as in SICK's files).

        Returns:
            {"score": expected score, "distribution": p(1..K), "unknown": words read as <unk>}
        """
        left, right = self._tree(a, a_parents, "a"), self._tree(b, b_parents, "b")
        ids, unknown = [], []
        for tree in (left, right):
            encoded, missing = self.vocab.encode(tree.words)
            ids.append(torch.tensor(encoded))
            unknown += missing
        log_probs = self.net(([left], [ids[0]]), ([right], [ids[1]]))[0].cpu()
        probs = log_probs.exp()
        score = float(probs @ torch.arange(1, probs.numel() + 1, dtype=probs.dtype))
        return {"score": score, "distribution": [round(p, 6) for p in probs.tolist()], "unknown": unknown}
