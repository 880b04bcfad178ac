"""StructFormer: the parent distributions of the L^3 algorithm against the span-by-span sum of their definition
(tests/reference.py) with hypothesis, the margin and the relative bias of a sentence alone, StructFormer's tree
builder and CoNLL heads by hand, and the official fixture (`check-golden`)."""

from __future__ import annotations

import pytest
import torch
from helpers import needs_cpu_bfloat16
from hypothesis import given, settings
from hypothesis import strategies as st
from reference import reference_parents

from treenets.cli import main
from treenets.nn.structformer.model import StructFormerConfig, boundaries, calibrate, parents
from treenets.trees import tree_from_distances
from treenets.trees.dependencies import heads_from_parents


def _structure(lengths: list[int], seed: int, scale: float = 1.0):
    """A padded batch's calibrated distances, heights (times tau_1 = scale) and boundaries, drawn at random."""
    gen = torch.Generator().manual_seed(seed)
    B, L = len(lengths), max(lengths)
    real = torch.arange(L)[None, :] < torch.tensor(lengths)[:, None]
    height = (torch.randn(B, L, generator=gen, dtype=torch.float64) * 2).masked_fill(~real, -1e9)
    last = torch.nn.functional.pad(real[:, 1:], (0, 1), value=False)
    distance = (torch.randn(B, L, generator=gen, dtype=torch.float64) * 2).masked_fill(~last, 1e9)
    distance = calibrate(distance, height, real, alone=True)
    p_left, p_right = boundaries(distance, height, torch.tensor(1.3, dtype=torch.float64))
    return p_left, p_right, height * scale, real


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 7), min_size=1, max_size=4), st.integers(0, 10**6))
def test_parents_equal_the_span_by_span_sum_of_their_definition(lengths, seed):
    p_left, p_right, logits, real = _structure(lengths, seed)
    fast, in_logs = parents(p_left, p_right, logits, real), parents(p_left, p_right, logits, real, in_logs=True)
    single = parents(p_left.float(), p_right.float(), logits.float(), real)  # float32, as training computes it
    for b, n in enumerate(lengths):
        expected = reference_parents(p_left[b], p_right[b], logits[b])
        torch.testing.assert_close(fast[b], expected, rtol=1e-7, atol=1e-10)
        torch.testing.assert_close(in_logs[b], expected, rtol=1e-7, atol=1e-10)
        torch.testing.assert_close(single[b].double(), expected, rtol=1e-4, atol=1e-6)
        # a real word's parent distribution: over real words only, at most 1 (its own weight is dropped)
        assert fast[b, :n, n:].abs().sum() == 0.0
        assert (fast[b, :n].sum(-1) <= 1 + 1e-12).all()


def test_heights_far_apart_take_the_log_space_sums_and_stay_probabilities():
    # heights times tau_1 spread over 3,000: exp(c - log Z) overflows float64, so the sums run in log space
    p_left, p_right, logits, real = _structure([6, 4], seed=3, scale=1000.0)
    fast = parents(p_left, p_right, logits, real)
    assert torch.isfinite(fast).all()
    torch.testing.assert_close(fast, parents(p_left, p_right, logits, real, in_logs=True))
    torch.testing.assert_close(fast[0], reference_parents(p_left[0], p_right[0], logits[0]), rtol=1e-7, atol=1e-10)


def test_gradients_through_a_padded_batch_are_finite():
    torch.manual_seed(0)
    net = StructFormerConfig(hidden_size=16, num_layers=2, num_heads=2, parser_layers=2, conv_size=3).build(30)
    tokens = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 0, 0, 0], [7, 0, 0, 0, 0]])
    out = net(tokens)
    (net.output_layer(out.hidden).logsumexp(-1).sum() + out.parent.sum()).backward()
    assert all(torch.isfinite(p.grad).all() for p in net.parameters() if p.grad is not None)
    assert net._scaler.grad.abs().sum() > 0 and net._rel_weight.grad.abs().sum() > 0


