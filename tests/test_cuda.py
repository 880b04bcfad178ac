"""The models on a GPU: the same numbers as on the CPU, with the PyTorch code and with the steps fused by
`torch.compile` (the `compile` backend), in training and inference; training and the shipped models through
the command line and `treenets.load` on `cuda`. Skipped where no GPU is available (CI has none)."""

from __future__ import annotations

import json
import random

import pytest
import torch
import yaml
from helpers import tiny_config, write_corpus

from treenets.nn.backend import use_backend
from treenets.nn.lstm.model import LSTMConfig
from treenets.nn.onlstm.model import ONLSTMConfig
from treenets.nn.precision import autocast
from treenets.nn.prpn.model import PRPNConfig
from treenets.nn.treelstm.batch import TreeBatch
from treenets.tasks.relatedness import RelatednessModelSection
from treenets.tasks.sentiment import SentimentModelSection
from treenets.trees.parents import parse_bracketed, parse_parents

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

VOCAB = 30


def _lm_inputs(device):
    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, VOCAB, (9, 4), generator=g)
    return tokens.to(device), torch.randint(0, VOCAB, (9, 4), generator=g).to(device)


def _lm_loss(model, inputs):
    tokens, targets = inputs
    logits = model.decoder(model(tokens).output)
    return torch.nn.functional.cross_entropy(logits.view(-1, VOCAB), targets.reshape(-1))


def _dependency_inputs(device):
    trees = [parse_parents("2 0 2", ["a", "b", "c"], "t"), parse_parents("3 3 0 3 3", ["b", "c", "a", "d", "e"], "t")]
    ids = [torch.tensor([1, 2, 3], device=device), torch.tensor([2, 3, 1, 4, 5], device=device)]
    return trees, ids


def _pair_loss(model, inputs):
    trees, ids = inputs
    return -model((trees, ids), (trees[::-1], ids[::-1]))[:, 2].mean()


def _binary_inputs(device):
    trees = [parse_bracketed(t, "t") for t in ("(3 (2 a) (4 (1 b) (2 c)))", "(1 (2 d) (0 a))")]
    return trees, [torch.tensor([1, 2, 3], device=device), torch.tensor([4, 1], device=device)]


def _sentiment_loss(model, inputs):
    log_probs, _ = model(*inputs)
    return -log_probs[:, 1].mean()


LM_DROPOUTS = ("dropout", "dropout_hidden", "dropout_input", "dropout_embedding", "weight_drop")
MODELS = {  # name: (build(with dropout?), inputs(device), loss(model, inputs))
    "onlstm": (lambda drop: ONLSTMConfig(emb_size=8, hidden_size=12, num_layers=2, chunk_size=4,
                                         **({} if drop else dict.fromkeys(LM_DROPOUTS, 0.0))).build(VOCAB),
               _lm_inputs, _lm_loss),
    "prpn": (lambda drop: PRPNConfig(emb_size=8, hidden_size=10, num_layers=2, nslots=3, nlookback=2, res=1,
                                     **({} if drop else dict.fromkeys(("dropout", "idropout", "rdropout"), 0.0))
                                     ).build(VOCAB), _lm_inputs, _lm_loss),
    "lstm": (lambda drop: LSTMConfig(emb_size=8, hidden_size=12, num_layers=2,
                                     **({} if drop else dict.fromkeys(LM_DROPOUTS, 0.0))).build(VOCAB),
             _lm_inputs, _lm_loss),
    "childsum": (lambda drop: RelatednessModelSection(emb_size=6, mem_size=5, hidden_size=4).build(8),
                 _dependency_inputs, _pair_loss),
    "binary": (lambda drop: SentimentModelSection(emb_size=6, mem_size=5, dropout=0.3 if drop else 0.0).build(8, 5),
               _binary_inputs, _sentiment_loss),
}


def _loss_and_gradients(name, device, backend):
    build, inputs, loss_of = MODELS[name]
    torch.manual_seed(0)
    model = build(False).double().to(device).train()  # training mode (cuDNN's LSTM backward needs it), no dropout
    with use_backend(backend):
        loss = loss_of(model, inputs(device))
        loss.backward()
    return loss.item(), [p.grad.cpu() for p in model.parameters() if p.grad is not None]


