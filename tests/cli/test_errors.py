"""Issue 15, no traceback on any bad input: every expected failure ends in one `treenets: error:` line naming the
file or option (exit 2), a bug in one `treenets: internal error:` line (exit 1), unless --debug asks for the
traceback."""

from __future__ import annotations

import os

import pytest
import torch
from helpers import train_tiny_lm

from treenets.cli import main
from treenets.commands import all_commands


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run folder with a model trained for one epoch on a tiny corpus."""
    return train_tiny_lm(tmp_path_factory.mktemp("errors"))


def _one_error_line(err: str, *fragments) -> str:
    """The single `treenets: error:` line of `err` (stderr), checked to hold every fragment."""
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("treenets: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


# --- the error boundary --------------------------------------------------------------------------------------


def _failing_command(exc):
    def command(args):
        raise exc

    return command


def test_a_bug_is_one_internal_error_line_unless_debugging(monkeypatch, capsys):
    monkeypatch.setattr(all_commands()["models"], "run", _failing_command(ZeroDivisionError("division by zero\nmore")))
    monkeypatch.delenv("TREENETS_DEBUG", raising=False)
    assert main(["models"]) == 1
    assert capsys.readouterr().err == ("treenets: internal error: ZeroDivisionError: division by zero (run with "
                                       "--debug or TREENETS_DEBUG=1 for the traceback)\n")
    with pytest.raises(ZeroDivisionError):
        main(["--debug", "models"])
    monkeypatch.setenv("TREENETS_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        main(["models"])


def test_a_failed_file_operation_names_the_file(monkeypatch, capsys):
    monkeypatch.setattr(all_commands()["models"], "run",
                        _failing_command(PermissionError(13, "Permission denied", "/x/y.pt")))
    monkeypatch.delenv("TREENETS_DEBUG", raising=False)
    assert main(["models"]) == 2
    _one_error_line(capsys.readouterr().err, "/x/y.pt: Permission denied")


# --- checkpoint files ------------------------------------------------------------------------------------------

COMMANDS = {
    "eval": ["eval", "{path}"],
    "parse": ["parse", "{path}", "a cat"],
    "parse-eval": ["parse-eval", "{path}", "--treebank", "{treebank}"],
    "predict": ["predict", "{path}", "--sentence", "a cat"],
    "syneval": ["syneval", "{path}", "--cases", "simple", "--limit", "1"],
    "train --resume": ["train", "--resume", "{path}", "--out", "{out}", "--no-progress"],
}


def _fake_checkpoint(path, kind, best):
    if kind == "zero-byte":
        path.write_bytes(b"")
    elif kind == "truncated":
        path.write_bytes(best.read_bytes()[:3000])
    elif kind == "text":
        path.write_text("task: lm\n")
    elif kind == "folder":
        path.mkdir()
    elif kind == "tag only":  # the treenets format tag without config, vocab and weights
        torch.save({"format": "treenets-checkpoint", "version": 1, "kind": "model"}, path)
    elif kind == "no weights":
        saved = torch.load(best, weights_only=True)
        del saved["model"]
        torch.save(saved, path)
    elif kind == "other program":
        torch.save(torch.nn.Linear(2, 2).state_dict(), path)
    elif kind == "tensor in config":
        saved = torch.load(best, weights_only=True)
        saved["config"]["optim"]["lr"] = torch.tensor(1.0)
        torch.save(saved, path)


EXPECTED = {"zero-byte": "empty file (0 bytes)", "truncated": "truncated or corrupt checkpoint",
            "text": "not a treenets checkpoint, nor any torch file", "folder": "not a treenets model folder",
            "tag only": "incomplete model checkpoint: no config, vocab, model",
            "no weights": "incomplete model checkpoint: no model",
            "other program": "a torch file of a dict of 2 entries ('weight', 'bias') without the 'treenets-checkpoint'",
            "tensor in config": "(saved config): not plain data"}


@pytest.mark.parametrize("kind", list(EXPECTED))
@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_file_that_is_no_complete_checkpoint_is_one_line(trained, tmp_path, capsys, request, command, kind):
    # Before: a zero-byte file ended in IndexError, a text file or a checkpoint without weights in KeyError, a
    # tensor in the saved config in yaml's RepresenterError, from whichever command read it.
    if command == "syneval":
        request.getfixturevalue("data_root")
    path = tmp_path / "model.pt"
    _fake_checkpoint(path, kind, trained / "run" / "best.pt")
    treebank = tmp_path / "tiny.mrg"
    treebank.write_text("( (S (NP (DT the) (NN cat)) (VP (VBD sat))) )\n")
    names = {"path": str(path), "treebank": str(treebank), "out": str(tmp_path / "out")}
    assert main([a.format(**names) for a in COMMANDS[command]]) == 2
    resume_folder = (command, kind) == ("train --resume", "folder")  # read as a file, not as a model folder
    expected = "not a file; expected a checkpoint" if resume_folder else EXPECTED[kind]
    _one_error_line(capsys.readouterr().err, str(path), expected)


def test_resume_needs_a_complete_train_state(trained, tmp_path, capsys):
    saved = torch.load(trained / "run" / "last.pt", weights_only=True)
    del saved["optimizer"]
    torch.save(saved, tmp_path / "last.pt")
    assert main(["train", "--resume", str(tmp_path / "last.pt"), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    _one_error_line(capsys.readouterr().err, "incomplete train-state checkpoint: no optimizer")


# --- output paths, checked before the work ---------------------------------------------------------------------

OUTPUTS = [
    (["train", "{config}", "--out", "{file}"], "--out {file}: {file} is a file, not a folder"),
    (["train", "{config}", "--out", "{file}/run"], "--out {file}/run: {file} is a file, not a folder"),
    (["parse-eval", "{best}", "--treebank", "{treebank}", "--output", "{file}"], "--output {file}: {file} is a file"),
    (["parse-eval", "{best}", "--treebank", "{treebank}", "--output", "{file}/out"], "--output {file}/out: {file} is"),
    (["parse", "{best}", "a cat", "--svg", "{file}"], "--svg {file}: {file} is a file, not a folder"),
    (["eval", "{best}", "--plot", "{file}/p.png"], "--plot {file}/p.png: {file} is a file, not a folder"),
    (["eval", "{best}", "--plot", "{folder}"], "--plot {folder}: is a folder (expected a file name)"),
    (["metrics", "{run}", "--plot", "{file}/c.png"], "--plot {file}/c.png: {file} is a file, not a folder"),
    (["metrics", "{run}", "--plot", "{folder}/curve.xyz"], "--plot {folder}/curve.xyz: expected a file name ending in"),
    (["syneval", "{best}", "--limit", "1", "--output", "{folder}"], "--output {folder}: is a folder"),
    (["syneval", "{best}", "--limit", "1", "--output", "{file}/s.json"], "--output {file}/s.json: {file} is a file"),
    (["syneval", "{best}", "--limit", "1", "--output", "{best}"], "--output {best}: is the checkpoint of model 1 "
                                                                  "({best}), an input of this command"),
]


@pytest.mark.parametrize("args,message", OUTPUTS, ids=[" ".join(a[:1] + a[-2:-1]) for a, _ in OUTPUTS])
def test_output_paths_are_checked_before_the_work(trained, tmp_path, capsys, args, message):
    # Before: the work ran first (training, parsing a treebank, evaluating), then a traceback from the write.
    names = {"config": str(trained / "tiny.yaml"), "best": str(trained / "run" / "best.pt"),
             "run": str(trained / "run"), "file": str(tmp_path / "file"), "folder": str(tmp_path / "folder"),
             "treebank": str(tmp_path / "tiny.mrg")}
    (tmp_path / "file").write_text("not a folder\n")
    (tmp_path / "folder").mkdir()
    (tmp_path / "tiny.mrg").write_text("( (S (NP (DT the) (NN cat)) (VP (VBD sat))) )\n")
    assert main([a.format(**names) for a in args] + (["--no-progress"] if args[0] == "train" else [])) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # nothing computed
    _one_error_line(captured.err, message.format(**names))


INTO_A_MODEL_FOLDER = [
    ["syneval", "{model}", "--limit", "1", "--output", "{model}/metrics.json"],  # (before: replaced the card's)
    ["eval", "{model}", "--output", "{model}/eval"],
    ["eval", "{model}", "--plot", "{model}/curve.png"],
    ["parse", "{model}", "a cat", "--svg", "{model}"],
    ["parse-eval", "{model}", "--treebank", "{treebank}", "--output", "{model}/report"],
    ["metrics", "{run}", "--plot", "{model}/curve.png"],
    ["ensemble", "{best}", "{model}", "--treebank", "{treebank}", "--output", "{model}/trees.txt"],
    ["data", "prepare", "{treebank}", "--out", "{model}/corpus"],
    ["distill", "{best}", "--corpus", "{treebank}", "--out", "{model}/distill"],
    ["configs", "lstm-ptb-small", "--out", "{model}/config.yaml"],
]


@pytest.mark.parametrize("args", INTO_A_MODEL_FOLDER, ids=[" ".join(a[:1] + a[-2:-1]) for a in INTO_A_MODEL_FOLDER])
def test_no_command_writes_into_a_model_folder(trained, tmp_path, capsys, args):
    """A model folder holds its model's files only: an output naming it or a path in it is refused before any
    work, nothing written there (before: `syneval --output MODEL/metrics.json` replaced the model's card figures)."""
    model = tmp_path / "model"
    assert main(["export", str(trained / "run" / "best.pt"), str(model)]) == 0
    before = {p.name: p.read_bytes() for p in model.iterdir()}
    (tmp_path / "tiny.mrg").write_text("( (S (NP (DT the) (NN cat)) (VP (VBD sat))) )\n")
    names = {"model": str(model), "best": str(trained / "run" / "best.pt"), "run": str(trained / "run"),
             "treebank": str(tmp_path / "tiny.mrg")}
    capsys.readouterr()
    assert main([a.format(**names) for a in args]) == 2
    captured = capsys.readouterr()
    option, path = args[-2], args[-1].format(**names)
    where = "is" if path == str(model) else "lies in"
    _one_error_line(captured.err, f"{option} {path}: {where} the model folder {model}, which holds nothing but a "
                                  "model's own files")
    assert {p.name: p.read_bytes() for p in model.iterdir()} == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only folder")
def test_a_read_only_output_folder(trained, tmp_path, capsys):
    folder = tmp_path / "read-only"
    folder.mkdir(mode=0o555)
    assert main(["train", str(trained / "tiny.yaml"), "--out", str(folder / "run"), "--no-progress"]) == 2
    _one_error_line(capsys.readouterr().err, f"--out {folder / 'run'}: cannot create the folder")


# --- other inputs ------------------------------------------------------------------------------------------------


def test_parse_layer_all_prints_every_layer(trained, capsys):
    # Before: `--layer all` drew layer 1 only, silently.
    assert main(["parse", str(trained / "run" / "best.pt"), "a cat of dog", "--layer", "all"]) == 0
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("layer ")] == ["layer 1:", "layer 2:", "layer mean:"]