@pytest.mark.parametrize("relative_bias", [False, True])
def test_a_sentence_alone_in_a_batch_is_parsed_as_by_itself(relative_bias):
    torch.manual_seed(1)
    net = StructFormerConfig(hidden_size=16, num_layers=2, num_heads=4, parser_layers=2, conv_size=3,
                             relative_bias=relative_bias, position_embedding=not relative_bias).build(30).eval()
    if relative_bias:
        for layer in net.layers:
            torch.nn.init.normal_(layer.self_attn.relative_bias)
    tokens = torch.tensor([[5, 6, 7, 8, 9, 10], [11, 12, 13, 0, 0, 0], [7, 8, 0, 0, 0, 0]])
    with torch.no_grad():
        batch = net(tokens, alone=True)
        for row, n in enumerate([6, 3, 2]):
            single = net(tokens[row : row + 1, :n], alone=True)
            torch.testing.assert_close(batch.distance[row, :n], single.distance[0])
            torch.testing.assert_close(batch.parent[row, :n, :n], single.parent[0])
            torch.testing.assert_close(batch.hidden[row, :n], single.hidden[0])
        # the official batch forward: one margin for the batch (and, with a relative bias, its heads' order)
        official = net(tokens)
    shift = batch.distance[:, :1] - official.distance[:, :1]
    assert (shift >= 0).all() and shift.min() == 0  # the batch's margin is the largest of the sentences'
    if relative_bias:
        assert not torch.allclose(official.hidden[1, :3], batch.hidden[1, :3])


def test_structformer_trees_split_after_the_largest_gaps():
    words = ["a", "b", "c", "d", "e"]
    assert tree_from_distances(words, [1, 5, 2, 3, 9], "after") == [["a", "b"], [["c", "d"], "e"]]
    # two gaps share the largest distance: one node of three parts (the official build_tree with gap 0)
    assert tree_from_distances(words, [1, 5, 2, 5, 9], "after") == [["a", "b"], ["c", "d"], "e"]
    assert tree_from_distances(words, [9, 1, 2, 3, 0], "after") == ["a", [[["b", "c"], "d"], "e"]]
    assert tree_from_distances(["a"], [7], "after") == "a" and tree_from_distances([], [], "after") == []


def test_conll_heads_are_the_most_likely_parents_and_the_highest_word_is_the_root():
    parent = [[0.0, 0.7, 0.3], [0.1, 0.0, 0.9], [0.2, 0.8, 0.0]]
    assert heads_from_parents(parent, [0.5, 0.1, 2.0]) == [2, 3, 0]
    assert heads_from_parents(parent, [3.0, 3.0, 2.0]) == [0, 0, 2]  # a tie for the greatest height: two roots
    assert heads_from_parents([[0.0]], [1.0]) == [0]


def test_the_transformer_baseline_attends_with_a_softmax_and_induces_nothing():
    torch.manual_seed(2)
    net = StructFormerConfig(hidden_size=8, num_layers=1, num_heads=2, relations=()).build(20).eval()
    assert not net.induces_structure and not hasattr(net, "parser_layers")
    out = net(torch.tensor([[3, 4, 5]]))
    assert out.parent is None and out.hidden.shape == (1, 3, 8)


def test_official_structformer_fixture_passes(golden_root, capsys):
    assert main(["check-golden", str(golden_root / "structformer-mlm")]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith("PASS") and "heads_single  0.000e+00" in lines and "trees_single  0.000e+00" in lines


def test_a_structformer_fixture_with_a_wrong_output_fails(golden_root, tmp_path, capsys):
    import shutil

    import numpy as np

    fixture = tmp_path / "fixture"
    shutil.copytree(golden_root / "structformer-mlm", fixture)
    outputs = dict(np.load(fixture / "outputs.npz"))
    outputs["head"][0, 1, 2] += 1e-4  # one parent probability of one word
    np.savez(fixture / "outputs.npz", **outputs)
    assert main(["check-golden", str(fixture)]) == 1
    assert "FAIL" in capsys.readouterr().out


@needs_cpu_bfloat16
def test_a_bf16_step_computes_the_structure_in_float32():
    from treenets.nn.precision import autocast

    torch.manual_seed(3)
    net = StructFormerConfig(hidden_size=16, num_layers=2, num_heads=2, parser_layers=2, conv_size=3).build(30)
    tokens = torch.tensor([[5, 6, 7, 8], [9, 10, 0, 0]])
    with autocast("bf16", "cpu"):
        out = net(tokens)
        loss = net.output_layer(out.hidden).float().logsumexp(-1).sum()
    loss.backward()
    assert out.parent.dtype == torch.float32 and out.distance.dtype == torch.float32
    assert all(torch.isfinite(p.grad).all() for p in net.parameters() if p.grad is not None)
    full = net(tokens)
    torch.testing.assert_close(out.parent, full.parent, atol=0.05, rtol=0)
