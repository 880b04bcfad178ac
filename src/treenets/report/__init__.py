"""The HTML report of an evaluation (`parse-eval`, `syneval`, `eval` with `--output`): one self-contained
`index.html` that opens from disk with no network. Its tables and charts (inline SVG) are written into the page
(`treenets.report.markup`), so that it reads, prints and archives in any viewer, with or without script; the
results are inlined too, as JSON, and a script (the parse-eval report's only) lists every sentence and draws its
trees when one is opened, so that a treebank of thousands of sentences stays quick.

The templates are this package's data files: `report.html`, `serve.html` (the page of `treenets serve`),
`report.css` (both pages), `trees.js` (trees and per-word bars, both pages), `report.js` and `serve.js`.
"""

from __future__ import annotations

import datetime
import html
import re
from importlib import resources
from pathlib import Path

import numpy as np

from treenets.core.files import json_text, write_text_atomic
from treenets.core.version import __version__
from treenets.report.markup import Column, Row, Series, chart, element, esc, fixed, percent, score_table
from treenets.trees import right_branching, sentence_prf, spans
from treenets.trees.dependency_scoring import GoldDependencies
from treenets.trees.metrics import LABELS
from treenets.trees.walk import fold


def asset(name: str) -> str:
    """The text of one of this package's template files."""
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def inline_json(data) -> str:
    """`data` as JSON safe inside a `<script>` element: `<`, `>` and `&` escaped, so that no word of a sentence
    (`</script>`, `<unk>`) can end the element or be read as markup."""
    text = json_text(data, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_page(template: str, title: str, scripts: list[str], data, body: str = "") -> str:
    """A page from `template` with the stylesheet, `scripts` (file names, in order), `data` and the static HTML
    `body` inlined.

    The placeholders `{{title}}`, `{{style}}`, `{{script}}`, `{{data}}` and `{{body}}` are filled in one pass, so
    that nothing inserted is searched for placeholders again."""
    values = {"title": html.escape(title), "style": asset("report.css"),
              "script": "\n".join(asset(name) for name in scripts), "data": inline_json(data), "body": body}
    return re.sub(r"\{\{(title|style|script|data|body)\}\}", lambda m: values[m.group(1)], asset(template))


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
    created = datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z")
    data = {"title": title, "version": __version__, "created": created, "parsing": parsing, "syneval": syneval,
            "eval": evaluation}
    body = element("p", esc(f"treenets {__version__}, written {created}"), class_="meta", id="report-meta")
    body += (parsing_html(parsing) if parsing else "") + (eval_html(evaluation) if evaluation else "")
    body += syneval_html(syneval) if syneval else ""
    path = Path(out) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    scripts = ["trees.js", "report.js"] if parsing else []  # the sentences' browser: the only script
    return write_text_atomic(path, render_page("report.html", title, scripts, data, body))


def group_runs(results: list) -> list[list]:
    """`SystemResult`s grouped by system: a model's layers come in a row and are distinct, so a layer seen again
    (or another source) starts the next (the same file given twice makes two runs, as in the printed table)."""
    runs: list[list] = []
    for result in results:
        if not runs or runs[-1][0].source != result.source or any(r.layer == result.layer for r in runs[-1]):
            runs.append([])
        runs[-1].append(result)
    return runs


def parsing_section(treebank: str, split: str, max_length: int | None, sentences: list, results: list,
                    distances: dict, rows: list[dict], default_layer: str | None, conventions: list[dict],
                    comparison: dict | None = None, figures: list[str] = (), dependencies: dict | None = None,
                    gold: GoldDependencies | None = None, dependency_files: list = ()) -> dict:
    """The data of a `parse-eval` report (inlined as JSON; `parsing_html` writes the page's tables from it).

    Args:
        treebank, split, max_length: what was scored, for the header.
        sentences: the `GoldSentence`s; results: the `SystemResult`s of every model layer and file, in order.
        distances: checkpoint -> per sentence `[rows, words]` array (None for an empty sentence).
        rows: the summary table, a dict per row (`model`, `layer`, `kind`: model, file or baseline, and the
            summary's values).
        default_layer: the layer whose trees the page shows first.
        conventions: `name`, `title` and `level` of each convention the table shows, in order.
        comparison: the systems side by side (`treenets.trees.evaluation.compare_systems`), or None.
        figures: the PNG figures written beside the report, relative to it.
        dependencies: the dependency scores of `summary.json` (`gold`, `words`, `rows`), or None when none were
            scored; gold: then the `GoldDependencies`; dependency_files: the systems of dependencies only (CoNLL
            files, `treenets.trees.evaluation.dependencies_only`), runs after the others'. With them, each
            sentence has its gold heads (`gh`) and every run's heads (`h`, None for a run without) and their
            directed attachment accuracy (`dd`). Where a run labels its trees (a grammar), each sentence has
            every run's labels (`pl`: `[{span: label}, [word label, ...]]`, None for a run without).
    """
    from treenets.trees.evaluation import multi_run_summary

    tree_runs = group_runs(results)
    runs = tree_runs + [[system] for system in dependency_files]
    with_heads = gold is not None and any(run[0].heads is not None for run in runs)
    records = []
    for i, s in enumerate(sentences):
        if not s.words:
            continue
        f1 = [[sentence_prf(spans(r.trees[i]), spans(s.gold))[2] if r.trees[i] is not None else None for r in run]
              for run in runs]
        records.append({
            "i": i + 1, "src": str(s.source), "w": s.words, "g": tree_json(s.gold),
            "l": [[start, end, label] for start, end, label in s.labeled if label],
            "t": [[tree_json(r.trees[i]) if r.trees[i] is not None else None for r in run] for run in runs],
            "f": [[round(v, 4) if v is not None else None for v in values] for values in f1],
            "d": [[[round(v, 4) for v in row] for row in distances[run[0].source][i].tolist()]
                  if run[0].source in distances else [] for run in runs],
            "rb": round(sentence_prf(spans(right_branching(s.words)), spans(s.gold))[2], 4),
        })
        if any(run[0].labels is not None for run in runs):  # each run's labels of its nodes and words, or None
            records[-1]["pl"] = [run[0].labels[i] if run[0].labels is not None else None for run in runs]
        if with_heads:
            heads = [run[0].heads[i] if run[0].heads is not None else None for run in runs]
            directed = [gold.sentence_scores(h, i)["dda"] for h in heads]
            records[-1].update(gh=gold.kept_heads(i), h=heads,
                               dd=[round(v, 4) if v is not None else None for v in directed])
    present = {key[len("recall_"):] for row in rows for key in row if key.startswith("recall_")}
    models = [r for r in results if r.layer]
    return {
        "treebank": treebank, "split": split, "max_length": max_length, "empty": len(sentences) - len(records),
        "conventions": conventions,
        "runs": [{"checkpoint": run[0].source, "layers": [r.layer for r in run],
                  "distances": run[0].source in distances, "trees": k < len(tree_runs),
                  "heads": with_heads and run[0].heads is not None} for k, run in enumerate(runs)],
        "default_layer": default_layer,
        "labels": [label for label in LABELS if label in present],  # the frequent ones: rare labels are noise
        "rows": rows, "multi_run": multi_run_summary(models), "comparison": comparison, "figures": list(figures),
        "dependencies": dependencies, "sentences": records,
    }


BASELINE_COLORS = {"right-branching": "#555e6e", "left-branching": "#9aa3b2", "balanced": "#c4cad4"}


def parsing_html(P: dict) -> str:
    """The static HTML of a `parse-eval` report from its `parsing_section` data: every table and chart; the
    sentences' browser is left to the script (`report.js`), which fills `#sentence-browser`."""
    from treenets.trees.evaluation import cell, table_columns
    from treenets.trees.formats import FORMATS

    parts = [element("h2", "Unsupervised parsing")]
    scored = len(P["sentences"])
    limit = f", at most {P['max_length']} words" if P["max_length"] else ""
    parts.append(element("p", esc(f"treebank {P['treebank']}{limit}: {scored} sentences with words, {P['empty']} "
                                  f"empty after filtering; split: {P['split']}"), class_="meta"))
    parts.append(element("ul", "".join(element("li", esc(
        f"[{k + 1}] {run['checkpoint']}" + (f" (layers {', '.join(run['layers'])})" if run["layers"][0] else "")
        + ("" if run["trees"] else " (dependencies only)")))
        for k, run in enumerate(P["runs"])), class_="meta"))

    columns = [Column(key, head, fixed(2), None) if key == "depth" else Column(key, head)
               for key, head in table_columns([c["name"] for c in P["conventions"]]) if not key.startswith("recall_")]
    columns += [Column(f"recall_{label}", label, title=f"recall of gold {label}") for label in P["labels"]]
    rows = [Row(r["model"], {c.key: cell(r, c.key) for c in columns}, r["layer"],
                "baseline" if r["kind"] == "baseline" else "", {"model": r["model"], "layer": r["layer"]})
            for r in P["rows"]]
    parts.append(element("h3", "Scores"))
    parts.append(score_table(columns, rows, layer_head="layer"))
    parts.append(element("p", esc(
        "F1 and recall in percent; the best cell of each column is marked (depth has none). " + " ".join(
            f"{c['name']}: {c['title']}, {'mean sentence' if c['level'] == 'sentence' else 'corpus'} F1."
            for c in P["conventions"]) + " Labels: recall of gold phrases. docs/parsing.md gives each convention's "
        "rules."), class_="note"))
    files = [r for r in P["rows"] if r.get("matching")]
    if files:
        parts.append(element("h3", "Files of trees") + element("ul", "".join(element("li", esc(
            f"{r['model']}: {FORMATS[r['matching']['format']]}; {r['matching']['summary']}"
            + (f"; {len(r['matching']['unplaced']):,} lines fit several sentences and could not be placed (lines "
               f"{', '.join(list(r['matching']['unplaced'])[:10])}), not scored" if r["matching"]["unplaced"] else "")
            + (f"; {r['missing']:,} sentences without a tree, not scored for it" if r.get("missing") else "")))
            for r in files), class_="meta") + element("p", esc(
                "How each file's lines were matched with the treebank's sentences: a sentence by the loosest "
                "normalisation its words needed, and the words matched only by a normalisation or a placeholder "
                "(docs/parsing.md lists them)."), class_="note"))
    if P["dependencies"]:
        parts.append(_dependencies_html(P["dependencies"]))
    if P["multi_run"]:
        parts.append(_runs_html(P))
    if P["comparison"]:
        parts.append(_comparison_html(P["comparison"]))
    histograms = [_distance_charts(P, k, run) for k, run in enumerate(P["runs"]) if run["distances"]]
    if histograms:
        parts.append(element("h3", "Syntactic distances") + "".join(histograms))
    if P["figures"]:
        parts.append(element("h3", "Figures") + element("p", "Predicted tree beside gold, distances under the words: "
                     + ", ".join(element("a", esc(Path(f).name), href=f) for f in P["figures"]), class_="note"))
    parts.append(element("h3", "Sentences") + element(
        "div", "<noscript><p class=\"note\">Every sentence's trees are listed and drawn by the page's script: allow "
        "JavaScript for this file to browse them (sentences.jsonl holds them as text).</p></noscript>",
        id="sentence-browser"))
    return element("section", "".join(parts), id="parsing")


def _dependencies_html(D: dict) -> str:
    """The dependency table: each system's and baseline's DDA and UDA (`summary.json`'s `dependencies`)."""
    columns = [Column("dda", "DDA", title="directed attachment accuracy (= UAS)"),
               Column("uda", "UDA", title="undirected attachment accuracy"),
               Column("sentences", "sentences", _metric, None), Column("words", "words scored", _metric, None)]
    rows = [Row(r["system"], r, css="baseline" if r["kind"] == "baseline" else "", attrs={"system": r["system"]})
            for r in D["rows"]]
    return element("h3", "Dependencies", id="dependencies") + score_table(columns, rows, name_head="system") + \
        element("p", esc(f"Against {D['gold']}; words scored by rule '{D['words']}' (punctuation not scored). DDA: "
                         "directed attachment accuracy (= UAS), UDA: undirected (the arc in either direction), in "
                         "percent; the best cell of each is marked. Random projective: the mean over its draws."),
                class_="note")


def _runs_html(P: dict) -> str:
    runs = P["runs"]
    cols = [Column(key, head, fixed(1), None) for key, head in
            (("mean", "mean"), ("std", "std"), ("max", "max"), ("self_f1", "self-F1"))]
    table = score_table(cols, [Row(f"layer {m['layer']}", m) for m in P["multi_run"]], name_head="sentence F1")
    layers = [m["layer"] for m in P["multi_run"]]
    model_rows = [r for r in P["rows"] if r["kind"] == "model"]
    series = [Series("mean ± std", [m["mean"] for m in P["multi_run"]], errors=[m["std"] for m in P["multi_run"]],
                     color="#c4cad4")]
    for k, run in enumerate(runs):
        if run["distances"]:
            found = {r["layer"]: 100 * r["sentence_f1"] for r in model_rows if r["model"] == run["checkpoint"]}
            series.append(Series(f"[{k + 1}] {run['checkpoint']}", [found.get(layer) for layer in layers], "dots"))
    figure = chart([f"layer {layer}" for layer in layers], series, ymax=100, ylabel="sentence F1 (%)",
                   caption="Sentence F1 of each run by layer; bars: mean and standard deviation over runs")
    count = sum(1 for run in runs if run["distances"])
    return element("h3", f"{count} runs side by side") + element("div", table + figure, class_="charts")


def _signed(value) -> str:
    """A difference of F1s in percent, with its sign."""
    return "–" if value != value else f"{100 * value:+.1f}"


def _metric(value) -> str:
    """A metric of `eval`: a count with thousands separated, a measure to four decimals."""
    return "–" if value is None else f"{value:,}" if isinstance(value, int) else f"{value:.4f}"


def _comparison_html(C: dict) -> str:
    """Systems side by side: figures, the paired bootstrap, agreement, the figure by length, recall by label."""
    names = [f"[{k + 1}] {name}" for k, name in enumerate(C["systems"])]
    parts = [element("h3", "Systems side by side", id="comparison")]
    parts.append(element("p", esc(f"Under the {C['convention']} convention ({C['title']}); "
                                  f"{'mean sentence' if C['level'] == 'sentence' else 'corpus'} F1 in percent."),
                         class_="meta"))
    parts.append(score_table([Column("figure", f"{C['convention']} F1"), Column("sentences", "sentences", str, None)],
                             [Row(n, {"figure": f, "sentences": c}) for n, f, c in
                              zip(names, C["figures"], C["sentences"])], name_head="system"))
    if C["bootstrap"]:
        cols = [Column("difference", "A − B", _signed, None), Column("interval", "95 % interval", str, None),
                Column("p", "p-value", lambda v: f"{v:.4f}", None), Column("sentences", "sentences", str, None)]
        rows = [Row(f"{names[b['a']]} − {names[b['b']]}",
                    {**b, "interval": f"[{_signed(b['low'])}, {_signed(b['high'])}]"}) for b in C["bootstrap"]]
        parts.append(element("h3", "Paired bootstrap"))
        parts.append(score_table(cols, rows, name_head="A − B"))
        draws = C["bootstrap"][0]["draws"]
        parts.append(element("p", esc(
            f"{draws:,} samples of the sentences both systems have, drawn with replacement (seed "
            f"{C['bootstrap'][0]['seed']}); the interval holds the middle 95 % of the differences, and the p-value "
            "(two-sided) is the share of samples whose difference is as far from the observed one as the observed is "
            "from 0."), class_="note"))
    cols = [Column(str(k), f"[{k + 1}]", percent, None) for k in range(len(names))]
    parts.append(element("h3", "Agreement between systems"))
    parts.append(score_table(cols, [Row(n, {str(j): v for j, v in enumerate(row)})
                                    for n, row in zip(names, C["agreement"])], name_head=""))
    parts.append(element("p", "Mean sentence F1 between the trees of two systems (official spans), over the "
                         "sentences both have: the self-F1 of seeds, for any pair.", class_="note"))
    L = C["by_length"]
    cols = [Column("sentences", "sentences", str, None)] + [Column(str(k), f"[{k + 1}]") for k in range(len(names))]
    rows = [Row(bucket, {"sentences": count, **{str(k): figures[b] for k, figures in enumerate(L["figures"])}})
            for b, (bucket, count) in enumerate(zip(L["buckets"], L["sentences"]))]
    parts.append(element("h3", "F1 by sentence length"))
    used = [b for b, count in enumerate(L["sentences"]) if count]
    notes = [f" ({L['sentences'][b]} sentences)" for b in used]
    series = [Series(n, [None if f[b] != f[b] else 100 * f[b] for b in used], "line", notes=notes,
                     color=BASELINE_COLORS.get(name), dashed=name in BASELINE_COLORS)
              for n, name, f in zip(names, C["systems"], L["figures"])]
    figure = chart([L["buckets"][b] for b in used], series, ymax=100, ylabel=f"{C['convention']} F1 (%)",
                   xlabel="sentence length (words)", caption="F1 by sentence length")
    parts.append(element("div", score_table(cols, rows, name_head="words", best_by="row") + figure, class_="charts"))
    B = C["by_label"]
    if B["labels"]:
        cols = [Column("gold", "gold phrases", lambda v: f"{v:,}", None)]
        cols += [Column(str(k), f"[{k + 1}]") for k in range(len(names))]
        rows = [Row(label, {"gold": count, **{str(k): recalls[i] for k, recalls in enumerate(B["recall"])}})
                for i, (label, count) in enumerate(zip(B["labels"], B["gold"]))]
        series = [Series(n, [None if v != v else 100 * v for v in recalls], color=BASELINE_COLORS.get(name))
                  for n, name, recalls in zip(names, C["systems"], B["recall"])]
        figure = chart(B["labels"], series, ymax=100, ylabel="recall (%)", band=max(40, 14 * len(series)),
                       caption="Recall of gold phrases by label")
        parts.append(element("h3", "Recall by gold label"))
        parts.append(element("div", score_table(cols, rows, name_head="label", best_by="row") + figure,
                             class_="charts"))
    return "".join(parts)


def _distance_charts(P: dict, k: int, run: dict) -> str:
    """A histogram of each layer's distances over every word, each over its own range (layers differ in level and
    spread, and a tree depends only on the order of its row's distances)."""
    rows = len(P["sentences"][0]["d"][k]) if P["sentences"] else 0
    figures = []
    for r in range(rows):
        values = np.array([v for s in P["sentences"] for v in s["d"][k][r] if v == v])  # NaN: read by no tree
        if not values.size:
            continue
        low, high = float(values.min()), float(values.max())
        width = (high - low) / 20 or 1.0
        counts = np.bincount(np.minimum(((values - low) / width).astype(int), 19), minlength=20)
        digits = max(0, 1 - int(np.floor(np.log10(width))))
        categories = [f"{low + b * width:.{digits}f}" for b in range(20)]
        figures.append(chart(categories, [Series(f"layer {r + 1}", counts.tolist())], band=13, height=190,
                             tick_every=5, fmt=lambda v: f"{v:g}", ylabel="words", xlabel="distance (bin start)",
                             caption=f"[{k + 1}] layer {r + 1}: distances of every word (20 bins)"))
    return element("div", "".join(figures), class_="charts")


def eval_html(E: dict) -> str:
    """The static HTML of an `eval --output` report from its document (`eval_document`)."""
    keys = [k for k, v in E["checkpoints"][0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
    columns = [Column(k, f"{k} *" if k == E["key"] else k, _metric, E["better"].get(k)) for k in keys]
    rows = [Row(f"[{k + 1}] {c['checkpoint']}", c, attrs={"model": c["checkpoint"]})
            for k, c in enumerate(E["checkpoints"])]
    parts = [element("h2", esc(f"Evaluation on the {E['split']} split")), score_table(columns, rows, "checkpoint")]
    if E["summary"]:
        cells = {k: f"{v['mean']:.4f} ± {v['std']:.4f}" for k, v in E["summary"].items()}
        parts.append(score_table([Column(k, k, str, None) for k in cells],
                                 [Row(f"mean ± std over {len(E['checkpoints'])}", cells)], ""))
    parts.append(element("p", "* the metric that selects models; the best cell of each metric column is marked.",
                         class_="note"))
    if E["breakdown"]:
        B = E["breakdown"]
        groups = list(dict.fromkeys(g for values in B["series"].values() for g in values))
        series = [Series(name, [values.get(g) for g in groups], "line") for name, values in B["series"].items()]
        parts.append(chart(groups, series, ylabel=B["key"], xlabel=B["title"], fmt=lambda v: f"{v:.2f}",
                           caption=f"{B['key']} by {B['title']}"))
    return element("section", "".join(parts), id="eval")


def syneval_html(S: dict) -> str:
    """The static HTML of a `syneval --output` report from its document: accuracy by case and model."""
    parts = [element("h2", "Targeted syntactic evaluation (Marvin &amp; Linzen 2018)")]
    limit = f", the first {S['limit']} items of each condition" if S["limit"] else ""
    parts.append(element("p", esc(f"templates {S['data']}{limit}"), class_="meta"))
    parts.append(element("ul", "".join(element("li", esc(
        f"[{k + 1}] {c['checkpoint']}: {len(c['unknown_types'])} of {c['word_types']} word types not in the "
        f"vocabulary; {c['sentences']} sentences scored in {c['seconds']:.1f} s")) for k, c in
        enumerate(S["checkpoints"])), class_="meta"))
    lines = [(ci, m, c["label"] if m == 0 else f"{c['label']} vs. {cmp['against']}", cmp["pairs"])
             for ci, c in enumerate(S["checkpoints"][0]["cases"]) for m, cmp in enumerate(c["comparisons"])]
    several = len(S["checkpoints"]) > 1
    columns = [Column("pairs", "pairs", lambda v: f"{v:,}", None)]
    for k in range(len(S["checkpoints"])):
        columns += [Column(f"all{k}", f"[{k + 1}] all", fixed(3), "higher" if several else None),
                    Column(f"covered{k}", f"[{k + 1}] covered", fixed(3), None),
                    Column(f"oov{k}", f"[{k + 1}] oov", str, None)]
    rows = []
    for ci, m, label, pairs in lines:
        cells = {"pairs": pairs}
        for k, c in enumerate(S["checkpoints"]):
            cmp = c["cases"][ci]["comparisons"][m]
            cells.update({f"all{k}": cmp["accuracy"], f"covered{k}": cmp["covered_accuracy"],
                          f"oov{k}": cmp["oov_pairs"]})
        rows.append(Row(label, cells))
    parts.append(score_table(columns, rows, "case", best_by="row"))
    parts.append(element("p", "Accuracy on all pairs, on the pairs without out-of-vocabulary words (covered), and the "
                         "count of pairs with one (oov); with several models, the best accuracy on all pairs of each "
                         "row is marked.", class_="note"))
    series = [Series(f"[{k + 1}] {c['checkpoint']}",
                     [c["cases"][ci]["comparisons"][m]["accuracy"] for ci, m, _, _ in lines])
              for k, c in enumerate(S["checkpoints"])]
    parts.append(chart([label for _, _, label, _ in lines], series, rotate=True, ymax=1, fmt=lambda v: f"{v:.2f}",
                       ylabel="accuracy (all pairs)", caption="Accuracy by case"))
    return element("section", "".join(parts), id="syneval")


def eval_document(split: str, checkpoints: list[str], results: list[dict], metric, breakdowns: dict,
                  summary: dict | None) -> dict:
    """What `eval --output` writes as `eval.json` and draws in its report.

    Args:
        results: each checkpoint's `Metric.values()`; metric: the last checkpoint's `Metric` (its `key`,
            `higher_is_better` and `breakdown()`); breakdowns: `"[k]"` -> the k-th checkpoint's values by group
            (logic: by number of operators), empty for metrics without groups; summary: metric -> mean and
            std over several checkpoints, or None.
    """
    lower = metric.lower_is_better | ({metric.key} if not metric.higher_is_better else set())
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
