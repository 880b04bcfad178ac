"""The HTML report written by `parse-eval`, `eval` and `syneval` with `--output`: self-contained, holding the
numbers the command printed and wrote as JSON (what the page shows of them: test_report_browser.py)."""

from __future__ import annotations

import json
import math
import re
from html import unescape

import pytest

from treenets.cli import main
from treenets.report import group_runs, inline_json, report_beside, tree_json, write_report
from treenets.trees import ParseScores
from treenets.trees.evaluation import SystemResult


def report_data(path) -> dict:
    """The JSON a report page draws from."""
    html = path.read_text()
    match = re.search(r'<script type="application/json" id="report-data">(.*?)</script>', html, re.S)
    return json.loads(match.group(1))


def self_contained(html: str) -> bool:
    """Nothing is fetched: no script, stylesheet, image or frame from elsewhere, and no web address but the SVG
    namespace's (a name, never requested)."""
    urls = set(re.findall(r"https?://[^\s\"'`]+", html))
    return not re.search(r"<(script|img|iframe)[^>]+src=|<link[^>]+stylesheet", html) and \
        urls <= {"http://www.w3.org/2000/svg"}


def static_cells(html: str) -> dict:
    """The score table's cells as the page's HTML holds them (no script run): (model, layer, column) -> text."""
    table = html[html.index('<section id="parsing">'):]
    table = table[:table.index("</table>")]
    cells = {}
    for model, layer, row in re.findall(r'<tr[^>]*data-model="([^"]*)" data-layer="([^"]*)">(.*?)</tr>', table, re.S):
        for column, text in re.findall(r'<td data-col="([^"]+)"[^>]*>([^<]*)</td>', row):
            cells[(unescape(model), unescape(layer), column)] = text
    return cells


def test_parse_eval_report_holds_the_summary_and_every_sentence(tiny_run):
    out = tiny_run / "parse-eval"
    html = (out / "index.html").read_text()
    assert self_contained(html) and "{{" not in html
    data = report_data(out / "index.html")["parsing"]
    summary = json.loads((out / "summary.json").read_text())
    # The table's rows are summary.json's, NaN (a label no sentence has) as null.
    assert len(data["rows"]) == len(summary["rows"]) == 2 * 3 + 4
    for row, expected in zip(data["rows"], summary["rows"]):
        assert row.keys() == expected.keys()
        for key, value in expected.items():
            assert row[key] == value or (row[key] is None and math.isnan(value)), key
    assert [run["layers"] for run in data["runs"]] == [["1", "2", "mean"]] * 2
    assert data["default_layer"] == "2" and data["empty"] == 1
    assert data["labels"][:4] == ["NP", "VP", "PP", "ADJP"]
    assert [m["layer"] for m in data["multi_run"]] == ["1", "2", "mean"]
    records = [json.loads(line) for line in (out / "sentences.jsonl").read_text().splitlines()]
    kept = [r for r in records if r["words"]]
    assert [s["w"] for s in data["sentences"]] == [r["words"] for r in kept]
    first, expected = data["sentences"][0], kept[0]
    assert first["i"] == 1 and first["g"] == tree_json(expected["gold"])
    model = next(v for k, v in expected["models"].items() if k.endswith("best-layer2"))
    assert first["t"][0][1] == tree_json(model["tree"]) and first["f"][0][1] == pytest.approx(model["f1"], abs=1e-4)
    assert len(first["d"][0]) == 2 and len(first["d"][0][0]) == len(first["w"])  # every layer's distances


def test_the_report_reads_without_script(tiny_run):
    # Before: without JavaScript the page showed one sentence ("This report draws its tables ... with
    # JavaScript"), and the PNG figures were linked nowhere.
    out = tiny_run / "parse-eval"
    html = (out / "index.html").read_text()
    summary = json.loads((out / "summary.json").read_text())
    cells = static_cells(html)
    checked = 0
    for row in summary["rows"]:
        for column in ("sentence_f1", "corpus_f1", "evalb_f1", "recall_NP"):
            value = row[column]
            text = cells[(row["model"], row["layer"], column)]
            assert text == ("–" if value is None else f"{100 * value:.1f}"), (row["model"], column)
            checked += 1
    assert checked == 4 * len(summary["rows"])
    assert html.count("<svg") >= 4  # the runs by layer, F1 by length, recall by label, distances
    for figure in (out / "figures").glob("*.png"):
        assert f'href="figures/{figure.name}"' in html
    assert "<noscript>" in html  # the sentences' browser says it needs the script
    script = html[html.index("<script>"):]
    assert len(script) < len(html) and "renderParsing" not in script  # the tables are not drawn by script


def test_inline_data_cannot_end_its_script_element():
    text = inline_json({"words": ["</script><script>alert(1)</script>", "<unk>", "a&b"], "f1": float("nan")})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"words": ["</script><script>alert(1)</script>", "<unk>", "a&b"], "f1": None}


