"""ON-LSTM equations: hand-computed cases, properties, and the hand-derived backward against autograd."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from treenets.nn.backend import kernels, use_backend
from treenets.nn.onlstm.model import ONLSTMLanguageModel, ONLSTMLayer, _FusedRecurrence, cumax, onlstm_step, recurrence


@given(st.lists(st.floats(-30, 30), min_size=1, max_size=40))
def test_cumax_is_monotone_in_unit_interval_and_ends_at_one(values):
    y = cumax(torch.tensor(values, dtype=torch.float64))
    assert torch.all(y >= 0) and torch.all(y <= 1 + 1e-12)
    assert torch.all(y[1:] >= y[:-1] - 1e-12)
    assert y[-1].item() == pytest.approx(1.0)


def test_cumax_of_equal_logits_is_a_ramp():
    assert cumax(torch.zeros(4)).tolist() == pytest.approx([0.25, 0.5, 0.75, 1.0])


def test_step_matches_hand_computation():
    # Two chunks of one neuron (H = 2). Master logits 0 -> softmax [.5, .5] -> cumax [.5, 1]:
    # master input i~ = 1 - [.5, 1] = [.5, 0], master forget f~ = [.5, 1], overlap w = [.25, 0].
    # Gate logits 0 -> sigmoid .5; candidate logits atanh(.5), atanh(-.5) -> c^ = [.5, -.5].
    half = math.atanh(0.5)
    pre = torch.tensor([[0.0, 0.0, 0.0, 0.0,  # i~ logits, f~ logits
                         0.0, 0.0,  # o
                         half, -half,  # c^
                         0.0, 0.0,  # i
                         0.0, 0.0]], dtype=torch.float64)  # f
    c_prev = torch.tensor([[2.0, 4.0]], dtype=torch.float64)
    out = onlstm_step(pre, c_prev, n_chunks=2)
    # f^ = f w + (f~ - w) = [.5*.25 + .25, 0 + 1] = [.375, 1];  i^ = i w + (i~ - w) = [.375, 0]
    # c = f^ c_prev + i^ c^ = [.375*2 + .375*.5, 4] = [.9375, 4];  h = .5 tanh(c)
    assert out.c[0].tolist() == pytest.approx([0.9375, 4.0])
    assert out.h[0].tolist() == pytest.approx([0.5 * math.tanh(0.9375), 0.5 * math.tanh(4.0)])
    assert out.master.flatten().tolist() == pytest.approx([0.5, 0.0, 0.5, 1.0])


def _random_problem(steps=5, batch=3, hidden=8, chunk=2, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    n_chunks = hidden // chunk
    width = 2 * n_chunks + 4 * hidden
    x = torch.randn(steps, batch, width, dtype=dtype, generator=g).requires_grad_()
    w = (0.3 * torch.randn(width, hidden, dtype=dtype, generator=g)).requires_grad_()
    h0 = torch.randn(batch, hidden, dtype=dtype, generator=g).requires_grad_()
    c0 = torch.randn(batch, hidden, dtype=dtype, generator=g).requires_grad_()
    return (x, w, h0, c0), n_chunks


def _compiled():
    module = kernels("onlstm")
    if module is None:
        pytest.skip("compiled kernels unavailable")
    return module


def test_compiled_backward_passes_gradcheck():
    module = _compiled()
    inputs, n_chunks = _random_problem()
    assert torch.autograd.gradcheck(lambda *a: _FusedRecurrence.apply(module, *a, n_chunks, None), inputs)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_compiled_step_matches_the_pytorch_step_and_its_gradient(dtype):
    module = _compiled()
    (x, w, h0, c0), n_chunks = _random_problem(steps=1, batch=4, hidden=30, chunk=5, dtype=dtype)
    pre = (x[0].detach() * 3).requires_grad_()
    c_prev = c0.detach().clone().requires_grad_()
    ref = onlstm_step(pre, c_prev, n_chunks)
    h, c = torch.empty_like(ref.h), torch.empty_like(ref.c)
    master, probs, gates = torch.empty_like(ref.master), torch.empty_like(ref.probs), torch.empty_like(ref.gates)
    module.forward_step(pre.detach(), c_prev.detach(), h, c, master, probs, gates, n_chunks)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    for got, want in ((h, ref.h), (c, ref.c), (master, ref.master), (probs, ref.probs), (gates, ref.gates)):
        torch.testing.assert_close(got, want.detach(), atol=tol, rtol=tol)
    # The hand-derived step backward against autograd through the specification.
    dh, dc, dm = torch.randn_like(h), torch.randn_like(c), torch.randn_like(master)
    want_pre, want_c = torch.autograd.grad((ref.h * dh).sum() + (ref.c * dc).sum() + (ref.master * dm).sum(),
                                           (pre, c_prev))
    got_pre, got_c = torch.empty_like(pre), torch.empty_like(c)
    module.backward_step(dh, dc, c_prev.detach(), c, master, probs, gates, dm, got_pre, got_c, n_chunks)
    torch.testing.assert_close(got_pre, want_pre, atol=tol * 10, rtol=tol * 10)
    torch.testing.assert_close(got_c, want_c, atol=tol, rtol=tol)


@pytest.mark.parametrize("hidden,batch", [(12, 4), (600, 32)])
def test_both_backends_give_the_same_layer_in_training(two_threads, hidden, batch):
    """Compiled recurrence + hand-derived backward against the PyTorch specification under autograd, with
    DropConnect on: outputs and every gradient. At 600 x 32 the kernels' loops split the rows across threads."""
    _compiled()
    torch.manual_seed(0)
    layer = ONLSTMLayer(5, hidden, 3, weight_drop=0.4).double()
    x = torch.randn(7, batch, 5, dtype=torch.float64)
    results = []
    for backend in ("auto", "torch"):
        layer.zero_grad()
        torch.manual_seed(1)  # same DropConnect mask
        xi = x.clone().requires_grad_()
        with use_backend(backend):
            out = layer(xi)
            distance = 1.0 - out.master[..., 1, :].mean(-1)
            (out.output.pow(2).sum() + out.state[1].sum() + distance.sum()).backward()
        results.append([out.output, out.state[1], xi.grad] + [p.grad.clone() for p in layer.parameters()])
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, atol=1e-10, rtol=1e-10)


