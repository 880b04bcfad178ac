"""Results alone on stdout: every command that prints results, run as a user runs it (a process of its own, with the
test's empty home and caches, as on a newcomer's machine), prints its results on stdout and nothing else; its notes,
progress, timings and cache paths go to stderr.

Before, `treenets eval` of a Tree-LSTM over induced trees printed `induced trees: ... (kept in ~/.cache/...)` on
stdout before its JSON lines, where the trees cache was empty: a first run only, which a suite that shared the
user's filled cache never saw.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import tiny_config, tiny_sick, write_corpus

from treenets.core import folders

pytestmark = pytest.mark.slow

# A line that is not a result: a note, a warning, a progress or timing line ("... in 5 s").
NOTE = re.compile(r"^\s*(note|warning|treenets|induced trees|downloading|resuming)\b|\bin \d+(\.\d+)? s\b",
                  re.IGNORECASE)
SENTENCES = ["The cat sat on the mat.", "It works."]
TREEBANK = ("(S (NP (DT the) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))))\n"
            "(S (NP (PRP it)) (VP (VBZ works)))\n")


def treenets(*arguments) -> subprocess.CompletedProcess:
    """`treenets ARGUMENTS` in a process of its own, which inherits the test's home and caches; it must succeed."""
    done = subprocess.run([sys.executable, "-m", "treenets", *map(str, arguments)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def check_results(stdout: str, form: str) -> None:
    """`stdout` holds results alone: `json` one JSON document, `json lines` a JSON value on every line, `text`
    lines none of which is a note (`NOTE`) or names the home, where the caches are."""
    assert stdout.strip(), "no results"
    if form == "json":
        json.loads(stdout)
        return
    for line in stdout.splitlines():
        if form == "json lines":
            json.loads(line)
        else:
            assert not NOTE.search(line) and str(Path.home()) not in line, f"a note on stdout: {line!r}"


@pytest.fixture(scope="module")
def inputs(tmp_path_factory, data_root) -> Path:
    """Small inputs: a text file of sentences, a treebank, a data root with a few SICK pairs, a tiny corpus."""
    folder = tmp_path_factory.mktemp("inputs")
    (folder / "sentences.txt").write_text("\n".join(SENTENCES) + "\n")
    (folder / "tiny.mrg").write_text(TREEBANK)
    tiny_sick(data_root, folder / "data" / "sick", pairs=(1, 6, 6))
    corpus = write_corpus(folder / "corpus")
    (folder / "tiny.yaml").write_text(yaml.safe_dump(tiny_config(corpus, train={"max_steps": 3})))
    return folder


@pytest.fixture(scope="module")
def trained(inputs) -> tuple[Path, subprocess.CompletedProcess]:
    """A run folder `treenets train` wrote (3 steps), and what the command printed."""
    run = inputs / "run"
    return run, treenets("train", inputs / "tiny.yaml", "--out", run, "--no-progress")


# name: (arguments, given the inputs folder and an output folder; what stdout holds; what stderr must say)
COMMANDS = {
    "parse": (lambda i, out: ["parse", "onlstm-ptb-small", *SENTENCES, "--svg", out], "text", None),
    "parse --file --layer all": (lambda i, out: ["parse", "onlstm-ptb-small", "--file", i / "sentences.txt",
                                                 "--layer", "all", "--distances"], "text", None),
    "parse --json": (lambda i, out: ["parse", "onlstm-ptb-small", "--json", "--svg", out, *SENTENCES], "json lines",
                     "SVG drawings: "),
    # the command of the report, on 6 pairs: the trees cache is empty, the trees are induced and kept
    "eval over induced trees": (lambda i, out: ["eval", "treelstm-sick", "treelstm-sick-dependency", "--split", "test",
                                                "--data", i / "data"], "json lines",
                                "induced trees: 6 sentences of SICK test/a.toks parsed by onlstm-ptb-small"),
    "eval --file": (lambda i, out: ["eval", "onlstm-ptb-small", "--file", i / "sentences.txt"], "json lines", None),
    "predict relatedness": (lambda i, out: ["predict", "treelstm-sick", "--pair", *SENTENCES], "json", None),
    "predict sentiment": (lambda i, out: ["predict", "treelstm-sst", "--sentence", SENTENCES[0]], "json", None),
    "predict lm": (lambda i, out: ["predict", "onlstm-ptb-small", "--sentence", SENTENCES[0]], "json", None),
    "models": (lambda i, out: ["models"], "text", None),
    "models --json": (lambda i, out: ["models", "--json"], "json", None),
    "models download": (lambda i, out: ["models", "download", "lstm-logic"], "text", None),  # (the checkout's)
    "configs": (lambda i, out: ["configs"], "text", None),
    "parse-eval": (lambda i, out: ["parse-eval", "onlstm-ptb-small", "--treebank", i / "tiny.mrg", "--output", out],
                   "text", None),
    "baselines": (lambda i, out: ["baselines", "--treebank", i / "tiny.mrg"], "text", None),
    "ensemble": (lambda i, out: ["ensemble", "onlstm-ptb-small", "prpn-ptb-small", "--treebank", i / "tiny.mrg",
                                 "--output", out / "ensemble.txt"], "text", "ensemble (generative) of 2 systems"),
    "parse --ensemble": (lambda i, out: ["parse", "--ensemble", "onlstm-ptb-small", "prpn-ptb-small", *SENTENCES],
                         "text", None),
    "syneval": (lambda i, out: ["syneval", "onlstm-ptb-small", "--cases", "simple", "--limit", "2"], "text",
                "sentences scored in"),
    "data check": (lambda i, out: ["data", "check", "sick"], "text", None),
    "data prepare": (lambda i, out: ["data", "prepare", i / "corpus" / "ptb.train.txt", "--out", out,
                                     "--split-fraction", "0.1", "--no-progress"], "text", "tokens/s"),
}


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_prints_its_results_alone_on_stdout(name, inputs, tmp_path):
    arguments, form, note = COMMANDS[name]
    done = treenets(*arguments(inputs, tmp_path / "out"))
    check_results(done.stdout, form)
    if note is not None:
        assert note in done.stderr
    if name == "eval over induced trees":  # kept in the test's own cache, which was empty
        assert f"(kept in {folders.cache_dir() / 'trees'}" in done.stderr


def test_train_and_what_reads_its_run_print_results_alone_on_stdout(trained, tmp_path):
    run, done = trained
    check_results(done.stdout, "text")
    assert f"checkpoint (resume): {run / 'last.pt'}" in done.stdout
    assert "treenets: task lm, model onlstm" in done.stderr  # what starts is a note
    for arguments in (["metrics", run, "--plot", tmp_path / "curve.png"], ["export", run / "best.pt", tmp_path / "m"],
                      ["eval", run / "best.pt", "--split", "test"]):
        done = treenets(*arguments)
        check_results(done.stdout, "json lines" if arguments[0] == "eval" else "text")


def test_a_second_run_with_the_cache_filled_prints_the_same(inputs):
    # the command of the report twice: from the test's empty cache, then with the trees the first run kept there
    arguments = ["eval", "treelstm-sick", "--split", "test", "--data", inputs / "data"]
    first, second = treenets(*arguments), treenets(*arguments)
    assert "induced trees: 6 sentences of SICK test/a.toks" in first.stderr
    assert "induced trees" not in second.stderr  # read from the cache
    assert first.stdout == second.stdout and json.loads(first.stdout)["pairs"] == 6


def test_the_check_finds_a_note_among_results():
    # the check itself: the line of the report is caught, results are not
    with pytest.raises(AssertionError, match="a note on stdout"):
        check_results("induced trees: 4,927 sentences of SICK test/a.toks parsed by onlstm-ptb-small in 5 s\n"
                      "(S (NP the cat))\n", "text")
    with pytest.raises(AssertionError, match="a note on stdout"):
        check_results(f"[1] the cat\nkept in {Path.home() / '.cache'}\n", "text")
    with pytest.raises(json.JSONDecodeError):
        check_results('{"pairs": 6}\nnote: something\n', "json lines")
    check_results('{"pairs": 6}\n{"pairs": 7}\n', "json lines")
    check_results("[1] the cat sat\n(the (cat sat))\n", "text")
