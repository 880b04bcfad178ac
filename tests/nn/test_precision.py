"""Mixed precision: bfloat16 products where they are asked for, float32 everything else, and the same numbers
from the compiled kernels as from the PyTorch code under autocast. The kernels' numbers are checked on every CPU
inside torch's own autocast block (`_block`: where bfloat16 is not native its products are emulated, exact all the
same); `precision: bf16` as a user asks for it runs only where bfloat16 is native, and is refused elsewhere."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys

import pytest
import torch
import yaml
from helpers import needs_cpu_bfloat16, tiny_config, write_corpus

import treenets
from treenets.cli import main
from treenets.core.errors import TreenetsError
from treenets.nn.backend import kernels, kernels_for, use_backend
from treenets.nn.onlstm.model import recurrence
from treenets.nn.precision import autocast, product_dtype
from treenets.nn.prpn.model import PRPNConfig


def _inputs(steps=7, batch=3, hidden=16, n_chunks=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    width = 2 * n_chunks + 4 * hidden
    x_proj = torch.randn(steps, batch, width, generator=g, requires_grad=True)
    w_hh = (0.5 * torch.randn(width, hidden, generator=g)).requires_grad_()
    h0 = torch.randn(batch, hidden, generator=g, requires_grad=True)
    c0 = torch.randn(batch, hidden, generator=g, requires_grad=True)
    return x_proj, w_hh, h0, c0, n_chunks


def _block(precision: str):
    """What `autocast(precision, "cpu")` opens where bfloat16 is native, on any CPU."""
    return torch.autocast("cpu", dtype=torch.bfloat16) if precision == "bf16" else contextlib.nullcontext()


def _run(backend: str, precision: str, inputs):
    """Outputs and input gradients of the ON-LSTM recurrence for a fixed random upstream gradient."""
    x_proj, w_hh, h0, c0, n_chunks = inputs
    with use_backend(backend):
        with _block(precision):
            hs, c_last, master = recurrence(x_proj, w_hh, h0, c0, n_chunks)
        g = torch.Generator().manual_seed(1)
        loss = sum((t * torch.randn(t.shape, generator=g)).sum() for t in (hs, c_last, master))
        grads = torch.autograd.grad(loss, [x_proj, w_hh, h0, c0])
    return [hs, c_last, master], list(grads)


def _max_error(got, want):
    return max(((a - b).abs().max() / b.abs().max()).item() for a, b in zip(got, want))


def test_settings_and_where_products_run_in_bfloat16():
    assert product_dtype("cpu") is None
    with autocast("fp32", "cpu"):
        assert product_dtype("cpu") is None
    with _block("bf16"):
        assert product_dtype("cpu") is torch.bfloat16
        assert torch.nn.functional.linear(torch.ones(2, 3), torch.ones(4, 3)).dtype is torch.bfloat16
        cpu = torch.zeros(2)
        assert kernels_for("treelstm", cpu) is None  # float32-only kernels
        for name in ("onlstm", "prpn"):  # kernels with bfloat16 products
            if kernels(name) is not None:
                assert kernels_for(name, cpu) is kernels(name)
    with torch.autocast("cpu", dtype=torch.float16):  # another autocast: no kernel takes it
        assert kernels_for("onlstm", torch.zeros(2)) is None
    with pytest.raises(TreenetsError, match="unknown precision 'fp16' \\(expected one of: fp32, bf16\\)"):
        autocast("fp16", "cpu")


@pytest.mark.parametrize("steps", [7, 12])
def test_onlstm_kernels_take_bfloat16_products_like_the_pytorch_code(steps):
    """Under bf16 the kernels' outputs and gradients match the PyTorch step under autocast (the same bfloat16
    products) far more closely than either matches float32: the products really are bfloat16, and only them.
    Sequences of 7 steps run torch's bfloat16 products, of 12 the kernels' packed ones where the CPU has them."""
    packing = kernels("packed_gemm")
    if packing is None:
        pytest.skip("compiled kernels unavailable")
    assert not packing.packed_products(7, 3, bfloat16=True)
    if packing.packed_products(1000, 1, bfloat16=True):  # a build with AVX512-BF16: 12 steps are packed
        assert packing.packed_products(12, 3, bfloat16=True)
    inputs = _inputs(steps=steps)
    exact_out, exact_grads = _run("torch", "fp32", inputs)
    spec_out, spec_grads = _run("torch", "bf16", inputs)
    fused_out, fused_grads = _run("auto", "bf16", inputs)
    assert all(t.dtype is torch.float32 for t in fused_out + fused_grads)  # element-wise work and results in fp32
    rounding = _max_error(spec_out, exact_out)
    assert 1e-4 < rounding < 5e-2  # what bfloat16 products cost here (float32 would differ by ~1e-7)
    assert _max_error(fused_out, spec_out) < rounding / 10
    # The gradients w.r.t. x_proj, h0 and c0 follow the same bfloat16 products; the weight gradient is one
    # product over all steps rounded to bfloat16 once, where autocast rounds each step's and sums in float32:
    # as far from float32, not equal.
    (x_grad, w_grad, h_grad, c_grad), (x_spec, w_spec, h_spec, c_spec) = fused_grads, spec_grads
    grad_rounding = _max_error(spec_grads, exact_grads)
    assert 1e-4 < grad_rounding < 5e-2
    assert _max_error([x_grad, h_grad, c_grad], [x_spec, h_spec, c_spec]) < grad_rounding / 10
    assert 1e-4 < _max_error([w_grad], [exact_grads[1]]) < 2 * _max_error([w_spec], [exact_grads[1]])
    # Without grad (evaluation) the kernels give the same values.
    with torch.no_grad(), _block("bf16"):
        x_proj, w_hh, h0, c0, n_chunks = inputs
        assert _max_error(list(recurrence(x_proj, w_hh, h0, c0, n_chunks)), fused_out) == 0


def _prpn_run(backend: str, precision: str, dtype=torch.float32):
    """Output and parameter gradients of a small PRPN (dropout on: both backends draw the same masks)."""
    torch.manual_seed(0)
    model = PRPNConfig(emb_size=12, hidden_size=16, num_layers=2, nslots=3, nlookback=2).build(40).to(dtype)
    tokens = torch.randint(0, 40, (9, 4), generator=torch.Generator().manual_seed(2))
    with use_backend(backend):
        torch.manual_seed(1)
        with _block(precision):
            output = model(tokens).output
        weights = torch.randn(output.shape, generator=torch.Generator().manual_seed(3), dtype=dtype)
        # the reading layers' weights, which the kernels' gradients reach (the parser's pass through hard gates,
        # where any rounding flips some, and its biases before batch norm have gradients near zero)
        readers = [p for name, p in model.named_parameters() if name.startswith("readers.")]
        grads = torch.autograd.grad((output * weights).sum(), readers)
    return [output], list(grads)


def test_prpn_kernels_take_bfloat16_products(monkeypatch):
    """PRPN in a bf16 block through its kernels: the output and the reading layers' gradients in float32, about
    as far from float32 as the PyTorch code under autocast (which also rounds the attention's products, where
    the kernels keep them float32), and not float32."""
    if kernels("prpn") is None:
        pytest.skip("compiled kernels unavailable")
    exact_out, exact_grads = _prpn_run("torch", "fp32")
    spec_out, spec_grads = _prpn_run("torch", "bf16")
    module, calls = kernels("prpn"), []
    forward = module.forward
    monkeypatch.setattr(module, "forward", lambda *args: calls.append(args[-2:]) or forward(*args))
    fused_out, fused_grads = _prpn_run("auto", "bf16")
    assert calls and all(w is not None and w.dtype is torch.bfloat16 for low in calls for w in low)
    assert all(t.dtype is torch.float32 for t in fused_out + fused_grads)
    calls.clear()
    assert _max_error(_prpn_run("auto", "fp32")[0], exact_out) < 1e-5  # the two backends agree in float32
    assert calls and all(w is None for low in calls for w in low)
    # A float64 model in a bf16 block: float64 throughout, no bfloat16 weights.
    calls.clear()
    exact64, _ = _prpn_run("torch", "fp32", torch.float64)
    out64, grads64 = _prpn_run("auto", "bf16", torch.float64)
    assert all(t.dtype is torch.float64 for t in out64 + grads64) and _max_error(out64, exact64) < 1e-12
    assert calls and all(w is None for low in calls for w in low)
    for fused, spec, exact in ((fused_out, spec_out, exact_out), (fused_grads, spec_grads, exact_grads)):
        rounding = _max_error(spec, exact)
        assert 1e-4 < rounding < 0.1
        assert 1e-4 < _max_error(fused, exact) < 2 * rounding


@pytest.mark.parametrize("drops", [False, True])
def test_prpn_reading_kernels_run_their_products_on_the_bfloat16_weights(drops):
    """Given the weights in bfloat16 the reading recurrence's per-step products (forward and backward) and its
    weight gradients are bfloat16 products: from the same float32 inputs, results off float32 by bfloat16's
    rounding; without them, the float32 results. With a recurrent dropout mask that drops features the hidden
    product runs over the kept columns of both copies of U."""
    from treenets.nn.prpn.model import _FusedReading

    module = kernels("prpn")
    if module is None:
        pytest.skip("compiled kernels unavailable")
    g = torch.Generator().manual_seed(0)
    steps, batch, hidden, slots = 5, 3, 16, 3

    def leaf(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).requires_grad_()

    inputs = (leaf(steps, batch, 4 * hidden), leaf(steps, batch, hidden),
              torch.rand(steps, batch, slots, generator=g).requires_grad_(), leaf(batch, slots, hidden),
              leaf(batch, slots, hidden), leaf(hidden, hidden, scale=0.5), leaf(4 * hidden, hidden, scale=0.5),
              leaf(4 * hidden), leaf(4 * hidden), leaf(4 * hidden), leaf(hidden), leaf(hidden))
    rmask = (torch.arange(hidden) % 2).float() * 2 if drops else torch.ones(hidden)
    rest = (rmask, None, None, 1e-6, 1e-6)
    upstream = torch.randn(slots + steps, batch, hidden, generator=g)

    def run(low_weights):
        hs, _ = _FusedReading.apply(module, low_weights, *inputs, *rest)
        return [hs, *torch.autograd.grad((hs * upstream).sum(), [inputs[0], inputs[5], inputs[6]])]

    def off(a, b):
        return ((a - b).abs().max() / b.abs().max()).item()

    low_weights = (inputs[5].detach().to(torch.bfloat16), inputs[6].detach().to(torch.bfloat16))
    exact, low = run((None, None)), run(low_weights)
    for a, b in zip(low, exact):  # hs, d gates_x, d w_query_h, d w_hh
        assert a.dtype is torch.float32
        assert 1e-4 < off(a, b) < 5e-2
    # The backward alone, from one float32 forward: its per-step products and weight gradients are bfloat16 ones.
    args = [t.detach() if torch.is_tensor(t) else t for t in (*inputs, *rest)]
    saved = module.forward(*args, True, None, None)
    weights = [args[i] for i in (2, 5, 6, 8, 10, 11, 12)]  # memory_gate, w_query_h, w_hh, hh_gamma, c_gamma, ...
    grads = [module.backward(upstream, None, *weights, None, None, saved, *lows)
             for lows in ((None, None), low_weights)]
    for name, k in (("d gates_x", 0), ("d w_query_h", 5), ("d w_hh", 6)):
        assert 1e-4 < off(grads[1][k], grads[0][k]) < 5e-2, name
    # One step: no later step sends a gradient back through the per-step products, so the gates' gradients are
    # the same and d w_hh differs only through the weight gradient's own bfloat16 product.
    one = [a[:1].contiguous() if k < 3 else a for k, a in enumerate(args)]  # gates_x, query_x, memory_gate
    saved = module.forward(*one, True, None, None)
    weights = [one[i] for i in (2, 5, 6, 8, 10, 11, 12)]
    grads = [module.backward(upstream[: slots + 1], None, *weights, None, None, saved, *lows)
             for lows in ((None, None), low_weights)]
    assert torch.equal(grads[1][0], grads[0][0])
    assert 1e-4 < off(grads[1][6], grads[0][6]) < 5e-2


def test_float64_stays_float64_in_a_bf16_block():
    """Autocast leaves float64 products alone; so do the kernels."""
    inputs = [t.detach().double().requires_grad_() if torch.is_tensor(t) else t for t in _inputs()]
    exact_out, exact_grads = _run("torch", "fp32", inputs)
    for backend in ("torch", "auto"):
        out, grads = _run(backend, "bf16", inputs)
        assert all(t.dtype is torch.float64 for t in out + grads)
        assert _max_error(out + grads, exact_out + exact_grads) < 1e-12



def test_log_probabilities_are_float32_at_least():
    """The heads' log-softmax: bfloat16 logits give float32, float64 models keep float64 (a float32 cast there
    rounded a float64 model's gradients to float32 digits: the CUDA tests' float64 comparison caught it)."""
    from treenets.nn.precision import log_softmax
    from treenets.tasks.relatedness import RelatednessModelSection
    from treenets.tasks.sentiment import SentimentModelSection
    from treenets.trees.parents import parse_bracketed, parse_parents

    logits = torch.tensor([[1.0, 2.0, 3.0]])
    assert log_softmax(logits.bfloat16(), dim=-1).dtype is torch.float32
    assert log_softmax(logits.double(), dim=-1).dtype is torch.float64
    torch.testing.assert_close(log_softmax(logits.double(), dim=-1).exp().sum(), torch.tensor(1.0).double())
    trees, ids = [parse_parents("2 0 2", ["a", "b", "c"], "t")], [torch.tensor([1, 2, 3])]
    relatedness = RelatednessModelSection(emb_size=6, mem_size=5, hidden_size=4).build(8).double()
    assert relatedness((trees, ids), (trees, ids)).dtype is torch.float64
    sentiment = SentimentModelSection(emb_size=6, mem_size=5).build(8, 5).double()
    assert sentiment([parse_bracketed("(3 (2 a) (1 b))", "t")], [torch.tensor([1, 2])])[0].dtype is torch.float64

@needs_cpu_bfloat16
@pytest.mark.parametrize("model", [
    {"name": "prpn", "emb_size": 8, "hidden_size": 10, "num_layers": 2, "nslots": 3, "nlookback": 2, "dropout": 0.2,
     "idropout": 0.1, "rdropout": 0.1},
    {"name": "lstm", "emb_size": 8, "hidden_size": 12, "num_layers": 2, "weight_drop": 0.3},
], ids=["prpn", "lstm"])
def test_other_language_models_train_in_bf16_and_resume_in_fp32(tmp_path, model):
    """The carried state stays float32 in a bf16 block, so a bf16 run resumes in fp32 (and the other way
    round)."""
    config = tmp_path / "tiny.yaml"
    raw = tiny_config(write_corpus(tmp_path / "corpus"), train={"epochs": 1})
    raw["model"] = model
    config.write_text(yaml.safe_dump(raw))
    run = tmp_path / "run"
    assert main(["train", str(config), "--out", str(run), "--precision", "bf16", "--max-steps", "3",
                 "--no-progress"]) == 0
    hidden = torch.load(run / "last.pt", weights_only=True)["ranks"][0]["task"]["hidden"]
    assert hidden and all(h.dtype is torch.float32 for h in hidden)
    assert main(["train", "--resume", str(run / "last.pt"), "--precision", "fp32", "--max-steps", "5",
                 "--no-progress"]) == 0


@needs_cpu_bfloat16
def test_training_in_bf16_keeps_float32_weights_and_learns_like_fp32(tmp_path, capsys):
    corpus = write_corpus(tmp_path / "corpus")
    runs, weights = {}, {}
    for precision in ("fp32", "bf16"):
        config = tmp_path / f"{precision}.yaml"
        config.write_text(yaml.safe_dump(tiny_config(corpus, train={"epochs": 2})))
        run = tmp_path / precision
        assert main(["train", str(config), "--out", str(run), "--precision", precision, "--no-progress"]) == 0
        saved = torch.load(run / "best.pt", weights_only=True)
        assert saved["config"]["train"]["precision"] == precision
        assert all(t.dtype is torch.float32 for t in saved["model"].values() if t.is_floating_point())
        weights[precision] = saved["model"]
        for evaluated in ("fp32", "bf16"):
            capsys.readouterr()
            assert main(["eval", str(run / "best.pt"), "--split", "test", "--precision", evaluated]) == 0
            runs[precision, evaluated] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["ppl"]
    # The same model evaluated in bf16: other numbers (the products are rounded), within a percent.
    assert runs["fp32", "bf16"] != runs["fp32", "fp32"]
    assert runs["fp32", "bf16"] == pytest.approx(runs["fp32", "fp32"], rel=0.01)
    # The same seed in bf16: other weights (the setting reached the training steps), as good as fp32's
    # (random words: both end near the vocabulary's 44).
    assert any(not torch.equal(weights["fp32"][k], weights["bf16"][k]) for k in weights["fp32"])
    assert runs["bf16", "bf16"] == pytest.approx(runs["fp32", "fp32"], rel=0.02)
    # Scores of a bf16 block are float32 log-probabilities (not rounded to bfloat16's 8 bits) of bf16 products.
    model = treenets.load(tmp_path / "fp32" / "best.pt")
    exact = model.score("the cat see a big dog").logprobs
    with autocast("bf16", "cpu"):
        mixed = model.score("the cat see a big dog").logprobs
    assert mixed != exact and mixed == pytest.approx(exact, abs=0.05)
    assert any(torch.tensor(v).bfloat16().item() != v for v in mixed)


def test_bf16_is_refused_in_one_line_where_bfloat16_is_not_native(tmp_path):
    """A CPU without native bfloat16 products, played by limiting torch to its portable kernels
    ($ATEN_CPU_CAPABILITY=default): training in bf16 (asked for by the config) and evaluating in bf16 end in one line
    saying why, exit 2, the training before its run folder is made."""
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(tiny_config(write_corpus(tmp_path / "corpus"), train={"precision": "bf16"})))
    trained = tmp_path / "trained"  # an fp32 model, trained here
    assert main(["train", str(config), "--out", str(trained), "--precision", "fp32", "--max-steps", "2",
                 "--no-progress"]) == 0
    environment = dict(os.environ, ATEN_CPU_CAPABILITY="default")
    script = "import sys; from treenets.nn.precision import cpu_has_bfloat16; sys.exit(cpu_has_bfloat16())"
    assert subprocess.run([sys.executable, "-c", script], env=environment).returncode == 0  # played: no bfloat16
    why = ("treenets: error: precision bf16: this CPU has no native bfloat16 products (AVX512-BF16 or AMX on x86, "
           "BF16 on ARM), so they would be emulated, slower than fp32, and the LSTM's would not run at all; use "
           "precision fp32")
    for arguments in (["train", str(config), "--out", str(tmp_path / "run")],
                      ["eval", str(trained / "best.pt"), "--precision", "bf16"]):
        done = subprocess.run([sys.executable, "-m", "treenets", *arguments], env=environment, capture_output=True,
                              text=True)
        assert (done.returncode, done.stderr.strip()) == (2, why)
    assert not (tmp_path / "run").exists()
