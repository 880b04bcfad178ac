"""PRPN: gate computations by hand, the golden fixture and other official configurations, training."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from treenets.cli import main
from treenets.nn.prpn.convert import from_official
from treenets.nn.prpn.model import LayerNorm, PRPNLanguageModel, masked_softmax, memory_gates
from treenets.workflows.check_golden import check_golden


def sig(x):
    return 1 / (1 + math.exp(-x))


def test_soft_memory_gates_by_hand():
    # d = [.5, .45, .6], S = 3, nothing before the first word (+inf).
    gates = torch.tensor([[0.5, 0.45, 0.6]], dtype=torch.float64)
    previous = torch.full((1, 3), math.inf, dtype=torch.float64)
    a = memory_gates(gates, gates, previous, resolution=0.1, hard=False)[:, 0]  # [T, S]
    # f(x) = sigmoid(10 x / 0.1 + 5); t = 1 compares .45 with [.45, .5, none]: [s(5), s(0), 0] -> cumprod
    assert a[1].tolist() == pytest.approx([sig(5), sig(5) * 0.5, 0.0])
    # t = 2 compares .6 with [.6, .45, .5]: f = [s(5), s(20), s(15)]
    assert a[2].tolist() == pytest.approx([sig(5), sig(5) * sig(20), sig(5) * sig(20) * sig(15)])
    assert a[0].tolist() == pytest.approx([sig(5), 0.0, 0.0])


def test_hard_memory_gates_by_hand():
    gates = torch.tensor([[0.5, 0.45, 0.6]])
    query = torch.tensor([[0.52, 0.3, 0.9]])  # a next-step gate
    previous = torch.tensor([[math.inf, math.inf, 0.55]])  # one gate before the segment
    a = memory_gates(query, gates, previous, resolution=0.1, hard=True)[:, 0]
    # f(x) = (hardtanh(20 x + 1) + 1) / 2: x >= 0 -> 1, x <= -0.1 -> 0, linear in between.
    # t = 0: .52 against [.5, .55, inf]: f = [1, (hardtanh(-.6 + 1) + 1) / 2 = .7, 0] -> cumprod [1, .7, 0]
    assert a[0].tolist() == pytest.approx([1.0, 0.7, 0.0])
    # t = 1: .3 against [.45, .5, .55]: f(-.15) = 0 -> all 0
    assert a[1].tolist() == pytest.approx([0.0, 0.0, 0.0])
    # t = 2: .9 against [.6, .45, .5]: all 1
    assert a[2].tolist() == pytest.approx([1.0, 1.0, 1.0])


def test_masked_softmax_and_layer_norm():
    p = masked_softmax(torch.tensor([[1.0, 2.0, 3.0]]), torch.tensor([[1.0, 0.0, 1.0]]))
    e1, e3 = math.exp(1 - 3), 1.0
    assert p[0].tolist() == pytest.approx([e1 / (e1 + e3 + 1e-8), 0.0, e3 / (e1 + e3 + 1e-8)])
    assert masked_softmax(torch.tensor([[1.0, 2.0]]), torch.zeros(1, 2)).tolist() == [[0.0, 0.0]]
    x = torch.tensor([[1.0, 2.0, 3.0, 6.0]])
    std = torch.tensor([1.0, 2.0, 3.0, 6.0]).std().item()  # unbiased, as the official code
    assert LayerNorm(4)(x)[0].tolist() == pytest.approx([(v - 3.0) / (std + 1e-6) for v in [1, 2, 3, 6]])


def test_official_prpn_fixture_passes(golden_root, capsys):
    assert main(["check-golden", str(golden_root / "prpn-lm")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "PASS 3/3"


def _official_keys(model: PRPNLanguageModel, nlayers: int, res: int) -> dict:
    """Our weights under the official names (the inverse of `treenets.workflows.convert`)."""
    mapping = {"embedding": "encoder", "parser.conv": "parser.gate.1", "parser.norm": "parser.gate.2",
               "parser.out": "parser.gate.5", "predictor.query": "predictor.projector_pred.1",
               "predictor.fc": "predictor.ffd.1", "predictor.norm": "predictor.ffd.2"}
    for j in range(nlayers):
        for ours, official in (("ih_norm", "memory_rnn.ih.1"), ("hh_norm", "memory_rnn.hh.1"),
                               ("ih", "memory_rnn.ih.0"), ("hh", "memory_rnn.hh.0"), ("c_norm", "memory_rnn.c_norm"),
                               ("query", "projector_summ.1")):
            mapping[f"readers.{j}.{ours}"] = f"reader.{j}.{official}"
    for k in range(res):
        for ours, official in (("fc1", "0"), ("bn1", "1"), ("fc2", "4"), ("bn2", "5")):
            mapping[f"predictor.blocks.{k}.{ours}"] = f"predictor.res.res.{k}.{official}"
    result = {}
    for name, tensor in model.state_dict().items():
        prefix, leaf = name.rsplit(".", 1)
        result[f"{mapping.get(prefix, prefix)}.{leaf}"] = tensor.numpy().copy()
    return result


@pytest.mark.parametrize("nlayers,nslots,nlookback,hard,res,tied", [
    (1, 1, 1, True, 0, True), (2, 4, 3, False, 2, False), (3, 2, 2, True, 1, True)])
def test_other_official_configurations(tmp_path, nlayers, nslots, nlookback, hard, res, tied):
    """A fixture for another configuration; its outputs come from running the model one step at a time
    (state carried), so the all-steps-at-once parsing and predict networks are checked against the step
    semantics, and the fixture machinery against another layout."""
    torch.manual_seed(0)
    args = dict(ntoken=31, ninp=8, nhid=10, nlayers=nlayers, nslots=nslots, nlookback=nlookback,
                resolution=0.1, dropout=0.3, idropout=0.2, rdropout=0.1, tie_weights=tied, hard=hard, res=res)
    source = PRPNLanguageModel(31, 8, 10, nlayers, nslots, nlookback, 0.1, 0.3, 0.2, 0.1, tied, hard, res)
    with torch.no_grad():
        for module in source.modules():  # non-trivial running statistics
            if isinstance(module, torch.nn.BatchNorm1d):
                module.running_mean.uniform_(-0.5, 0.5)
                module.running_var.uniform_(0.5, 2.0)
    params = _official_keys(source, nlayers, res)
    model = from_official(params, **args)
    tokens = torch.randint(0, 31, (7, 3))
    with torch.no_grad():
        state, logits, gates = None, [], []
        for t in range(7):
            out = model(tokens[t : t + 1], state)
            state = out.state
            logits.append(model.decoder(out.output))
            gates.append(out.distances[0].t())
        logits2 = model.decoder(model(tokens[:3], state).output)
    folder = tmp_path / "fixture"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"kind": "prpn-lm", **args}))
    np.savez(folder / "params.npz", **params)
    np.savez(folder / "inputs.npz", tokens=tokens.numpy(), tokens2=tokens[:3].numpy())
    np.savez(folder / "outputs.npz", logits=torch.cat(logits).numpy(), gates=torch.cat(gates, dim=1).numpy(),
             logits2=logits2.numpy())
    results = check_golden(folder)
    assert [c.name for c in results] == ["logits", "gates", "logits2"]
    assert all(c.ok for c in results), results


def test_training_mode_backward_and_dropout():
    torch.manual_seed(0)
    model = PRPNLanguageModel(20, 8, 10, 2, nslots=3, nlookback=2, dropout=0.3, idropout=0.2, rdropout=0.2, res=1)
    tokens = torch.randint(0, 20, (6, 4))
    out = model(tokens)
    model.decoder(out.output).sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in model.parameters())
    assert not torch.equal(model(tokens).output, model(tokens).output)  # dropout on
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(model(tokens).output, model(tokens).output)
        assert torch.all((model(tokens).distances >= 0) & (model(tokens).distances <= 1))


@pytest.mark.parametrize("nslots,hard,dtype", [(1, True, torch.float64), (4, False, torch.float64),
                                               (15, True, torch.float32)])
def test_compiled_reading_loop_matches_pytorch(nslots, hard, dtype):
    """The compiled evaluation loop of the reading layers against `ReadingLayer.forward`, over two segments
    with the state carried (the second starts with full slots)."""
    from treenets.nn.backend import kernels, use_backend

    if kernels("prpn") is None:
        pytest.skip("compiled kernels unavailable")
    torch.manual_seed(3)
    model = PRPNLanguageModel(25, 6, 10, 2, nslots=nslots, nlookback=2, hard=hard).to(dtype).eval()
    tokens = torch.randint(0, 25, (11, 3))

    def run():
        with torch.no_grad():
            first = model(tokens[:5])
            second = model(tokens[5:], first.state)
        return [first.output, second.output, *second.state.reader[0], *second.state.reader[1]]

    compiled = run()
    with use_backend("torch"):
        expected = run()
    for a, b in zip(compiled, expected):
        torch.testing.assert_close(a, b)


@pytest.mark.parametrize("nslots,res,hidden,batch", [(1, 0, 10, 3), (4, 1, 10, 3), (15, 0, 10, 3), (4, 0, 600, 32)])
def test_compiled_training_matches_pytorch(two_threads, nslots, res, hidden, batch):
    """Training on the CPU (fused reading layers, attention and layer norms with their hand-derived
    backward) against the PyTorch specification: same dropout masks, two segments with the state carried
    and the gradient flowing through it, a loss on the outputs and on the memory left after; every
    parameter's gradient and the outputs must agree. At 600 x 32 the kernels' loops split the rows across
    threads."""
    from treenets.nn.backend import kernels, use_backend
    from treenets.nn.prpn import model as prpn

    if kernels("prpn") is None:
        pytest.skip("compiled kernels unavailable")
    torch.manual_seed(5)
    model = PRPNLanguageModel(30, 7, hidden, 2, nslots=nslots, nlookback=2, dropout=0.3, idropout=0.2,
                              rdropout=0.2, res=res).double().train()
    tokens = torch.randint(0, 30, (8, batch))

    def run():
        torch.manual_seed(11)  # the same dropout masks on both paths
        model.zero_grad()
        state = model.initial_state(batch)
        # random memory, so that no two attention logits tie
        state = state._replace(reader=[prpn.Memory(torch.randn_like(m.h), torch.randn_like(m.c)) for m in state.reader])
        first = model(tokens[:5], state)
        second = model(tokens[5:], first.state)
        memory = second.state.reader
        loss = (first.output.pow(2).sum() + second.output.sin().sum()
                + sum(m.h.pow(2).sum() + m.c.sum() for m in memory) + second.state.predictor.sum())
        loss.backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        return [first.output, second.output], grads

    outputs, grads = run()
    with use_backend("torch"):
        expected_outputs, expected_grads = run()
    assert grads.keys() == expected_grads.keys() and len(grads) >= 30  # all but the unused decoder bias
    for a, b in zip(outputs, expected_outputs):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)
    for name in grads:
        torch.testing.assert_close(grads[name], expected_grads[name], rtol=1e-7, atol=1e-9, msg=name)


def test_fused_functions_gradcheck():
    """The hand-derived backwards of the reading recurrence (with dropout masks, a carried memory and
    gradients reaching hs and cs), the attention and the layer norm, against finite differences. The recurrent
    dropout mask drops some features (the hidden product then runs over the kept ones), none, or all."""
    from treenets.nn.backend import kernels
    from treenets.nn.prpn import model as prpn

    native = kernels("prpn")
    if native is None:
        pytest.skip("compiled kernels unavailable")
    torch.manual_seed(0)
    steps, batch, hidden, slots = 3, 2, 4, 3
    d = dict(dtype=torch.float64)

    def leaf(*shape, scale=1.0):
        return (torch.randn(*shape, **d) * scale).requires_grad_()

    masks = [(torch.rand(steps, batch, hidden, **d) > 0.3).double() / 0.7 for _ in range(2)]
    rmasks = [torch.tensor([0.0, 2.0, 0.0, 2.0], **d), torch.full((hidden,), 1.25, **d), torch.zeros(hidden, **d)]
    inputs = (leaf(steps, batch, 4 * hidden), leaf(steps, batch, hidden),
              torch.rand(steps, batch, slots, **d).requires_grad_(), leaf(batch, slots, hidden),
              leaf(batch, slots, hidden), leaf(hidden, hidden, scale=0.5), leaf(4 * hidden, hidden, scale=0.5),
              leaf(4 * hidden), leaf(4 * hidden), leaf(4 * hidden), leaf(hidden), leaf(hidden))

    for rmask in rmasks:
        def reading(*args, rmask=rmask):
            hs, cs = prpn._FusedReading.apply(native, (None, None), *args, rmask, *masks, 1e-6, 1e-6)
            return hs.sin(), cs.cos()

        assert torch.autograd.gradcheck(reading, inputs), rmask
    # the hidden product ran over the two kept features of the first mask (what the backward keeps of h~ * rmask)
    saved = native.forward(*(x.detach() for x in inputs), rmasks[0], *masks, 1e-6, 1e-6, True, None, None)
    assert saved["rhm"].shape == (steps, batch, 2)
    history, query = leaf(slots + steps, batch, hidden), leaf(steps, batch, hidden)
    gate = torch.rand(steps, batch, slots, **d).requires_grad_()
    assert torch.autograd.gradcheck(lambda *a: prpn._FusedAttention.apply(native, *a), (history, query, gate))
    x, gamma, beta = leaf(5, 7), leaf(7), leaf(7)
    assert torch.autograd.gradcheck(lambda *a: prpn._FusedLayerNorm.apply(native, *a, 1e-6), (x, gamma, beta))


def test_compiled_attention_matches_pytorch():
    from treenets.nn.backend import kernels, use_backend
    from treenets.nn.prpn import model as prpn

    if kernels("prpn") is None:
        pytest.skip("compiled kernels unavailable")
    torch.manual_seed(1)
    history, query = torch.randn(4 + 6, 3, 5, dtype=torch.float64), torch.randn(6, 3, 5, dtype=torch.float64)
    gate = torch.rand(6, 3, 4, dtype=torch.float64)
    compiled = prpn.attend(history, query, gate)
    with use_backend("torch"):
        expected = prpn.attend(history, query, gate)
    torch.testing.assert_close(compiled, expected)
    # by hand for one row: step 0 reads the 4 states before the segment, slot k = history[3 - k]
    logits = torch.stack([history[3 - k, 0] @ query[0, 0] for k in range(4)]) / math.sqrt(5)
    weights = masked_softmax(logits, gate[0, 0])
    torch.testing.assert_close(expected[0, 0], sum(weights[k] * history[3 - k, 0] for k in range(4)))


@pytest.mark.parametrize("backend", ["auto", "torch"])
@pytest.mark.parametrize("p", [0.2, 0.5, 0.7])
def test_dropout_masks(p, backend):
    from treenets.nn.backend import use_backend
    from treenets.nn.prpn.model import _dropout_mask

    like = torch.empty(101, 999)  # an odd number of values: the generator makes them in pairs
    torch.manual_seed(0)
    with use_backend(backend):
        mask = _dropout_mask(p, True, like)
    assert mask.shape == like.shape and mask.dtype == like.dtype
    assert mask.unique().tolist() == pytest.approx([0.0, 1 / (1 - p)])
    assert (mask == 0).double().mean().item() == pytest.approx(p, abs=0.005)
    kept = mask.flatten() > 0
    assert (kept[1:] == kept[:-1]).double().mean().item() == pytest.approx(p * p + (1 - p) * (1 - p), abs=0.005)
    torch.manual_seed(0)
    with use_backend(backend):
        assert torch.equal(_dropout_mask(p, True, like), mask)  # follows torch.manual_seed
        assert not torch.equal(_dropout_mask(p, True, like), mask)  # and a new draw differs
    assert _dropout_mask(p, False, like) is None and _dropout_mask(0.0, True, like) is None


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5, 11), (35, 4, 33), (3, 33335)])  # the last: several chunks
@pytest.mark.parametrize("p", [0.1, 0.5, 0.7])
def test_both_backends_draw_the_same_dropout_masks(shape, p, dtype):
    from treenets.nn.backend import kernels, use_backend
    from treenets.nn.prpn.model import _dropout_mask

    if kernels("prpn") is None:
        pytest.skip("compiled kernels unavailable")
    like = torch.empty(shape, dtype=dtype)
    masks = []
    for backend in ("auto", "torch"):
        torch.manual_seed(42)
        with use_backend(backend):
            masks.append(_dropout_mask(p, True, like))
    assert masks[0].dtype == masks[1].dtype == dtype and torch.equal(masks[0], masks[1])


def test_splitmix_bits_by_hand():
    """The first value of splitmix64 with seed 0 (the reference generator's known output 0xE220A8397B1DCDAF):
    its bits 40..63 and 16..39 are the first two 24-bit uniforms."""
    from treenets.nn.prpn.model import splitmix_uniform_bits

    first = 0xE220A8397B1DCDAF
    assert splitmix_uniform_bits(0, 3).tolist()[:2] == [first >> 40, (first >> 16) & 0xFFFFFF]