def test_tree_json_numbers_the_words_at_any_depth():
    assert tree_json([["the", "cat"], ["sat", ["on", ["the", "mat"]]]]) == "[[0,1],[2,[3,[4,5]]]]"
    assert tree_json("word") == "0"
    deep = "w"
    for _ in range(3000):  # a right-branching tree of 3,001 words: deeper than Python's recursion limit
        deep = ["w", deep]
    assert tree_json(deep).startswith("[0,[1,[2,") and tree_json(deep).endswith("3000" + "]" * 3000)


def test_the_same_checkpoint_given_twice_makes_two_runs():
    results = [SystemResult("best.pt", layer, ParseScores(), []) for layer in ("1", "2", "mean", "1", "2", "mean")]
    assert [[r.layer for r in run] for run in group_runs(results)] == [["1", "2", "mean"]] * 2
    assert len(group_runs(results[:1] + results[3:4])) == 2  # --layer 1, twice
    files = [SystemResult(name, "", ParseScores(), []) for name in ("a.txt", "b.txt", "b.txt")]
    assert [[r.source for r in run] for run in group_runs(results[:3] + files)] == \
        [["best.pt"] * 3, ["a.txt"], ["b.txt"], ["b.txt"]]


def test_write_report_and_its_place_beside_a_json_output(tmp_path):
    path = write_report(tmp_path / "new", "a <title>", syneval=None)
    assert path == tmp_path / "new" / "index.html" and "<title>a &lt;title&gt;</title>" in path.read_text()
    assert report_beside("out/syneval.json").as_posix() == "out/syneval.html"
    assert report_beside("out/results.html").as_posix() == "out/results.report.html"


