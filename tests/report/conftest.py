"""Fixtures of the report and `serve` tests: a tiny language model whose run folder holds a `parse-eval` report
of a small treebank over its words, and headless Chromium driven by Playwright when both are installed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from helpers import tiny_config, tiny_structformer_config, write_corpus

from treenets.cli import main
from treenets.nn.backend import use_backend

# Twelve sentences over the tiny corpus's words, with the labels the report counts (NP, VP, PP, ADJP, SBAR),
# one left empty by the preprocessing and one with a word the model does not know.
TREEBANK = """\
( (S (NP (DT the) (NN cat)) (VP (VBZ see) (NP (DT a) (JJ big) (NN dog))) (. .)) )
( (S (NP (DT the) (NN dog)) (VP (VBD run) (PP (IN of) (NP (DT the) (NN city)))) (. .)) )
( (S (NP (DT a) (JJ small) (NN bird)) (VP (VBZ find) (NP (DT the) (NN tree))) (. .)) )
( (S (NP (NN water)) (VP (VBZ make) (NP (DT the) (NN river)) (ADJP (JJ warm))) (. .)) )
( (S (NP (DT the) (NN sun)) (VP (VBZ know) (SBAR (IN that) (S (NP (DT the) (NN moon)) (VP (VBZ walk))))) (. .)) )
( (S (NP (NP (DT the) (NN car)) (PP (IN of) (NP (DT the) (NN house)))) (VP (VBZ take) (NP (DT a) (NN road)))) )
( (S (NP (JJ old) (NN stone)) (VP (VBZ give) (NP (NN fire)) (PP (IN of) (NP (JJ red) (NN star))))) )
( (S (NP (DT the) (NN wind)) (VP (VBZ think) (ADJP (JJ slow) (CC and) (JJ blue)))) )
( (S (NP (-NONE- *)) (. .)) )
( (S (NP (DT a) (JJ green) (NN fish)) (VP (VBZ eat) (NP (DT the) (NN zebra)))) )
( (S (NP (NN rain)) (VP (VBZ see) (NP (DT the) (JJ new) (NN sky)) (PP (IN of) (NP (NN snow))))) )
( (S (NP (DT the) (JJ fast) (NN dog)) (VP (VBZ walk))) )
"""


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory) -> Path:
    """The run folder of a tiny, barely trained language model (`best.pt`, `last.pt`: two optimizer steps are
    enough to show trees, and fast), with the report of `parse-eval` of both checkpoints (two runs side by side)
    in `parse-eval/`."""
    root = tmp_path_factory.mktemp("report")
    (root / "tiny.yaml").write_text(yaml.safe_dump(tiny_config(write_corpus(root / "corpus"))))
    (root / "tiny.mrg").write_text(TREEBANK)
    run = root / "run"
    with use_backend("torch"):  # see `pytorch_code`: this session-wide fixture comes before it
        assert main(["train", str(root / "tiny.yaml"), "--out", str(run), "--max-steps", "2", "--no-progress"]) == 0
        assert main(["parse-eval", str(run / "best.pt"), str(run / "last.pt"), "--treebank", str(root / "tiny.mrg"),
                     "--output", str(run / "parse-eval")]) == 0
    return run


@pytest.fixture(scope="session")
def grammar_run(tmp_path_factory, tiny_run) -> Path:
    """The run folder of a tiny Neural PCFG trained for two steps on the tiny corpus (`best.pt`: it decodes
    labelled trees), validated on the treebank of `tiny_run`."""
    root = tmp_path_factory.mktemp("grammar")
    config = {"task": "pcfg", "data": {"path": str(write_corpus(root / "corpus")),
                                       "valid": [str(tiny_run.parent / "tiny.mrg")],
                                       "test": [str(tiny_run.parent / "tiny.mrg")]},
              "model": {"name": "neural-pcfg", "nonterminals": 3, "preterminals": 4, "state_dim": 8},
              "train": {"seed": 3, "epochs": 1, "threads": 1}}
    (root / "pcfg.yaml").write_text(yaml.safe_dump(config))
    run = root / "run"
    assert main(["train", str(root / "pcfg.yaml"), "--out", str(run), "--max-steps", "2", "--no-progress"]) == 0
    return run


@pytest.fixture(scope="session")
def structformer_run(tmp_path_factory, tiny_run) -> Path:
    """The run folder of a tiny StructFormer trained for two steps (`best.pt`: it induces dependencies), with the
    report of `parse-eval` of it beside the ON-LSTM of `tiny_run` (no dependencies) and a CoNLL file of the gold
    dependencies (dependencies only, every arc right) in `parse-eval/`."""
    from treenets.trees.dependencies import conll_text
    from treenets.trees.dependency_scoring import gold_dependencies
    from treenets.trees.ptb import PTB, load_gold

    root = tmp_path_factory.mktemp("structformer")
    (root / "mlm.yaml").write_text(yaml.safe_dump(tiny_structformer_config(write_corpus(root / "corpus"))))
    treebank = tiny_run.parent / "tiny.mrg"
    sentences = load_gold(treebank)
    (root / "gold.conll").write_text(conll_text([t for t in gold_dependencies(sentences, PTB).trees if t]))
    run = root / "run"
    with use_backend("torch"):
        assert main(["train", str(root / "mlm.yaml"), "--out", str(run), "--max-steps", "2", "--no-progress"]) == 0
        assert main(["parse-eval", str(run / "best.pt"), str(tiny_run / "best.pt"), str(root / "gold.conll"),
                     "--treebank", str(treebank), "--output", str(run / "parse-eval")]) == 0
    return run


@pytest.fixture(scope="module", autouse=True)
def pytorch_code():
    """The PyTorch code rather than the compiled kernels, in these modules only: they test pages, and the
    kernels' build (on their first use after any change to them) takes minutes on two cores."""
    with use_backend("torch"):
        yield


