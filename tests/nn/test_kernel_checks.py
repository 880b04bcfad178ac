"""Every compiled kernel checks its inputs: a wrong dtype, shape or layout stops with a message naming the
kernel and the tensor, instead of reading memory it does not own."""

from __future__ import annotations

import re

import pytest
import torch

from treenets.nn.backend import kernels
from treenets.nn.treelstm.batch import TreeBatch
from treenets.trees.parents import parse_parents


def _kernels(name):
    module = kernels(name)
    if module is None:
        pytest.skip("compiled kernels unavailable")
    return module


def _onlstm_inputs(steps=3, batch=2, hidden=8, n_chunks=2):
    width = 2 * n_chunks + 4 * hidden
    return [torch.randn(steps, batch, width), torch.randn(width, hidden), torch.zeros(batch, hidden),
            torch.zeros(batch, hidden), n_chunks]


@pytest.mark.parametrize("position,bad,message", [
    (0, lambda x: x.double(), "onlstm forward: x_proj must be float32 like the other inputs, got float64"),
    (1, lambda w: w[:, :7], "onlstm forward: w_hh must have shape [36, 8], got [36, 7]"),
    (3, lambda c: c.int(), "onlstm forward: c0 must be float32 or float64, got int32"),
    (2, lambda h: h[:, :6], "onlstm forward: the size of h0 (6) must be a multiple of n_chunks = 4"),
])
def test_onlstm_forward_names_the_wrong_input(position, bad, message):
    module = _kernels("onlstm")
    args = _onlstm_inputs()
    module.forward(*args, True, None)  # the valid call runs
    if position == 2:
        args[4] = 4
    args[position] = bad(args[position])
    with pytest.raises(RuntimeError, match=re.escape(message)):
        module.forward(*args, True, None)


def test_onlstm_bfloat16_weight_is_checked():
    module = _kernels("onlstm")
    x, w, h0, c0, n_chunks = _onlstm_inputs()
    module.forward(x, w, h0, c0, n_chunks, True, w.bfloat16())  # the valid call runs
    with pytest.raises(RuntimeError, match="onlstm forward: w_low must be bfloat16, got float32"):
        module.forward(x, w, h0, c0, n_chunks, True, w)
    with pytest.raises(RuntimeError, match=re.escape("onlstm forward: w_low must have the shape of w_hh [36, 8]")):
        module.forward(x, w, h0, c0, n_chunks, True, w[:, :7].bfloat16())


def test_onlstm_backward_needs_contiguous_saved_tensors():
    module = _kernels("onlstm")
    x, w, h0, c0, n_chunks = _onlstm_inputs()
    hs, c_last, master, cs, probs, gates = module.forward(x, w, h0, c0, n_chunks, True, None)
    module.backward(torch.ones_like(hs), None, None, w, h0, hs, cs, master, probs, gates, n_chunks, None)
    strided = hs.transpose(0, 1).contiguous().transpose(0, 1)  # the same values, not contiguous
    with pytest.raises(RuntimeError, match="onlstm backward: hs must be contiguous"):
        module.backward(torch.ones_like(hs), None, None, w, h0, strided, cs, master, probs, gates, n_chunks, None)
    with pytest.raises(RuntimeError, match="onlstm backward: d_hs must have shape"):
        module.backward(torch.ones(1, 2, 8), None, None, w, h0, hs, cs, master, probs, gates, n_chunks, None)


def _prpn_inputs(steps=2, batch=3, hidden=4, slots=2):
    def r(*shape):
        return torch.randn(*shape, dtype=torch.float64)

    return [r(steps, batch, 4 * hidden), r(steps, batch, hidden), torch.rand(steps, batch, slots, dtype=torch.float64),
            r(batch, slots, hidden), r(batch, slots, hidden), r(hidden, hidden), r(4 * hidden, hidden),
            r(4 * hidden), r(4 * hidden), r(4 * hidden), r(hidden), r(hidden), r(hidden), None, None, 1e-6, 1e-6]


