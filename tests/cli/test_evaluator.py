"""`treenets parse-eval` as the field's evaluator: files of any parser's trees scored beside each other and the
baselines, under the conventions by name, side by side with the paired bootstrap and agreement, the trees written
back in compound-pcfg's format, and the report and summary.json holding all of it."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from treenets.cli import main
from treenets.trees import balanced, left_branching, right_branching
from treenets.trees.draw import bracketed, preterminal_bracketed
from treenets.trees.ptb import load_gold

TREEBANK = """\
( (S (NP-SBJ (DT The) (NN cat)) (VP (VBD sat) (PP (IN on) (NP (DT the) (NN mat)))) (. .)) )
( (S (NP-SBJ (NNP Mr.) (NNP Smith)) (VP (VBD paid) (NP (CD 1,000) (NNS dollars)) (PP (IN for) (NP (PRP it)))) (. .)) )
( (S (NP-SBJ (-NONE- *)) (VP (VB Go) (ADVP (RB home)) (ADVP (RB now))) (. !)) )
( (INTJ (UH Yes) (. .)) )
( (S (NP-SBJ (DT A) (JJ big) (NN dog)) (VP (VBD ran) (ADVP (RB away))) (, ,) (S (NP (PRP it)) (VP (VBD barked)))) )
( (S (NP-SBJ (DT The) (NNS birds)) (VP (VBD sang) (NP (DT a) (JJ long) (NN song)) (PP (IN at) (NP (NN dawn))))) )
( (S (NP-SBJ (PRP It)) (VP (VBD rained) (NP (DT all) (NN day))) (. .)) )
"""


@pytest.fixture
def files(tmp_path):
    """A treebank, and three systems' trees written as three parsers write them."""
    treebank = tmp_path / "gold.mrg"
    treebank.write_text(TREEBANK)
    words = [s.words for s in load_gold(treebank)]

    def bare(tree):
        return tree if isinstance(tree, str) else "(" + " ".join(bare(c) for c in tree) + ")"

    systems = {
        "right.txt": [preterminal_bracketed(right_branching(w)) for w in words],  # ED4UCP's format
        "balanced.txt": [bracketed(balanced(w)) for w in reversed(words)],  # treenets', in another order
        "left.txt": [bare(left_branching(w)) if len(w) > 1 else f"({w[0]})" for w in words[:-1]],  # no labels, one
    }
    for name, lines in systems.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n")
    return treebank, [str(tmp_path / name) for name in systems]


def run(capsys, *args) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def row(out: str, name: str) -> list[str]:
    return next(line for line in out.splitlines() if line.startswith(name + " ")).split()


def test_files_of_trees_are_systems_beside_the_baselines(files, tmp_path, capsys):
    treebank, (right, balanced_file, left) = files
    code, out, err = run(capsys, "parse-eval", right, balanced_file, left, "--treebank", treebank,
                         "--convention", "official,kim", "--output", tmp_path / "out", "--bootstrap", "500")
    assert code == 0 and "Traceback" not in err
    # The file of right-branching trees scores as the right-branching baseline, under every column
    assert row(out, right)[1:] == row(out, "right-branching")[1:]
    assert row(out, balanced_file)[1:] == row(out, "balanced")[1:]
    assert out.splitlines()[1].split()[:5] == ["layer", "sent-F1", "corp-F1", "evalb-F1", "kim"]
    # The file without the last sentence: counted and said, scored over the others
    assert f"{left}: trees for 6 of 7 sentences; 1 without a tree, not scored for it (the first: {treebank}:7 " \
           "'it rained all day')" in out
    # Side by side, beside right-branching, under the first convention
    assert "systems side by side (official:" in out
    assert re.search(r"\[1\] - \[4\]:\s+\+0\.0 \[\+0\.0, \+0\.0\]\s+p 1\.0000\s+\(7 sentences\)", out)
    assert re.search(r"\[1\] - \[3\]: .* \(6 sentences\)", out)
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [c["name"] for c in summary["conventions"]] == ["official", "kim"]
    comparison = summary["comparison"]
    assert comparison["systems"] == [right, balanced_file, left, "right-branching"]
    assert comparison["sentences"] == [7, 7, 6, 7]
    pair = next(b for b in comparison["bootstrap"] if (b["a"], b["b"]) == (0, 3))
    assert pair["p"] == 1.0 and pair["difference"] == 0.0 and pair["draws"] == 500
    assert comparison["agreement"][0][3] == pytest.approx(1.0, abs=1e-7)
    rows = {(r["model"], r["layer"]): r for r in summary["rows"]}
    assert rows[(left, "")]["missing"] == 1 and rows[(left, "")]["kind"] == "file"
    assert rows[("right-branching", "")]["conventions"]["kim"]["skipped"] == 1  # `yes`
    assert len(comparison["by_length"]["figures"][0]) == len(comparison["by_length"]["buckets"])
    assert "NP" in comparison["by_label"]["labels"] and "" not in comparison["by_label"]["labels"]


