"""Tree-LSTMs: hand-computed trees, batched equals one node at a time, readers, golden fixtures, tasks."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
import torch
import yaml

import treenets
from treenets.cli import main
from treenets.config import RelatednessModelConfig
from treenets.errors import TreenetsError
from treenets.golden import check_golden
from treenets.nn.treelstm import ChildSumTreeLSTM, NaryTreeLSTM, TreeBatch
from treenets.tasks.relatedness import SPECIALS, RelatednessModel, relatedness_metrics, sparse_target
from treenets.tasks.sentiment import read_trees
from treenets.trees.parents import ParentTree, binarize, parse_bracketed, parse_parents


def s(x):
    return 1 / (1 + math.exp(-x))


# --- readers -------------------------------------------------------------------------------------------
def test_parents_lines():
    tree = parse_parents("2 0 2", ["a", "b", "c"], "x:1")
    assert tree.parents == (1, -1, 1) and tree.root == 1 and tree.children[1] == (0, 2)
    assert tree.height == (0, 1, 0)


@pytest.mark.parametrize("line,words,message", [
    ("2 1 2", ["a", "b", "c"], "0 roots"),
    ("0 0 2", ["a", "b", "c"], "2 roots"),
    ("2 0 3", ["a", "b", "c"], "node 3 has parent 3"),
    ("3 1 2 0", ["a", "b", "c", "d"], "cycle"),
    ("2 0", ["a", "b", "c"], "2 parents for 3 words"),
    ("2 x 0", ["a", "b", "c"], "expected integers"),
    ("7 0 2", ["a", "b", "c"], "node 1 has parent 7"),
])
def test_malformed_parents(line, words, message):
    with pytest.raises(TreenetsError, match=message) as info:
        parse_parents(line, words, "a.parents:7")
    assert "a.parents:7" in str(info.value)


def test_constituency_parents_and_word_order():
    # words 1..3, then phrases 4 (= [w2 w3]) and 5 (root = [w1 4])
    tree = parse_parents("5 4 4 5 0", ["a", "b", "c"], "x:1", constituency=True)
    assert tree.children[4] == (0, 3) and tree.children[3] == (1, 2)
    with pytest.raises(TreenetsError, match="only phrases"):
        parse_parents("0 1 1", ["a", "b", "c"], "x:1", constituency=True)


def test_bracketed_sst_tree_keeps_order_and_labels():
    tree = parse_bracketed("(3 (2 It) (4 (4 works) (2 .)))", "x:1")
    assert tree.words == ("It", "works", ".")
    assert tree.labels[:3] == (2, 4, 2) and tree.labels[tree.root] == 3
    assert tree.children[tree.root][0] == 0  # "It" first, then the phrase "works ."
    with pytest.raises(TreenetsError, match="unbalanced"):
        parse_bracketed("(3 (2 It) (4 works)", "x:1")
    with pytest.raises(TreenetsError, match="not an integer"):
        parse_bracketed("(S (NP It))", "x:1")
    assert parse_bracketed("(S (NP It) (VP works))", "x:1", require_labels=False).words == ("It", "works")


def test_binarize_right_factors_wide_nodes():
    tree = ParentTree((4, 4, 4, 4, -1), ("a", "b", "c", "d"))  # one phrase over four words
    binary = binarize(tree)
    assert max(len(k) for k in binary.children) == 2
    root = binary.root
    assert binary.children[root][0] == 0  # [a, [b, [c, d]]]
    middle = binary.children[root][1]
    assert binary.children[middle][0] == 1
    assert binary.children[binary.children[middle][1]] == (2, 3)


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
def random_tree(rng: random.Random, n: int, max_children: int | None = None) -> ParentTree:
    """A random dependency-style tree over n words (node i's parent among the earlier nodes)."""
    parents = [-1]
    for i in range(1, n):
        choices = [p for p in range(i) if max_children is None or parents.count(p) < max_children]
        parents.append(rng.choice(choices))
    order = list(range(n))
    rng.shuffle(order)  # the root need not be word 1
    relabel = {old: new for new, old in enumerate(order)}
    shuffled = [-1] * n
    for old, parent in enumerate(parents):
        shuffled[relabel[old]] = -1 if parent == -1 else relabel[parent]
    return ParentTree(tuple(shuffled), tuple(f"w{i}" for i in range(n)))


def reference_child_sum(cell, tree, x):
    """The port's way: recursion, one node at a time."""
    def node(j):
        kids = [node(k) for k in tree.children[j]]
        child_c = torch.stack([k[0] for k in kids]) if kids else x.new_zeros(1, cell.mem_dim)
        child_h = torch.stack([k[1] for k in kids]) if kids else x.new_zeros(1, cell.mem_dim)
        i, o, u = (cell.ioux(x[j]) + cell.iouh(child_h.sum(0))).chunk(3)
        f = torch.sigmoid(cell.fh(child_h) + cell.fx(x[j]))
        c = torch.sigmoid(i) * torch.tanh(u) + (f * child_c).sum(0)
        return c, torch.sigmoid(o) * torch.tanh(c)
    return node(tree.root)


def reference_nary(cell, tree, x):
    def node(j):
        kids = [node(k) for k in tree.children[j]]
        hs = [k[1] for k in kids] + [x.new_zeros(cell.mem_dim)] * (cell.n_ary - len(kids))
        cs = [k[0] for k in kids] + [x.new_zeros(cell.mem_dim)] * (cell.n_ary - len(kids))
        gates = cell.children_proj(torch.cat(hs))
        xj = x[j] if j < len(tree.words) else x.new_zeros(x.size(1))
        i, o, u = (cell.iou_x(xj) + gates[: 3 * cell.mem_dim]).chunk(3)
        fs = torch.sigmoid(cell.f_x(xj) + gates[3 * cell.mem_dim :].view(cell.n_ary, -1))
        c = torch.sigmoid(i) * torch.tanh(u) + sum(f * ck for f, ck in zip(fs, cs))
        return c, torch.sigmoid(o) * torch.tanh(c)
    return node(tree.root)


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
    model_config = RelatednessModelConfig(name="childsum-treelstm", emb_size=6, mem_size=9, hidden_size=4,
                                          head_state="c")
    source = RelatednessModel(30, model_config).double()
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


# --- tasks ---------------------------------------------------------------------------------------------
def test_sparse_target_has_the_score_as_expectation():
    target = sparse_target(torch.tensor([3.6, 5.0, 1.0, 2.25]), 5)
    assert target[0].tolist() == pytest.approx([0, 0, 0.4, 0.6, 0])
    assert target[1].tolist() == pytest.approx([0, 0, 0, 0, 1])
    assert target[2].tolist() == pytest.approx([1, 0, 0, 0, 0])
    assert (target @ torch.arange(1.0, 6.0)).tolist() == pytest.approx([3.6, 5.0, 1.0, 2.25])


def test_relatedness_metrics_by_hand():
    result = relatedness_metrics(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0]))
    assert result["pearson"] == pytest.approx(1.0) and result["spearman"] == pytest.approx(1.0)
    assert result["mse"] == pytest.approx((1 + 4 + 9) / 3)


