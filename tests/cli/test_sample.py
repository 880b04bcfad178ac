"""`treenets sample` and `GrammarModel.sample`: sentences drawn from the shipped grammars, with their trees; the same
seed gives the same sentences; results on stdout, the seed and the redraws on stderr; a model that is not a grammar
and counts out of range are refused in one line."""

from __future__ import annotations

import json
import math

import nltk
import pytest
import torch

import treenets
from treenets.cli import main
from treenets.predictors.pcfg import labelled_bracketing


@pytest.fixture(autouse=True)
def threads_restored():
    """`--threads` sets torch's threads for the process: set back after each test."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def sample(capsys, *args) -> tuple[int, str, str]:
    """`treenets sample ARGS --threads 1`: the exit status, stdout and stderr."""
    code = main(["sample", *args, "--threads", "1"])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_seed_gives_the_same_sentences_one_a_line(capsys):
    code, out, err = sample(capsys, "neural-pcfg-ptb", "-n", "3", "--seed", "1")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert len(lines) == 3 and all(line.strip() and "  " not in line for line in lines)
    assert sample(capsys, "neural-pcfg-ptb", "-n", "3", "--seed", "1")[1] == out
    assert sample(capsys, "neural-pcfg-ptb", "-n", "3", "--seed", "2")[1] != out
    assert torch.get_num_threads() == 1  # --threads reached torch


def test_without_a_seed_the_seed_chosen_is_named_on_stderr(capsys):
    code, out, err = sample(capsys, "neural-pcfg-ptb", "-n", "2")
    assert code == 0 and len(out.splitlines()) == 2
    seed = err.split()[1]
    assert err.startswith(f"seed {seed} (--seed {seed} draws these sentences again)")
    assert sample(capsys, "neural-pcfg-ptb", "-n", "2", "--seed", seed)[1] == out


def test_tree_and_json_show_the_sentences_of_the_seed_with_their_trees(capsys):
    plain = sample(capsys, "neural-pcfg-ptb", "-n", "3", "--seed", "1")[1].splitlines()
    code, out, err = sample(capsys, "neural-pcfg-ptb", "-n", "3", "--seed", "1", "--tree")
    assert code == 0 and err == ""
    # as parse draws a grammar's tree: the words, the tree bracketed, its drawing, its labels
    assert [line for line in out.splitlines() if line.startswith("[")] == \
        [f"[{i}] {sentence}" for i, sentence in enumerate(plain, start=1)]
    assert out.count("    labelled: (NT-") == 3 and out.count("    log p(words, tree) = -") == 3
    assert out.splitlines()[1].startswith("(X ")

    code, out, err = sample(capsys, "neural-pcfg-ptb", "-n", "3", "--seed", "1", "--json")
    assert code == 0 and err == ""
    records = [json.loads(line) for line in out.splitlines()]
    assert [" ".join(r["words"]) for r in records] == plain
    for record in records:
        n = len(record["words"])
        assert set(record) == {"words", "tree", "labelled_tree", "spans", "tags", "log_prob"}
        assert len(record["spans"]) == n - 1 and record["spans"][-1][:2] == [0, n - 1] and len(record["tags"]) == n
        assert nltk.Tree.fromstring(record["labelled_tree"]).leaves() == record["words"]
        assert nltk.Tree.fromstring(record["tree"]).leaves() == record["words"]
        assert math.isfinite(record["log_prob"]) and record["log_prob"] < 0


def test_a_compound_grammar_draws_too_and_the_length_limit_is_kept(capsys):
    code, out, err = sample(capsys, "compound-pcfg-ptb", "-n", "4", "--seed", "5", "--json", "--max-length", "4")
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert len(records) == 4 and all(2 <= len(r["words"]) <= 4 for r in records)
    # the longer trees drawn again are counted on stderr (nearly every tree of this grammar is longer than 4)
    assert err.endswith("trees longer than --max-length 4 words drawn again in their place\n")
    assert sample(capsys, "compound-pcfg-ptb", "-n", "4", "--seed", "5", "--json", "--max-length", "4")[1] == out


def test_the_api_draws_labelled_trees_the_grammar_scores():
    model = treenets.load("neural-pcfg-ptb")
    samples = model.sample(5, seed=3, max_length=12)
    assert [s.words for s in model.sample(5, seed=3, max_length=12)] == [s.words for s in samples]
    for drawn in samples:
        assert 2 <= len(drawn.words) <= 12 and all(word in model.vocab for word in drawn.words)
        assert drawn.labelled == labelled_bracketing(drawn.words, drawn.spans, drawn.tags)
        assert drawn.tree.leaves() == drawn.words and drawn.log_prob == drawn.score
    # the grammar's most probable tree of each sentence scores at least the tree it was drawn with
    parses = model.parse([s.words for s in samples], pretokenized=True)
    assert all(parse.score >= drawn.log_prob - 1e-3 for parse, drawn in zip(parses, samples))
    with pytest.raises(treenets.TreenetsError, match="n 0: expected how many sentences to draw"):
        model.sample(0)
    with pytest.raises(treenets.TreenetsError, match="max_length 1: expected a whole number of at least 2"):
        model.sample(1, max_length=1)


def test_a_model_that_is_not_a_grammar_is_refused_in_one_line(capsys):
    code, out, err = sample(capsys, "onlstm-ptb-small", "-n", "2")
    assert code == 2 and out == ""
    assert err.startswith("treenets: error: onlstm-ptb-small: not a grammar (its model is onlstm, of the lm task): "
                          "sample draws sentences from a grammar (a model of the pcfg task")
    assert len(err.splitlines()) == 1 and "Traceback" not in err


@pytest.mark.parametrize("args,message", [
    (["-n", "0"], "argument -n: 0: expected a positive number"),
    (["-n", "-3"], "argument -n: -3: expected a positive number"),
    (["--seed", "-1"], "argument --seed: -1: expected a seed from 0 to 2^64 - 1"),
    (["--max-length", "1"], "argument --max-length: 1: expected at least 2"),
    (["--tree", "--json"], "argument --json: not allowed with argument --tree"),
])
def test_counts_out_of_range_are_refused_before_any_output(capsys, args, message):
    with pytest.raises(SystemExit) as info:
        main(["sample", "neural-pcfg-ptb", *args])
    out, err = capsys.readouterr()
    assert info.value.code == 2 and out == "" and message in err and "Traceback" not in err