@pytest.mark.parametrize("name,backend", [(name, "torch") for name in MODELS] + [("onlstm", "compile"),
                                                                                  ("prpn", "compile")])
def test_loss_and_gradients_on_the_gpu_equal_the_cpu(name, backend):
    """Dropout off (its masks would come from different generators), float64: the loss and every gradient on
    CUDA equal those of the CPU's PyTorch code."""
    cpu_loss, cpu_grads = _loss_and_gradients(name, "cpu", "torch")
    gpu_loss, gpu_grads = _loss_and_gradients(name, "cuda", backend)
    assert gpu_loss == pytest.approx(cpu_loss, rel=1e-9)
    assert len(gpu_grads) == len(cpu_grads) > 0
    for a, b in zip(gpu_grads, cpu_grads):
        torch.testing.assert_close(a, b, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("name", ["onlstm", "prpn"])
def test_fused_steps_train_like_the_pytorch_code_in_float32(name):
    """Dropout on, float32, on CUDA: three SGD steps of the fused steps and of the PyTorch code from the same seed
    give the same losses (to float32 rounding)."""
    build, inputs, loss_of = MODELS[name]
    runs = []
    for backend in ("compile", "torch"):
        torch.manual_seed(0)
        model = build(True).cuda().train()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        losses = []
        with use_backend(backend):
            for _ in range(3):
                optimizer.zero_grad()
                loss = loss_of(model, inputs("cuda"))
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        runs.append(losses)
    assert runs[0] == pytest.approx(runs[1], rel=1e-4)
    assert runs[0][0] != runs[0][-1]


@pytest.mark.parametrize("name,backend", [(name, "torch") for name in MODELS] + [("onlstm", "compile"),
                                                                                  ("prpn", "compile")])
def test_bf16_products_on_the_gpu_stay_close_to_float32(name, backend):
    """Mixed precision on CUDA (torch.autocast to bfloat16): the loss moves by the products' rounding only, and
    the gradients of the float32 weights are float32."""
    build, inputs, loss_of = MODELS[name]
    results = []
    for precision in ("fp32", "bf16"):
        torch.manual_seed(0)
        model = build(False).cuda().train()
        with use_backend(backend):
            with autocast(precision, "cuda"):
                loss = loss_of(model, inputs("cuda"))
            loss.backward()
        results.append((loss.float().item(), [p.grad for p in model.parameters() if p.grad is not None]))
    (exact, _), (mixed, grads) = results
    assert mixed != exact and mixed == pytest.approx(exact, rel=2e-2)
    assert grads and all(g.dtype is torch.float32 and torch.isfinite(g).all() for g in grads)


def test_tree_batches_are_built_on_the_gpu():
    trees, _ = _dependency_inputs("cuda")
    batch = TreeBatch.build(trees, device="cuda")
    assert batch.roots.device.type == "cuda"
    assert all(level.nodes.device.type == "cuda" for level in batch.levels)


@pytest.mark.parametrize("name", ["childsum", "binary"])
def test_captured_tree_lstm_level_loops_train_and_infer_like_exact_levels_in_float64(name):
    """`auto` on CUDA builds tree batches with padded levels and replays the level loop as CUDA graphs (forward and
    backward); `torch` runs exact levels from Python. float64, no dropout, three batches three times over (each
    shape captured at its second batch, replayed at its third): the same losses, weights and inference outputs."""
    from reference import random_tree

    from treenets.nn.treelstm import batch as tree_batch
    from treenets.nn.treelstm import level_graphs

    rng = random.Random(7)
    batches = []
    for _ in range(3):
        trees = [random_tree(rng, rng.randint(1, 12), max_children=None if name == "childsum" else 2)
                 for _ in range(8)]
        batches.append((trees, [torch.randint(1, 8, (len(t.words),), device="cuda") for t in trees]))
    build, _, loss_of = MODELS[name]
    runs = []
    for backend in ("auto", "torch"):
        torch.manual_seed(0)
        model = build(False).double().cuda().train()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        losses = []
        with use_backend(backend):
            assert (tree_batch.TreeBatch.build(batches[0][0], "cuda").stacked is not None) == (backend == "auto")
            for batch in batches * 3:
                optimizer.zero_grad()
                loss = loss_of(model, batch)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
            model.eval()
            with torch.inference_mode():
                inferred = [loss_of(model, batch).item() for batch in batches * 3]
        if backend == "auto":
            graphed = level_graphs.graphed_levels(model.encoder)
            for windows in (graphed.forward, graphed.backward):
                assert windows.failure is None and windows.graphs, windows.summary()
                assert windows.calls.total() > len(windows.graphs)
        runs.append((losses, inferred, [p.detach().cpu() for p in model.parameters()]))
    (losses, inferred, weights), (plain_losses, plain_inferred, plain_weights) = runs
    assert losses == pytest.approx(plain_losses, rel=1e-10) and inferred == pytest.approx(plain_inferred, rel=1e-10)
    for a, b in zip(weights, plain_weights):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("backend", ["torch", "compile", "auto"])
def test_training_on_cuda_through_the_command_line_resumes(tmp_path, capsys, monkeypatch, backend):
    """`auto` on CUDA trains with the fused steps (where Triton is installed) and says once what compiling cost;
    `torch` compiles nothing."""
    from treenets.cli import main
    from treenets.nn import backend as backends

    monkeypatch.setattr(backends, "_compiled", {})  # the first compile of this process, whatever ran before
    corpus = write_corpus(tmp_path / "corpus")
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny_config(corpus, train={"epochs": 1, "device": "cuda", "backend": backend})))
    assert main(["train", str(config), "--out", str(tmp_path / "run"), "--no-progress"]) == 0
    compiled = [line for line in capsys.readouterr().err.splitlines() if "compiled by torch.compile" in line]
    fused = backend == "compile" or (backend == "auto" and backends._has_triton())  # no Triton on Windows
    assert len(compiled) == (1 if fused else 0), compiled
    saved = torch.load(tmp_path / "run" / "last.pt", weights_only=True, map_location="cpu")
    assert saved["config"]["train"]["device"] == "cuda"
    resume = ["train", "--resume", str(tmp_path / "run" / "last.pt"), "--set", "train.epochs=2", "--no-progress"]
    assert main(resume) == 0
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "run" / "best.pt"), "--split", "test", "--device", "cuda"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert 1.0 < result["ppl"] < VOCAB * 2


