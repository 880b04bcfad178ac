"""An installed treenets, with no checkout around it: the shipped models and the datasets downloaded over a real
local HTTP server (checksums, atomic writes, interrupted and refused downloads, offline errors), the default data
folder, and the shipped configs found by name. The wheel itself, installed in a fresh environment, is
tests/test_release.py's."""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import socket
import subprocess
import sys
import threading
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

import treenets
from treenets import data
from treenets.cli import main
from treenets.config import SHIPPED, find_config
from treenets.core import folders
from treenets.zoo import model_folder
from treenets.zoo import registry as zoo

REPO = Path(__file__).resolve().parents[1]
SMALL = ["treelstm-sick-dependency", "lstm-logic"]  # two of the smallest shipped models (2 and 3 MB)


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):  # not the test's output
        pass


class CutHandler(QuietHandler):
    """Serves every file's headers in full (its length included) and then half its bytes before closing the
    connection: a download interrupted half way."""

    def copyfile(self, source, outputfile):
        body = source.read()
        outputfile.write(body[: len(body) // 2])
        self.close_connection = True


class EndlessHandler(QuietHandler):
    """Serves a body without Content-Length that does not end (up to `LIMIT` bytes), counting in `sent` what it
    wrote before the client closed the connection."""

    LIMIT = 256 << 20
    sent: list[int] = []

    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        total, block = 0, b"x" * (1 << 16)
        with contextlib.suppress(OSError):  # the client closed the connection
            while total < self.LIMIT:
                self.wfile.write(block)
                total += len(block)
        EndlessHandler.sent.append(total)


class StallHandler(QuietHandler):
    """Serves every file's headers and half its bytes, then waits until `release` is set: a download in progress,
    for as long as a test needs."""

    started, release = threading.Event(), threading.Event()

    def copyfile(self, source, outputfile):
        body = source.read()
        outputfile.write(body[: len(body) // 2])
        outputfile.flush()
        self.started.set()
        self.release.wait(60)


@contextlib.contextmanager
def served(folder: Path, handler=QuietHandler):
    """An HTTP server on this machine serving `folder`; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(handler, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def closed_url() -> str:
    """The URL of a port nothing listens on: a machine offline, as far as the download can tell."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{free.getsockname()[1]}"


@pytest.fixture
def installed(monkeypatch, tmp_path) -> Path:
    """treenets as a wheel sees it: no source checkout (so no models/ and no ../shared/data beside it), run from an
    empty folder, no data folder or models URL set; the cache is the test's own (conftest). Yields that folder."""
    monkeypatch.setattr(folders, "checkout", lambda: None)
    for variable in (data.ENV_VAR, zoo.MODELS_URL_ENV):
        monkeypatch.delenv(variable, raising=False)
    anywhere = tmp_path / "anywhere"
    anywhere.mkdir()
    monkeypatch.chdir(anywhere)
    return anywhere


def leftovers(folder: Path) -> list[str]:
    """Every file and folder under `folder` (temporary ones included: their names start with a dot) but the
    models' install locks (`.NAME.lock`, empty: one removed while a process waits on it would let a third in)."""
    found = folder.rglob("*") if folder.exists() else []
    return sorted(str(p.relative_to(folder)) for p in found
                  if not (p.parent == folder and p.name.startswith(".") and p.name.endswith(".lock")
                          and p.stat().st_size == 0))


# --- models ------------------------------------------------------------------------------------------------------


def test_models_download_from_a_local_server_into_the_cache(installed, capsys):
    assert main(["models"]) == 0
    listing = capsys.readouterr()
    assert listing.out.count(", absent)") == len(zoo.registry())
    assert "`treenets models download [NAME...] --from DIR|URL` installs them" in listing.err
    with served(REPO / "models") as url:
        assert main(["models", "download", *SMALL, "--from", url]) == 0
    done = capsys.readouterr()
    assert done.out.splitlines() == [f"{name}  {folders.cache_dir() / name}" for name in SMALL]
    assert f"downloading lstm-logic/model.safetensors <- {url}/lstm-logic/model.safetensors" in done.err
    for name in SMALL:
        for file, spec in zoo.registry()[name].files.items():
            assert data.sha256_of(folders.cache_dir() / name / file) == spec.sha256
    assert leftovers(folders.cache_dir()) == sorted(
        [*SMALL, *(f"{name}/{file}" for name in SMALL for file in zoo.FILES)])  # no temporary file left
    assert main(["models"]) == 0
    listing = capsys.readouterr().out
    assert all(f"{folders.cache_dir() / name})" in listing for name in SMALL)
    assert listing.count(", absent)") == len(zoo.registry()) - len(SMALL)
    assert treenets.load("lstm-logic").predict("( a ( and b ) )", "a").relation
    assert main(["models", "download", "lstm-logic"]) == 0  # installed: nothing to fetch, no URL needed
    assert "downloading" not in capsys.readouterr().err


def test_a_first_use_downloads_from_the_models_url(installed, monkeypatch, capsys):
    with served(REPO / "models") as url:
        monkeypatch.setenv(zoo.MODELS_URL_ENV, url)
        assert main(["models"]) == 0
        assert capsys.readouterr().out.count(", download)") == len(zoo.registry())
        model = treenets.load("treelstm-sick-dependency")
    assert "downloading treelstm-sick-dependency/config.json" in capsys.readouterr().err
    assert (folders.cache_dir() / "treelstm-sick-dependency" / "model.safetensors").is_file()
    assert treenets.load(REPO / "models" / "treelstm-sick-dependency").net.state_dict().keys() == \
        model.net.state_dict().keys()


def test_a_model_from_a_local_folder_and_a_damaged_copy_replaced(installed, capsys):
    assert main(["models", "download", "lstm-logic", "--from", str(REPO / "models")]) == 0
    vocab = folders.cache_dir() / "lstm-logic" / "vocab.txt"
    vocab.write_text(vocab.read_text() + "changed\n")
    with pytest.raises(treenets.TreenetsError, match="vocab.txt: does not match the zoo's sha256.*`treenets models "
                                                     "download lstm-logic` replaces"):
        treenets.load("lstm-logic")
    capsys.readouterr()
    assert main(["models", "download", "lstm-logic", "--from", str(REPO / "models")]) == 0
    assert "vocab.txt: does not match the zoo's sha256" in capsys.readouterr().err
    assert data.sha256_of(vocab) == zoo.registry()["lstm-logic"].files["vocab.txt"].sha256


def test_an_interrupted_model_download_leaves_nothing_that_looks_installed(installed, capsys):
    with served(REPO / "models", CutHandler) as url:
        assert main(["models", "download", "lstm-logic", "--from", url]) == 2
    size = zoo.registry()["lstm-logic"].files["config.json"].bytes
    assert f"config.json from {url}/lstm-logic/config.json: {size // 2} bytes, expected {size} (the download was cut " \
           "short" in capsys.readouterr().err
    assert leftovers(folders.cache_dir()) == []  # neither the model's folder nor a temporary file
    assert main(["models"]) == 0 and "lstm-logic  (logic, 3.0 MB, absent)" in capsys.readouterr().out


def test_a_body_without_a_length_is_read_no_further_than_the_registry_size(installed, capsys):
    """Before: a body without Content-Length was read to its end (60 MB for a 2.5 MB model) before it was refused."""
    EndlessHandler.sent.clear()
    with served(REPO / "models", EndlessHandler) as url:
        assert main(["models", "download", "lstm-logic", "--from", url]) == 2
    size = zoo.registry()["lstm-logic"].files["config.json"].bytes
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"treenets: error: config.json from {url}/lstm-logic/config.json: more than the {size:,} bytes expected (the "
        "copy differs; reading stopped there): refused, nothing was written")
    # what the server wrote before the client hung up: the bytes read, and what the sockets' buffers took
    assert len(EndlessHandler.sent) == 1 and EndlessHandler.sent[0] < EndlessHandler.LIMIT // 8
    assert leftovers(folders.cache_dir()) == []


def test_a_body_of_another_declared_length_is_refused_unread(installed, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(REPO / "models" / "lstm-logic", copy / "lstm-logic")
    (copy / "lstm-logic" / "config.json").write_bytes(b"x" * (50 << 20))
    with served(copy) as url:
        assert main(["models", "download", "lstm-logic", "--from", url]) == 2
    assert f"config.json from {url}/lstm-logic/config.json: the server sends 52,428,800 bytes, expected " \
           f"{zoo.registry()['lstm-logic'].files['config.json'].bytes:,} (the copy differs): refused, nothing was " \
           "written (nor read)" in capsys.readouterr().err
    assert leftovers(folders.cache_dir()) == []


def test_a_download_killed_on_the_way_leaves_nothing_after_the_next_one(installed, capsys):
    """SIGKILL in the middle of a download: its temporary folder stays (nothing runs to remove it); the next download
    of the model, holding the model's lock, removes it. Before: it stayed for good."""
    command = [sys.executable, "-c", "import sys; from treenets.core import folders; folders.checkout = lambda: None; "
               "from treenets.cli import main; sys.exit(main(sys.argv[1:]))"]
    StallHandler.started.clear()
    StallHandler.release.clear()
    try:
        with served(REPO / "models", StallHandler) as url:
            process = subprocess.Popen([*command, "models", "download", "lstm-logic", "--from", url],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            assert StallHandler.started.wait(60), "the download did not start"  # half of config.json sent
            process.kill()  # SIGKILL
            process.wait()
    finally:
        StallHandler.release.set()
    stale = [p.name for p in folders.cache_dir().glob(".lstm-logic.*") if p.is_dir()]
    assert len(stale) == 1 and leftovers(folders.cache_dir()) != []
    assert main(["models", "download", "lstm-logic", "--from", str(REPO / "models")]) == 0
    assert f"removing {folders.cache_dir() / stale[0]}, left by a download of lstm-logic that was killed on the way" \
        in capsys.readouterr().err
    assert leftovers(folders.cache_dir()) == ["lstm-logic", *(f"lstm-logic/{file}" for file in sorted(zoo.FILES))]


def test_a_model_file_with_another_checksum_is_refused_naming_it(installed, tmp_path, capsys):
    copy = tmp_path / "copy"
    shutil.copytree(REPO / "models" / "lstm-logic", copy / "lstm-logic")
    weights = copy / "lstm-logic" / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-1] + b"\0")  # one byte changed
    with served(copy) as url:
        assert main(["models", "download", "lstm-logic", "--from", url]) == 2
    expected = hashlib.sha256(weights.read_bytes()).hexdigest()
    assert (f"model.safetensors from {url}/lstm-logic/model.safetensors: sha256 {expected} is not the expected "
            f"{zoo.registry()['lstm-logic'].files['model.safetensors'].sha256}: refused") in capsys.readouterr().err
    assert leftovers(folders.cache_dir()) == []


def test_offline_the_error_says_what_was_tried_and_what_to_do(installed, tmp_path, monkeypatch, capsys):
    # no URL known (no release yet): where it looked, and the documented step
    assert main(["parse", "onlstm-ptb-small", "The cat sat."]) == 2
    error = capsys.readouterr().err
    cached = folders.cache_dir() / "onlstm-ptb-small"
    assert error.startswith(f"treenets: error: model onlstm-ptb-small: not in {cached}, and no release publishes the "
                            "models at a URL yet: `treenets models download "
                            "onlstm-ptb-small --from DIR|URL` installs it") and len(error.splitlines()) == 1
    # a release's URLs, unreachable: the URL and the way round
    offline = closed_url()
    zoo.write_registry([REPO / "models" / "lstm-logic"], offline, tmp_path / "zoo.json")
    released = zoo.registry(tmp_path / "zoo.json")
    monkeypatch.setattr(zoo, "registry", lambda: released)
    assert main(["predict", "lstm-logic", "--pair", "a", "b"]) == 2
    error = capsys.readouterr().err
    assert f"could not download {offline}/lstm-logic/config.json: [Errno 111] Connection refused; offline? install " \
           "it from a copy: `treenets models download lstm-logic --from DIR|URL`" in error
    # a copy named with --from, unreachable
    assert main(["models", "download", "lstm-logic", "--from", offline]) == 2
    assert f"Connection refused; is {offline} a copy of treenets' models/ folder, holding lstm-logic/config.json?" \
        in capsys.readouterr().err
    assert leftovers(folders.cache_dir()) == []


def test_no_run_is_written_into_a_model_folder(installed, tmp_path, capsys):
    """Before: `train --init NAME --out` the installed model's own folder in the cache was not refused (a path to it
    was), and the run wrote best.pt, last.pt, config.yaml and metrics.jsonl into it."""
    assert main(["models", "download", "lstm-logic", "--from", str(REPO / "models")]) == 0
    cached = folders.cache_dir() / "lstm-logic"
    before = leftovers(folders.cache_dir())
    capsys.readouterr()
    assert main(["train", "--init", "lstm-logic", "--out", str(cached), "--no-progress"]) == 2
    assert capsys.readouterr().err == (f"treenets: error: --out {cached}: the folder of lstm-logic, which the run "
                                       "would write over; give the new run another --out\n")
    assert main(["export", "lstm-logic", str(tmp_path / "mine")]) == 0  # a model folder of the user's own
    for out, where in ((cached / "run", f"lies in the model folder {cached}"),
                       (folders.cache_dir() / "om-logic", f"is the model folder {folders.cache_dir() / 'om-logic'}"),
                       (tmp_path / "mine", f"is the model folder {tmp_path / 'mine'}")):
        capsys.readouterr()
        assert main(["train", "--init", "lstm-logic", "--out", str(out), "--no-progress"]) == 2
        assert capsys.readouterr().err == (
            f"treenets: error: --out {out}: {where}, which holds nothing but a model's own files (a run's files: "
            "last.pt, best.pt, config.yaml, metrics.jsonl never go there): give a path outside it\n")
        assert main(["train", "lstm-logic", "--out", str(out), "--no-progress"]) == 2  # (from a config too)
        assert "a run's files: last.pt" in capsys.readouterr().err
    assert leftovers(folders.cache_dir()) == before  # nothing written, om-logic's folder not made
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == sorted(zoo.FILES)
    assert zoo._damage(cached, zoo.registry()["lstm-logic"]) is None


def test_a_model_folder_is_decided_in_one_place(installed, tmp_path):
    (tmp_path / "exported").mkdir()
    (tmp_path / "exported" / "model.safetensors").write_bytes(b"")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "best.pt").write_bytes(b"")
    assert model_folder.is_model_folder(tmp_path / "exported") and not model_folder.is_model_folder(tmp_path / "run")
    assert model_folder.model_folder_of(tmp_path / "exported" / "a" / "b") == tmp_path / "exported"
    assert model_folder.model_folder_of(tmp_path / "run" / "x") is None
    # where the zoo keeps a model, installed or not, by any spelling of the path
    assert model_folder.is_model_folder(folders.cache_dir() / "om-logic")
    assert model_folder.is_model_folder(folders.cache_dir() / "om-logic" / ".." / "om-logic")
    assert not model_folder.is_model_folder(folders.cache_dir() / "no-such-model")
    assert not model_folder.is_model_folder(tmp_path)


# --- settings that name a folder or a copy of one ---------------------------------------------------------------

COPY = "must name a copy of treenets' models/ folder: a folder, or an http://, https:// or file: URL)"


@pytest.mark.parametrize("value, problem", [
    ("htp:/x", "neither a folder nor a URL treenets downloads from (its scheme is htp:)"),
    ("ftp://host/models", "neither a folder nor a URL treenets downloads from (its scheme is ftp:)"),
    ("http:/x", "a URL without a host (expected http://HOST/PATH)"),
    ("http://[::1", "not a URL (Invalid IPv6 URL)"),
    ("{tmp}/absent", "does not exist"),
    ("{tmp}/file", "a file, not a folder"),
])
def test_a_models_url_of_the_wrong_kind_is_blamed_on_the_setting_that_gave_it(installed, tmp_path, monkeypatch,
                                                                              capsys, value, problem):
    """Before: `TREENETS_MODELS_URL=htp:/x` said "htp:/x: no such folder (--from takes ...)", though --from was not
    given."""
    (tmp_path / "file").write_text("")
    value = value.format(tmp=tmp_path)
    monkeypatch.setenv(zoo.MODELS_URL_ENV, value)
    for argv, setting in ((["models", "download", "lstm-logic"], "TREENETS_MODELS_URL"),
                          (["predict", "lstm-logic", "--pair", "a", "b"], "TREENETS_MODELS_URL"),
                          (["models", "download", "lstm-logic", "--from", value], "--from")):
        assert main(argv) == 2
        shown = f"{setting}={value}" if setting.startswith("T") else f"{setting} {value}"
        assert capsys.readouterr() == ("", f"treenets: error: {shown}: {problem} ({setting} {COPY}\n")
    assert leftovers(folders.cache_dir()) == []


def test_a_cache_that_is_a_file_is_named(installed, tmp_path, monkeypatch, capsys):
    """Before: "File exists" (models download), or "not in FILE/lstm-logic" (a first use)."""
    file = tmp_path / "file"
    file.write_text("mine")
    what = "must name a folder: treenets' cache of models, induced trees and data, made where missing)"
    for value, problem in ((file, "a file, not a folder"), (file / "cache", f"lies under {file}, which is a file, "
                                                                              "not a folder")):
        monkeypatch.setenv(folders.CACHE_ENV, str(value))
        for argv in (["models", "download", "lstm-logic", "--from", str(REPO / "models")],
                     ["predict", "lstm-logic", "--pair", "a", "b"], ["models"]):
            assert main(argv) == 2
            assert capsys.readouterr() == ("", f"treenets: error: TREENETS_CACHE={value}: {problem} (TREENETS_CACHE "
                                               f"{what}\n")
    monkeypatch.delenv(folders.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", str(file))
    assert main(["models"]) == 2
    assert capsys.readouterr().err == (f"treenets: error: XDG_CACHE_HOME={file}: a file, not a folder (XDG_CACHE_HOME "
                                       "must name a folder: the user's cache)\n")
    assert file.read_text() == "mine"


def test_a_model_in_the_checkout_needs_no_cache(tmp_path, monkeypatch, capsys):
    """A wrong $TREENETS_CACHE is an error where the cache is needed, not for a model the checkout holds."""
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(folders.CACHE_ENV, str(tmp_path / "file"))
    assert main(["predict", "lstm-logic", "--pair", "a", "( not a )"]) == 0
    assert '"relation": "^"' in capsys.readouterr().out


# --- data --------------------------------------------------------------------------------------------------------


@pytest.fixture
def remote(tmp_path, monkeypatch) -> SimpleNamespace:
    """A staged dataset `demo`: two small files in a `folder` (which the tests serve), and `registry_at(url)`, which
    makes the registry list them, with their sizes and checksums, at `{url}/...`."""
    folder = tmp_path / "remote"
    files = {"demo/words.txt": b"the cat sat\n", "demo/deeper/trees.txt": b"(S (NP the cat) (VP sat))\n"}
    for path, payload in files.items():
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_bytes(payload)

    def registry_at(url: str) -> None:
        entries = [data.DataFile(dataset="demo", path=path, bytes=len(payload),
                                 sha256=hashlib.sha256(payload).hexdigest(), url=f"{url}/{path}")
                   for path, payload in files.items()]
        monkeypatch.setattr(data, "registry", lambda: {"demo": entries})

    return SimpleNamespace(folder=folder, registry_at=registry_at)


def test_data_download_fills_the_default_folder_that_check_names(installed, remote, capsys):
    default = folders.cache_dir() / "data"
    with served(remote.folder) as url:
        remote.registry_at(url)
        assert main(["data", "check", "demo"]) == 0  # nothing there yet: missing is not wrong
        assert capsys.readouterr().out.splitlines() == [
            f"data root: {default} (the default)", "missing      demo             demo/words.txt",
            "missing      demo             demo/deeper/trees.txt", "0 ok, 2 missing, 0 wrong"]
        assert not default.exists()
        with pytest.raises(treenets.TreenetsError, match=f"no data folder: the default one, {default}, does not "
                                                         "exist yet; `treenets data download DATASET...` fills it"):
            data.data_root()
        assert main(["data", "download", "demo"]) == 0
        assert f"downloading demo/words.txt <- {url}/demo/words.txt" in capsys.readouterr().err
    assert (default / "demo" / "words.txt").read_bytes() == (remote.folder / "demo" / "words.txt").read_bytes()
    assert leftovers(default) == ["demo", "demo/deeper", "demo/deeper/trees.txt", "demo/words.txt"]
    assert main(["data", "check", "demo"]) == 0 and "2 ok, 0 missing, 0 wrong" in capsys.readouterr().out
    assert data.data_root() == default.resolve()


def test_data_download_from_a_copy_of_a_data_root(installed, remote, tmp_path, capsys):
    remote.registry_at(closed_url())  # the canonical URLs are out of reach
    with served(remote.folder) as url:
        assert main(["data", "download", "demo", "--data", str(tmp_path / "a"), "--from", url]) == 0
    assert main(["data", "download", "demo", "--data", str(tmp_path / "b"), "--from", str(remote.folder)]) == 0
    for root in ("a", "b"):
        assert main(["data", "check", "demo", "--data", str(tmp_path / root)]) == 0
        assert "2 ok, 0 missing, 0 wrong" in capsys.readouterr().out


def test_an_interrupted_or_altered_data_file_is_never_written(installed, remote, tmp_path, capsys):
    root = tmp_path / "root"
    with served(remote.folder, CutHandler) as url:
        remote.registry_at(url)
        assert main(["data", "download", "demo", "--data", str(root)]) == 2
    assert f"words.txt from {url}/demo/words.txt: 6 bytes, expected 12 (the download was cut short, or the copy " \
           "differs): refused, nothing was written" in capsys.readouterr().err
    assert leftovers(root) == ["demo"]  # no file, no temporary one
    (remote.folder / "demo" / "words.txt").write_bytes(b"the cat sit\n")  # as long, one letter changed
    with served(remote.folder) as url:
        remote.registry_at(url)
        assert main(["data", "download", "demo", "--data", str(root)]) == 2
    altered = data.sha256_of(remote.folder / "demo" / "words.txt")
    assert f"words.txt from {url}/demo/words.txt: sha256 {altered} is not the expected" in capsys.readouterr().err
    assert leftovers(root) == ["demo"]


def test_data_download_offline_names_the_url_and_the_way_round(installed, remote, capsys):
    offline = closed_url()
    remote.registry_at(offline)
    assert main(["data", "download", "demo"]) == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert error == (f"treenets: error: could not download {offline}/demo/words.txt: [Errno 111] Connection refused; "
                     "offline? give a copy of a data root: `treenets data download demo --from DIR|URL`")


# --- configs -----------------------------------------------------------------------------------------------------


def test_the_shipped_configs_are_the_checkouts(installed):
    """One copy: the package's configs are the checkout's configs/ folder (a link to it), file for file."""
    assert sorted(p.name for p in SHIPPED.glob("*.yaml")) == sorted(p.name for p in (REPO / "configs").glob("*.yaml"))
    assert SHIPPED.resolve() == (REPO / "configs").resolve()


def test_a_shipped_config_is_found_by_name_from_any_folder(installed, corpus, capsys):
    assert find_config("onlstm-ptb-small") == SHIPPED / "onlstm-ptb-small.yaml"
    assert main(["train", "configs/onlstm-ptb-small.yaml"]) == 2  # no configs/ here
    assert ("configs/onlstm-ptb-small.yaml: does not exist (expected a YAML config file, or the name of a config "
            "shipped with treenets: `treenets configs` lists them; the shipped onlstm-ptb-small is given by its name: "
            "`treenets train onlstm-ptb-small`)") in capsys.readouterr().err
    assert main(["train", "onlstm-ptb-small", "--set", f"data.path={corpus}", "--max-steps", "1", "--out", "runs/x",
                 "--no-progress"]) == 0
    saved = yaml.safe_load(Path("runs/x/config.yaml").read_text())
    assert saved["model"]["hidden_size"] == 400 and saved["train"]["max_steps"] == 1  # the shipped recipe, as set
    capsys.readouterr()


def test_configs_lists_prints_and_copies_them(installed, capsys):
    assert main(["configs"]) == 0
    listing = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listing[::2]] == [p.stem for p in sorted(SHIPPED.glob("*.yaml"))]
    assert "onlstm-ptb-small  (lm, onlstm)" in listing
    shipped = (SHIPPED / "onlstm-ptb-small.yaml").read_text()
    assert main(["configs", "onlstm-ptb-small"]) == 0 and capsys.readouterr().out == shipped
    assert main(["configs", "onlstm-ptb-small", "--out", "mine.yaml"]) == 0
    assert capsys.readouterr().out == "wrote mine.yaml\n" and Path("mine.yaml").read_text() == shipped
    Path("mine.yaml").write_text("edited")
    assert main(["configs", "onlstm-ptb-small", "--out", "mine.yaml"]) == 2
    assert "--out mine.yaml: exists; give a new file name" in capsys.readouterr().err
    assert Path("mine.yaml").read_text() == "edited"
    assert main(["configs", "no-such"]) == 2 and "unknown config 'no-such'" in capsys.readouterr().err
