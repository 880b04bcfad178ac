"""Windows replayed as CUDA graphs (`treenets.nn.graphs`), on the CPU: the capture is played by a stand-in that
records nothing and replays by calling the window again on the graph's own input buffers, so that what these
tests check is the bookkeeping around the graphs: when a key is captured, that inputs reach the buffers, that a
failed capture falls back, and that training and evaluation through the windows give the numbers of the plain
loop. tests/test_cuda.py checks the real graphs on a GPU."""

from __future__ import annotations

import random

import pytest
import torch
from helpers import tiny_config

from treenets.config import build_config
from treenets.nn import graphs
from treenets.nn.prpn.model import splitmix_uniform_bits
from treenets.workflows.training.trainer import Trainer


def calling_capture(window, inputs, pool):
    """`graphs.cuda_capture` played on the CPU: a replay calls `window` on the captured input buffers."""
    return (lambda: tuple(window(*inputs))), pool


def failing_capture(window, inputs, pool):
    raise graphs.CaptureFailed("operation not permitted when stream is capturing")


class Recorder:
    """A window that says which tensors it was called with."""

    def __init__(self):
        self.calls = []

    def __call__(self, x, y):
        self.calls.append((x, y))
        return (x * 2 + y, x.sum())


def test_a_key_is_captured_at_its_second_call_and_replayed_on_its_own_buffers():
    window = Recorder()
    windows = graphs.GraphedWindows(window, "test windows", capture=calling_capture)
    for step in range(5):
        x, y = torch.randn(3, 2), torch.randn(3, 2)
        out, total = windows(x, y)
        torch.testing.assert_close(out, x * 2 + y, rtol=0, atol=0)  # new inputs reach the buffers at every replay
        torch.testing.assert_close(total, x.sum(), rtol=0, atol=0)
        called_with = window.calls[-1][0]
        assert (called_with is x) == (step == 0), step  # the first call runs on the caller's tensors, no capture
    assert len(windows.graphs) == 1
    buffers = {id(x) for x, _ in window.calls[1:]}
    assert len(buffers) == 1  # every replay reads the same buffers

    windows(torch.randn(4, 2), torch.randn(4, 2))  # another shape: another key, not captured at its first call
    assert len(windows.graphs) == 1
    windows(torch.randn(4, 2), torch.randn(4, 2))
    assert len(windows.graphs) == 2
    windows(torch.randn(4, 2), torch.randn(4, 2), extra=(0.5,))  # what the caller adds makes a key too
    assert len(windows.graphs) == 2


def test_weights_moved_or_replaced_are_never_read_through_an_old_graph():
    weight = torch.randn(2)
    windows = graphs.GraphedWindows(lambda x: (x * weight,), "test windows", [weight], capture=calling_capture)
    for _ in range(2):
        windows(torch.ones(2))
    assert len(windows.graphs) == 1
    windows.parameters = [torch.randn(2)]  # another tensor at another address: a new key
    windows(torch.ones(2))
    windows(torch.ones(2))
    assert len(windows.graphs) == 2


def test_a_failed_capture_runs_the_window_from_python_and_says_why_once(capsys):
    window = Recorder()
    windows = graphs.GraphedWindows(window, "test windows", capture=failing_capture)
    for _ in range(4):
        x, y = torch.randn(3), torch.randn(3)
        out, _ = windows(x, y)
        torch.testing.assert_close(out, x * 2 + y)
    assert all(called is x for called, _ in window.calls[-1:])
    err = capsys.readouterr().err
    assert err.count("not captured") == 1 and "operation not permitted when stream is capturing" in err
    assert "not captured" in windows.summary()


def test_capture_applies_to_cuda_under_auto_in_one_process():
    from treenets.nn.backend import use_backend

    assert graphs.capture_refusal(torch.device("cpu")) == ""
    cuda = torch.device("cuda")
    with use_backend("auto"):
        assert graphs.capture_refusal(cuda) is None
        assert "2 processes" in graphs.capture_refusal(cuda, world=2)
    for backend in ("torch", "compile"):
        with use_backend(backend):
            assert f"backend {backend}" in graphs.capture_refusal(cuda)