def test_predict_tree_to_a_language_model(trained, capsys):
    # Before: --tree was ignored beside --sentence, and alone answered that --sentence was missing.
    best = str(trained / "run" / "best.pt")
    assert main(["predict", best, "--sentence", "a cat", "--tree", "(X (X a) (X cat))"]) == 2
    _one_error_line(capsys.readouterr().err, "a language model reads --sentence only, not --tree")
    assert main(["predict", best, "--tree", "(X (X a) (X cat))"]) == 2
    _one_error_line(capsys.readouterr().err, "not --tree")


@pytest.mark.parametrize("device", ["meta", "mps"])
def test_devices_treenets_does_not_run_on(trained, capsys, device):
    # Before: `meta` ended in a NotImplementedError from torch, `mps` in a RuntimeError.
    assert main(["parse", str(trained / "run" / "best.pt"), "a cat", "--device", device]) == 2
    _one_error_line(capsys.readouterr().err, f"device: '{device}' is not supported (expected auto, cpu, cuda")


@pytest.mark.parametrize("line", ["[1, 2]", '{"step": 3}', '{"event": "eval", "step": 3}'])
def test_a_metrics_line_that_is_no_record_is_named(tmp_path, capsys, line):
    # Before: KeyError or TypeError tracebacks from the table.
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"event": "train", "step": 1, "epoch": 1, "loss": 3.0}\n' + line + "\n")
    assert main(["metrics", str(path)]) == 2
    _one_error_line(capsys.readouterr().err, f"{path}:2: not a metrics record")


