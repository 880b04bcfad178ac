"""Tree-LSTMs: hand-computed trees, batched equals one node at a time, the encoders chosen by name, the compiled
level loops, the golden fixtures."""

from __future__ import annotations

import functools
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import random_tree, reference_child_sum, reference_nary

from treenets.cli import main
from treenets.core.errors import TreenetsError
from treenets.nn.backend import kernels, use_backend
from treenets.nn.encoders import union_members
from treenets.nn.registry import encoder_configs
from treenets.nn.tree_models import RelatednessModelConfig, SentimentModelConfig
from treenets.nn.treelstm import model as treelstm
from treenets.nn.treelstm.batch import TreeBatch, padded_size
from treenets.nn.treelstm.model import ChildSumTreeLSTM, NaryTreeLSTM
from treenets.trees.parents import ParentTree, parse_bracketed, parse_parents
from treenets.workflows.check_golden import check_golden


def s(x):
    return 1 / (1 + math.exp(-x))


# --- cells by hand -------------------------------------------------------------------------------------
def _set(linear, weight, bias):
    with torch.no_grad():
        linear.weight.fill_(weight)
        linear.bias.fill_(bias)


def test_child_sum_by_hand():
    cell = ChildSumTreeLSTM(1, 1).double()
    _set(cell.ioux, 1.0, 0.0)  # W_i = W_o = W_u = 1
    _set(cell.iouh, 0.5, 0.0)  # U_i = U_o = U_u = 0.5
    _set(cell.fx, 1.0, 0.0)
    _set(cell.fh, 2.0, 0.0)
    tree = parse_parents("0 1", ["root", "leaf"], "x")  # word 2 is a child of word 1
    batch = TreeBatch.build([tree])
    x = torch.tensor([[0.3], [1.0]], dtype=torch.float64)
    h, c = cell(batch, batch.node_inputs(x))
    # leaf (x = 1): i = o = s(1), u = tanh(1), c = s(1) tanh(1), h = s(1) tanh(c)
    c_leaf = s(1) * math.tanh(1)
    h_leaf = s(1) * math.tanh(c_leaf)
    assert c[1].item() == pytest.approx(c_leaf) and h[1].item() == pytest.approx(h_leaf)
    # root (x = .3): pre = .3 + .5 h_leaf; f = s(.3 + 2 h_leaf); c = s(pre) tanh(pre) + f c_leaf
    pre = 0.3 + 0.5 * h_leaf
    c_root = s(pre) * math.tanh(pre) + s(0.3 + 2 * h_leaf) * c_leaf
    assert c[0].item() == pytest.approx(c_root)
    assert h[0].item() == pytest.approx(s(pre) * math.tanh(c_root))


def test_binary_tree_lstm_by_hand_uses_child_positions():
    cell = NaryTreeLSTM(1, 1, 2).double()
    with torch.no_grad():
        cell.iou_x.weight.fill_(1.0)
        cell.iou_x.bias.zero_()
        cell.f_x.weight.fill_(0.0)
        cell.children_proj.weight.zero_()
        cell.children_proj.bias.zero_()
        cell.children_proj.weight[0, 0] = 1.0  # i reads only the left child's h
    tree = ParentTree((2, 2, -1), ("l", "r"))  # a phrase over two words
    batch = TreeBatch.build([tree])
    h, c = cell(batch, batch.node_inputs(torch.tensor([[1.0], [-1.0]], dtype=torch.float64)))
    c_l, c_r = s(1) * math.tanh(1), s(-1) * math.tanh(-1)
    h_l = s(1) * math.tanh(c_l)
    # root: no word; i = s(h_l), o = s(0), u = tanh(0) = 0, f_1 = f_2 = s(0): c = .5 c_l + .5 c_r
    assert c[2].item() == pytest.approx(0.5 * c_l + 0.5 * c_r)
    assert h[2].item() == pytest.approx(0.5 * math.tanh(0.5 * c_l + 0.5 * c_r))
    assert h[0].item() == pytest.approx(h_l)