def test_a_shipped_language_model_parses_the_same_on_the_gpu():
    import treenets

    sentences = ["the company said it expects higher sales next year .", "a man walks his dog in the park ."]
    on_cpu, on_gpu = treenets.load("onlstm-ptb-small"), treenets.load("onlstm-ptb-small", device="cuda")
    for a, b in zip(on_cpu.parse(sentences), on_gpu.parse(sentences)):
        assert a.at(2).nested == b.at(2).nested
        torch.testing.assert_close(torch.as_tensor(a.distances), torch.as_tensor(b.distances).cpu(), rtol=1e-4,
                                   atol=1e-5)
    for a, b in zip(on_cpu.score(sentences), on_gpu.score(sentences)):
        assert b.total == pytest.approx(a.total, rel=1e-4)


@pytest.mark.parametrize("name", ["treelstm-sick", "treelstm-sick-dependency", "treelstm-sst"])
def test_shipped_tree_lstms_predict_the_same_on_the_gpu(name):
    import treenets

    on_cpu, on_gpu = treenets.load(name), treenets.load(name, device="cuda")
    if name == "treelstm-sick-dependency":
        args = ("A child is hitting a baseball", "A boy is hitting a ball", "2 4 4 0 6 4", "2 4 4 0 6 4")
        assert on_gpu.predict(*args).score == pytest.approx(on_cpu.predict(*args).score, rel=1e-4)
    elif name == "treelstm-sick":  # over the trees the ON-LSTM induces, on the same device
        args = ("A child is hitting a baseball.", "A boy is hitting a ball.")
        assert on_gpu.predict(*args).score == pytest.approx(on_cpu.predict(*args).score, rel=1e-4)
    else:
        for gpu, cpu in [(on_gpu.predict(tree="(X (X (X A) (X (X moving) (X film))) (X .))"),
                          on_cpu.predict(tree="(X (X (X A) (X (X moving) (X film))) (X .))")),
                         (on_gpu.predict("A moving film."), on_cpu.predict("A moving film."))]:
            assert gpu.label == cpu.label and gpu.tree == cpu.tree