def test_the_trees_are_written_in_the_format_others_read(files, tmp_path, capsys):
    treebank, (right, balanced_file, left) = files
    assert run(capsys, "parse-eval", balanced_file, left, "--treebank", treebank, "--output",
               tmp_path / "out")[0] == 0
    folder = tmp_path / "out" / "compound-pcfg"
    gold = (folder / "gold.txt").read_text().splitlines()
    assert gold[0] == "(X (X (X the) (X cat)) (X (X sat) (X (X on) (X (X the) (X mat)))))"
    assert gold[2] == "(X (X (X go) (X (X home)) (X (X now))))"  # S over VP: the unary chain kept
    assert (folder / "file-balanced.txt").read_text().splitlines()[0] == \
        "(X (X (X the) (X cat)) (X (X (X sat) (X on)) (X (X the) (X mat))))"
    assert (folder / "file-left.txt").read_text().splitlines()[-1] == ""  # the sentence it lacks
    # What treenets writes, it reads back: the same scores
    code, out, _ = run(capsys, "parse-eval", folder / "file-balanced.txt", balanced_file, "--treebank", treebank,
                       "--convention", "all")
    assert code == 0 and row(out, str(folder / "file-balanced.txt"))[1:] == row(out, balanced_file)[1:]


def test_a_file_that_does_not_align_names_the_line(files, tmp_path, capsys):
    treebank, (right, *_) = files
    lines = (tmp_path / "right.txt").read_text().splitlines()
    lines[2] = "(X (X go) (X (X home) (X later)))"
    # Every sentence but the last: the file's order cannot say where the line of other words goes
    (tmp_path / "bad.txt").write_text("\n".join(lines[:-1]) + "\n")
    code, out, err = run(capsys, "parse-eval", tmp_path / "bad.txt", "--treebank", treebank)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"treenets: error: {tmp_path / 'bad.txt'}:3: no sentence of the treebank without a tree "
                          "yet has its words: 'go home later' (3 words); expected (after the tree of line 2, the "
                          f"closest sentence without a tree): {treebank}:3 'Go home now' (3 words; word 3 is 'later' "
                          "where the treebank has 'now'); words: ptb")
    # Every sentence, in the treebank's order, each line as long as its sentence: read in that order, and said
    (tmp_path / "ordered.txt").write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "parse-eval", tmp_path / "ordered.txt", "--treebank", treebank)
    assert code == 0 and f"{tmp_path / 'ordered.txt'}: trees for 7 of 7 sentences" in out
    # (the file's words are the treebank's as scored: lower case, `N,N` for `1,000`; the first word of five
    # sentences is capitalised in the treebank, and two of the second)
    assert f"{tmp_path / 'ordered.txt'}: bracketed trees, one a line; 5 sentences after lower-casing, 1 after " \
           "normalising numbers, 1 by the file's order (words that differ); words matched only by a normalisation " \
           "or placeholder: 7 lower-cased, 1 numbers, 1 words that differ (placed by order)" in err
    (tmp_path / "broken.txt").write_text(lines[0] + "\n(X (X go) (X home)\n")
    code, _, err = run(capsys, "parse-eval", tmp_path / "broken.txt", "--treebank", treebank)
    assert code == 2 and f"{tmp_path / 'broken.txt'}:2: 1 bracket(s) never closed" in err


def test_conventions_and_lengths_by_name(files, tmp_path, capsys):
    treebank, (right, *_) = files
    code, out, _ = run(capsys, "baselines", "--treebank", treebank, "--convention", "all", "--random-draws", "1")
    assert code == 0
    assert out.splitlines()[1].split()[:9] == ["layer", "sent-F1", "corp-F1", "evalb-F1", "kim", "evalb", "li-micro",
                                               "li-macro", "depth"]
    code, out, _ = run(capsys, "parse-eval", right, "--treebank", treebank, "--max-length", "4", "--convention", "kim")
    assert code == 0 and "(at most 4 words): 3 sentences scored" in out
    assert f"{right}: trees for 3 of 3 sentences; 4 lines of more than 4 words skipped" in out
    with pytest.raises(SystemExit):
        main(["parse-eval", right, "--treebank", str(treebank), "--convention", "official,nope"])
    assert "nope: expected conventions among official, kim, evalb, li-micro, li-macro" in capsys.readouterr().err


def test_the_report_shows_the_systems_side_by_side_without_script(files, tmp_path, capsys):
    treebank, systems = files
    assert run(capsys, "parse-eval", *systems, "--treebank", treebank, "--output", tmp_path / "out",
               "--bootstrap", "200")[0] == 0
    html = (tmp_path / "out" / "index.html").read_text()
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert 'id="comparison"' in html and "Paired bootstrap" in html and "Agreement between systems" in html
    for k, name in enumerate(summary["comparison"]["systems"]):
        assert f"[{k + 1}] {name}" in html  # one column per system, named
    bootstrap = summary["comparison"]["bootstrap"][0]
    assert f'<td data-col="p">{bootstrap["p"]:.4f}</td>' in html
    assert "F1 by sentence length" in html and "Recall by gold label" in html and html.count("<svg") >= 2


