"""`treenets ensemble` over files and models, and `treenets parse --ensemble`: teachers built from WSJ 24 whose
ensemble is known, files of several formats and word forms in one ensemble, a system that covers part of the
treebank, and clear errors."""

from __future__ import annotations

import json
import re
from pathlib import Path

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
    (["--weights", "1,2,3"], "--weights: 3 weights for 2 members"),
    (["--weights", "1,x"], "expected 2 numbers separated by commas"),
    (["--weights", "0,0"], "not all 0"),
    (["--weights", "inf,1"], "expected finite numbers of at least 0"),
    (["--weights", "nan,1"], "expected finite numbers of at least 0"),
    (["--weights=-1,2"], "expected finite numbers of at least 0"),
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
    assert "an ensemble needs two members or more" in capsys.readouterr().err
    assert main(["parse", "--ensemble", "onlstm-ptb-small", "onlstm-ptb-small", text]) == 2
    assert "onlstm-ptb-small given twice" in capsys.readouterr().err


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


def test_output_naming_an_input_is_refused_and_the_input_kept(tmp_path, treebank, capsys):
    path, sentences = treebank
    kept = [s for s in sentences if s.words]
    files = [write(tmp_path / f"{k}.txt", [bracketed(right_branching(s.forms)) for s in kept]) for k in "ab"]
    before = [Path(f).read_text() for f in files], path.read_text()
    for output, what in ((files[0], "system"), (str(path), "--treebank"), (str(tmp_path / "x" / ".." / "b.txt"),
                                                                           "system")):
        assert main(["ensemble", *files, "--treebank", str(path), "--output", output]) == 2
        err = capsys.readouterr().err
        assert f"--output {output}" in err or "--output" in err and what in err
        assert "an input of this command" in err
    assert ([Path(f).read_text() for f in files], path.read_text()) == before


def test_a_treebank_of_flat_trees_gives_its_sentences_to_an_ensemble(tmp_path, treebank, capsys):
    """An ensemble needs only the treebank's sentences: flat trees (no phrase to score) will do."""
    _, sentences = treebank
    kept = [s for s in sentences if s.words][:8]
    flat = write(tmp_path / "flat.txt", ["(S " + " ".join(f"(NN {w})" for w in s.forms) + ")" for s in kept])
    files = [write(tmp_path / f"{k}.txt", [bracketed(tree(s.forms)) for s in kept])
             for k, tree in (("r", right_branching), ("l", left_branching))]
    out = tmp_path / "o.txt"
    assert main(["ensemble", *files, files[0], "--treebank", flat, "--output", str(out)]) == 2
    assert "given twice" in capsys.readouterr().err
    copy = write(tmp_path / "r2.txt", Path(files[0]).read_text().splitlines())
    assert main(["ensemble", *files, copy, "--treebank", flat, "--output", str(out)]) == 0
    assert [bracketed(t) for t in read_output(out)] == [bracketed(right_branching(s.forms)) for s in kept]