# --- batched versus one node at a time -----------------------------------------------------------------
@pytest.mark.parametrize("seed", range(3))
def test_child_sum_batched_equals_one_node_at_a_time(seed):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    cell = ChildSumTreeLSTM(5, 7).double()
    trees = [random_tree(rng, rng.randint(1, 15)) for _ in range(9)]
    xs = [torch.randn(t.size, 5, dtype=torch.float64) for t in trees]
    batch = TreeBatch.build(trees)
    h, c = cell(batch, torch.cat(xs))
    for k, (tree, x) in enumerate(zip(trees, xs)):
        ref_c, ref_h = reference_child_sum(cell, tree, x)
        torch.testing.assert_close(c[batch.roots[k]], ref_c)
        torch.testing.assert_close(h[batch.roots[k]], ref_h)
    h.sum().backward()  # gradients flow through the level loop
    assert all(p.grad is not None for p in cell.parameters())


@pytest.mark.parametrize("seed", range(3))
def test_nary_batched_equals_one_node_at_a_time(seed):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    cell = NaryTreeLSTM(4, 6, 3).double()
    trees = []
    for _ in range(7):
        words = rng.randint(1, 12)
        tree = random_tree(rng, words, max_children=3)
        trees.append(tree)
    xs = [torch.randn(len(t.words), 4, dtype=torch.float64) for t in trees]
    batch = TreeBatch.build(trees)
    h, c = cell(batch, batch.node_inputs(torch.cat(xs)))
    for k, (tree, x) in enumerate(zip(trees, xs)):
        ref_c, ref_h = reference_nary(cell, tree, x)
        torch.testing.assert_close(c[batch.roots[k]], ref_c)
        torch.testing.assert_close(h[batch.roots[k]], ref_h)


def test_nary_refuses_wide_nodes():
    cell = NaryTreeLSTM(2, 3, 2)
    batch = TreeBatch.build([ParentTree((3, 3, 3, -1), ("a", "b", "c"))])
    with pytest.raises(TreenetsError, match="3 children"):
        cell(batch, batch.node_inputs(torch.zeros(3, 2)))


# --- padded levels (for CUDA graphs) --------------------------------------------------------------------
def _chain(size: int) -> ParentTree:
    """A tree as deep as it has nodes: node k's parent is node k - 1."""
    return ParentTree((-1, *range(size - 1)), tuple(f"w{k}" for k in range(size)))


def _states_and_gradients(cell, batch, x, weights):
    """h and c of every node, and the gradients of the inputs and the weights of a weighted sum of both."""
    x = x.clone().requires_grad_()
    cell.zero_grad()
    h, c = cell(batch, batch.node_inputs(x))
    (h * weights[0]).sum().add((c * weights[1]).sum()).backward()
    return h.detach(), c.detach(), x.grad, *(p.grad.clone() for p in cell.parameters())


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=8), chains=st.lists(st.integers(1, 30), max_size=2),
       seed=st.integers(0, 2**16), cell_kind=st.sampled_from(["childsum", "nary"]))
def test_padded_levels_give_the_states_and_gradients_of_exact_ones(sizes, chains, seed, cell_kind):
    """Random trees (single nodes among them) and chains up to 30 deep, float64: the padded schedule (padding nodes,
    edges, levels and rows) changes no node's states and no gradient, whether the batch holds grad or not."""
    rng = random.Random(seed)
    torch.manual_seed(seed)
    cell = (ChildSumTreeLSTM(3, 4) if cell_kind == "childsum" else NaryTreeLSTM(3, 4, 3)).double()
    trees = [random_tree(rng, size, max_children=None if cell_kind == "childsum" else 3) for size in sizes]
    trees += [_chain(size) for size in chains]
    rng.shuffle(trees)
    exact, padded = TreeBatch.build(trees, padded=False), TreeBatch.build(trees, padded=True)
    assert padded.stacked is not None and exact.stacked is None and padded.num_rows >= padded.num_nodes + 2
    x = torch.randn(exact.num_nodes, 3, dtype=torch.float64)
    weights = torch.randn(2, exact.num_nodes, 4, dtype=torch.float64)
    with use_backend("torch"):  # the PyTorch loop both ways (the compiled kernels take exact levels only)
        results = [_states_and_gradients(cell, batch, x, weights) for batch in (exact, padded)]
        with torch.no_grad():
            inferred = cell(padded, padded.node_inputs(x))
    for a, b in zip(*results):
        torch.testing.assert_close(b, a, rtol=1e-12, atol=1e-14)
    for a, b in zip(inferred, results[0]):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)


