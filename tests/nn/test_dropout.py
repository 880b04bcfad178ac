"""AWD-LSTM dropouts: what is shared, what is scaled, and when."""

from __future__ import annotations

import pytest
import torch

from treenets.nn.dropout import dropconnect, embedding_dropout, locked_dropout


def test_locked_dropout_uses_one_mask_over_time():
    torch.manual_seed(0)
    x = torch.ones(6, 3, 50)
    y = locked_dropout(x, 0.5, training=True)
    assert torch.equal(y[0], y[5])  # same mask at every step
    assert set(y.unique().tolist()) == {0.0, 2.0}  # kept units scaled by 1 / (1 - p)
    assert torch.equal(locked_dropout(x, 0.5, training=False), x)


def test_embedding_dropout_drops_whole_words():
    torch.manual_seed(0)
    weight = torch.ones(20, 4)
    tokens = torch.arange(20).repeat(3, 1)  # every word three times
    out = embedding_dropout(weight, tokens, 0.5, training=True)
    zero_rows = (out == 0).all(-1)
    assert zero_rows.any() and not zero_rows.all()
    assert torch.equal(zero_rows[0], zero_rows[1])  # a dropped word is dropped at every occurrence
    assert set(out.unique().tolist()) <= {0.0, 2.0}


@pytest.mark.parametrize("inverted", [False, True])
def test_dropconnect_conventions(inverted):
    torch.manual_seed(0)
    weight = torch.ones(200, 100)
    trained = dropconnect(weight, 0.25, training=True, inverted=inverted)
    kept = trained[trained != 0]
    assert kept.unique().tolist() == pytest.approx([1 / 0.75 if inverted else 1.0])
    assert (trained == 0).float().mean().item() == pytest.approx(0.25, abs=0.02)
    evaluated = dropconnect(weight, 0.25, training=False, inverted=inverted)
    assert evaluated.unique().tolist() == pytest.approx([1.0 if inverted else 0.75])


def test_dropconnect_mask_is_shared_by_the_batch():
    torch.manual_seed(0)
    weight = torch.randn(8, 5)
    dropped = dropconnect(weight, 0.5, training=True)
    batch = torch.randn(4, 5)
    out = batch @ dropped.t()
    for row in range(4):  # every example sees the same dropped matrix
        torch.testing.assert_close(out[row], dropped @ batch[row])