@pytest.mark.parametrize(("spec", "message"), [
    ({"members": ["onlstm-ptb-small", "prpn-ptb-small"], "weights": ["1", "1"]}, "expected finite numbers"),
    ({"members": ["onlstm-ptb-small", "prpn-ptb-small"], "weights": [float("nan"), 1]}, "expected finite numbers"),
    ({"members": ["onlstm-ptb-small", "prpn-ptb-small"], "weights": [-1, 2]}, "expected finite numbers"),
    ({"members": ["onlstm-ptb-small", "prpn-ptb-small"], "weights": [0, 0]}, "not all 0"),
    ({"members": ["onlstm-ptb-small", "prpn-ptb-small"], "weights": [1]}, "1 weights for 2 members"),
    ({"members": "onlstm-ptb-small prpn-ptb-small"}, "members must be a list"),
    ({"members": ["onlstm-ptb-small", "onlstm-ptb-small"]}, "given twice"),
    ({"members": ["onlstm-ptb-small", "ptb-small-ensemble"]}, "ptb-small-ensemble is an ensemble"),
    ({"members": ["onlstm-ptb-small", "prpn-ptb-small:depth=2"]}, "unknown option 'depth'"),
    ({"members": ["onlstm-ptb-small:layer=7", "prpn-ptb-small"]}, "layer 7: expected a layer number from 1 to 3"),
    ({"members": ["onlstm-ptb-small:decode=mbr", "prpn-ptb-small"]}, "decode=mbr: it has no decoder"),
    ({"members": ["onlstm-ptb-small", "prpn-ptb-small"], "mode": "best"}, "mode 'best'"),
])
def test_an_ensemble_definition_is_checked_the_same_everywhere(tmp_path, capsys, spec, message):
    """ensemble.json read by `treenets.load` and `parse`, and the same definition given to `parse --ensemble`
    (members) or `treenets.load`: one check (`ensemble_definition`), naming the file and what was expected."""
    import treenets
    from treenets.core.errors import TreenetsError

    folder = tmp_path / "bad-ensemble"
    folder.mkdir()
    (folder / "ensemble.json").write_text(json.dumps(spec))
    with pytest.raises(TreenetsError, match=re.escape(message)) as caught:
        treenets.load(str(folder))
    assert str(folder / "ensemble.json") in str(caught.value)
    assert main(["parse", str(folder), "The cat sat."]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    if set(spec) == {"members"} and isinstance(spec["members"], list):
        assert main(["parse", "--ensemble", *spec["members"], "The cat sat."]) == 2
        assert message in capsys.readouterr().err


def test_members_parse_with_their_layer_and_decoder(capsys):
    """REF:layer=L and REF:decode=D: each member's tree is the one the model gives under that layer or decoder."""
    import treenets

    text = "Dr. Smith paid $1,200.50 for 3 NEW books in 2019!"
    assert main(["parse", "--ensemble", "onlstm-ptb-small:layer=3", "compound-pcfg-ptb:decode=mbr", "--json",
                 text]) == 0
    record = json.loads(capsys.readouterr().out)
    assert [m["model"] for m in record["members"]] == ["onlstm-ptb-small:layer=3", "compound-pcfg-ptb:decode=mbr"]
    onlstm, grammar = treenets.load("onlstm-ptb-small"), treenets.load("compound-pcfg-ptb")
    assert record["members"][0]["tree"] == bracketed(onlstm.parse(text, layer=3).nested)
    assert record["members"][0]["tree"] != bracketed(onlstm.parse(text).nested)  # (layer 2 is the default)
    assert record["members"][1]["tree"] == bracketed(grammar.parse(text, decode="mbr").nested)


def test_choose_on_ranks_every_combination_and_writes_the_best(tmp_path, treebank, capsys):
    """--choose-on: each model's layers alone (the best kept), every combination ranked; the chosen ensemble's
    trees (--output) score what its row says, as parse-eval scores them."""
    path, sentences = treebank
    kept = [s for s in sentences if s.words]
    gold = write(tmp_path / "gold.txt", [bracketed(with_words(binarized(s.gold), s.forms)) for s in kept])
    right = write(tmp_path / "right.txt", [bracketed(right_branching(s.forms)) for s in kept])
    out = tmp_path / "chosen.txt"
    assert main(["ensemble", "onlstm-ptb-small", right, gold, "--choose-on", str(path), "--output", str(out)]) == 0
    captured = capsys.readouterr()
    alone = captured.out.split("| rank |")[0]  # the first table: each system alone
    rows = [line for line in alone.splitlines() if line.startswith("| onlstm-ptb-small:layer=")]
    assert [row.split(" | ")[0][2:] for row in rows] == [f"onlstm-ptb-small:layer={k}" for k in ("1", "2", "3",
                                                                                                  "mean")]
    scores = [float(row.split(" | ")[1]) for row in rows]
    assert [row.endswith("| yes |") for row in rows] == [s == max(scores) for s in scores]
    ranked = [line.split(" | ") for line in captured.out.splitlines() if re.match(r"\| \d+ \| ", line)]
    assert len(ranked) == 8  # 4 combinations of 2 or 3 systems, generative and selective
    f1 = [float(row[3].rstrip(" |")) for row in ranked]
    assert f1 == sorted(f1, reverse=True)
    assert "chosen on" in captured.err and ranked[0][1] in captured.err
    assert main(["parse-eval", str(out), "--treebank", str(path)]) == 0
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if line.startswith(str(out)))
    assert float(row.split()[1]) == pytest.approx(f1[0], abs=0.051)  # (sent-F1, official)
