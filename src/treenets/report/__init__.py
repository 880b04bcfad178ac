"""The HTML report of an evaluation (`parse-eval`, `syneval`, `eval` with `--output`): one self-contained
`index.html` that opens from disk with no network: the stylesheet, the scripts and the results (as JSON) are
inlined when it is written, and the page draws its tables, plots and trees as SVG from that data. Trees are
drawn only when their sentence is opened, so that a treebank of thousands of sentences stays quick.

The templates are this package's data files: `report.html`, `serve.html` (the page of `treenets serve`),
`report.css` (both pages), `trees.js` (trees and per-word bars, both pages), `report.js` and `serve.js`.
"""

from __future__ import annotations

import datetime
import html
import re
from importlib import resources
from pathlib import Path

from treenets.files import json_text
from treenets.trees import right_branching, sentence_prf, spans
from treenets.trees.metrics import LABELS
from treenets.trees.walk import fold
from treenets.version import __version__


def asset(name: str) -> str:
    """The text of one of this package's template files."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def inline_json(data) -> str:
    """`data` as JSON safe inside a `<script>` element: `<`, `>` and `&` escaped, so that no word of a sentence
    (`</script>`, `<unk>`) can end the element or be read as markup."""
    text = json_text(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(template: str, title: str, scripts: list[str], data) -> str:
    """A page from `template` with the stylesheet, `scripts` (file names, in order) and `data` inlined.

    The placeholders `{{title}}`, `{{style}}`, `{{script}}` and `{{data}}` are filled in one pass, so that
    nothing inserted is searched for placeholders again."""
    values = {"title": html.escape(title), "style": asset("report.css"),
              "script": "\n".join(asset(name) for name in scripts), "data": inline_json(data)}
    return re.sub(r"\{\{(title|style|script|data)\}\}", lambda m: values[m.group(1)], asset(template))


def tree_json(tree) -> str:
    """A nested-list tree over words as JSON text of the same tree over word positions (0-based), e.g.
    `[[0,1],2]`: the page matches spans by position, which repeated words would confuse. Text rather than
    nested lists, because a tree nests as deep as its sentence is long and `json.dumps` gives up at about
    1,000 levels (the page parses each tree when it draws it)."""
    position = -1

    def leaf(_) -> str:
        nonlocal position
        position += 1
        return str(position)

    return fold(tree, leaf, lambda _, children: "[" + ",".join(children) + "]")


def write_report(out: str | Path, title: str, *, parsing: dict | None = None, syneval: dict | None = None,
                 evaluation: dict | None = None, name: str = "index.html") -> Path:
    """Write the report `out/name` with the sections given; returns its path.

    Args:
        parsing: `parsing_section(...)`, for `parse-eval`.
        syneval: the document `syneval --output` writes as JSON (every model's counts by case).
        evaluation: the document `eval --output` writes as JSON (`split`, `key`, `better`: metric ->
            "higher" or "lower", `checkpoints`: each one's values, `summary`: mean and std of several,
            `breakdown`: the metric by group, or None).
    """
    data = {"title": title, "version": __version__,
            "created": datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
            "parsing": parsing, "syneval": syneval, "eval": evaluation}
    path = Path(out) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_page("report.html", title, ["trees.js", "report.js"], data), encoding="utf-8")
    return path


def group_runs(results: list) -> list[list]:
    """`ModelResult`s grouped by checkpoint: a model's layers come in a row and are distinct, so a layer seen
    again starts the next checkpoint (the same file given twice makes two runs, as in the printed table)."""
    runs: list[list] = []
    for result in results:
        if not runs or any(r.layer == result.layer for r in runs[-1]):
            runs.append([])
        runs[-1].append(result)
    return runs


def parsing_section(treebank: str, split: str, wsj10: bool, sentences: list, results: list, distances: dict,
                    rows: list[tuple[str, str, dict]], default_layer: str | None) -> dict:
    """The data of a `parse-eval` report.

    Args:
        treebank, split, wsj10: what was scored, for the header.
        sentences: the `GoldSentence`s; results: the `ModelResult`s of every checkpoint and layer, in order.
        distances: checkpoint -> per sentence `[rows, words]` array (None for an empty sentence).
        rows: the summary table, (name, layer, summary) of each model row then each baseline (layer "").
        default_layer: the layer whose trees the page shows first.
    """
    from treenets.trees.evaluation import multi_run_summary

    runs = group_runs(results)
    records = []
    for i, s in enumerate(sentences):
        if not s.words:
            continue
        f1 = [[sentence_prf(spans(r.trees[i]), spans(s.gold))[2] for r in run] for run in runs]
        records.append({
            "i": i + 1, "src": str(s.source), "w": s.words, "g": tree_json(s.gold),
            "l": [[start, end, label] for start, end, label in s.labeled if label],
            "t": [[tree_json(r.trees[i]) for r in run] for run in runs],
            "f": [[round(v, 4) for v in values] for values in f1],
            "d": [[[round(v, 4) for v in row] for row in distances[run[0].checkpoint][i].tolist()] for run in runs],
            "rb": round(sentence_prf(spans(right_branching(s.words)), spans(s.gold))[2], 4),
        })
    present = {key[len("recall_"):] for _, _, summary in rows for key in summary if key.startswith("recall_")}
    return {
        "treebank": treebank, "split": split, "wsj10": wsj10, "empty": len(sentences) - len(records),
        "runs": [{"checkpoint": run[0].checkpoint, "layers": [r.layer for r in run]} for run in runs],
        "default_layer": default_layer,
        "labels": [label for label in LABELS if label in present],  # the frequent ones: rare labels are noise
        "rows": [{"model": name, "layer": layer, **summary} for name, layer, summary in rows],
        "multi_run": multi_run_summary(results), "sentences": records,
    }


# Metrics where lower is better, whatever the metric that selects models (`Metric.key`) is.
LOWER_IS_BETTER = {"loss", "mse", "ppl", "bpc"}


def eval_document(split: str, checkpoints: list[str], results: list[dict], metric, breakdowns: dict,
                  summary: dict | None) -> dict:
    """What `eval --output` writes as `eval.json` and draws in its report.

    Args:
        results: each checkpoint's `Metric.values()`; metric: the last checkpoint's `Metric` (its `key`,
            `higher_is_better` and `breakdown()`); breakdowns: `"[k]"` -> the k-th checkpoint's values by group
            (logic: by number of operators), empty for metrics without groups; summary: metric -> mean and
            std over several checkpoints, or None.
    """
    lower = LOWER_IS_BETTER | ({metric.key} if not metric.higher_is_better else set())
    floats = [k for k, v in results[0].items() if isinstance(v, float)]
    breakdown = None
    if breakdowns:
        series = {f"{label} {checkpoints[int(label[1:-1]) - 1]}": values for label, values in breakdowns.items()}
        breakdown = {"title": metric.breakdown()[0], "key": metric.key, "series": series}
    return {"split": split, "key": metric.key, "better": {k: "lower" if k in lower else "higher" for k in floats},
            "checkpoints": [{"checkpoint": str(path), **values} for path, values in zip(checkpoints, results)],
            "summary": summary, "breakdown": breakdown}


def report_beside(output: str | Path) -> Path:
    """Where a command whose `--output` is a JSON file (`syneval`) puts its report: the same name with `.html`
    (`.report.html` when the output is itself named `.html`, which the report must not replace)."""
    output = Path(output)
    return output.with_suffix(".report.html" if output.suffix == ".html" else ".html")