# --- windows captured as CUDA graphs (treenets.nn.graphs) ------------------------------------------------------
def _flat_window_loss(model, tokens, targets, state):
    from treenets.nn.utils import flatten_state, unflatten_state

    nested = unflatten_state(model.initial_state(tokens.size(1)), state)
    out = model(tokens, nested)
    logits = model.decoder(out.output)
    xent = torch.nn.functional.cross_entropy(logits.view(-1, VOCAB), targets.reshape(-1))
    return xent + out.last_layer.pow(2).mean(), xent, flatten_state(out.state)


@pytest.mark.parametrize("name", ["onlstm", "prpn", "lstm"])
def test_captured_training_windows_give_the_numbers_of_the_python_loop_in_float64(name):
    """float64, no dropout, the state carried over windows of changing lengths (each length comes back, so it is
    replayed): the same losses and weights through the captured windows (`auto`) as through the same code run
    from Python (`compile`: the same fused steps), to float64 rounding."""
    from treenets.nn.graphs import TrainingWindows
    from treenets.nn.utils import flatten_state

    lengths = [6, 9, 6, 9, 6, 5, 9, 6]
    g = torch.Generator().manual_seed(1)
    batches = [tuple(torch.randint(0, VOCAB, (n, 3), generator=g).cuda() for _ in range(2)) for n in lengths]
    runs = []
    for backend in ("auto", "compile"):
        torch.manual_seed(0)
        model = MODELS[name][0](False).double().cuda().train()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        state = flatten_state(model.initial_state(3))
        losses = []
        with use_backend(backend):
            windows = TrainingWindows(model, optimizer, _flat_window_loss, clip=0.25) if backend == "auto" else None
            for tokens, targets in batches:
                if windows is not None:
                    xent, _, state = windows.forward_backward(tokens, targets, state)
                    windows.step()
                else:
                    optimizer.zero_grad()
                    loss, xent, state = _flat_window_loss(model, tokens, targets, [s.detach() for s in state])
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
                    optimizer.step()
                losses.append(xent.item())
        if windows is not None:
            assert windows.passes.failure is None and len(windows.passes.graphs) == 2, windows.summary()
        runs.append((losses, [p.detach().cpu() for p in model.parameters()]))
    (captured, weights), (plain, plain_weights) = runs
    assert captured == pytest.approx(plain, rel=1e-10)
    for a, b in zip(weights, plain_weights):
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-12)


def _train_on_cuda(tmp_path, name, backend, steps, resume=False):
    from treenets.cli import main

    config = tmp_path / f"{name}.yaml"
    corpus = tmp_path / "corpus"
    if not corpus.exists():
        write_corpus(corpus)
    config.write_text(yaml.safe_dump(tiny_config(corpus, train={"epochs": 3, "device": "cuda", "backend": backend,
                                                                "max_steps": steps})))
    if resume:
        args = ["train", "--resume", str(tmp_path / name / "last.pt"), "--set", f"train.max_steps={steps}"]
    else:
        args = ["train", str(config), "--out", str(tmp_path / name)]
    assert main([*args, "--no-progress"]) == 0
    return [json.loads(line) for line in (tmp_path / name / "metrics.jsonl").read_text().splitlines()]


def _losses(records):
    """(step, loss) of every training window logged (the resumed run validated once more, at its stop)."""
    return [(r["step"], r["loss"]) for r in records if r["event"] == "train"]


