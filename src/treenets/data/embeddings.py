"""Pretrained word vectors for a vocabulary: a matrix in vocabulary order, or a GloVe-format text file."""

from __future__ import annotations

from pathlib import Path

import torch

from treenets.core.errors import TreenetsError
from treenets.core.vocab import Vocab
from treenets.data.sick import SPECIALS


def load_embeddings(path: Path, vocab: Vocab, dim: int) -> tuple[torch.Tensor, int]:
    """Word vectors for `vocab`: a `.pth` matrix aligned with it (rows = vocabulary ids, as `sick_embed.pth`),
    or a GloVe-format text file (`word v1 v2 ...`): known words get their vector, the others N(0, 0.05) and
    the special tokens of `SPECIALS` zeros (the official recipe). Returns the matrix and how many words had a vector."""
    if not path.is_file():
        raise TreenetsError(f"{path}: embeddings file not found")
    if path.suffix in (".pth", ".pt"):
        try:
            matrix = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as exc:  # noqa: BLE001 - any unreadable file gets the same message
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:120]  # an empty file: no message
            raise TreenetsError(f"{path}: not a readable tensor file ({first})") from None
        if not isinstance(matrix, torch.Tensor) or tuple(matrix.shape) != (len(vocab), dim):
            shape = tuple(matrix.shape) if isinstance(matrix, torch.Tensor) else type(matrix).__name__
            raise TreenetsError(f"{path}: holds {shape}, expected a [{len(vocab)}, {dim}] matrix for the vocabulary")
        return matrix.float(), len(vocab)
    generator = torch.Generator().manual_seed(0)
    matrix = torch.randn(len(vocab), dim, generator=generator) * 0.05
    found = 0
    with open(path, encoding="utf-8-sig", errors="replace") as fh:  # -sig: a byte-order mark is not in the first word
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