def test_sick_embedding_rows_follow_the_vocabulary_after_four_specials(data_root):
    """Row i + 4 of sick_embed.pth is line i of sick.vocab: related words are close only at that offset."""
    matrix = torch.load(data_root / "sick" / "sick_embed.pth", weights_only=True)
    words = (data_root / "sick" / "sick.vocab").read_text().split("\n")
    assert tuple(matrix.shape) == (len(SPECIALS) + len([w for w in words if w]), 300)
    index = {w: i for i, w in enumerate(words)}
    pairs = [("man", "woman"), ("boy", "girl"), ("dog", "cat"), ("guitar", "piano")]

    def mean_cosine(offset):
        vectors = [(matrix[index[a] + offset], matrix[index[b] + offset]) for a, b in pairs]
        return sum(torch.cosine_similarity(u, v, dim=0).item() for u, v in vectors) / len(vectors)

    assert mean_cosine(4) > 0.6
    assert mean_cosine(4) - max(mean_cosine(3), mean_cosine(5)) > 0.25
    assert matrix[0].abs().sum() == 0 and matrix[1].abs().sum() == 0  # <blank>, <unk>


def test_sst_splits_fine_and_binary(data_root):
    folder = data_root / "sst" / "trainDevTestTrees_PTB" / "trees"
    fine = {split: read_trees(folder / f"{split}.txt", "fine") for split in ("train", "dev", "test")}
    assert [len(fine[s]) for s in ("train", "dev", "test")] == [8544, 1101, 2210]
    assert all(len(t.words) * 2 - 1 == t.size for t in fine["dev"])  # binary trees
    binary = {split: read_trees(folder / f"{split}.txt", "binary") for split in ("train", "dev", "test")}
    assert [len(binary[s]) for s in ("train", "dev", "test")] == [6920, 872, 1821]


def _tiny_sick(data_root, folder, pairs=(40, 12, 12)):
    """The first pairs of each SICK split, and the full vocabulary and embeddings (no copies made)."""
    source = data_root / "sick"
    for split, count in zip(("train", "dev", "test"), pairs):
        (folder / split).mkdir(parents=True)
        for name in ("a.toks", "b.toks", "a.parents", "b.parents", "a.cparents", "b.cparents", "sim.txt"):
            lines = (source / split / name).read_text().splitlines()[:count]
            (folder / split / name).write_text("\n".join(lines) + "\n")
    (folder / "sick.vocab").write_text((source / "sick.vocab").read_text())
    return folder


def _train_and_test(tmp_path, capsys, config: dict) -> dict:
    """Train `config` through the CLI into tmp_path/run, evaluate best.pt on test, return the printed metrics."""
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    assert main(["train", str(path), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "run" / "best.pt"), "--split", "test"]) == 0
    return json.loads(capsys.readouterr().out.strip().splitlines()[-1])