@pytest.mark.parametrize("kind", ["folder", "binary"])
def test_config_and_sentence_files_that_are_not_text(trained, tmp_path, capsys, kind):
    # Before: IsADirectoryError and UnicodeDecodeError tracebacks from `train`.
    path = tmp_path / "input"
    path.mkdir() if kind == "folder" else path.write_bytes(bytes(range(256)))
    expected = "a folder" if kind == "folder" else "binary file"
    assert main(["train", str(path), "--out", str(tmp_path / "out"), "--no-progress"]) == 2
    _one_error_line(capsys.readouterr().err, f"{path}: {expected} (expected a YAML config file)")
    assert main(["parse", str(trained / "run" / "best.pt"), "--file", str(path)]) == 2
    _one_error_line(capsys.readouterr().err, f"{path}: {expected} (expected --file: a text file of sentences")


def test_plotting_an_empty_metrics_file(tmp_path, capsys):
    # Before: an empty figure was drawn and reported as the plot.
    (tmp_path / "metrics.jsonl").write_text("")
    assert main(["metrics", str(tmp_path), "--plot", str(tmp_path / "curve.png")]) == 2
    _one_error_line(capsys.readouterr().err, f"--plot: {tmp_path} holds no records yet")
    assert not (tmp_path / "curve.png").exists()


