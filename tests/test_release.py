"""The release build and the newcomer's path: `python -m build` (as `make dist`) writes an sdist and, from it, a
wheel that carries every file the package reads beside its modules; installed into a fresh environment outside
the checkout, with the models installed the documented way from a local HTTP server, it runs the README's first
examples from an empty folder.

The fresh environment is a new virtual environment (no pip, no setuptools of its own) whose only other packages
are treenets' declared dependencies, with theirs: the distributions of the environment running the tests, linked
into one folder, so that the test needs no network and no time to install PyTorch, and an import the wheel does not
declare fails there as on a user's machine.
"""

from __future__ import annotations

import email.parser
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib.metadata import PackageNotFoundError, distribution
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from treenets import __version__
from treenets.zoo import registry as zoo

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "src" / "treenets"


def package_files() -> set[str]:
    """Every file of the package in the checkout, named as in the wheel (`treenets/zoo/zoo.json`): its modules and the
    files it reads beside them (the registries, the kernels' sources, the report's assets, the configs, reached
    through their link)."""
    found = set()
    for folder, subfolders, files in os.walk(PACKAGE, followlinks=True):
        subfolders[:] = [name for name in subfolders if name != "__pycache__"]
        found |= {"treenets/" + (Path(folder) / name).relative_to(PACKAGE).as_posix() for name in files}
    return found


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """`python -m build` of the checkout, as `make dist` runs it (without an isolated build environment: the one
    running the tests has setuptools): the sdist, then the wheel built from it. It builds a copy of the checkout
    without what a build or an editable install left there: setuptools adds the files an old `*.egg-info` lists
    to the sdist, which would hide a file missing from pyproject.toml's package-data (and it writes one there)."""
    source, out = tmp_path_factory.mktemp("source") / "treenets", tmp_path_factory.mktemp("dist")
    shutil.copytree(REPO, source, symlinks=True, ignore=shutil.ignore_patterns(
        ".git", ".venv", "models", "runs", "build", "dist", "*.egg-info", "__pycache__", ".*_cache"))
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(source)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return {"sdist": out / f"treenets-{__version__}.tar.gz", "wheel": out / f"treenets-{__version__}-py3-none-any.whl"}


def test_the_wheel_carries_every_file_the_package_reads(dist):
    with zipfile.ZipFile(dist["wheel"]) as wheel:
        names = set(wheel.namelist())
        metadata = email.parser.Parser().parsestr(wheel.read(f"treenets-{__version__}.dist-info/METADATA").decode())
    package = {name for name in names if not name.startswith(f"treenets-{__version__}.dist-info/")}
    assert package == package_files()
    shipped = {"treenets/zoo/zoo.json", "treenets/data/datasets.json", "treenets/nn/onlstm/onlstm_cpu.cpp",
               "treenets/nn/csrc/common.h", "treenets/report/report.js", "treenets/report/serve.html",
               *(f"treenets/configs/{p.name}" for p in (REPO / "configs").glob("*.yaml"))}
    assert shipped <= package and len(shipped) > 20
    assert metadata["Name"] == "treenets" and metadata["Version"] == __version__
    assert not any(name.startswith(("models/", "tests/")) for name in names)  # the models are downloaded


def test_the_readme_installs_the_wheel_the_build_writes(dist):
    install = (REPO / "README.md").read_text().split("## Install")[1].split("```")[1]
    assert f"pip install {dist['wheel'].name} " in install


def test_the_sdist_holds_the_package_and_what_builds_it(dist):
    top = f"treenets-{__version__}/"
    with tarfile.open(dist["sdist"]) as sdist:
        names = {member.name.removeprefix(top) for member in sdist.getmembers() if member.isfile()}
    assert {name.removeprefix("src/") for name in names if name.startswith("src/treenets/")} == package_files()
    assert {"pyproject.toml", "README.md", "PKG-INFO"} <= names and not any(n.startswith("tests/") for n in names)


def _dependencies(requirements: list[str]) -> list:
    """The distributions that `requirements` resolve to in this environment, with their own dependencies."""
    found, pending = {}, [Requirement(text) for text in requirements]
    while pending:
        requirement = pending.pop()
        if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
            continue  # an extra's, or another platform's
        key = canonicalize_name(requirement.name)
        if key in found:
            continue
        try:
            found[key] = distribution(requirement.name)
        except PackageNotFoundError:
            pytest.fail(f"{requirement.name} (required by treenets or a dependency) is not installed here")
        pending += [Requirement(text) for text in found[key].requires or []]
    return list(found.values())


