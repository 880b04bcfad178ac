"""`treenets ensemble` over files and models, and `treenets parse --ensemble`: teachers built from WSJ 24 whose
ensemble is known, files of several formats and word forms in one ensemble, a system that covers part of the
treebank, and clear errors."""

from __future__ import annotations

import json
import re

import pytest

from treenets.cli import main
from treenets.trees import left_branching, right_branching, spans
from treenets.trees.draw import bracketed, preterminal_bracketed
from treenets.trees.ptb import load_gold, normalize_word
from treenets.trees.walk import with_words

pytestmark = pytest.mark.slow


@pytest.fixture
def treebank(tmp_path, data_root):
    """The first 60 trees of WSJ 24, and their sentences."""
    lines = (data_root / "wsj_trees" / "dev_24.LDC99T42").read_text().splitlines()[:60]
    path = tmp_path / "wsj24-head.txt"
    path.write_text("\n".join(lines) + "\n")
    return path, load_gold(path)


def binarized(tree):
    """A gold tree (nested lists) made binary: each node's children grouped from the right."""
    if not isinstance(tree, list):
        return tree
    children = [binarized(child) for child in tree]
    while len(children) > 2:
        children = [*children[:-2], [children[-2], children[-1]]]
    return children[0] if len(children) == 1 else children


def write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def read_output(path) -> list:
    """The trees of an ensemble's file, as nested lists of their words (labels `X` dropped)."""
    from treenets.trees.formats import tokens_of, tree_of

    return [tree_of(tokens_of(line, str(path)), True) for line in path.read_text().splitlines()]


def test_three_copies_of_the_gold_outvote_two_baselines(tmp_path, treebank, capsys):
    """Teachers built from the treebank: the gold trees (made binary) three times, right- and left-branching
    trees: the generative ensemble is the binary gold tree of every sentence; over the treebank's words."""
    path, sentences = treebank
    kept = [s for s in sentences if s.words]
    gold = [binarized(s.gold) for s in kept]
    files = [write(tmp_path / f"gold{k}.txt", [bracketed(with_words(t, s.forms)) for t, s in zip(gold, kept)])
             for k in range(3)]
    files.append(write(tmp_path / "right.txt", [bracketed(right_branching(s.forms)) for s in kept]))
    files.append(write(tmp_path / "left.txt", [bracketed(left_branching(s.forms)) for s in kept]))
    out = tmp_path / "ensemble.txt"
    assert main(["ensemble", *files, "--treebank", str(path), "--output", str(out)]) == 0
    table = capsys.readouterr().out
    written = read_output(out)
    assert len(written) == len(kept)
    assert [spans(t) for t in written] == [spans(g) for g in gold]
    assert [leaves(t) for t in written] == [s.forms for s in kept]  # the treebank's words, as it writes them
    assert re.search(r"\| .*gold0\.txt \| 1 \| 60 \| 100\.0 \|", table)
    # Weighted: the right-branching file ten times as much as the others, it wins.
    assert main(["ensemble", *files, "--treebank", str(path), "--output", str(out), "--weights", "1,1,1,10,1"]) == 0
    assert [spans(t) for t in read_output(out)] == [spans(right_branching(s.words)) for s in kept]
    # Selective: every sentence's tree is one of the teachers' (here the gold).
    assert main(["ensemble", *files, "--treebank", str(path), "--output", str(out), "--mode", "selective"]) == 0
    assert [spans(t) for t in read_output(out)] == [spans(g) for g in gold]


def leaves(tree):
    return [leaf for child in tree for leaf in leaves(child)] if isinstance(tree, list) else [tree]


def test_files_of_several_formats_and_word_forms_and_one_of_part_of_the_treebank(tmp_path, treebank, capsys):
    """One file bracketed with preterminals and the numbers as NN, one of JSON lines in lower case, one of span
    lists, and one that has only the first 20 sentences (shuffled): they are aligned as parse-eval aligns them, and
    the ensemble covers every sentence some system parsed."""
    path, sentences = treebank
    kept = [s for s in sentences if s.words]
    gold = [binarized(s.gold) for s in kept]

    def nn(word):
        return re.sub(r"(?<=N)(?:[.,:-]|\\\\/)+(?=N)", "", normalize_word(word))

    squeezed = write(tmp_path / "nn.txt", [preterminal_bracketed(with_words(t, [nn(w) for w in s.forms]))
                                           for t, s in zip(gold, kept)])
    lines = write(tmp_path / "trees.jsonl", [json.dumps({"tree": with_words(t, [w.lower() for w in s.forms])})
                                             for t, s in zip(gold, kept)])
    span_lists = write(tmp_path / "spans.jsonl", [json.dumps([list(span) for span in sorted(spans(t, True))])
                                                  for t in gold])
    part = list(zip(gold[:20], kept[:20]))[::-1]
    partial = write(tmp_path / "part.txt", [bracketed(right_branching(s.forms)) for _, s in part])
    out = tmp_path / "ensemble.txt"
    assert main(["ensemble", squeezed, lines, span_lists, partial, "--treebank", str(path),
                 "--output", str(out)]) == 0
    captured = capsys.readouterr()
    assert "after normalising numbers" in captured.err or "numbers" in captured.err
    assert [spans(t) for t in read_output(out)] == [spans(g) for g in gold]
    assert re.search(r"\| .*part\.txt \| 1 \| 20 \| ", captured.out)  # it took part in its 20 sentences