def test_set_capturable_moves_the_step_counters_to_their_parameters():
    param = torch.nn.Parameter(torch.randn(3))
    optimizer = torch.optim.Adam([param])
    param.grad = torch.randn(3)
    optimizer.step()
    graphs.set_capturable(optimizer, True)
    assert optimizer.param_groups[0]["capturable"] is True
    graphs.set_capturable(optimizer, False)
    assert optimizer.param_groups[0]["capturable"] is False
    graphs.set_capturable(torch.optim.SGD([param], lr=0.1), True)  # no such option: nothing to do


def _train(tmp_path, name, captured: bool, model: dict | None, optim: dict):
    from helpers import write_corpus

    raw = tiny_config(write_corpus(tmp_path / "corpus"), optim=optim,
                      train={"epochs": 4, "max_steps": 180, "device": "cpu"})
    raw["model"] = model or raw["model"]
    trainer = Trainer(build_config(raw), tmp_path / name, progress=False, log=lambda *_: None)
    if captured:
        trainer.windows = graphs.TrainingWindows(trainer.model, trainer.optimizer, trainer.task.window_loss,
                                                 trainer.config.optim.clip, capture=calling_capture)
    trainer.run()
    return trainer


@pytest.mark.parametrize("model", ["onlstm", "prpn", "lstm"])
def test_training_through_the_windows_gives_the_numbers_of_the_plain_loop(tmp_path, monkeypatch, model):
    """The same seed, three and a half epochs of variable-length windows (about 53 per epoch: lengths repeat, so
    windows replay) with the hidden state carried, for the SGD models a switch to averaged SGD after the second
    epoch (the non-monotone trigger made to fire then, whatever the validation: which epoch it fires at depends on
    the CPU's rounding), a validation per epoch: the same losses, weights and carried state through the windows
    as through the plain loop."""
    from treenets.core import optim as optimisers

    monkeypatch.setattr(optimisers, "nt_asgd_triggered", lambda history, loss, nonmono: len(history) == 1)
    models = {"onlstm": None,
              "prpn": {"name": "prpn", "emb_size": 8, "hidden_size": 10, "num_layers": 2, "nslots": 3, "nlookback": 2},
              "lstm": {"name": "lstm", "emb_size": 8, "hidden_size": 12, "num_layers": 2}}
    optim = {"name": "adam", "lr": 0.003} if model == "prpn" else {"lr": 5.0}
    plain = _train(tmp_path, "plain", False, models[model], optim)
    captured = _train(tmp_path, "captured", True, models[model], optim)
    assert len(captured.windows.passes.graphs) > 1  # several window lengths were replayed
    assert captured.windows.passes.calls.total() > len(captured.windows.passes.graphs)
    losses = [(plain.out_dir / "metrics.jsonl").read_text(), (captured.out_dir / "metrics.jsonl").read_text()]
    assert _numbers(losses[0]) == _numbers(losses[1])
    for a, b in zip(plain.model.parameters(), captured.model.parameters()):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    for a, b in zip(plain.task.hidden, captured.task.hidden):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert captured.state.optimizer == plain.state.optimizer == ("adam" if model == "prpn" else "asgd")


def _numbers(metrics: str):
    import json

    drop = ("tokens_per_s", "seconds")
    return [{k: v for k, v in json.loads(line).items() if not any(d in k for d in drop)}
            for line in metrics.splitlines()]


def test_evaluation_through_the_windows_gives_the_perplexity_of_the_plain_loop(tmp_path):
    from helpers import write_corpus

    from treenets.tasks import make_task

    config = build_config(tiny_config(write_corpus(tmp_path / "corpus")))
    task = make_task(config, None, None, torch.device("cpu"))
    torch.manual_seed(0)
    model = task.build_model()
    plain = task.evaluate(model, "valid").values()
    windows = graphs.EvaluationWindows(model, task._evaluation_window, capture=calling_capture)
    task._evaluation_windows = lambda net: windows
    for _ in range(2):  # the second evaluation replays the windows captured in the first
        assert task.evaluate(model, "valid").values() == pytest.approx(plain, rel=1e-12)
    assert windows.passes.graphs