def outside_environment(**changes: str) -> dict[str, str]:
    """The environment of a process outside the checkout: this one's (the test's home and caches) without what
    points into the checkout or this environment (`PYTHONPATH=src` would make any Python import the checkout's
    treenets), nor a data folder or models URL."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "TREENETS_DATA", zoo.MODELS_URL_ENV)}
    return {**env, **changes}


def fresh_environment(folder: Path, wheel: Path) -> Path:
    """A new virtual environment in `folder` that sees the wheel's dependencies (`_dependencies`) and nothing
    else of this environment, with the wheel installed by pip (which checks that every dependency is there); its
    `bin` folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=120)
    python = folder / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True, env=outside_environment()).stdout.strip())
    with zipfile.ZipFile(wheel) as archive:
        metadata = email.parser.Parser().parsestr(archive.read(f"treenets-{__version__}.dist-info/METADATA").decode())
    dependencies = folder / "dependencies"
    dependencies.mkdir()
    for dist in _dependencies(metadata.get_all("Requires-Dist")):
        for top in {file.parts[0] for file in dist.files or [] if file.parts[0] not in ("..", "__pycache__")}:
            if not (dependencies / top).exists():
                (dependencies / top).symlink_to(Path(dist.locate_file(top)))
    (site / "dependencies.pth").write_text(f"{dependencies}\n")
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    for command in (["install", "--no-index", str(wheel)], ["check"]):
        done = subprocess.run([*pip, *command], capture_output=True, text=True, timeout=300, env=outside_environment())
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return folder / "bin"


@pytest.mark.slow
def test_a_newcomer_installs_the_wheel_and_the_models_and_runs_the_first_examples(dist, tmp_path, own_home):
    bin_folder = fresh_environment(tmp_path / "venv", dist["wheel"])
    empty = tmp_path / "empty"
    empty.mkdir()
    # The PyTorch code, not the C++ kernels: torch's build of them records the path of the torch it compiled
    # against, which differs here (this environment's torch, linked), so that building them would rebuild the
    # session's shared builds, minutes each time; their sources are in the wheel (tested above).
    env = outside_environment(PATH=f"{bin_folder}{os.pathsep}{os.environ['PATH']}", TREENETS_BACKEND="torch",
                              TORCH_EXTENSIONS_DIR=str(tmp_path / "kernels"))

    def run(*command: str) -> str:
        done = subprocess.run(command, cwd=empty, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, (command, done.stderr[-3000:])
        return done.stdout

    # `python -m http.server` serving a copy of models/ (the checkout's) on a free port, as a release would
    server = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory",
                               str(REPO / "models")], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        port = server.stdout.readline().split(" port ")[1].split()[0]  # "Serving HTTP on 127.0.0.1 port N (...)"
        installed = run("treenets", "models", "download", "--from", f"http://127.0.0.1:{port}/")
    finally:
        server.terminate()
        server.wait(timeout=30)
    cache = own_home / ".cache" / "treenets"
    assert installed.splitlines() == [f"{name}  {cache / name}" for name in zoo.registry()]
    assert run("treenets", "--version") == f"treenets {__version__}\n"
    listing = run("treenets", "models")
    assert "absent" not in listing and all(f"{cache / name})" in listing for name in zoo.registry())
    assert "(X the (X cat" in run("treenets", "parse", "onlstm-ptb-small", "The cat sat on the mat.")
    predicted = json.loads(run("treenets", "predict", "treelstm-sst", "--sentence", "It is a moving film."))
    assert predicted["name"] in predicted["classes"] and predicted["tokens"][0] == "It"
    module, tree = run("python", "-c", "import treenets; print(treenets.__file__); "
                                       "print(treenets.load('prpn-up-small').parse('The cat sat on the mat.').tree)"
                       ).splitlines()
    assert Path(module).is_relative_to(tmp_path / "venv") and tree.startswith("(X ") and "cat" in tree
    assert run("treenets", "data", "check").splitlines()[0] == f"data root: {cache / 'data'} (the default)"
    assert "onlstm-ptb-small  (lm, onlstm)" in run("treenets", "configs")
    run("treenets", "configs", "onlstm-ptb-small", "--out", "mine.yaml")
    assert (empty / "mine.yaml").read_text() == (REPO / "configs" / "onlstm-ptb-small.yaml").read_text()