def test_output_writes_over_no_file_it_did_not_write(files, tmp_path, capsys):
    treebank, (right, balanced_file, _) = files
    out = tmp_path / "mine"
    out.mkdir()
    (out / "index.html").write_text("my own page")
    (out / "notes.txt").write_text("my notes")
    code, stdout, err = run(capsys, "parse-eval", right, "--treebank", treebank, "--output", out)
    assert code == 2 and stdout == "" and (out / "index.html").read_text() == "my own page"
    assert err.strip() == (f"treenets: error: --output {out}: holds files that no earlier report of treenets wrote "
                           "(index.html, notes.txt); name a new or empty folder, or add --overwrite to write over the "
                           "files of the names it writes (the others are kept)")
    assert sorted(p.name for p in out.iterdir()) == ["index.html", "notes.txt"]
    # --overwrite: the names it writes replaced, the others kept
    assert run(capsys, "parse-eval", right, "--treebank", treebank, "--output", out, "--overwrite")[0] == 0
    assert "treenets parse-eval" in (out / "index.html").read_text() and (out / "notes.txt").read_text() == "my notes"
    # An earlier report's folder is written again without --overwrite: its files replaced, those it no longer
    # writes removed (they would pass for this report's), the user's kept
    report = tmp_path / "report"
    assert run(capsys, "parse-eval", right, balanced_file, "--treebank", treebank, "--output", report)[0] == 0
    assert (report / "trees-file-balanced.txt").exists()
    assert run(capsys, "parse-eval", right, "--treebank", treebank, "--output", report)[0] == 0
    assert not (report / "trees-file-balanced.txt").exists() and (report / "trees-file-right.txt").exists()
    assert "file-balanced" not in (report / "compound-pcfg" / "gold.txt").read_text()
    (report / "mine.txt").write_text("kept")
    assert run(capsys, "parse-eval", right, "--treebank", treebank, "--output", report)[0] == 2
    assert (report / "mine.txt").read_text() == "kept"


def test_two_systems_of_one_file_name_get_their_own_outputs(files, tmp_path, capsys):
    treebank, (right, balanced_file, _) = files
    for folder, source in (("a", right), ("b", balanced_file)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "sys.txt").write_text(Path(source).read_text())
    a, b = tmp_path / "a" / "sys.txt", tmp_path / "b" / "sys.txt"
    assert run(capsys, "parse-eval", a, b, "--treebank", treebank, "--output", tmp_path / "out")[0] == 0
    out = tmp_path / "out"
    assert (out / "trees-file-a-sys.txt").read_text() != (out / "trees-file-b-sys.txt").read_text()
    assert (out / "compound-pcfg" / "file-a-sys.txt").read_text().splitlines()[0] == \
        preterminal_bracketed(right_branching(["the", "cat", "sat", "on", "the", "mat"]))
    assert (out / "compound-pcfg" / "file-b-sys.txt").read_text().splitlines()[0] == \
        preterminal_bracketed(balanced(["the", "cat", "sat", "on", "the", "mat"]))
    record = json.loads((out / "sentences.jsonl").read_text().splitlines()[0])
    assert set(record["models"]) == {"file-a-sys", "file-b-sys"}


def test_formats_and_standard_input_are_named_and_counted(files, tmp_path, capsys, monkeypatch):
    treebank, (right, *_) = files
    sentences = load_gold(treebank)
    diora = tmp_path / "diora.jsonl"  # DIORA's lines: the words as the treebank writes them, numbers without commas
    diora.write_text("".join(json.dumps({"example_id": f"wsj-{k}", "tree": right_branching(
        [form.replace(",", "") for form in s.forms])}) + "\n" for k, s in enumerate(sentences)))
    lines = (tmp_path / "right.txt").read_text()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(lines.encode())))
    code, out, err = run(capsys, "parse-eval", diora, "-", "--treebank", treebank, "--convention", "all",
                         "--output", tmp_path / "out", "--bootstrap", "100")
    assert code == 0
    assert row(out, str(diora))[1:] == row(out, "right-branching")[1:] == row(out, "<stdin>")[1:]
    assert f"{diora}: JSON lines of trees (DIORA's: a nested list of words or a bracketed tree, with an example " \
           "id); 6 sentences matched exactly, 1 after normalising numbers; words matched only by a normalisation or " \
           "placeholder: 1 numbers" in err
    assert "<stdin>: bracketed trees, one a line; 6 sentences after lower-casing, 1 after normalising numbers; words " \
           "matched only by a normalisation or placeholder: 8 lower-cased, 1 numbers" in err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    matching = {r["model"]: r["matching"] for r in summary["rows"] if r["kind"] == "file"}
    assert matching[str(diora)]["sentences"] == {"exact": 6, "numbers": 1} and matching["<stdin>"]["format"] == \
        "bracketed"
    assert (tmp_path / "out" / "trees-file-stdin.txt").exists()
    html = (tmp_path / "out" / "index.html").read_text()
    assert "Files of trees" in html and "6 sentences matched exactly, 1 after normalising numbers" in html
    # --format says what a file is where the reader would take it for another
    code, _, err = run(capsys, "parse-eval", diora, "--treebank", treebank, "--format", "spans")
    assert code == 2 and f"{diora}:1: no 'spans' in the object (keys: example_id, tree)" in err
