"""The report of `parse-eval --output` (and `eval --output`) in headless Chromium, opened from disk (file://):
no console error, the table shows summary.json's numbers with the best of each column marked, the search
filters the sentences, and a sentence's trees are drawn (only) when it is opened. Screenshots go to the report
folder's `screenshots/` (and to $TREENETS_SCREENSHOTS when set)."""

from __future__ import annotations

import json
import math

import pytest

from treenets.cli import main

# The browser first: without one, the tests are skipped before the model is trained.
pytestmark = pytest.mark.usefixtures("browser")

# Every cell of the score table, keyed by its row's model and layer and its column.
TABLE_CELLS = """() => [...document.querySelectorAll("#parsing table.scores tbody tr[data-model]")].flatMap((tr) =>
  [...tr.querySelectorAll("td[data-col]")].map((td) => ({model: tr.dataset.model, layer: tr.dataset.layer,
    col: td.dataset.col, text: td.textContent, best: td.classList.contains("best")})))"""


def shown_value(key: str, value) -> float | None:
    """A summary value as the table prints it: F1 and recall in percent, depth as is; None for "–"."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value if key == "depth" else 100 * value


def test_parse_eval_report_in_a_browser(tiny_run, open_page):
    out = tiny_run / "parse-eval"
    page = open_page(out / "screenshots")
    tab = page.tab
    tab.goto((out / "index.html").as_uri())
    tab.wait_for_selector("#sentence-list details")

    # The table: each row of summary.json, each column to the printed precision; the best of a column marked.
    summary = json.loads((out / "summary.json").read_text())["rows"]
    cells = tab.evaluate(TABLE_CELLS)
    assert {(c["model"], c["layer"]) for c in cells} == {(r["model"], r["layer"]) for r in summary}
    checked = 0
    for cell in cells:
        row = next(r for r in summary if (r["model"], r["layer"]) == (cell["model"], cell["layer"]))
        expected = shown_value(cell["col"], row.get(cell["col"]))
        if expected is None:
            assert cell["text"] == "–"
        else:
            assert float(cell["text"]) == pytest.approx(expected, abs=0.051 if cell["col"] != "depth" else 0.0051)
            checked += 1
    assert checked >= len(summary) * 5
    best = max(r["sentence_f1"] for r in summary)
    marked = [c for c in cells if c["col"] == "sentence_f1" and c["best"]]
    assert marked and all(float(c["text"]) == pytest.approx(100 * best, abs=0.051) for c in marked)
    assert not any(c["best"] for c in cells if c["col"] == "depth")
    assert tab.locator("#parsing figure svg").count() >= 3  # F1 by length, recall by label, histograms
    page.screenshot("report")

    # Sentences: every kept one listed, none drawn until opened; the search keeps those with the words.
    records = [json.loads(line) for line in (out / "sentences.jsonl").read_text().splitlines()]
    kept = [r["words"] for r in records if r["words"]]
    rows = tab.locator("#sentence-list details")
    assert rows.count() == len(kept) and tab.locator("#sentence-list svg").count() == 0
    tab.fill("#search", "dog")
    assert rows.count() == sum(any("dog" in w for w in words) for words in kept) == 3
    assert tab.inner_text("#sentence-count") == f"3 of {len(kept)} sentences"
    tab.fill("#search", "the dog run")
    assert rows.count() == 1
    rows.first.locator("summary").click()
    figures = rows.first.locator("svg")
    figures.first.wait_for()
    words = ["the", "dog", "run", "of", "the", "city"]
    assert figures.count() == 2  # predicted, gold
    for k in range(2):
        assert figures.nth(k).locator("text.word").all_text_contents() == words
    assert figures.first.locator("rect.bar").count() == 2 * len(words)  # each layer's distances
    assert figures.nth(1).locator("text.label").count() > 0  # gold labels
    page.screenshot("report-sentence")

    # Sorting by F1: the F1 column of the list in order.
    tab.fill("#search", "")
    tab.select_option("#sort", "f1-desc")
    values = [float(t.split()[1]) for t in tab.locator("#sentence-list summary .f1").all_inner_texts()]
    assert values == sorted(values, reverse=True) and len(values) == len(kept)
    assert page.errors == []


def test_eval_report_in_a_browser(tiny_run, open_page, tmp_path):
    assert main(["eval", str(tiny_run / "best.pt"), str(tiny_run / "last.pt"), "--split", "test",
                 "--output", str(tmp_path)]) == 0
    document = json.loads((tmp_path / "eval.json").read_text())
    page = open_page(tmp_path / "screenshots")
    page.tab.goto((tmp_path / "index.html").as_uri())
    ppl = page.tab.locator("#eval table.scores td[data-col='ppl']").all_inner_texts()
    assert [float(text) for text in ppl[:2]] == [pytest.approx(c["ppl"], abs=1e-4) for c in document["checkpoints"]]
    assert page.tab.locator("#eval td.best").count() >= 2  # loss and ppl (equal checkpoints: both marked)
    page.screenshot("eval-report")
    assert page.errors == []


def test_a_sentences_dependencies_against_the_gold_in_a_browser(structformer_run, open_page):
    """The StructFormer's arcs above the words (green where the gold has them, orange elsewhere), the gold's under
    them (red where missed); the CoNLL file of the gold: only arcs, every one green; the ON-LSTM: no arcs."""
    out = structformer_run / "parse-eval"
    page = open_page(out / "screenshots")
    tab = page.tab
    tab.goto((out / "index.html").as_uri())
    assert tab.locator("#dependencies + .table-wrap td.best").count() == 2  # the CoNLL file's DDA and UDA: 100
    records = [json.loads(line) for line in (out / "sentences.jsonl").read_text().splitlines()]
    record = next(r for r in records if r["words"] == ["the", "dog", "run", "of", "the", "city"])
    gold, heads = record["gold_heads"], record["models"]["run-best-layer1"]["heads"]
    right = [h == g for h, g in zip(heads, gold)]
    options = tab.locator("#tree-choice option").all_inner_texts()
    assert options == ["[1] layer 1", "[2] layer 1", "[2] layer 2", "[2] layer mean", "[3] gold.conll"]

    def open_sentence(choice: str):
        tab.select_option("#tree-choice", label=choice)
        tab.fill("#search", "the dog run")
        rows = tab.locator("#sentence-list details")
        assert rows.count() == 1
        rows.first.locator("summary").click()
        rows.first.locator("svg").first.wait_for()
        return rows.first

    row = open_sentence("[1] layer 1")
    assert row.locator("summary .dda").inner_text() == f"DDA {100 * record['models']['run-best-layer1']['dda']:.1f}"
    arcs = row.locator("svg.arcs")
    assert arcs.locator("text.word").all_text_contents() == record["words"]
    assert arcs.locator("path.arc.predicted").count() == sum(h != 0 for h in heads)  # an arc per non-root word
    assert arcs.locator("path.arc.gold").count() == sum(h != 0 for h in gold)
    assert arcs.locator("path.arc.predicted.match").count() == sum(r for r, h in zip(right, heads) if h)
    assert arcs.locator("path.arc.predicted.extra").count() == sum(not r for r, h in zip(right, heads) if h)
    assert arcs.locator("path.arc.gold.missed").count() == sum(not r for r, g in zip(right, gold) if g)
    assert arcs.locator("text.root.predicted").count() == heads.count(0)
    assert arcs.locator("text.root.gold").count() == 1
    page.screenshot("report-dependencies")

    row = open_sentence("[3] gold.conll")  # dependencies only: the gold tree and the arcs, all right
    assert row.locator("summary .f1").count() == 0 and row.locator("summary .dda").inner_text() == "DDA 100.0"
    assert row.locator("svg").count() == 2 and row.locator("svg.arcs path.arc.predicted.match").count() == 5
    assert row.locator("svg.arcs path.arc.predicted.extra").count() == 0
    row = open_sentence("[2] layer 2")
    assert row.locator("svg").count() == 2 and row.locator("svg.arcs").count() == 0  # trees only
    tab.fill("#search", "")
    tab.select_option("#tree-choice", label="[1] layer 1")
    tab.select_option("#sort", "dda-desc")
    values = [float(t.split()[1]) for t in tab.locator("#sentence-list summary .dda").all_inner_texts()]
    assert values == sorted(values, reverse=True) and len(values) == 11
    assert page.errors == []


def test_a_grammars_tree_is_drawn_with_its_labels(tiny_run, grammar_run, open_page, tmp_path):
    """A grammar's predicted tree: every node over two or more words with its nonterminal, every word with its
    preterminal under it; the ON-LSTM's tree beside it has no labels (the gold's labels are the treebank's)."""
    import treenets

    out = tmp_path / "report"
    grammar = str(grammar_run / "best.pt")
    assert main(["parse-eval", grammar, str(tiny_run / "best.pt"), "--treebank", str(tiny_run.parent / "tiny.mrg"),
                 "--output", str(out)]) == 0
    words = ["the", "dog", "run", "of", "the", "city"]
    labels, tags = treenets.load(grammar).parse([words])[0].labels()
    page = open_page(out / "screenshots")
    tab = page.tab
    tab.goto((out / "index.html").as_uri())

    def predicted(choice: str):
        tab.select_option("#tree-choice", label=choice)
        tab.fill("#search", "the dog run")
        row = tab.locator("#sentence-list details").first
        row.locator("summary").click()
        row.locator("svg").first.wait_for()
        return row.locator("svg").first

    figure = predicted("[1] layer 1")
    assert figure.locator("text.tag").all_text_contents() == tags
    assert sorted(figure.locator("text.label").all_text_contents()) == sorted(labels.values())
    assert len(labels) == len(words) - 1  # a binary tree's nodes over two or more words
    page.screenshot("report-grammar")
    assert predicted("[2] layer 1").locator("text.label").count() == 0
    assert page.errors == []