def test_eval_output_writes_json_and_report(tiny_run, tmp_path, capsys):
    checkpoints = [str(tiny_run / "best.pt"), str(tiny_run / "last.pt")]
    assert main(["eval", *checkpoints, "--split", "test", "--output", str(tmp_path / "eval")]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    document = json.loads((tmp_path / "eval" / "eval.json").read_text())
    assert document["key"] == "ppl" and document["better"] == {"loss": "lower", "ppl": "lower"}
    assert [c["ppl"] for c in document["checkpoints"]] == [p["ppl"] for p in printed[:2]]
    assert document["summary"]["ppl"] == printed[2]["ppl"] and document["breakdown"] is None
    html = (tmp_path / "eval" / "index.html").read_text()
    assert self_contained(html) and report_data(tmp_path / "eval" / "index.html")["eval"] == document
    assert re.search(r"<script>\s*</script>", html)  # nothing to browse: tables only, no script
    for checkpoint in document["checkpoints"]:
        assert '<td data-col="ppl"' in html and f"{checkpoint['ppl']:.4f}" in html


def test_eval_output_writes_over_no_file_it_did_not_write(tiny_run, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "index.html").write_text("my own page")
    args = ["eval", str(tiny_run / "best.pt"), "--split", "test", "--output", str(mine)]
    assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and (mine / "index.html").read_text() == "my own page"
    assert f"--output {mine}: holds files that no earlier report of treenets wrote (index.html)" in captured.err
    assert main([*args, "--overwrite"]) == 0 and (mine / "eval.json").exists()
    assert "treenets eval" in (mine / "index.html").read_text()
    assert main(args) == 0  # its own report now: written again without --overwrite


def test_syneval_output_writes_a_report_beside_its_json(tiny_run, data_root, tmp_path, capsys):
    output = tmp_path / "syneval.json"
    assert main(["syneval", str(tiny_run / "best.pt"), "--cases", "simple", "npi_simple", "--limit", "3",
                 "--output", str(output)]) == 0
    assert f"report: {tmp_path / 'syneval.html'}" in capsys.readouterr().out
    document = json.loads(output.read_text())
    assert report_data(tmp_path / "syneval.html")["syneval"] == document
    html = (tmp_path / "syneval.html").read_text()
    accuracy = document["checkpoints"][0]["cases"][0]["comparisons"][0]["accuracy"]
    assert '<td data-col="all0"' in html and f">{accuracy:.3f}<" in html and "<svg" in html


def dependency_cells(html: str) -> dict:
    """The dependency table's cells as the page's HTML holds them: (system, column) -> (text, marked best)."""
    table = html[html.index('<h3 id="dependencies">'):]
    table = table[:table.index("</table>")]
    cells = {}
    for system, row in re.findall(r'<tr[^>]*data-system="([^"]*)">(.*?)</tr>', table, re.S):
        for column, best, text in re.findall(r'<td data-col="([^"]+)"( class="best")?[^>]*>([^<]*)</td>', row):
            cells[(unescape(system), column)] = (text, bool(best))
    return cells


def test_the_report_shows_the_dependency_table_when_dependencies_were_scored(tiny_run, structformer_run):
    assert 'id="dependencies"' not in (tiny_run / "parse-eval" / "index.html").read_text()  # an ON-LSTM: none
    out = structformer_run / "parse-eval"
    html = (out / "index.html").read_text()
    rows = json.loads((out / "summary.json").read_text())["dependencies"]["rows"]
    # The StructFormer, the CoNLL file of the gold (every arc right), the chains and the random trees.
    assert [r["system"] for r in rows][:2] == [str(structformer_run / "best.pt"), str(out.parent.parent / "gold.conll")]
    assert len(rows) == 5 and rows[1]["dda"] == rows[1]["uda"] == 1.0
    cells = dependency_cells(html)
    for row in rows:
        for column in ("dda", "uda"):
            text, best = cells[(row["system"], column)]
            assert text == f"{100 * row[column]:.1f}" and best == (row[column] == 1.0), (row["system"], column)
        assert cells[(row["system"], "words")] == (f"{row['words']:,}", False)
    assert "(dependencies only)" in html  # the CoNLL file among the systems listed


def test_sentences_jsonl_holds_each_systems_heads_and_the_gold_heads(tiny_run, structformer_run):
    import treenets
    from treenets.trees.dependency_scoring import gold_dependencies
    from treenets.trees.ptb import PTB, load_gold

    out = structformer_run / "parse-eval"
    records = [json.loads(line) for line in (out / "sentences.jsonl").read_text().splitlines()]
    sentences = load_gold(tiny_run.parent / "tiny.mrg")
    gold = gold_dependencies(sentences, PTB)
    model = treenets.load(str(structformer_run / "best.pt"))
    checked = 0
    for record, sentence, tree in zip(records, sentences, gold.trees, strict=True):
        if not record["words"]:
            assert record["gold_heads"] is None
            continue
        expected = tree.kept_heads(PTB)
        assert record["words"] == sentence.words and record["gold_heads"] == expected
        systems = record["models"]
        structformer = systems["run-best-layer1"]  # the first system; the ON-LSTM's layer 1 is run-best-layer1-2
        assert structformer["heads"] == model.parse([record["words"]])[0].heads
        right = sum(h == g for h, g in zip(structformer["heads"], expected))
        assert structformer["dda"] == pytest.approx(right / len(expected))
        assert systems["file-gold"] == {"heads": expected, "dda": 1.0, "uda": 1.0}  # the CoNLL file: heads only
        assert structformer.keys() == {"tree", "prec", "reca", "f1", "heads", "dda", "uda"}
        for layer in ("layer1-2", "layer2", "layermean"):  # a system without dependencies: as before
            assert systems[f"run-best-{layer}"].keys() == {"tree", "prec", "reca", "f1"}
        # The StructFormer's distance of the gap after the last word is read by no tree (it is 1e9): none.
        (distances,) = record["distances"][str(structformer_run / "best.pt")]
        assert distances[-1] is None and all(abs(d) < 1e6 for d in distances[:-1])
        checked += 1
    assert checked == 11
    assert report_data(out / "index.html")["parsing"]["sentences"][0]["d"][0][0][-1] is None  # nor a bar of it
    # Without dependencies scored, no record has heads.
    assert "heads" not in (tiny_run / "parse-eval" / "sentences.jsonl").read_text()


def test_a_grammars_labels_are_in_the_report_and_sentences_jsonl(tiny_run, grammar_run, tmp_path):
    """A grammar labels its trees: each sentence's record gives its nodes' nonterminals and its words'
    preterminals (`labels`, `word_labels`), as its `parse` does, and the page's data holds them per run for the
    drawing; a run without labels (the ON-LSTM) has none."""
    import treenets
    from treenets.trees.ptb import load_gold

    out = tmp_path / "report"
    grammar = str(grammar_run / "best.pt")
    assert main(["parse-eval", grammar, str(tiny_run / "best.pt"), "--treebank", str(tiny_run.parent / "tiny.mrg"),
                 "--output", str(out)]) == 0
    model = treenets.load(grammar)
    records = [json.loads(line) for line in (out / "sentences.jsonl").read_text().splitlines()]
    page = report_data(out / "index.html")["parsing"]["sentences"]
    sentences = [s for s in load_gold(tiny_run.parent / "tiny.mrg") if s.words]
    assert len(page) == len(sentences) == 11
    for record, drawn, sentence in zip((r for r in records if r["words"]), page, sentences, strict=True):
        labels, word_labels = model.parse([sentence.words])[0].labels()
        found = record["models"]["run-best-layer1"]
        assert (found["labels"], found["word_labels"]) == (labels, word_labels)
        assert len(word_labels) == len(sentence.words) and all(w.startswith("T-") for w in word_labels)
        assert f"0-{len(sentence.words)}" in labels and all(v.startswith("NT-") for v in labels.values())
        assert "labels" not in record["models"]["run-best-layer1-2"]  # the ON-LSTM's layer 1
        assert drawn["pl"][0] == [labels, word_labels] and all(p is None for p in drawn["pl"][1:])
    assert '"pl"' not in (tiny_run / "parse-eval" / "index.html").read_text()  # no grammar, no labels