def test_a_prpn_dropout_seed_drawn_on_the_device_gives_the_mask_of_the_same_number():
    for seed in (0, 12345, 2**62 - 1):
        torch.testing.assert_close(splitmix_uniform_bits(torch.tensor(seed), 1001), splitmix_uniform_bits(seed, 1001),
                                   rtol=0, atol=0)


# --- Tree-LSTM level loops (treenets.nn.treelstm.level_graphs.GraphedLevels) ------------------------------------------
def _tree_batches(cell_kind: str, count: int, seed: int):
    from reference import random_tree

    rng = random.Random(seed)
    return [[random_tree(rng, rng.randint(1, 12), max_children=None if cell_kind == "childsum" else 2)
             for _ in range(6)] for _ in range(count)]


@pytest.mark.parametrize("cell_kind", ["childsum", "nary"])
def test_captured_level_loops_give_the_states_and_gradients_of_the_plain_loop(cell_kind):
    """float64, four batches three times over (a padded shape is captured at its second batch, replayed at its
    third): the states and every gradient in training, and the states in inference (its own graphs), through the
    captured level loops as through the exact levels."""
    from treenets.nn.backend import use_backend
    from treenets.nn.treelstm import batch as tree_batch
    from treenets.nn.treelstm import level_graphs
    from treenets.nn.treelstm import model as treelstm

    torch.manual_seed(0)
    cell = (treelstm.ChildSumTreeLSTM(3, 4) if cell_kind == "childsum" else treelstm.NaryTreeLSTM(3, 4, 2)).double()
    graphed = level_graphs.capture_levels(cell, capture=calling_capture)
    batches = _tree_batches(cell_kind, 4, seed=1) * 3

    def run(trees, schedule, inference):
        with use_backend("torch"), tree_batch.use_levels(schedule):
            batch = tree_batch.TreeBatch.build(trees)
            x = torch.randn(batch.num_nodes, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
            if inference:
                with torch.inference_mode():
                    return cell(batch, batch.node_inputs(x))
            x.requires_grad_()
            cell.zero_grad()
            h, c = cell(batch, batch.node_inputs(x))
            (h.sin().sum() + c.pow(2).sum()).backward()
            return h.detach(), c.detach(), x.grad, *(p.grad.clone() for p in cell.parameters())

    for inference in (False, True):
        for trees in batches:
            for a, b in zip(run(trees, "captured", inference), run(trees, "exact", inference)):
                torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)
    for windows in (graphed.forward, graphed.backward):
        assert windows.graphs and windows.failure is None
        assert windows.calls.total() > len(windows.graphs)  # keys came again after their capture: replays
    assert {key[-1] for key in graphed.forward.graphs} == {(False,), (True,)}  # training's and inference's graphs


def test_captured_level_loops_under_autocast_run_the_backward_in_its_products():
    """bf16 products (an autocast block on the CPU) around the forward, the backward outside it, as training runs
    them: the gradients through the captured loops are those of the plain loop, which autograd computes in the
    block's products (the backward's graph runs the loop again in them)."""
    from treenets.nn.backend import use_backend
    from treenets.nn.treelstm import batch as tree_batch
    from treenets.nn.treelstm import level_graphs
    from treenets.nn.treelstm import model as treelstm

    torch.manual_seed(0)
    cell = treelstm.ChildSumTreeLSTM(3, 4)
    level_graphs.capture_levels(cell, capture=calling_capture)
    trees = _tree_batches("childsum", 1, seed=3)[0]
    results = []
    for schedule in ("captured", "captured", "exact"):  # the first captured batch runs as is, the second replays
        with use_backend("torch"), tree_batch.use_levels(schedule):
            batch = tree_batch.TreeBatch.build(trees)
            cell.zero_grad()
            with torch.autocast("cpu", torch.bfloat16):
                h, c = cell(batch, batch.node_inputs(torch.linspace(-1, 1, batch.num_nodes * 3).view(-1, 3)))
            (h.sum() + c.sum()).backward()
            results.append([p.grad.clone() for p in cell.parameters()])
    for captured in results[:2]:
        for a, b in zip(captured, results[2]):
            torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("model_kind", ["childsum", "binary"])
