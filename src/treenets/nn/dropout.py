"""The dropouts of AWD-LSTM (Merity et al., 2018), used by the ON-LSTM language model.

All three sample their masks from torch's global generator, so a run is reproducible from its seed and a
checkpoint's RNG state.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def locked_dropout(x: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Variational dropout on a time-major `[T, B, H]` tensor: one mask per sequence, shared over time.

    Kept units are scaled by `1 / (1 - p)`.
    """
    if not training or p == 0.0:
        return x
    mask = x.new_empty(1, x.size(1), x.size(2)).bernoulli_(1.0 - p).div_(1.0 - p)
    return x * mask


def embedding_dropout(weight: torch.Tensor, tokens: torch.Tensor, p: float, training: bool) -> torch.Tensor:
    """Embed `tokens`, dropping whole words: every occurrence of a dropped word embeds to zero.

    One mask over the vocabulary per call; kept rows are scaled by `1 / (1 - p)`.
    """
    if training and p > 0.0:
        mask = weight.new_empty(weight.size(0), 1).bernoulli_(1.0 - p).div_(1.0 - p)
        weight = weight * mask
    return F.embedding(tokens, weight)


def dropconnect(weight: torch.Tensor, p: float, training: bool, inverted: bool = False) -> torch.Tensor:
    """DropConnect (Wan et al., 2013) on a weight matrix: one mask per call, i.e. per forward pass, shared
    by every example and time step.

    With `inverted=False` (the official ON-LSTM convention) kept weights are not rescaled during
    training, and in evaluation the whole matrix is multiplied by `1 - p`. With `inverted=True` kept weights
    are scaled by `1 / (1 - p)` in training and the matrix is used as is in evaluation (AWD-LSTM's
    `F.dropout`). Both have the same expectation; they differ in which phase sees the unscaled weights.
    """
    if p == 0.0:
        return weight
    if training:
        keep = (torch.rand_like(weight) >= p).to(weight.dtype)  # twice as fast as bernoulli_ on the CPU
        return weight * (keep / (1.0 - p) if inverted else keep)
    return weight if inverted else weight * (1.0 - p)
