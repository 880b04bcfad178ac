"""The command line and the Python API, end to end on a tiny corpus; bad input exits non-zero with a message."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from helpers import tiny_sick, train_tiny_lm

import treenets
from treenets.cli import build_parser, main
from treenets.commands import all_commands
from treenets.core.errors import TreenetsError


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run folder with a model trained for one epoch on a tiny corpus."""
    return train_tiny_lm(tmp_path_factory.mktemp("cli"))


def _commands(parser, prefix=()):
    """Every command and subcommand of a parser, as argument prefixes."""
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*prefix, name)
                yield from _commands(sub, (*prefix, name))


def test_every_command_has_help(capsys):
    parser = build_parser()
    commands = list(_commands(parser))
    assert {c[0] for c in commands} == set(all_commands()) and ("data", "download") in commands
    for command in [(), *commands]:
        with pytest.raises(SystemExit) as info:
            parser.parse_args([*command, "--help"])
        assert info.value.code == 0, command
        out = capsys.readouterr().out
        assert out.startswith("usage: treenets " + " ".join(command)), command
        assert len(out.splitlines()) > 3, command  # a description or options, not only the usage line
        if command == ("train",):
            assert "--max-minutes" in out and "--set" in out and "--backend" in out


def test_the_parser_imports_no_torch():
    # `treenets --help` and the commands that need no network answer without the seconds torch takes to import.
    code = ("import sys; from treenets.cli import build_parser; parser = build_parser(); parser.format_help(); "
            "parser.parse_args(['metrics', 'run']); print('torch' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


def test_predict_takes_the_inputs_the_predictors_declare(monkeypatch, capsys):
    """A task whose predictor reads a new kind of input gets its `predict` option from that declaration alone;
    predictors that share an input share one option, with both helps."""
    from treenets import tasks
    from treenets.predictors import PredictionInput, Predictor

    class TreePairPredictor(Predictor):
        inputs = (PredictionInput("trees", "tree pairs: two bracketed trees", 2, ("T1", "T2")),)

    class TreePairTask:
        name, Predictor = "tree-pair", TreePairPredictor

    monkeypatch.setattr(tasks, "_TASKS", {**tasks.all_tasks(), "tree-pair": TreePairTask})
    args = build_parser().parse_args(["predict", "model", "--trees", "(X a)", "(X b)"])
    assert args.trees == ["(X a)", "(X b)"] and args.sentence is None
    with pytest.raises(SystemExit):
        build_parser().parse_args(["predict", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--trees T1 T2 tree pairs: two bracketed trees" in help_text
    assert "logic: two bracketed formulas (premise, hypothesis); relatedness: two sentences as typed" in help_text

    class OnePairPredictor(Predictor):  # `--pair` with one value where the others read two
        inputs = (PredictionInput("pair", "one value"),)

    monkeypatch.setattr(TreePairTask, "Predictor", OnePairPredictor)
    with pytest.raises(ValueError, match="OnePairPredictor reads --pair with 1 value"):
        build_parser().parse_args(["predict", "model"])



def test_eval_prints_perplexity(trained, capsys):
    assert main(["eval", str(trained / "run" / "best.pt"), "--split", "test"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert result["split"] == "test" and 1 < result["ppl"] < 44  # better than uniform over 44 words
    assert result["ppl"] == pytest.approx(torch.tensor(result["loss"]).exp().item())


def test_eval_of_several_checkpoints_adds_mean_and_std(trained, capsys):
    best = str(trained / "run" / "best.pt")
    assert main(["eval", best, best, "--split", "valid"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert len(lines) == 3 and lines[2]["checkpoints"] == 2
    assert lines[2]["ppl"]["mean"] == pytest.approx(lines[0]["ppl"]) and lines[2]["ppl"]["std"] == 0.0


def test_eval_of_models_of_different_architectures_has_no_mean(capsys, data_root, tmp_path):
    # a Binary Tree-LSTM beside a Child-Sum one are two models, not two seeds: before, their mean was printed
    tiny_sick(data_root, tmp_path / "sick", pairs=(1, 6, 6))  # the first trees it induces take seconds, not minutes
    assert main(["eval", "treelstm-sick", "treelstm-sick-dependency", "--split", "test", "--data", str(tmp_path)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.strip().splitlines()]
    assert [line["checkpoint"] for line in lines] == ["treelstm-sick", "treelstm-sick-dependency"]


def test_load_scores_sentences_and_reads_distances(trained):
    lm = treenets.load(trained / "run" / "best.pt")
    one = lm.score("the dog of bird")
    assert one.tokens == ["the", "dog", "of", "bird"] and len(one.logprobs) == 5
    assert all(lp < 0 for lp in one.logprobs) and one.perplexity > 1
    batch = lm.score(["the dog of bird", ["a", "zebra"]])
    assert batch[0].logprobs == pytest.approx(one.logprobs, abs=1e-5)  # padding does not change a sentence
    assert batch[1].unknown == ["zebra"]
    distances = lm.distances("The Dog of bird a")  # lower-cased like the vocabulary
    assert distances.shape == (2, 5) and torch.all((distances >= 0) & (distances <= 1))
    with pytest.raises(TreenetsError, match="empty sentence"):
        lm.score("   ")


def test_metrics_table_and_plot(trained, tmp_path, capsys):
    png = tmp_path / "curve.png"
    assert main(["metrics", str(trained / "run"), "--plot", str(png)]) == 0
    assert "valid" in capsys.readouterr().out
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_existing_run_folder_needs_resume_or_overwrite(trained, capsys):
    config = str(trained / "tiny.yaml")
    assert main(["train", config, "--out", str(trained / "run"), "--no-progress"]) == 2
    assert "--resume" in capsys.readouterr().err


@pytest.mark.parametrize("args,message", [
    (["train", "{config}", "--set", "data.path=ptb_lm", "--data", "/nonexistent/data"], "/nonexistent/data"),
    (["train", "{config}", "--set", "model.chunk_sise=3"], "unknown key 'model.chunk_sise'"),
    (["train", "{config}", "--set", "model.hidden_size=13"], "not divisible by chunk_size"),
    (["train", "{config}", "--device", "cuda:7"], "'cuda:7' requested but this machine has"),
    (["parse", "{best}", "a cat", "--device", "cuda:7"], "'cuda:7' requested but this machine has"),
    (["eval", "{best}", "--device", "tpu"], "--device: 'tpu' is not a device"),
    (["eval", "{corrupt}"], "truncated or corrupt"),
    (["eval", "{config}"], "not a treenets checkpoint"),
    (["train"], "give a CONFIG file"),
])
def test_bad_input_exits_2_with_one_message(trained, tmp_path, capsys, args, message):
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes((trained / "run" / "best.pt").read_bytes()[:1000])
    names = {"config": str(trained / "tiny.yaml"), "corrupt": str(corrupt), "best": str(trained / "run" / "best.pt")}
    args = [a.format(**names) for a in args]
    if args[0] == "train":
        args += ["--out", str(tmp_path / "out"), "--no-progress"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("treenets: error:") and message in err
    assert "Traceback" not in err


@pytest.mark.parametrize("args", [["parse-eval", "x.pt", "--treebank", "wsj22", "--batch-size", "0"],
                                  ["baselines", "--treebank", "wsj22", "--random-draws", "-1"],
                                  ["eval", "x.pt", "--batch-size", "many"], ["train", "c.yaml", "--threads", "0"],
                                  ["syneval", "x.pt", "--limit", "0"]])
def test_counts_on_the_command_line_must_be_positive(args, capsys):
    # Before: `parse-eval --batch-size 0` ended in "ValueError: range() arg 3 must not be zero".
    with pytest.raises(SystemExit) as info:
        main(args)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "expected a positive number" in err or "is not a whole number" in err
    assert "Traceback" not in err


def test_missing_training_file_names_the_file(trained, tmp_path, capsys):
    (tmp_path / "corpus").mkdir()
    assert main(["train", str(trained / "tiny.yaml"), "--set", f"data.path={tmp_path / 'corpus'}",
                 "--out", str(tmp_path / "out")]) == 2
    assert "ptb.train.txt: missing" in capsys.readouterr().err


def test_data_check_on_staged_data(data_root, capsys):
    assert main(["data", "check", "ptb", "--data", str(data_root)]) == 0
    out = capsys.readouterr().out
    assert out.count("ok ") == 3 and "3 ok, 0 missing, 0 wrong" in out


@pytest.fixture
def torch_threads():
    """The test may change torch's threads: set back after it."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


MODEL_COMMANDS = {"parse": ["m", "a sentence"], "predict": ["m"], "serve": ["m"], "eval": ["m"],
                  "parse-eval": ["m", "--treebank", "t"], "syneval": ["m"], "export": ["m", "out"]}


def test_every_command_that_runs_a_model_computes_on_the_threads_asked(monkeypatch, capsys, torch_threads):
    # Before: parse, predict and serve had no --threads, and no setting reached them: every core.
    seen = {}

    def record(args):
        seen[args.command] = torch.get_num_threads()
        return 0

    for name in MODEL_COMMANDS:
        monkeypatch.setattr(all_commands()[name], "run", record)
    for name, arguments in MODEL_COMMANDS.items():
        for argv, environment, threads in ((["--threads", "2"], None, 2), ([], "1", 1), (["--threads", "2"], "1", 2)):
            torch.set_num_threads(3)
            if environment:
                monkeypatch.setenv("TREENETS_THREADS", environment)
            else:
                monkeypatch.delenv("TREENETS_THREADS", raising=False)
            assert main([name, *arguments, *argv]) == 0
            assert seen.pop(name) == threads, (name, argv, environment)
    monkeypatch.setenv("TREENETS_THREADS", "two")
    assert main(["parse", "m", "a sentence"]) == 2
    assert "treenets: error: $TREENETS_THREADS='two': expected a whole number of threads, at least 1" in \
        capsys.readouterr().err and not seen


def test_training_and_the_api_read_the_threads_variable_too(trained, config_file, tmp_path, monkeypatch,
                                                             torch_threads):
    # `train.threads` (here null) falls back on $TREENETS_THREADS, as `treenets.load` does.
    monkeypatch.setenv("TREENETS_THREADS", "2")
    torch.set_num_threads(1)
    assert main(["train", str(config_file(train={"threads": None, "epochs": 1, "max_steps": 1})), "--out",
                 str(tmp_path / "run"), "--no-progress"]) == 0
    assert torch.get_num_threads() == 2
    monkeypatch.setenv("TREENETS_THREADS", "1")
    treenets.load(trained / "run" / "best.pt")
    assert torch.get_num_threads() == 1
    monkeypatch.setenv("TREENETS_THREADS", "0")
    with pytest.raises(TreenetsError, match=r"^\$TREENETS_THREADS='0': expected a whole number"):
        treenets.load(trained / "run" / "best.pt")


@pytest.mark.parametrize("argv,usage", [(["predict", "m", "--bogus"], "usage: treenets predict "),
                                        (["eval", "m", "--bogus"], "usage: treenets eval "),
                                        (["data", "prepare", "t.txt", "--out", "c", "--bogus"],
                                         "usage: treenets data prepare ")])
def test_a_wrong_option_shows_the_usage_of_its_command(argv, usage, capsys):
    # Before: the top level's usage (`treenets [-h] [--version] [--debug] COMMAND ...`), which names no option.
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and error.startswith(usage), error
    assert error.rstrip().endswith("error: unrecognized arguments: --bogus")


def test_a_reader_that_stops_reading_ends_the_command_quietly():
    """`treenets configs | head`: the pipe closed before the output is written ends the command without a word on
    stderr (before: `treenets: error: Broken pipe`)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # a reader already gone: every write to the pipe fails
    try:
        done = subprocess.run([sys.executable, "-m", "treenets", "configs"], stdout=write_end, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    finally:
        os.close(write_end)
    assert done.stderr == "" and done.returncode == 1