def test_training_on_cuda_captures_its_windows_and_resumes_to_the_same_numbers(tmp_path, capsys):
    """`auto` on CUDA: the windows are captured (said once), dropout on, float32; a run stopped after 40 steps and
    resumed gives the numbers of a run of 80 steps in one go (about 53 windows an epoch, a validation between), and
    both the numbers of the same fused steps run from Python (`compile`), to float32 rounding."""
    whole = _train_on_cuda(tmp_path, "whole", "auto", 80)
    err = capsys.readouterr().err
    assert err.count("training windows captured as CUDA graphs") == 1, err
    assert "evaluation windows captured as CUDA graphs" in err  # at the second validation
    _train_on_cuda(tmp_path, "halves", "auto", 40)
    halves = _train_on_cuda(tmp_path, "halves", "auto", 80, resume=True)
    capsys.readouterr()
    plain = _train_on_cuda(tmp_path, "plain", "compile", 80)
    assert "captured" not in capsys.readouterr().err
    for a, b in [(whole, halves), (whole, plain)]:
        steps_a, steps_b = _losses(a), _losses(b)
        assert [s for s, *_ in steps_a] == [s for s, *_ in steps_b]
        assert [x for _, x in steps_a] == pytest.approx([y for _, y in steps_b], rel=1e-4)


def test_captured_evaluation_gives_the_perplexity_of_the_python_loop(tmp_path):
    from treenets.config import build_config
    from treenets.tasks import make_task

    config = build_config(tiny_config(write_corpus(tmp_path / "corpus")))
    task = make_task(config, None, None, torch.device("cuda"))
    torch.manual_seed(0)
    model = task.build_model().cuda()
    with use_backend("torch"):
        plain = task.evaluate(model, "valid").values()
    with use_backend("auto"):
        for _ in range(2):  # the second evaluation replays the windows the first captured
            assert task.evaluate(model, "valid").values() == pytest.approx(plain, rel=1e-5)
    assert task._captured_evaluation.passes.graphs and task._captured_evaluation.passes.failure is None


def test_a_replay_draws_the_random_numbers_the_python_window_would():
    """The CUDA generator's stream through replays is the one of the window run from Python: the same dropout
    masks, call after call (a new mask every call), and the same generator state after."""
    from treenets.nn.graphs import GraphedWindows

    x = torch.randn(1000, device="cuda")

    def window(x):
        return (torch.nn.functional.dropout(x, 0.5), torch.rand(3, device=x.device))

    runs = []
    for captured in (True, False):
        torch.manual_seed(3)
        run = GraphedWindows(window, "test windows") if captured else window
        runs.append([[t.clone() for t in run(x)] for _ in range(5)] + [[torch.cuda.get_rng_state()]])
    assert torch.equal(runs[0][-1][0], runs[1][-1][0])
    for (mask, uniform), (plain_mask, plain_uniform) in zip(runs[0][:-1], runs[1][:-1]):
        assert torch.equal(mask, plain_mask) and torch.equal(uniform, plain_uniform)
    assert not torch.equal(runs[0][3][0], runs[0][4][0])  # two replays, two masks


def test_a_window_a_graph_cannot_hold_runs_from_python_and_says_why(capsys):
    """A window that waits for the GPU (`.item()`) cannot be captured: it runs from Python from then on, the
    reason is said once, and the random generator goes on working, for windows run from Python and for those
    captured later."""
    from treenets.nn.graphs import GraphedWindows

    x = torch.randn(1000, device="cuda")

    def waiting(x):
        y = torch.nn.functional.dropout(x, 0.5)
        return (y * 2,) if y.sum().item() > 1e9 else (y,)

    windows = GraphedWindows(waiting, "waiting windows")
    masks = [windows(x)[0].clone() for _ in range(4)]
    assert windows.failure is not None and not windows.graphs
    assert not torch.equal(masks[2], masks[3])
    err = capsys.readouterr().err
    assert err.count("waiting windows not captured") == 1, err
    plain = GraphedWindows(lambda x: (torch.nn.functional.dropout(x, 0.5),), "plain windows")
    masks = [plain(x)[0].clone() for _ in range(4)]
    assert plain.failure is None and plain.graphs and not torch.equal(masks[2], masks[3])