def chromium() -> str | None:
    """A Chromium (or Chrome) binary: $TREENETS_CHROMIUM, else the first found on the PATH."""
    names = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
    return os.environ.get("TREENETS_CHROMIUM") or next(filter(None, map(shutil.which, names)), None)


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium through Playwright; the test is skipped, saying why, when either is missing.

    Playwright drives the system's Chromium (`executable_path`) rather than a browser build of its own, which
    `playwright install` would have to download."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="the browser tests need Playwright "
                                   "(pip install -e '.[browser]')")
    path = chromium()
    if path is None:
        pytest.skip("the browser tests need Chromium: apt-get install chromium, or set TREENETS_CHROMIUM to a "
                    "Chromium or Chrome binary")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path)
        yield browser
        browser.close()


class Page:
    """A browser tab that records the console errors and uncaught exceptions of the pages it shows."""

    def __init__(self, browser, shots: Path):
        self.tab = browser.new_page(viewport={"width": 1280, "height": 900})
        self.errors: list[str] = []
        self.tab.on("console", lambda m: self.errors.append(f"console: {m.text}") if m.type == "error" else None)
        self.tab.on("pageerror", lambda e: self.errors.append(f"exception: {e}"))
        self.shots = shots

    def screenshot(self, name: str, full_page: bool = True) -> Path:
        """Save a screenshot as `shots/name.png`, and copy it to $TREENETS_SCREENSHOTS when that is set (to
        look at the pages of a test run)."""
        path = self.shots / f"{name}.png"
        self.tab.screenshot(path=str(path), full_page=full_page)
        if os.environ.get("TREENETS_SCREENSHOTS"):
            target = Path(os.environ["TREENETS_SCREENSHOTS"])
            target.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target / path.name)
        return path


@pytest.fixture
def open_page(browser):
    """A factory of `Page`s saving their screenshots under a folder; the tabs are closed after the test."""
    pages = []

    def make(shots: Path) -> Page:
        shots.mkdir(parents=True, exist_ok=True)
        pages.append(Page(browser, shots))
        return pages[-1]

    yield make
    for page in pages:
        page.tab.close()