def test_padding_stays_finite_in_float32_over_many_deep_levels():
    """Twenty stars of ten leaves beside a chain 60 deep: above the stars each level holds one edge and 255 padding
    edges into one padding node. They carry a row nothing writes: had they carried what padding nodes wrote, that
    node's c could grow up to 255-fold a level, overflow float32, and 0 * inf would reach the weights' gradients."""
    torch.manual_seed(0)
    cell = ChildSumTreeLSTM(3, 4)
    star = ParentTree((-1, *[0] * 10), tuple(f"w{k}" for k in range(11)))
    trees = [star] * 20 + [_chain(60)]
    exact, padded = TreeBatch.build(trees, padded=False), TreeBatch.build(trees, padded=True)
    assert padded.stacked[0].shape == (64, 256)
    x = torch.randn(exact.num_nodes, 3)
    weights = torch.randn(2, exact.num_nodes, 4)
    with use_backend("torch"):
        results = [_states_and_gradients(cell, batch, x, weights) for batch in (exact, padded)]
    for a, b in zip(*results):
        assert torch.isfinite(b).all()
        torch.testing.assert_close(b, a, rtol=1e-5, atol=1e-6)


def test_padded_sizes_are_the_ladder_of_powers_of_two_and_three_halves():
    ladder = sorted({2**k for k in range(12)} | {3 * 2**k for k in range(11)})
    assert [padded_size(n) for n in range(1, 14)] == [1, 2, 3, 4, 6, 6, 8, 8, 12, 12, 12, 12, 16]
    for n in range(1, 2000):
        assert padded_size(n) == next(size for size in ladder if size >= n)


def test_random_batches_share_a_few_padded_shapes():
    """300 batches of 25 random trees of 1 to 30 nodes: every batch has exact shapes of its own, the padded ones
    (the rows, the levels and their width) fall on a few, each size on a few steps of the ladder."""
    rng = random.Random(0)
    exact, padded = set(), set()
    for _ in range(300):
        trees = [random_tree(rng, rng.randint(1, 30)) for _ in range(25)]
        batch = TreeBatch.build(trees, padded=False)
        exact.add((batch.num_nodes, *((len(level.nodes), len(level.child)) for level in batch.levels)))
        batch = TreeBatch.build(trees, padded=True)
        assert len({t.shape for t in batch.stacked}) == 1 and len(batch.stacked[0]) == len(batch.levels)
        padded.add((batch.num_rows, *batch.stacked[0].shape))
    assert len(exact) == 300 and len(padded) <= 15, len(padded)
    assert all(len({shape[k] for shape in padded}) <= 4 for k in range(3)), padded


# --- the encoders, chosen by name ----------------------------------------------------------------------
SENTENCE_ENCODERS = encoder_configs("sentences")  # every encoder a sentence model may name (sentiment's)
CELL_ENCODERS = encoder_configs("sentences", lambda config: config.cell)  # those with a memory cell: relatedness's


def test_the_models_accept_exactly_the_encoders_the_models_offer():
    assert union_members(RelatednessModelConfig.model_fields["encoder"].annotation) == CELL_ENCODERS
    assert union_members(SentimentModelConfig.model_fields["encoder"].annotation) == SENTENCE_ENCODERS
    assert list(SENTENCE_ENCODERS) == ["childsum-treelstm", "binary-treelstm", "lstm", "bilstm", "ordered-memory"]
    assert list(CELL_ENCODERS) == list(SENTENCE_ENCODERS)[:4]


