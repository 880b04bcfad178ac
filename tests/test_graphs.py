"""Windows replayed as CUDA graphs (`treenets.graphs`), on the CPU: the capture is played by a stand-in that
records nothing and replays by calling the window again on the graph's own input buffers, so that what these
tests check is the bookkeeping around the graphs: when a key is captured, that inputs reach the buffers, that a
failed capture falls back, and that training and evaluation through the windows give the numbers of the plain
loop. tests/test_cuda.py checks the real graphs on a GPU."""

from __future__ import annotations

import pytest
import torch
from helpers import tiny_config

from treenets import graphs
from treenets.config import build_config
from treenets.nn.prpn import splitmix_uniform_bits
from treenets.train import Trainer


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
    from treenets import optim as optimisers

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