@pytest.mark.parametrize("encoder,trees", [("childsum-treelstm", "dependency"), ("binary-treelstm", "constituency"),
                                           ("lstm", "dependency")])
def test_relatedness_trains_evaluates_and_predicts(tmp_path, data_root, capsys, encoder, trees):
    folder = _tiny_sick(data_root, tmp_path / "sick")
    config = {"task": "relatedness",
              "data": {"path": str(folder), "trees": trees, "embeddings": str(data_root / "sick" / "sick_embed.pth"),
                       "batch_size": 8},
              "model": {"name": encoder, "mem_size": 12, "hidden_size": 6},
              "train": {"epochs": 2, "threads": 1, "log_interval": 1}}
    result = _train_and_test(tmp_path, capsys, config)
    assert set(result) >= {"pearson", "spearman", "mse"} and result["pairs"] == 12
    model = treenets.load(tmp_path / "run" / "best.pt")
    a, b = "A man is playing a guitar", "A person is playing an instrument"
    parents = {"dependency": ("2 4 4 0 6 4", "2 4 4 0 6 4"),
               "constituency": ("7 7 10 9 8 8 11 9 10 11 0", "7 7 10 9 8 8 11 9 10 11 0")}[trees]
    if encoder == "lstm":
        parents = (None, None)
    prediction = model.predict(a, b, *parents)
    assert 1.0 <= prediction["score"] <= 5.0 and sum(prediction["distribution"]) == pytest.approx(1.0, abs=1e-5)
    if encoder != "lstm":
        with pytest.raises(TreenetsError, match="give its parents"):
            model.predict(a, b)


@pytest.mark.parametrize("encoder,classes", [("binary-treelstm", "fine"), ("bilstm", "binary")])
def test_sentiment_trains_evaluates_and_predicts(tmp_path, data_root, capsys, encoder, classes):
    source = data_root / "sst" / "trainDevTestTrees_PTB" / "trees"
    folder = tmp_path / "sst"
    folder.mkdir()
    for split, count in (("train", 60), ("dev", 20), ("test", 20)):
        lines = (source / f"{split}.txt").read_text().splitlines()[:count]
        (folder / f"{split}.txt").write_text("\n".join(lines) + "\n")
    config = {"task": "sentiment", "data": {"path": str(folder), "classes": classes, "batch_size": 10},
              "model": {"name": encoder, "emb_size": 16, "mem_size": 12},
              "train": {"epochs": 2, "threads": 1, "log_interval": 1}}
    result = _train_and_test(tmp_path, capsys, config)
    assert 0.0 <= result["root_accuracy"] <= 1.0
    assert ("phrase_accuracy" in result) == (encoder == "binary-treelstm")
    if encoder == "binary-treelstm":
        assert main(["predict", str(tmp_path / "run" / "best.pt"), "--tree", "(X (X It) (X (X works) (X .)))"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert 0 <= out["label"] < 5 and [p[0] for p in out["phrases"]][0] == "It works ."
    else:
        assert main(["predict", str(tmp_path / "run" / "best.pt"), "--sentence", "It works ."]) == 0
        assert json.loads(capsys.readouterr().out)["label"] in (0, 1)


# --- the compiled level loops against the PyTorch ones ------------------------------------------------
@pytest.mark.parametrize("cell_kind", ["childsum", "nary"])
def test_compiled_levels_match_pytorch_loops_and_pass_gradcheck(cell_kind, monkeypatch):
    from treenets.nn import treelstm
    from treenets.nn.native import kernels

    if kernels("treelstm") is None:
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
    with torch.no_grad():  # inference: the kernel keeps only h and c
        for a, b in zip(cell(batch, x), compiled[:2]):
            torch.testing.assert_close(a, b)
    monkeypatch.setattr(treelstm, "_native", lambda inputs: None)
    plain = run()
    for a, b in zip(compiled[:2] + tuple(compiled[2]), plain[:2] + tuple(plain[2])):
        torch.testing.assert_close(a, b)
    monkeypatch.undo()
    if cell_kind == "childsum":
        def fn(iou_x, f_x, w1, b1, w2, b2):
            return treelstm._ChildSumLevels.apply(iou_x, f_x, w1, b1, w2, b2, batch)

        args = (torch.randn(batch.num_nodes, 12), torch.randn(batch.num_nodes, 4), torch.randn(12, 4) * 0.5,
                torch.randn(12), torch.randn(4, 4) * 0.5, torch.randn(4))
    else:
        def fn(x_iou, x_f, u_w, u_b):
            return treelstm._NaryLevels.apply(x_iou, x_f, u_w, u_b, 3, batch)

        args = (torch.randn(batch.num_nodes, 12), torch.randn(batch.num_nodes, 4), torch.randn(24, 12) * 0.5,
                torch.randn(24))
    args = tuple(a.double().requires_grad_() for a in args)
    assert torch.autograd.gradcheck(fn, args)


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