@pytest.mark.parametrize("name", CELL_ENCODERS)
def test_every_encoder_name_builds_its_encoder_through_its_config(name):
    own = CELL_ENCODERS[name](mem_size=5)
    relatedness = RelatednessModelConfig(encoder={"name": name, "mem_size": 5}, emb_size=6, hidden_size=4)
    sentiment = SentimentModelConfig(encoder=own, emb_size=6)
    assert relatedness.encoder == own and sentiment.encoder == own and relatedness.name == name
    tree = ParentTree((3, 3, 4, 4, -1), ("a", "b", "c"))  # ((a b) c): binary, so every encoder reads it
    words = [torch.tensor([1, 2, 3])]
    model = relatedness.build(8)
    assert type(model.encoder) is type(own.build(6)) and model.sequential is not own.reads_trees
    assert {key.split(".")[0] for key in model.state_dict()} == {"emb", "encoder", "similarity"}
    assert model(([tree], words), ([tree], words)).shape == (1, 5)
    log_probs, _ = sentiment.build(8, 3)([tree], words)
    assert log_probs.shape == (1 if model.sequential else 5, 3)  # the sentence, or every node


# --- golden fixtures -----------------------------------------------------------------------------------
def test_official_childsum_fixture_passes(golden_root, capsys):
    assert main(["check-golden", str(golden_root / "childsum-treelstm-similarity")]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "PASS 30/30"


def test_childsum_fixture_of_other_sizes_and_trees(tmp_path):
    """Outputs computed one tree, one node at a time (the port's way) for other sizes and random trees."""
    rng = random.Random(5)
    torch.manual_seed(5)
    config = {"kind": "childsum-treelstm-similarity", "vocab": 30, "in_dim": 6, "mem_dim": 9, "hidden_dim": 4,
              "num_classes": 5}
    model_config = RelatednessModelConfig(encoder={"name": "childsum-treelstm", "mem_size": 9}, emb_size=6,
                                          hidden_size=4, head_state="c")
    source = model_config.build(30).double()
    params = {"emb.weight": source.emb.weight.detach().numpy()}
    for part in ("ioux", "iouh", "fx", "fh"):
        for k, v in getattr(source.encoder, part).state_dict().items():
            params[f"childsumtreelstm.{part}.{k}"] = v.numpy()
    for part in ("wh", "wp"):
        for k, v in getattr(source.similarity, part).state_dict().items():
            params[f"similarity.{part}.{k}"] = v.numpy()
    inputs, outputs = {}, {}
    for k in range(4):
        roots = []
        for side in ("a", "b"):
            tree = random_tree(rng, rng.randint(1, 10))
            tokens = torch.randint(0, 30, (tree.size,))
            inputs[f"{side}_parents_{k}"] = np.array([p + 1 for p in tree.parents])
            inputs[f"{side}_tokens_{k}"] = tokens.numpy()
            c, h = reference_child_sum(source.encoder, tree, source.emb(tokens))
            outputs[f"{side}_root_c_{k}"] = c.detach()[None].numpy()
            outputs[f"{side}_root_h_{k}"] = h.detach()[None].numpy()
            roots.append(c.detach()[None])
        outputs[f"log_probs_{k}"] = source.similarity(*roots).detach().numpy()
    (tmp_path / "config.json").write_text(json.dumps(config))
    np.savez(tmp_path / "params.npz", **params)
    np.savez(tmp_path / "inputs.npz", **inputs)
    np.savez(tmp_path / "outputs.npz", **outputs)
    results = check_golden(tmp_path)
    assert len(results) == 20 and all(c.ok for c in results), results


# --- the compiled level loops against the PyTorch ones ------------------------------------------------
@pytest.mark.parametrize("cell_kind", ["childsum", "nary"])
def test_compiled_levels_match_pytorch_loops_and_pass_gradcheck(cell_kind):
    module = kernels("treelstm")
    if module is None:
        pytest.skip("compiled kernels unavailable")
    rng = random.Random(11)
    torch.manual_seed(11)
    cell = (ChildSumTreeLSTM(3, 4) if cell_kind == "childsum" else NaryTreeLSTM(3, 4, 3)).double()
    trees = [random_tree(rng, rng.randint(1, 9), max_children=None if cell_kind == "childsum" else 3)
             for _ in range(6)]
    batch = TreeBatch.build(trees)
    x = torch.randn(batch.num_nodes, 3, dtype=torch.float64, requires_grad=True)

    def run():
        h, c = cell(batch, x)
        loss = (h * torch.linspace(-1, 1, h.numel(), dtype=h.dtype).view_as(h)).sum() + c.pow(2).sum()
        grads = torch.autograd.grad(loss, [x, *cell.parameters()])
        return h, c, grads

    compiled = run()
    with torch.no_grad():  # inference: the kernel keeps only h and c, no graph
        inferred = cell(batch, x)
    for a, b in zip(inferred, compiled[:2]):
        assert a.grad_fn is None
        torch.testing.assert_close(a, b)
    with use_backend("torch"):
        plain = run()
    for a, b in zip(compiled[:2] + tuple(compiled[2]), plain[:2] + tuple(plain[2])):
        torch.testing.assert_close(a, b)
    args = tuple(a.double().requires_grad_() for a in _level_inputs(cell_kind, batch.num_nodes, 4, 3))
    for parts in (1, 3):  # the whole batch, and cut into runs of trees computed at the same time
        assert torch.autograd.gradcheck(functools.partial(_levels, module, cell_kind, batch, parts), args)


def _level_inputs(cell_kind, num_nodes, m, n_ary):
    """Random inputs and weights of the compiled level loops (`_levels`), float32."""
    if cell_kind == "childsum":
        return (torch.randn(num_nodes, 3 * m), torch.randn(num_nodes, m), torch.randn(3 * m, m) * 0.5,
                torch.randn(3 * m), torch.randn(m, m) * 0.5, torch.randn(m))
    return (torch.randn(num_nodes, 3 * m), torch.randn(num_nodes, m),
            torch.randn((3 + n_ary) * m, n_ary * m) * 0.5, torch.randn((3 + n_ary) * m))


def _levels(module, cell_kind, batch, parts, *args):
    """(h, c) of every node from the compiled level loops, the batch cut into `parts` runs of trees."""
    if cell_kind == "childsum":
        return treelstm._ChildSumLevels.apply(module, *args, batch, parts)
    return treelstm._NaryLevels.apply(module, *args, 3, batch, parts)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(sizes=st.lists(st.integers(1, 12), min_size=1, max_size=9), parts=st.integers(2, 6),
       seed=st.integers(0, 2**16), cell_kind=st.sampled_from(["childsum", "nary"]), grad=st.booleans())
def test_compiled_levels_cut_into_parts_equal_the_whole_batch(two_threads, sizes, parts, seed, cell_kind, grad):
    """Cutting a batch into runs of trees that threads compute at the same time changes nothing: the states
    and every gradient (training) and the states alone (inference, nothing kept) equal those of one part."""
    module = kernels("treelstm")
    if module is None:
        pytest.skip("compiled kernels unavailable")
    rng = random.Random(seed)
    torch.manual_seed(seed)
    trees = [random_tree(rng, size, max_children=None if cell_kind == "childsum" else 3) for size in sizes]
    batch = TreeBatch.build(trees)
    args = _level_inputs(cell_kind, batch.num_nodes, 5, 3)
    if not grad:
        run = treelstm._ChildSumLevels.run if cell_kind == "childsum" else treelstm._NaryLevels.run
        extra = () if cell_kind == "childsum" else (3,)
        with torch.inference_mode():
            whole, cut = (run(module, *args, *extra, batch, k, keep=False)[:2] for k in (1, parts))
        for a, b in zip(cut, whole):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-6)
        return

    def states_and_grads(k):
        inputs = [a.clone().requires_grad_() for a in args]
        h, c = _levels(module, cell_kind, batch, k, *inputs)
        loss = (h * torch.linspace(-1, 1, h.numel()).view_as(h)).sum() + c.pow(2).sum()
        return (h, c, *torch.autograd.grad(loss, inputs))

    for a, b in zip(states_and_grads(parts), states_and_grads(1)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("cell_kind", ["childsum", "nary"])
def test_a_batch_cut_into_parts_through_the_module_equals_the_pytorch_loops(two_threads, cell_kind):
    """A batch large enough to be cut (`parallel_parts` > 1) through the module, trained and in inference."""
    if kernels("treelstm") is None:
        pytest.skip("compiled kernels unavailable")
    rng = random.Random(3)
    torch.manual_seed(3)
    cell = ChildSumTreeLSTM(6, 5) if cell_kind == "childsum" else NaryTreeLSTM(6, 5, 3)
    batch = TreeBatch.build([random_tree(rng, rng.randint(5, 20), max_children=None if cell_kind == "childsum"
                                         else 3) for _ in range(20)])
    if kernels("treelstm").parts_on_threads():
        assert treelstm.parallel_parts(kernels("treelstm"), batch) == 2
    x = torch.randn(batch.num_nodes, 6, requires_grad=True)

    def run():
        h, c = cell(batch, x)
        return h, c, *torch.autograd.grad(h.sum() + c.pow(2).sum(), [x, *cell.parameters()])

    with torch.no_grad():
        inferred = cell(batch, x)
    compiled = run()
    with use_backend("torch"):
        plain = run()
    for a, b in zip((*inferred, *compiled), (*plain[:2], *plain)):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_compiled_levels_refuse_bad_schedules():
    module = kernels("treelstm")
    if module is None:
        pytest.skip("compiled kernels unavailable")
    batch = TreeBatch.build([parse_parents("2 0 2", ["a", "b", "c"], "t"), parse_parents("0 1", ["d", "e"], "u")])
    nodes, child, slot, order = batch.schedule()
    args = _level_inputs("childsum", batch.num_nodes, 4, 3)
    module.childsum_forward(*args, nodes, child, slot, [0, 3], 2, False)
    with pytest.raises(RuntimeError, match="childsum_forward: level 1: the edge from node 0 leaves its tree"):
        module.childsum_forward(*args, nodes, child, slot, [0, 1, 3], 3, False)
    with pytest.raises(RuntimeError, match="childsum_forward: tree_starts must begin with node 0"):
        module.childsum_forward(*args, nodes, child, slot, [1, 3], 2, False)
    with pytest.raises(RuntimeError, match="tree_starts must ascend strictly and lie below the number of nodes 5"):
        module.childsum_forward(*args, nodes, child, slot, [0, 5], 2, False)
    with pytest.raises(RuntimeError, match="childsum_forward: parts must be at least 1, got 0"):
        module.childsum_forward(*args, nodes, child, slot, [0, 3], 0, False)
    twice = [torch.cat([c, c[:1]]) for c in child]  # a child listed twice would overrun a part's rows
    with pytest.raises(RuntimeError, match="level 1: nodes and child must ascend strictly"):
        module.childsum_forward(*args, nodes, twice, [torch.cat([s, s[:1]]) for s in slot], [0, 3], 2, False)
    beyond = [n + 10 for n in nodes]
    with pytest.raises(RuntimeError, match="level 0: nodes and child must lie in \\[0, 5\\)"):
        module.childsum_forward(*args, beyond, child, slot, [0, 3], 1, False)
    nary = _level_inputs("nary", batch.num_nodes, 4, 2)
    with pytest.raises(RuntimeError, match="nary_forward: level 1: order of node 2 is 6, expected 0..1"):
        module.nary_forward(*nary, 2, nodes, child, slot, [o + 5 * (o > 0) for o in order], [0, 3], 1, False)


def test_parts_under_a_python_dispatch_mode_do_not_deadlock():
    """The parts' threads run torch ops that a dispatch mode (here FlopCounterMode) sends to Python: the kernels
    must not hold the GIL meanwhile. In a child process, so that a deadlock fails the test instead of hanging."""
    if kernels("treelstm") is None or not kernels("treelstm").parts_on_threads():
        pytest.skip("compiled kernels with threads unavailable")
    code = """if True:
        import random, torch
        from torch.utils.flop_counter import FlopCounterMode
        from reference import random_tree
        from treenets.nn.treelstm import model as treelstm
        from treenets.nn.treelstm import batch as tree_batch
        from treenets.nn.backend import kernels
        torch.set_num_threads(2)
        rng = random.Random(0)
        batch = tree_batch.TreeBatch.build([random_tree(rng, 20) for _ in range(10)])
        args = (torch.randn(batch.num_nodes, 12), torch.randn(batch.num_nodes, 4), torch.randn(12, 4),
                torch.randn(12), torch.randn(4, 4), torch.randn(4))
        for _ in range(20):  # (a deadlock depends on timing: which thread reaches the end of the region first)
            with FlopCounterMode(display=False) as counter:
                treelstm._ChildSumLevels.run(kernels("treelstm"), *args, batch, 2, keep=False)
        print(counter.get_total_flops())
    """
    tests = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "-c", code], cwd=tests, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0  # the products of both parts were seen