def test_prpn_reading_returns_named_tensors_and_checks_its_inputs():
    module = _kernels("prpn")
    args = _prpn_inputs()
    kept, bare = module.forward(*args, True, None, None), module.forward(*args, False, None, None)
    assert set(bare) == {"hs", "cs"}
    assert set(kept) == {"hs", "cs", "hq", "q", "ex", "z", "amax", "rhm", "rc", "hh_xhat", "hh_stats", "act",
                         "c_xhat", "c_stats"}
    assert torch.equal(kept["hs"], bare["hs"]) and torch.equal(kept["cs"], bare["cs"])
    bad = list(args)
    bad[6] = bad[6][:, :3]
    with pytest.raises(RuntimeError, match="prpn forward: w_hh must have shape \\[16, 4\\], got \\[16, 3\\]"):
        module.forward(*bad, True, None, None)
    bad = list(args)
    bad[0] = bad[0].transpose(0, 1).contiguous().transpose(0, 1)
    with pytest.raises(RuntimeError, match="prpn forward: gates_x must be contiguous"):
        module.forward(*bad, True, None, None)
    bad = list(args)
    bad[13] = torch.ones(2, 3, 4)  # float32 masks with float64 inputs
    with pytest.raises(RuntimeError, match="prpn forward: h_masks must be float64 like the other inputs, got float32"):
        module.forward(*bad, True, None, None)
    # mixed precision: w_query_h and w_hh also in bfloat16, for a float32 model only
    low = [args[i].to(torch.bfloat16) for i in (5, 6)]
    with pytest.raises(RuntimeError, match="prpn forward: w_query_low is for a float32 w_query_h, got a float64 one"):
        module.forward(*args, True, *low)
    single = [a.float() if torch.is_tensor(a) else a for a in args]
    module.forward(*single, True, *low)  # the valid call runs
    with pytest.raises(RuntimeError, match="prpn forward: w_query_low and w_hh_low must be given together"):
        module.forward(*single, True, low[0], None)
    with pytest.raises(RuntimeError, match="prpn forward: w_hh_low must be bfloat16, got float32"):
        module.forward(*single, True, low[0], single[6])
    with pytest.raises(RuntimeError, match="prpn forward: w_query_low must have the shape of w_query_h \\[4, 4\\], got "
                       "\\[16, 4\\]"):
        module.forward(*single, True, low[1], low[1])
    # memory_gate, w_query_h, w_hh, hh_gamma, c_gamma, c_beta, rmask
    weights = [args[i] for i in (2, 5, 6, 8, 10, 11, 12)]
    d_hs = torch.ones_like(kept["hs"])
    grads = module.backward(d_hs, None, *weights, None, None, kept, None, None)  # the valid call runs
    assert len(grads) == 12 and grads[6].shape == args[6].shape
    missing = {k: v for k, v in kept.items() if k != "rhm"}
    with pytest.raises(RuntimeError, match="prpn backward: the saved tensors have no rhm"):
        module.backward(d_hs, None, *weights, None, None, missing, None, None)
    with pytest.raises(RuntimeError, match="prpn backward: amax must be int64, got float64"):
        module.backward(d_hs, None, *weights, None, None, dict(kept, amax=kept["amax"].double()), None, None)
    strided = kept["act"].transpose(0, 1).contiguous().transpose(0, 1)  # the same values, not contiguous
    with pytest.raises(RuntimeError, match="prpn backward: act must be contiguous"):
        module.backward(d_hs, None, *weights, None, None, dict(kept, act=strided), None, None)


def test_prpn_attention_and_layer_norm_check_shapes():
    module = _kernels("prpn")
    history, query, gate = torch.randn(5, 2, 3), torch.randn(3, 2, 3), torch.rand(3, 2, 2)
    module.attend_forward(history, query, gate)
    with pytest.raises(RuntimeError, match="prpn attend_forward: history must have shape \\[5, 2, 3\\]"):
        module.attend_forward(history[1:], query, gate)
    x, gamma, beta = torch.randn(4, 6), torch.ones(6), torch.zeros(6)
    module.layer_norm_forward(x, gamma, beta, 1e-6)
    with pytest.raises(RuntimeError, match="prpn layer_norm_forward: gamma must have shape \\[6\\], got \\[5\\]"):
        module.layer_norm_forward(x, gamma[:5], beta, 1e-6)
    read, e, z, top = module.attend_forward(history, query, gate)
    module.attend_backward(torch.ones_like(read), history, query, gate, e, z, top)
    with pytest.raises(RuntimeError, match="prpn attend_backward: top must be int64, got int32"):
        module.attend_backward(torch.ones_like(read), history, query, gate, e, z, top.int())
    with pytest.raises(RuntimeError, match="prpn dropout_mask: p must be in \\[0, 1\\)"):
        module.dropout_mask([3], 1.0, 0, x)


def test_treelstm_levels_check_the_schedule_and_the_weights():
    module = _kernels("treelstm")
    batch = TreeBatch.build([parse_parents("2 0 2", ["a", "b", "c"], "t")])
    nodes, child, slot, order = batch.schedule()
    m, n = 4, batch.num_nodes
    iou_x, f_x = torch.randn(n, 3 * m), torch.randn(n, m)
    w_iouh, b_iouh, w_fh, b_fh = torch.randn(3 * m, m), torch.randn(3 * m), torch.randn(m, m), torch.randn(m)
    parts = (batch.offsets, 1)  # the trees' first nodes, and one part: the whole batch on one thread
    module.childsum_forward(iou_x, f_x, w_iouh, b_iouh, w_fh, b_fh, nodes, child, slot, *parts, False)
    with pytest.raises(RuntimeError, match="childsum_forward: b_iouh must have shape \\[12\\], got \\[11\\]"):
        module.childsum_forward(iou_x, f_x, w_iouh, b_iouh[:11], w_fh, b_fh, nodes, child, slot, *parts, False)
    with pytest.raises(RuntimeError, match="childsum_forward: child\\[level\\] must be a contiguous 1-D CPU int64"):
        module.childsum_forward(iou_x, f_x, w_iouh, b_iouh, w_fh, b_fh, nodes, [c.int() for c in child], slot,
                                *parts, False)
    strided = iou_x.t().contiguous().t()  # the same values, not contiguous
    with pytest.raises(RuntimeError, match="childsum_forward: iou_x must be contiguous"):
        module.childsum_forward(strided, f_x, w_iouh, b_iouh, w_fh, b_fh, nodes, child, slot, *parts, False)
    u_w, u_b = torch.randn(5 * m, 2 * m), torch.randn(5 * m)
    x_iou, x_f = torch.randn(n, 3 * m), torch.randn(n, m)
    h, c, kids, gates = module.nary_forward(x_iou, x_f, u_w, u_b, 2, nodes, child, slot, order, *parts, False)
    assert kids.shape == (0, 2 * m) and gates.shape == (0, 5 * m)  # inference keeps only h and c
    with pytest.raises(RuntimeError, match="nary_forward: u_w must have shape \\[20, 8\\]"):
        module.nary_forward(x_iou, x_f, u_w.t(), u_b, 2, nodes, child, slot, order, *parts, True)
    with pytest.raises(RuntimeError, match="nary_forward: x_iou must be float32 like the other inputs, got float64"):
        module.nary_forward(x_iou.double(), x_f, u_w, u_b, 2, nodes, child, slot, order, *parts, True)