@pytest.mark.parametrize("argv", [
    ["parse-eval", "{model}", "--treebank", "nltk-sample", "--output", ""],
    ["eval", "{model}", "--output", " "],
    ["parse", "{model}", "the cat", "--svg", ""],
    ["ensemble", "{model}", "{model}", "--treebank", "nltk-sample", "--output", ""],
    ["train", "{config}", "--out", ""],
])
def test_an_empty_output_name_is_refused_not_taken_for_none(trained, capsys, argv):
    """Before, `--output ''` was no `--output`: exit 0, no report written, nothing said (issue 65)."""
    argv = [a.format(model=trained / "run" / "best.pt", config=trained / "tiny.yaml") for a in argv]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert "expected a file or folder name" in capsys.readouterr().err


def test_parse_json_distances_leave_out_what_no_tree_reads(capsys):
    """A StructFormer's distance after the last word (its 1e9 sentinel, read by no tree) is null in `--json
    --distances` and `-` in the text, as `serve` and the report leave it out (issue 65)."""
    assert main(["parse", "structformer-ptb-small", "--json", "--distances", "The cat sat on the mat."]) == 0
    distances = __import__("json").loads(capsys.readouterr().out)["distances"]
    assert distances[0][-1] is None and all(abs(d) < 1e3 for d in distances[0][:-1])
    assert main(["parse", "structformer-ptb-small", "--distances", "The cat sat."]) == 0
    assert capsys.readouterr().out.rstrip().splitlines()[-1].endswith("sat=-")


def test_the_end_of_options_marker_after_an_option_makes_the_rest_sentences(capsys):
    """`parse MODEL --json -- '-- well, ...'`: the standard `--` was refused once an option preceded it (issue 65)."""
    assert main(["parse", "onlstm-ptb-small", "--json", "--", "-- well, the cat sat"]) == 0
    record = __import__("json").loads(capsys.readouterr().out)
    assert record["text"] == "-- well, the cat sat" and record["tokens"] == ["well", "the", "cat", "sat"]


def test_a_set_of_a_list_whose_item_is_wrong_is_named(capsys):
    """The error of an item of a list given by `--set` names that `--set` (it named the config file: issue 65)."""
    assert main(["train", "structformer-ptb-small", "--set", "model.relations=[parent,uncle]", "--out",
                 "unused", "--max-steps", "1"]) == 2
    _one_error_line(capsys.readouterr().err, "--set model.relations=[parent,uncle]: model.relations.1")


@pytest.mark.parametrize(("content", "fragments"), [
    ("  \n\n \t\n", ["white space only: no system in it (expected a file of trees, a CoNLL file of dependency "
                     "trees or a treenets checkpoint)"]),
    ("1 The _ DT DT _ 2 det _ _\n2 cat _ NN NN _ 0 root _ _\n",
     ["no reading fits it", "not a file of trees (bracketed, jsonl, spans), whose first character is '(', '[' or "
      "'{', not '1'", "not a CoNLL file: its first line has 1 tab-separated column where CoNLL has 10 (10 separated "
      "by spaces: CoNLL separates them by tabs)", "not a treenets checkpoint, nor any torch file: it begins with "
      "b'1 Th', where a torch file begins with PK or \\x80"]),
])
@pytest.mark.parametrize("command", ["parse-eval", "ensemble"])
def test_a_system_file_no_reading_fits_says_what_was_tried(tmp_path, capsys, content, fragments, command):
    """A system that is a file, and no checkpoint, was called "not a treenets checkpoint" alone (issue 65)."""
    (tmp_path / "tiny.mrg").write_text("( (S (NP (DT The) (NN cat)) (VP (VBD sat))) )\n")
    (tmp_path / "right.txt").write_text("(X The (X cat sat))\n")
    (tmp_path / "system.txt").write_text(content)
    argv = [command, tmp_path / "right.txt", tmp_path / "system.txt", "--treebank", tmp_path / "tiny.mrg"]
    argv += ["--output", tmp_path / "ens.txt"] if command == "ensemble" else []
    assert main([str(a) for a in argv]) == 2
    _one_error_line(capsys.readouterr().err, f"{tmp_path / 'system.txt'}: ", *fragments)
