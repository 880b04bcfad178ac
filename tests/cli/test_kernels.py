"""`treenets kernels`: which compiled kernels are built, and building them; a one-off command builds none."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from torch.utils import cpp_extension

from treenets.cli import main
from treenets.commands import all_commands
from treenets.nn import backend


@pytest.fixture
def extensions(monkeypatch, tmp_path):
    """An empty torch extension cache, and builds that write an empty library at once (no compiler)."""
    def load(name, build_directory, **_):
        (tmp_path / name / f"{name}.so").touch()
        return f"module {name}"

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    monkeypatch.setattr(cpp_extension, "load", load)
    monkeypatch.setattr(backend, "_loaded", {})
    return tmp_path


def test_kernels_shows_each_kernel_and_builds_those_asked_for(extensions, capsys):
    folders = {name: extensions / backend.build_name(name) for name in backend.model_kernels()}
    assert main(["kernels"]) == 0
    out, err = capsys.readouterr()
    width = max(map(len, folders))  # the names in a column as wide as the longest
    expected = [f"{name:<{width}}  not built  {folders[name]}" for name in backend.model_kernels()]
    assert out.splitlines() == expected and err == ""
    assert main(["kernels", "build", "treelstm"]) == 0
    out, err = capsys.readouterr()
    assert out == f"treelstm  built      {folders['treelstm']}\n"  # (alone: as wide as its name)
    assert err.startswith("treenets: building the treelstm CPU kernels for this machine, once: about half a minute")
    assert main(["kernels"]) == 0
    assert [line.split()[:2] for line in capsys.readouterr().out.splitlines()] == [
        ["onlstm", "not"], ["prpn", "not"], ["treelstm", "built"], ["pcfg_chart", "not"]]
    assert main(["kernels", "build"]) == 0  # all of them; the one built is not built again
    out, err = capsys.readouterr()
    assert [line.split()[1] for line in out.splitlines()] == ["built"] * 4
    assert "onlstm" in err and "prpn" in err and "pcfg_chart" in err and "treelstm" not in err


def test_kernels_that_cannot_be_built_are_an_error(extensions, monkeypatch, capsys):
    def load(name, **_):
        raise RuntimeError(f"Error building extension '{name}'\nc++: fatal error")

    monkeypatch.setattr(cpp_extension, "load", load)
    monkeypatch.setattr(backend, "_failures", {})
    assert main(["kernels", "build", "onlstm"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines()[-1] == (
        f"treenets: error: the onlstm CPU kernels cannot be built: Error building extension "
        f"'{backend.build_name('onlstm')}'")
    assert main(["kernels", "build", "lstm"]) == 2
    assert capsys.readouterr().err == ("treenets: error: unknown kernels 'lstm' (expected one of: onlstm, prpn, "
                                       "treelstm, pcfg_chart)\n")


def test_training_and_evaluations_over_data_sets_may_build_the_kernels_and_a_parse_may_not(monkeypatch):
    seen = {}

    def record(args):
        seen[args.command] = backend._long_job
        return 0

    for command in all_commands().values():
        monkeypatch.setattr(command, "run", record)
    for argv in (["train", "config.yaml"], ["eval", "onlstm-ptb-small"], ["parse-eval", "m", "--treebank", "t"],
                 ["syneval", "m"], ["export", "m", "out"], ["parse", "m", "a sentence"], ["predict", "m"],
                 ["serve", "m"]):
        assert main(argv) == 0
    assert seen == {"train": True, "eval": True, "parse-eval": True, "syneval": True, "export": True,
                    "parse": False, "predict": False, "serve": False}
    assert backend._long_job is False  # (only inside the command)


@pytest.mark.slow
def test_a_first_parse_waits_for_no_compiler(tmp_path):
    """On a machine where the kernels are not built, a parse of one sentence answers with the PyTorch code (it
    waited about a minute for the compiler, silently) and builds nothing."""
    extensions = tmp_path / "extensions"
    env = {**os.environ, "TORCH_EXTENSIONS_DIR": str(extensions), "HOME": str(tmp_path / "home"),
           "XDG_CACHE_HOME": str(tmp_path / "cache"), "TREENETS_CACHE": str(tmp_path / "treenets")}
    done = subprocess.run([sys.executable, "-m", "treenets", "parse", "onlstm-ptb-small", "The cat sat on the mat."],
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "(X the (X cat (X sat" in done.stdout, done.stderr[-2000:]
    assert "building" not in done.stderr and list(extensions.glob("*/*.so")) == []


def test_an_extension_cache_that_is_a_file_is_named_and_a_parse_runs_the_pytorch_code(monkeypatch, tmp_path,
                                                                                     capsys):
    """$TORCH_EXTENSIONS_DIR a file: `treenets kernels` names it (before: "File exists"), and a parse, which needs no
    kernels, runs the PyTorch code after one warning saying why (before: it failed with "File exists")."""
    file = tmp_path / "file"
    file.write_text("")
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(file))
    monkeypatch.setattr(backend, "_loaded", {})
    monkeypatch.setattr(backend, "_failures", {})
    why = (f"TORCH_EXTENSIONS_DIR={file}: a file, not a folder (TORCH_EXTENSIONS_DIR must name a folder: torch's "
           "cache of compiled extensions, where the kernels are built)")
    for argv in (["kernels"], ["kernels", "build", "prpn"]):
        assert main(argv) == 2
        assert capsys.readouterr() == ("", "treenets: error: " + (
            why if argv == ["kernels"] else f"the prpn CPU kernels cannot be built: {why}") + "\n")
    monkeypatch.setattr(backend, "_failures", {})
    with pytest.warns(UserWarning) as caught:
        assert main(["parse", "onlstm-ptb-small", "the cat sat", "--json"]) == 0
    assert '"tree": "(X the (X cat sat))"' in capsys.readouterr().out
    assert [str(w.message) for w in caught if "treenets" in str(w.message)] == [
        f"treenets: compiled CPU kernels unavailable (onlstm: {why}); using the PyTorch code, slower"]
    assert file.read_text() == ""  # and nothing written to the file