def test_training_a_tree_model_through_captured_level_loops_gives_the_numbers_of_the_plain_loop(model_kind):
    """A relatedness model (Child-Sum) and a sentiment model (binary, dropout on: the masks come from the same
    stream either way) built and batched as the tasks do (`TreeBatch.build`'s default), float64, six SGD steps over
    three batches twice: the same losses and weights through the captured level loops as through exact levels."""
    from reference import random_tree

    from treenets.nn.backend import use_backend
    from treenets.nn.treelstm import batch as tree_batch
    from treenets.nn.treelstm import level_graphs
    from treenets.tasks.relatedness import RelatednessModelSection
    from treenets.tasks.sentiment import SentimentModelSection

    rng = random.Random(4)
    batches = []
    for _ in range(3):
        trees = [random_tree(rng, rng.randint(1, 9), max_children=None if model_kind == "childsum" else 2)
                 for _ in range(6)]
        batches.append((trees, [torch.tensor([rng.randrange(1, 8) for _ in t.words]) for t in trees]))
    runs = []
    for schedule in ("captured", "exact"):
        torch.manual_seed(0)
        if model_kind == "childsum":
            model = RelatednessModelSection(emb_size=6, mem_size=5, hidden_size=4).build(8).double()
        else:
            model = SentimentModelSection(emb_size=6, mem_size=5, dropout=0.3).build(8, 5).double()
        graphed = level_graphs.capture_levels(model.encoder, capture=calling_capture)
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        losses = []
        with use_backend("torch"), tree_batch.use_levels(schedule):
            for trees, ids in batches * 2:
                optimizer.zero_grad()
                if model_kind == "childsum":
                    loss = -model((trees, ids), (trees[::-1], ids[::-1]))[:, 2].mean()
                else:
                    loss = -model(trees, ids)[0][:, 1].mean()
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        runs.append((losses, [p.detach().clone() for p in model.parameters()]))
        assert bool(graphed.backward.graphs) == (schedule == "captured")
    (losses, weights), (plain_losses, plain_weights) = runs
    assert losses == pytest.approx(plain_losses, rel=1e-12) and losses[0] != losses[3]
    for a, b in zip(weights, plain_weights):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-14)


def test_level_loops_a_graph_cannot_hold_run_from_python_and_say_why(capsys):
    """A failed capture: the padded loop runs from Python, with the states of exact levels; each of the two
    graphs' reasons said once."""
    from treenets.nn.backend import use_backend
    from treenets.nn.treelstm import batch as tree_batch
    from treenets.nn.treelstm import level_graphs
    from treenets.nn.treelstm import model as treelstm

    cell = treelstm.NaryTreeLSTM(3, 4, 2)
    graphed = level_graphs.capture_levels(cell, capture=failing_capture)
    trees = _tree_batches("nary", 1, seed=5)[0]
    states = []
    for schedule in ("captured",) * 3 + ("exact",):
        with use_backend("torch"), tree_batch.use_levels(schedule):
            batch = tree_batch.TreeBatch.build(trees)
            h, c = cell(batch, batch.node_inputs(torch.ones(batch.num_nodes, 3)))
            h.sum().backward()
            states.append(h.detach())
    for a in states[:3]:  # (float32: padded levels' products may round otherwise)
        torch.testing.assert_close(a, states[3], rtol=1e-6, atol=1e-7)
    err = capsys.readouterr().err
    assert err.count("Tree-LSTM level loops not captured") == 1 and graphed.forward.failure is not None, err
    assert err.count("Tree-LSTM level loops' gradients not captured") == 1, err