def test_parallel_parts_give_each_thread_a_share_of_the_nodes(two_threads):
    module = kernels("treelstm")
    if module is None or not module.parts_on_threads():
        pytest.skip("compiled kernels with threads unavailable")
    tree = parse_parents(" ".join(["0"] + ["1"] * 19), ["w"] * 20, "t")  # 20 nodes
    assert treelstm.parallel_parts(module, TreeBatch.build([tree] * 10)) == 2
    assert treelstm.parallel_parts(module, TreeBatch.build([tree])) == 1  # 20 nodes: not worth a thread
    big = parse_parents(" ".join(["0"] + ["1"] * 199), ["w"] * 200, "t")
    assert treelstm.parallel_parts(module, TreeBatch.build([big, tree, tree])) == 1  # one tree holds 5/6
    torch.set_num_threads(1)
    assert treelstm.parallel_parts(module, TreeBatch.build([tree] * 10)) == 1


@pytest.mark.parametrize("cell_kind", ["childsum", "nary"])
def test_distinct_word_rows_equal_per_node_inputs(cell_kind):
    """`TreeBatch.word_inputs` (each distinct word embedded and projected once, phrases on a zero row) gives
    the same states and gradients as per-node inputs."""
    torch.manual_seed(5)
    rng = random.Random(5)
    if cell_kind == "childsum":
        cell = ChildSumTreeLSTM(4, 3).double()
        trees = [random_tree(rng, rng.randint(1, 8)) for _ in range(5)]
    else:
        cell = NaryTreeLSTM(4, 3, 2).double()
        trees = [parse_bracketed(line, "t") for line in
                 ("(3 (2 a) (4 (1 b) (2 a)))", "(1 c)", "(0 (2 (2 b) (3 c)) (1 a))")]
    batch = TreeBatch.build(trees)
    word_ids = torch.tensor([rng.randrange(4) for t in trees for _ in t.words])  # repeats across the batch
    emb = torch.nn.Embedding(4, 4).double()

    def run(distinct: bool):
        cell.zero_grad()
        emb.zero_grad()
        if distinct:
            h, c = cell(batch, *batch.word_inputs(word_ids, emb))
        else:
            h, c = cell(batch, batch.node_inputs(emb(word_ids)))
        (h.sin().sum() + c.pow(2).sum()).backward()
        return h.detach(), c.detach(), [p.grad.clone() for p in (*cell.parameters(), emb.weight)]

    h1, c1, g1 = run(True)
    h2, c2, g2 = run(False)
    assert len(torch.unique(word_ids)) < len(word_ids)
    torch.testing.assert_close(h1, h2)
    torch.testing.assert_close(c1, c2)
    for a, b in zip(g1, g2):
        torch.testing.assert_close(a, b)