def test_state_carries_over_segments():
    torch.manual_seed(0)
    layer = ONLSTMLayer(4, 8, 2).eval()
    x = torch.randn(9, 2, 4)
    with torch.no_grad():
        whole = layer(x)
        first = layer(x[:4])
        second = layer(x[4:], first.state)
    torch.testing.assert_close(torch.cat([first.output, second.output]), whole.output)
    torch.testing.assert_close(second.state[1], whole.state[1])


def test_language_model_outputs_and_distances():
    torch.manual_seed(0)
    model = ONLSTMLanguageModel(30, emb_size=8, hidden_size=12, num_layers=3, chunk_size=4).eval()
    tokens = torch.randint(0, 30, (6, 2))
    with torch.no_grad():
        out = model(tokens)
    assert out.output.shape == (6, 2, 8)
    assert out.distances.shape == out.distance_input.shape == (3, 6, 2)
    assert torch.all((out.distances >= 0) & (out.distances <= 1))
    assert [tuple(h.shape) for h, _ in out.state] == [(2, 12), (2, 12), (2, 8)]
    assert model.decoder.weight is model.embedding.weight  # tied


def test_eval_mode_is_deterministic_and_training_mode_is_not():
    torch.manual_seed(0)
    model = ONLSTMLanguageModel(30, emb_size=8, hidden_size=12, num_layers=2, chunk_size=4)
    tokens = torch.randint(0, 30, (5, 2))
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(tokens).output, model(tokens).output)
    model.train()
    assert not torch.equal(model(tokens).output, model(tokens).output)


@settings(deadline=None, max_examples=15)
@given(st.integers(1, 3), st.sampled_from([1, 2, 4]), st.integers(1, 4), st.integers(1, 6))
def test_any_layout_runs_forward_and_backward(layers, chunk, chunks, steps):
    hidden = chunk * chunks
    model = ONLSTMLanguageModel(11, emb_size=hidden, hidden_size=2 * hidden, num_layers=layers, chunk_size=chunk)
    out = model(torch.randint(0, 11, (steps, 2)))
    model.decoder(out.output).sum().backward()
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_inference_records_no_graph_and_matches_training(monkeypatch):
    """Without gradients the recurrence keeps nothing for a backward: no autograd Function runs (patched to
    fail) and no output has a graph; its values equal the training path's."""
    _compiled()
    torch.manual_seed(0)
    (x, w, h0, c0), n_chunks = _random_problem(dtype=torch.float32)
    hs, c_last, master = recurrence(x, w, h0, c0, n_chunks)
    assert hs.grad_fn is not None  # training: the hand-derived backward is recorded

    def no_function(*args):
        raise AssertionError("inference ran the autograd Function")

    monkeypatch.setattr(_FusedRecurrence, "apply", no_function)
    with torch.no_grad():
        run = recurrence(x, w, h0, c0, n_chunks)
    for got, want in zip(run, (hs, c_last, master)):
        assert got.grad_fn is None and not got.requires_grad
        torch.testing.assert_close(got, want.detach())


def test_language_model_equals_the_official_style_reference():
    """The batched model against `reference.ReferenceLM` (the official loop, step by step) with the same
    weights, in evaluation: the same logits and the same distances of every layer."""
    from reference import ReferenceLM

    torch.manual_seed(0)
    model = ONLSTMLanguageModel(30, emb_size=8, hidden_size=12, num_layers=3, chunk_size=4, weight_drop=0.3).eval()
    ref = ReferenceLM(30, 8, 12, 3, 4, 0.4, 0.2, 0.3, 0.1, 0.3).eval()
    ref.load_state_dict({k.replace("embedding", "encoder").replace("rnn.layers", "cells"): v
                         for k, v in model.state_dict().items()})
    tokens = torch.randint(0, 30, (7, 3))
    with torch.no_grad():
        out = model(tokens)
        ref_output, _ = ref(tokens)
        torch.testing.assert_close(model.decoder(out.output), ref.decoder(ref_output))
        torch.testing.assert_close(out.distances, ref.distances(tokens))