def test_a_sentence_no_system_parsed_is_left_out_and_said(tmp_path, treebank, capsys):
    path, sentences = treebank
    kept = [s for s in sentences if s.words]
    first = write(tmp_path / "a.txt", [bracketed(right_branching(s.forms)) for s in kept[:10]])
    second = write(tmp_path / "b.txt", [bracketed(left_branching(s.forms)) for s in kept[5:12]])
    out = tmp_path / "ensemble.txt"
    assert main(["ensemble", first, second, "--treebank", str(path), "--output", str(out)]) == 0
    assert len(read_output(out)) == 12
    assert f"{len(kept) - 12:,} sentences no system parsed, left out" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--weights", "1,2,3"], "3 weights for 2 systems"),
    (["--weights", "1,x"], "expected 2 numbers separated by commas"),
    (["--weights", "0,0"], "not all 0"),
])
def test_bad_weights_are_clear_errors(tmp_path, treebank, capsys, argv, message):
    path, sentences = treebank
    kept = [s for s in sentences if s.words]
    files = [write(tmp_path / f"{k}.txt", [bracketed(right_branching(s.forms)) for s in kept]) for k in "ab"]
    assert main(["ensemble", *files, "--treebank", str(path), "--output", str(tmp_path / "o.txt"), *argv]) == 2
    assert message in capsys.readouterr().err


def test_parse_ensemble_of_models_draws_the_combined_tree_and_each_members_agreement(capsys):
    text = "The U.S. economy grew 3.5% in 2019, analysts said."
    assert main(["parse", "--ensemble", "onlstm-ptb-small", "prpn-ptb-small", "structformer-ptb-small", "--json",
                 text]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["mode"] == "generative" and [m["model"] for m in record["members"]] == [
        "onlstm-ptb-small", "prpn-ptb-small", "structformer-ptb-small"]
    import treenets
    from treenets.trees.ensemble import combine

    members = [treenets.load(name).parse(text).nested for name in ("onlstm-ptb-small", "prpn-ptb-small",
                                                                   "structformer-ptb-small")]
    expected, agreement = combine(record["tokens"], members)
    assert record["tree"] == bracketed(expected)
    assert [m["agreement"] for m in record["members"]] == pytest.approx(agreement)
    assert main(["parse", "--ensemble", "onlstm-ptb-small", text]) == 2
    assert "an ensemble needs two models or more" in capsys.readouterr().err


def test_an_ensemble_folder_is_a_model_every_command_that_parses_takes(tmp_path, treebank, capsys):
    """A folder holding `ensemble.json` (what `ensemble --save-as` writes, and the zoo's `*-ensemble` entries are)
    loads as its members' ensemble: `treenets.load`, `parse`, `parse-eval`, with its weights and mode."""
    import treenets
    from treenets.predictors.ensemble import EnsembleParser

    folder = tmp_path / "two-ensemble"
    folder.mkdir()
    (folder / "ensemble.json").write_text(json.dumps({"members": ["onlstm-ptb-small", "prpn-ptb-small"],
                                                      "weights": [1.0, 3.0], "mode": "selective"}))
    parser = treenets.load(str(folder))
    assert isinstance(parser, EnsembleParser) and parser.weights == [1.0, 3.0] and parser.mode == "selective"
    text = "The cat sat on the mat."
    assert main(["parse", str(folder), "--json", text]) == 0
    record = json.loads(capsys.readouterr().out)
    # selective, with two members: the one weighted more is the other's best partner, so the first one's tree wins
    # (each member's agreement is with the other's tree alone: the tie goes to the first)
    assert record["tree"] in [m["tree"] for m in record["members"]] and record["mode"] == "selective"
    path, _ = treebank
    assert main(["parse-eval", str(folder), "--treebank", str(path)]) == 0
    assert str(folder) in capsys.readouterr().out
    (folder / "ensemble.json").write_text("{}")
    assert main(["parse", str(folder), text]) == 2
    assert "not an ensemble's description" in capsys.readouterr().err
