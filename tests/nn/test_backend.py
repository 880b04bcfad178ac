"""The kernel switch: one setting, one rule, and the same training numbers from either backend."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import torch

from treenets.core.errors import TreenetsError
from treenets.nn import backend
from treenets.nn.backend import get_backend, kernels, kernels_for, set_backend, use_backend
from treenets.nn.onlstm.model import ONLSTMConfig
from treenets.nn.prpn.model import PRPNConfig
from treenets.tasks.relatedness import RelatednessModelSection
from treenets.tasks.sentiment import SentimentModelSection
from treenets.trees.parents import parse_bracketed, parse_parents


def _require_kernels(*names):
    for name in names:
        if kernels(name) is None:
            pytest.skip("compiled kernels unavailable")


def test_setting_is_validated_and_restored():
    assert get_backend() == "auto"
    with pytest.raises(TreenetsError, match="unknown backend 'fast' \\(expected one of: auto, torch, cpp, compile\\)"):
        set_backend("fast")
    for name in ("torch", "compile"):  # neither runs the C++ kernels
        with use_backend(name):
            assert get_backend() == name
            assert kernels_for("onlstm", torch.zeros(2)) is None
    assert get_backend() == "auto"


def test_one_rule_where_the_kernels_apply():
    _require_kernels("onlstm")
    cpu = torch.zeros(2)
    assert kernels_for("onlstm", cpu) is kernels("onlstm")
    assert kernels_for("onlstm", cpu.double()) is kernels("onlstm")
    assert kernels_for("onlstm", cpu.half()) is None  # another dtype: the PyTorch code
    assert kernels_for("onlstm", cpu, torch.zeros(2, dtype=torch.int64)) is None
    with use_backend("cpp"):
        assert kernels_for("onlstm", cpu) is kernels("onlstm")


def test_cpp_backend_fails_loudly_when_the_kernels_cannot_be_built(monkeypatch):
    monkeypatch.setitem(backend._loaded, "onlstm", None)
    monkeypatch.setitem(backend._failures, "onlstm", "no compiler")
    assert kernels_for("onlstm", torch.zeros(2)) is None  # auto: the PyTorch code
    with use_backend("cpp"), pytest.raises(TreenetsError, match="cannot be built \\(no compiler\\)"):
        kernels_for("onlstm", torch.zeros(2))


def test_without_a_compiler_the_models_run_their_pytorch_code_after_one_warning(monkeypatch, tmp_path):
    """No C++ compiler (or one that fails on the kernels): every build fails, one warning says so, and the models
    run the PyTorch code."""
    monkeypatch.setenv("CXX", str(tmp_path / "no-such-compiler"))
    monkeypatch.setattr(backend, "_loaded", {})
    monkeypatch.setattr(backend, "_failures", {})
    with pytest.warns(UserWarning) as caught:
        assert kernels("onlstm") is None and kernels("prpn") is None and kernels("packed_gemm") is None
    ours = [str(w.message).split(" (")[0] for w in caught if str(w.message).startswith("treenets:")]
    assert ours == ["treenets: compiled CPU kernels unavailable"]  # (torch 2.6 also warns, of the compiler)
    assert set(backend._failures) == {"onlstm", "prpn", "packed_gemm"}
    model = ONLSTMConfig(emb_size=6, hidden_size=8, chunk_size=2, num_layers=1).build(10)
    assert model(torch.randint(0, 10, (4, 2))).output.shape[:2] == (4, 2)


def test_auto_fuses_the_language_models_steps_in_gpu_training(monkeypatch):
    """`auto` compiles the steps on a CUDA device while autograd records (training), where Triton is installed;
    never on the CPU (the C++ kernels run there) nor in inference; `compile` always, `torch` and `cpp` never."""
    cuda, cpu = torch.device("cuda"), torch.device("cpu")

    def step(x):
        return x

    monkeypatch.setattr(backend, "_has_triton", lambda: True)
    assert backend.fuses_steps(cuda) and not backend.fuses_steps(cpu)
    with torch.no_grad():
        assert not backend.fuses_steps(cuda)
    assert backend.step_function(step, cpu) is step
    for name, fused in (("compile", True), ("torch", False), ("cpp", False)):
        with use_backend(name):
            assert backend.fuses_steps(cuda) is fused and backend.fuses_steps(cpu) is (name == "compile")
    monkeypatch.setattr(backend, "_has_triton", lambda: False)  # e.g. Windows: no Triton, no fused steps
    assert not backend.fuses_steps(cuda)
    with use_backend("compile"):
        fused = backend.step_function(step, cpu)
        assert fused is not step and backend.step_function(step, cpu) is fused  # compiled once per function


def _lm_batches(vocab):
    g = torch.Generator().manual_seed(0)
    return [(torch.randint(0, vocab, (6, 3), generator=g), torch.randint(0, vocab, (6, 3), generator=g))
            for _ in range(3)]


def _lm_loss(model, batch):
    tokens, targets = batch
    logits = model.decoder(model(tokens).output)
    return torch.nn.functional.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def test_initial_states_are_copied_for_compiled_steps_only_and_need_a_gradient_only_where_the_steps_do():
    weight, h0 = torch.randn(3, 3, requires_grad=True), torch.zeros(2, 3)
    with use_backend("torch"):  # the PyTorch steps take the states as they are (no graph for frozen models)
        assert all(s is h0 for s in backend.as_step_states([h0, h0], [weight]))
    with use_backend("compile"):
        h, c = backend.as_step_states([h0, h0], [weight])
        assert h is not c and h.requires_grad and c.requires_grad and h.is_leaf
        assert not backend.as_step_states([h0], [weight.detach()])[0].requires_grad  # frozen: no graph
        with torch.no_grad():
            assert not backend.as_step_states([h0], [weight])[0].requires_grad
        carried = torch.ones(2, 3, requires_grad=True) * 2
        state = backend.as_step_states([carried], [])[0]
        state.sum().backward()  # a gradient still reaches a state that needs one
        assert state.grad_fn is not None


@pytest.mark.parametrize("build", [
    lambda: ONLSTMConfig(emb_size=8, hidden_size=8, num_layers=2, chunk_size=4).build(20),
    lambda: PRPNConfig(emb_size=8, hidden_size=8, num_layers=2, nslots=3, nlookback=2, res=1).build(20),
], ids=["onlstm", "prpn"])
def test_each_step_is_compiled_once_for_training_and_once_for_inference(build, monkeypatch):
    """All steps of a sequence look alike to torch.compile: one graph in training and one in inference (layers of
    one size here; a layer of another size is a graph of its own). The first steps used to take initial states
    that need no gradient (and PRPN's memory, views of one tensor): the ON-LSTM compiled 2 graphs per mode, PRPN
    S + 1 = 4 here (16 at the paper's 15 slots: minutes on a GPU before the first batch trained)."""
    from torch._dynamo.utils import counters

    monkeypatch.setattr(backend, "_compiled", {})
    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)
    model = build().train()
    with use_backend("compile"):
        for batch in _lm_batches(20)[:2]:
            _lm_loss(model, batch).backward()
        assert counters["stats"]["unique_graphs"] == 1
        model.eval()
        with torch.no_grad():
            _lm_loss(model, _lm_batches(20)[0])
    assert counters["stats"]["unique_graphs"] == 2


def _pair_loss(model, batch):
    left, right = batch
    return -model(left, right)[:, 2].mean()


def _sentiment_loss(model, batch):
    log_probs, _ = model(*batch)
    return -log_probs[:, 1].mean()


def _trees():
    trees = [parse_parents("2 0 2", ["a", "b", "c"], "t"), parse_parents("0 1", ["d", "a"], "t"),
             parse_parents("3 3 0 3", ["b", "c", "a", "d"], "t")]
    ids = [torch.tensor(v) for v in ([1, 2, 3], [4, 1], [2, 3, 1, 4])]
    return trees, ids


def _binary_trees():
    trees = [parse_bracketed(t, "t") for t in ("(3 (2 a) (4 (1 b) (2 c)))", "(1 (2 d) (0 a))")]
    return trees, [torch.tensor([1, 2, 3]), torch.tensor([4, 1])]


CASES = {
    "onlstm": (lambda: ONLSTMConfig(emb_size=8, hidden_size=12, num_layers=2, chunk_size=4).build(20), _lm_loss,
               lambda: _lm_batches(20), ("onlstm",)),
    "prpn": (lambda: PRPNConfig(emb_size=8, hidden_size=10, num_layers=2, nslots=3, nlookback=2, dropout=0.3,
                                idropout=0.2, rdropout=0.2, res=1).build(20), _lm_loss, lambda: _lm_batches(20),
             ("prpn",)),
    "childsum": (lambda: RelatednessModelSection(emb_size=6, mem_size=5, hidden_size=4).build(6), _pair_loss,
                 lambda: [((t[:2], i[:2]), (t[1:], i[1:])) for t, i in [_trees()] * 3], ("treelstm",)),
    "binary": (lambda: SentimentModelSection(emb_size=6, mem_size=5, dropout=0.3).build(6, 5), _sentiment_loss,
               lambda: [_binary_trees()] * 3, ("treelstm",)),
}


@pytest.mark.parametrize("case,fast", [(case, "auto") for case in CASES] + [("onlstm", "compile"), ("prpn", "compile")])
def test_training_steps_give_the_same_numbers_with_either_backend(case, fast):
    """Three SGD steps with dropout on, from the same seed: the losses and the weights after them agree
    between the compiled kernels (auto) or the steps fused by torch.compile, and the PyTorch specification."""
    build, loss_of, batches, names = CASES[case]
    if fast == "auto":
        _require_kernels(*names)
    runs = []
    for name in (fast, "torch"):
        torch.manual_seed(0)
        model = build().double().train()
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        losses = []
        with use_backend(name):
            for batch in batches():
                optimizer.zero_grad()
                loss = loss_of(model, batch)
                loss.backward()
                optimizer.step()
                losses.append(loss.item())
        runs.append((losses, [p.detach().clone() for p in model.parameters()]))
    (losses_a, weights_a), (losses_b, weights_b) = runs
    assert losses_a == pytest.approx(losses_b, rel=1e-9, abs=1e-12)
    assert losses_a[0] != losses_a[-1]  # the steps changed the model
    for a, b in zip(weights_a, weights_b):
        torch.testing.assert_close(a, b, rtol=1e-8, atol=1e-10)


def test_the_kernel_build_is_named_after_python_torch_and_compiler(monkeypatch):
    # Before, two environments on one machine (another torch) shared a build name and rebuilt each other's.
    from treenets.nn import backend

    name = backend.build_name("onlstm")
    assert name.startswith("treenets_onlstm_") and name == backend.build_name("onlstm")
    monkeypatch.setattr(backend.torch, "__version__", "0.0.0")
    assert backend.build_name("onlstm") != name
    monkeypatch.undo()
    monkeypatch.setattr(backend.torch, "__file__", "/another/venv/torch/__init__.py")  # the same torch elsewhere
    assert backend.build_name("onlstm") != name
    monkeypatch.undo()
    monkeypatch.setattr(backend.sys, "version", "3.0")
    assert backend.build_name("onlstm") != name
    monkeypatch.undo()
    monkeypatch.setenv("CXX", "clang++")
    assert backend.build_name("onlstm") != name


def _instant_builds(monkeypatch, tmp_path) -> list[str]:
    """Kernel builds that write an empty library at once (no compiler) in folders under `tmp_path`: the names of
    those built, in order."""
    from torch.utils import cpp_extension

    built = []

    def load(name, build_directory, **_):
        library = Path(build_directory) / f"{name}.so"
        if not library.is_file():
            library.touch()
            built.append(name)
        return f"module {name}"

    monkeypatch.setattr(backend, "build_folder", lambda name: tmp_path / f"treenets_{name}_0")
    monkeypatch.setattr(cpp_extension, "load", load)
    monkeypatch.setattr(backend, "_loaded", {})
    return built


def test_auto_builds_the_kernels_in_training_and_uses_built_ones_everywhere(monkeypatch, tmp_path, capsys):
    """A one-off parse where the kernels are not built runs the PyTorch code at once (it used to wait a minute for
    the compiler, saying nothing); training builds them, saying so and how long it took, and from then on
    inference uses them too; so does a long job (an evaluation over a data set), and the `cpp` backend wherever
    they apply."""
    built = _instant_builds(monkeypatch, tmp_path)
    weight = torch.zeros(2, requires_grad=True)
    with torch.no_grad():
        assert kernels_for("onlstm", weight) is None
    assert kernels_for("onlstm", torch.zeros(2)) is None  # autograd records nothing: inference too
    assert built == [] and capsys.readouterr().err == "" and not backend.is_built("onlstm")
    assert kernels_for("onlstm", weight) == "module treenets_onlstm_0"  # training
    assert built == ["treenets_onlstm_0"] and backend.is_built("onlstm")
    announced = capsys.readouterr().err.splitlines()
    assert announced[0] == ("treenets: building the onlstm CPU kernels for this machine, once: about half a minute "
                            f"({tmp_path / 'treenets_onlstm_0'})")
    assert re.fullmatch(r"treenets: the onlstm CPU kernels built in \d+ s", announced[1]) and len(announced) == 2
    monkeypatch.setattr(backend, "_loaded", {})  # another process: finds them built
    with torch.no_grad():
        assert backend.is_built("onlstm") and kernels_for("onlstm", weight) == "module treenets_onlstm_0"
    assert built == ["treenets_onlstm_0"] and capsys.readouterr().err == ""
    with torch.no_grad(), backend.long_job():  # an evaluation over a data set
        assert kernels_for("prpn", torch.zeros(2)) == "module treenets_prpn_0"
    with torch.no_grad():
        assert kernels_for("treelstm", torch.zeros(2)) is None
        with use_backend("cpp"):
            assert kernels_for("treelstm", torch.zeros(2)) == "module treenets_treelstm_0"
    assert built == ["treenets_onlstm_0", "treenets_prpn_0", "treenets_treelstm_0"]
    assert capsys.readouterr().err.count("treenets: building the") == 2


def test_a_build_killed_on_the_way_does_not_block_later_builds(tmp_path, monkeypatch):
    # torch's lock file, left by a build killed with kill -9, made every later process wait for it forever.
    import fcntl

    from torch.utils import cpp_extension

    (tmp_path / "lock").touch()
    seen = {}

    def load(name, build_directory, **_):
        seen["stale lock"] = (tmp_path / "lock").exists()
        with open(tmp_path / "treenets.lock") as other:  # another process trying to build meanwhile
            try:
                fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
                seen["excluded"] = False
            except BlockingIOError:
                seen["excluded"] = True
        return "module"

    monkeypatch.setattr(backend, "build_folder", lambda name: tmp_path)
    monkeypatch.setattr(cpp_extension, "load", load)
    monkeypatch.setattr(backend, "_loaded", {})
    assert backend.kernels("treelstm") == "module"
    assert seen == {"stale lock": False, "excluded": True}


def test_the_kernels_include_aten_not_the_whole_cpp_frontend():
    """`torch/extension.h` (or `torch/torch.h`) brings autograd, nn, optim and serialisation, which the kernels
    never use: parsing it alone took 21 s of each 27-41 s build on a 2-core machine."""
    sources = {path for name in (*backend.model_kernels(), "packed_gemm") for path in backend._sources(name)}
    includes = {path.name: re.findall(r"^#include [<\"]([^>\"]+)[>\"]", path.read_text(), re.M)
                for path in sorted(sources)}
    assert "common.h" in includes and len(includes) >= 4
    torch_headers = {name: [h for h in found if h.startswith("torch/")] for name, found in includes.items()}
    assert {name: found for name, found in torch_headers.items() if found} == {
        "common.h": ["torch/csrc/utils/pybind.h"]}  # torch's pybind11 casters of tensors, and nothing else


def test_two_checkouts_of_the_same_sources_share_one_kernel_build(tmp_path):
    """Two copies of the package (a pip install and a source checkout, or two checkouts) loading the kernels in
    turns: before, torch's loader counted the sources' paths in the build's version, so each switch rebuilt
    them (39 builds in 90 minutes with four checkouts)."""
    import shutil
    import subprocess
    import sys

    package = Path(backend.__file__).parents[1]
    copies = []
    for name in ("a", "b"):
        shutil.copytree(package, tmp_path / name / "treenets", ignore=shutil.ignore_patterns("__pycache__"))
        copies.append(tmp_path / name)
    # The build this checkout's tests use (its name hashes the sources, the same in every copy): loaded, not
    # built again, when it is there already.
    folder = backend.build_folder("packed_gemm")
    code = ("import treenets, sys; from treenets.nn.backend import kernels; "
            "assert treenets.__file__.startswith(sys.argv[1]), treenets.__file__; "
            "print(kernels('packed_gemm') is not None)")
    # The copy first on the path; what is there already (dependencies installed with --target) stays after it.
    outer = [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
    built = []
    for copy in (copies[0], copies[1], copies[0]):
        search_path = os.pathsep.join([str(copy), *outer])
        done = subprocess.run([sys.executable, "-c", code, str(copy)], env={**os.environ, "PYTHONPATH": search_path},
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr[-2000:]
        built.append([(path.name, path.stat().st_mtime_ns) for path in sorted(folder.glob("*.so"))])
    assert len(built[0]) == 1 and built[0] == built[1] == built[2]  # one library, never built again


# A Python module with no code, built by `backend.kernels` as the kernels are (torch's loader, its compile and link
# commands, ninja), in a second instead of a minute.
EMPTY_MODULE = r"""
#include <Python.h>
#define NAME_(name) #name
#define NAME(name) NAME_(name)
#define INIT_(name) PyInit_##name
#define INIT(name) INIT_(name)
PyMODINIT_FUNC INIT(TORCH_EXTENSION_NAME)(void) {
  static PyModuleDef module = {PyModuleDef_HEAD_INIT, NAME(TORCH_EXTENSION_NAME), nullptr, -1, nullptr};
  return PyModule_Create(&module);
}
"""


@pytest.mark.slow
def test_two_torch_installations_build_the_kernels_once_each(tmp_path):
    """Two environments whose torch lies in two folders (two venvs with the same torch version) load the kernels in
    turns a, b, a: each builds them once, announced, and the second a loads its own build. Before, the two shared a
    build name and torch's loader, whose compile command names torch's folders, rebuilt the kernels at every switch
    (a minute each time)."""
    import subprocess
    import sys

    sources, extensions, elsewhere = tmp_path / "csrc", tmp_path / "extensions", tmp_path / "elsewhere"
    sources.mkdir()
    elsewhere.mkdir()
    (sources / "empty_cpu.cpp").write_text(EMPTY_MODULE)
    torch_folder = Path(torch.__file__).parent
    (elsewhere / "torch").symlink_to(torch_folder, target_is_directory=True)  # b: the same files, another path
    environments = {"a": ([], torch_folder), "b": ([str(elsewhere)], elsewhere / "torch")}
    code = ("import pathlib, sys, torch; from treenets.nn import backend; "
            "assert torch.__file__.startswith(sys.argv[2]), torch.__file__; "
            "backend._SOURCES = pathlib.Path(sys.argv[1]); print(backend.kernels('empty') is not None)")
    outer = [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
    libraries, announced = [], []
    for name in ("a", "b", "a"):
        first, expected_torch = environments[name]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(first + outer), "TORCH_EXTENSIONS_DIR": str(extensions)}
        done = subprocess.run([sys.executable, "-c", code, str(sources), str(expected_torch)], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and done.stdout == "True\n", done.stderr[-2000:]
        announced.append(["building the empty CPU kernels for this machine, once: about half a minute" in done.stderr,
                          "the empty CPU kernels built in" in done.stderr])
        libraries.append({path.name: path.stat().st_mtime_ns for path in extensions.glob("*/*.so")})
    assert len(libraries[0]) == 1 and len(libraries[1]) == 2 and libraries[0].items() <= libraries[1].items()
    assert libraries[2] == libraries[1]  # a's library is not built again
    assert announced == [[True, True], [True, True], [False, False]]
