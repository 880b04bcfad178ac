/* The report: tables, plots and sentences drawn from the JSON inlined in the page (see report/__init__.py).
   Needs trees.js (svgEl, htmlEl, Trees). */
"use strict";

(() => {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const root = document.getElementById("report");
  const PALETTE = ["#2a5bd7", "#d9822b", "#1a8f4c", "#8e44ad", "#c8334a", "#16a2b8", "#7f8c8d", "#b8860b"];
  const BASELINE_COLORS = { "right-branching": "#555e6e", "left-branching": "#9aa3b2", balanced: "#c4cad4" };
  const PAGE = 100;  // sentences listed at a time: the list of a whole treebank would be slow to lay out
  const missing = (v) => v === null || v === undefined;
  const pct = (v) => (missing(v) ? "–" : (100 * v).toFixed(1));
  const fixed = (digits) => (v) => (missing(v) ? "–" : v.toFixed(digits));
  const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;

  document.getElementById("report-meta").textContent = `treenets ${DATA.version}, written ${DATA.created}`;

  /* ---------- charts: categories along x; series as grouped bars, lines or dots, in percent or not ---------- */
  function niceMax(value) {
    const power = 10 ** Math.floor(Math.log10(value));
    return [1, 2, 2.5, 5, 10].map((m) => m * power).find((m) => m >= value * 1.0001) || 10 * power;
  }

  function chart({ categories, series, ylabel = "", xlabel = "", ymax = null, height = 230, band = null,
                   tickEvery = 1, rotate = false, format = (v) => v.toFixed(1), caption = "" }) {
    const left = 50, right = 12, top = 10, bottom = (rotate ? 120 : 30) + (xlabel ? 16 : 0);
    const bandW = band || Math.max(16, Math.min(70, 620 / categories.length));
    const width = left + right + bandW * categories.length;
    const plotH = height - top - bottom;
    const tops = series.flatMap((s) => s.values.map((v, i) => (missing(v) ? null : v + ((s.errors && s.errors[i]) || 0))));
    const yTop = ymax !== null ? ymax : niceMax(Math.max(1e-9, ...tops.filter((v) => v !== null)));
    const y = (v) => top + plotH * (1 - Math.min(v, yTop) / yTop);
    const cx = (i) => left + bandW * (i + 0.5);
    const svg = svgEl("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": caption || ylabel });
    for (let k = 0; k <= 4; k++) {
      const v = (yTop * k) / 4;
      svg.append(svgEl("line", { x1: left, y1: y(v), x2: width - right, y2: y(v), class: k ? "grid" : "axis" }));
      svg.append(svgEl("text", { x: left - 5, y: y(v) + 3, "text-anchor": "end", class: "tick" }, format(v)));
    }
    categories.forEach((c, i) => {
      if (i % tickEvery) return;
      const attrs = rotate
        ? { x: cx(i), y: height - bottom + 12, "text-anchor": "end", transform: `rotate(-35 ${cx(i)} ${height - bottom + 12})` }
        : { x: cx(i), y: height - bottom + 14, "text-anchor": "middle" };
      svg.append(svgEl("text", { ...attrs, class: "tick" }, c));
    });
    if (ylabel) {
      svg.append(svgEl("text", { x: 12, y: top + plotH / 2, "text-anchor": "middle", class: "tick",
                                 transform: `rotate(-90 12 ${top + plotH / 2})` }, ylabel));
    }
    if (xlabel) svg.append(svgEl("text", { x: left + (width - left - right) / 2, y: height - 4, "text-anchor": "middle", class: "tick" }, xlabel));
    const colored = series.map((s, k) => ({ ...s, color: s.color || PALETTE[k % PALETTE.length] }));
    const bars = colored.filter((s) => (s.style || "bar") === "bar");
    const barW = Math.min(22, (bandW * 0.8) / Math.max(bars.length, 1));
    bars.forEach((s, k) => s.values.forEach((v, i) => {
      if (missing(v)) return;
      const x = cx(i) + (k - bars.length / 2) * barW;
      const rect = svgEl("rect", { x, y: y(v), width: Math.max(barW - 1, 1), height: Math.max(y(0) - y(v), 0.5), fill: s.color });
      rect.append(svgEl("title", {}, `${s.name} — ${categories[i]}: ${format(v)}${s.notes ? s.notes[i] : ""}`));
      svg.append(rect);
      const e = s.errors && s.errors[i];
      if (e) svg.append(svgEl("line", { x1: x + barW / 2, y1: y(v - e), x2: x + barW / 2, y2: y(v + e), stroke: "#222", "stroke-width": 1.2 }));
    }));
    colored.filter((s) => s.style === "line" || s.style === "dots").forEach((s) => {
      const points = s.values.map((v, i) => (missing(v) ? null : [cx(i), y(v), v, i]));
      if (s.style === "line") {
        for (let i = 1; i < points.length; i++) {
          if (!points[i - 1] || !points[i]) continue;
          svg.append(svgEl("line", { x1: points[i - 1][0], y1: points[i - 1][1], x2: points[i][0], y2: points[i][1],
                                     stroke: s.color, "stroke-width": 2, "stroke-dasharray": s.dashed ? "5 4" : "none" }));
        }
      }
      for (const p of points.filter(Boolean)) {
        const dot = svgEl("circle", { cx: p[0], cy: p[1], r: s.style === "dots" ? 4 : 3, fill: s.color, stroke: "#fff" });
        dot.append(svgEl("title", {}, `${s.name} — ${categories[p[3]]}: ${format(p[2])}${s.notes ? s.notes[p[3]] : ""}`));
        svg.append(dot);
      }
    });
    const legend = htmlEl("div", { class: "legend" });
    if (colored.length > 1) {
      for (const s of colored) legend.append(htmlEl("span", {}, htmlEl("span", { class: "swatch", style: `background:${s.color}` }), s.name));
    }
    return htmlEl("figure", {}, svg, legend, caption ? htmlEl("figcaption", { text: caption }) : null);
  }

  /* A table whose best cell of each column is marked. columns: [{key, head, format, better: "higher" |
     "lower" | null}]; rows: [{cells: {key: value}, name, layer, className, attrs}]. */
  function scoreTable(columns, rows, { nameHead = "model", layerHead = null } = {}) {
    const best = {};
    for (const c of columns.filter((c) => c.better)) {
      const values = rows.map((r) => r.cells[c.key]).filter((v) => !missing(v));
      if (values.length) best[c.key] = c.better === "higher" ? Math.max(...values) : Math.min(...values);
    }
    const head = htmlEl("tr", {}, htmlEl("th", { class: "name", text: nameHead }));
    if (layerHead) head.append(htmlEl("th", { text: layerHead }));
    for (const c of columns) head.append(htmlEl("th", { text: c.head, title: c.title || c.key }));
    const body = htmlEl("tbody");
    for (const row of rows) {
      const tr = htmlEl("tr", { class: row.className || "", ...(row.attrs || {}) }, htmlEl("td", { class: "name", text: row.name }));
      if (layerHead) tr.append(htmlEl("td", { text: row.layer }));
      for (const c of columns) {
        const value = row.cells[c.key];
        const isBest = !missing(value) && c.key in best && value === best[c.key];
        tr.append(htmlEl("td", { "data-col": c.key, class: isBest ? "best" : "", title: isBest ? "best in this column" : "",
                                 text: missing(value) ? "–" : c.format(value) }));
      }
      body.append(tr);
    }
    return htmlEl("div", { class: "table-wrap" }, htmlEl("table", { class: "scores" }, htmlEl("thead", {}, head), body));
  }

  /* ---------------------------------------------- parse-eval ---------------------------------------------- */
  function renderParsing(P) {
    const section = htmlEl("section", { id: "parsing" });
    root.append(section);
    const add = (...nodes) => section.append(...nodes);
    const runs = P.runs.map((run, k) => ({
      ...run, k, label: `[${k + 1}]`,
      shown: run.layers.includes(P.default_layer) ? run.layers.indexOf(P.default_layer) : 0,
    }));
    // The model rows of the table come in the order of the runs and their layers.
    const modelRows = P.rows.filter((r) => r.layer !== "");
    let cursor = 0;
    for (const run of runs) { run.rows = modelRows.slice(cursor, cursor + run.layers.length); cursor += run.layers.length; }
    const baselines = P.rows.filter((r) => r.layer === "");

    add(htmlEl("h2", { text: "Unsupervised parsing" }));
    add(htmlEl("p", { class: "meta", text: `treebank ${P.treebank}${P.wsj10 ? " (WSJ10)" : ""}: ${P.sentences.length} ` +
      `sentences scored, ${P.empty} empty after filtering; split: ${P.split}` }));
    add(htmlEl("ul", { class: "meta" }, ...runs.map((r) => htmlEl("li", { text: `${r.label} ${r.checkpoint} (layers ${r.layers.join(", ")})` }))));

    const columns = [
      { key: "sentence_f1", head: "sent-F1", format: pct, better: "higher", title: "mean sentence F1 (ON-LSTM/PRPN)" },
      { key: "corpus_f1", head: "corp-F1", format: pct, better: "higher", title: "corpus F1" },
      { key: "evalb_f1", head: "evalb-F1", format: pct, better: "higher", title: "corpus F1, whole-sentence span counted" },
      { key: "depth", head: "depth", format: fixed(2), better: null, title: "average depth of the words" },
      ...P.labels.map((l) => ({ key: `recall_${l}`, head: l, format: pct, better: "higher", title: `recall of gold ${l}` })),
    ];
    add(htmlEl("h3", { text: "Scores" }));
    add(scoreTable(columns, P.rows.map((r) => ({
      name: r.model, layer: r.layer, cells: r, className: r.layer === "" ? "baseline" : "",
      attrs: { "data-model": r.model, "data-layer": r.layer },
    })), { layerHead: "layer" }));
    add(htmlEl("p", { class: "note", text: "F1 and recall in percent; the best cell of each column is marked (depth has " +
      "no best). sent-F1: mean over sentences, spans of 2+ words, whole-sentence span excluded; corp-F1: the same " +
      "spans counted over the corpus; evalb-F1: whole-sentence span counted; labels: recall of gold phrases." }));

    if (P.multi_run.length) renderRuns(add, P, runs);
    add(htmlEl("h3", { text: "Plots" }));
    add(htmlEl("div", { class: "charts" }, lengthChart(P, runs), recallChart(P, runs, baselines)));
    add(htmlEl("h3", { text: "Syntactic distances" }));
    for (const run of runs) add(distanceCharts(P, run, runs.length > 1));
    renderSentences(add, P, runs);
  }

  function renderRuns(add, P, runs) {
    add(htmlEl("h3", { text: `${runs.length} runs side by side` }));
    const cols = [["mean", "mean"], ["std", "std"], ["max", "max"], ["self_f1", "self-F1"]]
      .map(([key, head]) => ({ key, head, format: fixed(1), better: null }));
    const table = scoreTable(cols, P.multi_run.map((m) => ({ name: `layer ${m.layer}`, cells: m })), { nameHead: "sentence F1" });
    const layers = P.multi_run.map((m) => m.layer);
    const series = [{ name: "mean ± std", values: P.multi_run.map((m) => m.mean), errors: P.multi_run.map((m) => m.std), color: "#c4cad4" },
      ...runs.map((run) => ({ name: `${run.label} ${run.checkpoint}`, style: "dots",
                              values: layers.map((l) => (run.layers.includes(l) ? 100 * run.rows[run.layers.indexOf(l)].sentence_f1 : null)) }))];
    add(htmlEl("div", { class: "charts" }, table, chart({ categories: layers.map((l) => `layer ${l}`), series, ymax: 100,
      ylabel: "sentence F1 (%)", caption: "Sentence F1 of each run by layer; bars: mean and standard deviation over runs" })));
  }

  function lengthChart(P, runs) {
    const bin = (n) => Math.min(Math.floor((n - 1) / 5), 8);
    const categories = Array.from({ length: 9 }, (_, b) => (b < 8 ? `${5 * b + 1}–${5 * b + 5}` : "41+"));
    const counts = categories.map(() => 0);
    for (const s of P.sentences) counts[bin(s.w.length)] += 1;
    const byBin = (value) => categories.map((_, b) => {
      const values = P.sentences.filter((s) => bin(s.w.length) === b).map(value);
      return values.length ? 100 * mean(values) : null;
    });
    const notes = counts.map((n) => ` (${n} sentences)`);
    const series = runs.map((run) => ({ name: `${run.label} layer ${run.layers[run.shown]}`, style: "line", notes,
                                        values: byBin((s) => s.f[run.k][run.shown]) }));
    series.push({ name: "right-branching", style: "line", dashed: true, color: BASELINE_COLORS["right-branching"], notes,
                  values: byBin((s) => s.rb) });
    const used = counts.map((n) => n > 0);
    const keep = (values) => values.filter((_, b) => used[b]);
    return chart({ categories: keep(categories), series: series.map((s) => ({ ...s, values: keep(s.values), notes: keep(notes) })),
                   ymax: 100, ylabel: "sentence F1 (%)", xlabel: "sentence length (words)",
                   caption: "Sentence F1 by sentence length: the model beside right-branching trees" });
  }

  function recallChart(P, runs, baselines) {
    const series = runs.map((run) => ({ name: `${run.label} layer ${run.layers[run.shown]}`,
                                        values: P.labels.map((l) => 100 * (run.rows[run.shown][`recall_${l}`] ?? NaN)) }));
    for (const b of baselines) {
      series.push({ name: b.model, color: BASELINE_COLORS[b.model] || "#e1e4ea",
                    values: P.labels.map((l) => (missing(b[`recall_${l}`]) ? null : 100 * b[`recall_${l}`])) });
    }
    for (const s of series) s.values = s.values.map((v) => (Number.isFinite(v) ? v : null));
    return chart({ categories: P.labels, series, ymax: 100, ylabel: "recall (%)", band: Math.max(40, 14 * series.length),
                   caption: "Recall of gold phrases by label" });
  }

  /* A histogram of each layer's distances over every word, each layer over its own range (layers differ in
     level and spread, and a tree depends only on the order of its row's distances). */
  function distanceCharts(P, run, named) {
    const rows = P.sentences.length ? P.sentences[0].d[run.k].length : 0;
    const bins = 20;
    const figures = Array.from({ length: rows }, (_, r) => {
      const values = P.sentences.flatMap((s) => s.d[run.k][r]);
      const low = values.reduce((a, b) => Math.min(a, b), Infinity), high = values.reduce((a, b) => Math.max(a, b), -Infinity);
      const width = (high - low) / bins || 1;
      const counts = new Array(bins).fill(0);
      for (const v of values) counts[Math.min(bins - 1, Math.floor((v - low) / width))] += 1;
      const digits = Math.max(0, 1 - Math.floor(Math.log10(width)));  // enough to tell the bins apart
      const categories = counts.map((_, b) => (low + b * width).toFixed(digits));
      return chart({ categories, series: [{ name: `layer ${r + 1}`, values: counts, color: PALETTE[run.k % PALETTE.length] }],
                     band: 13, height: 190, tickEvery: 5, format: (v) => String(+v.toFixed(1)), ylabel: "words",
                     xlabel: "distance (bin start)",
                     caption: `${named ? `${run.label} ` : ""}layer ${r + 1}: distances of every word (${bins} bins)` });
    });
    return htmlEl("div", { class: "charts" }, ...figures);
  }

  function renderSentences(add, P, runs) {
    add(htmlEl("h3", { text: "Sentences" }));
    const search = htmlEl("input", { type: "search", id: "search", placeholder: "filter by words, e.g. stock market",
                                     "aria-label": "filter sentences by words" });
    const choice = htmlEl("select", { id: "tree-choice", "aria-label": "whose trees" });
    for (const run of runs) {
      run.layers.forEach((layer, j) => choice.append(htmlEl("option", { value: `${run.k}:${j}`, text: `${run.label} layer ${layer}` })));
    }
    choice.value = `0:${runs[0].shown}`;
    const sort = htmlEl("select", { id: "sort", "aria-label": "order" });
    for (const [value, text] of [["order", "treebank order"], ["f1-asc", "F1, lowest first"], ["f1-desc", "F1, highest first"],
                                 ["len-asc", "length, shortest first"], ["len-desc", "length, longest first"]]) {
      sort.append(htmlEl("option", { value, text }));
    }
    const count = htmlEl("span", { id: "sentence-count" });
    add(htmlEl("div", { class: "controls" }, search, htmlEl("label", {}, "trees of ", choice), htmlEl("label", {}, "sort by ", sort), count));
    add(htmlEl("p", { class: "note", text: "Open a sentence to draw its predicted tree (the distances of every layer under " +
      "the words; the layer that built it highlighted) and its gold tree." }));
    const list = htmlEl("div", { class: "sentences", id: "sentence-list" });
    const more = htmlEl("button", { class: "more", type: "button" });
    add(list, more);
    for (const s of P.sentences) s.lower = s.w.map((w) => w.toLowerCase());
    let shown = [], limit = PAGE;

    const selected = () => choice.value.split(":").map(Number);
    function update() {
      const terms = search.value.toLowerCase().split(/\s+/).filter(Boolean);
      const [k, j] = selected();
      shown = P.sentences.filter((s) => terms.every((t) => s.lower.some((w) => w.includes(t))));
      const f1 = (s) => s.f[k][j] ?? -1;
      const order = { "f1-asc": (a, b) => f1(a) - f1(b), "f1-desc": (a, b) => f1(b) - f1(a),
                      "len-asc": (a, b) => a.w.length - b.w.length, "len-desc": (a, b) => b.w.length - a.w.length };
      if (order[sort.value]) shown.sort((a, b) => order[sort.value](a, b) || a.i - b.i);
      limit = PAGE;
      list.replaceChildren();
      draw();
    }
    function draw() {
      const [k, j] = selected();
      for (const s of shown.slice(list.children.length, limit)) list.append(sentenceRow(s, runs[k], j));
      count.textContent = `${shown.length} of ${P.sentences.length} sentences`;
      more.hidden = shown.length <= limit;
      more.textContent = `show ${Math.min(PAGE, shown.length - limit)} more`;
    }
    search.addEventListener("input", update);
    choice.addEventListener("change", update);
    sort.addEventListener("change", update);
    more.addEventListener("click", () => { limit += PAGE; draw(); });
    update();
  }

  function sentenceRow(s, run, j) {
    const f1 = s.f[run.k][j];
    const details = htmlEl("details", { "data-index": s.i },
      htmlEl("summary", {}, htmlEl("span", { class: "num", text: `#${s.i}` }), htmlEl("span", { class: "f1", text: `F1 ${pct(f1)}` }),
             htmlEl("span", { class: "len", text: `${s.w.length} words` }), htmlEl("span", { class: "text", text: s.w.join(" ") })));
    // Trees are drawn the first time the row is opened (a treebank's worth of SVG would be slow).
    details.addEventListener("toggle", () => {
      if (details.open && details.children.length === 1) details.append(sentenceBody(s, run, j));
    });
    return details;
  }

  function sentenceBody(s, run, j) {
    const layer = run.layers[j];
    const scores = DATA.parsing.runs.map((r, k) => `[${k + 1}] ` + r.layers.map((l, m) => `layer ${l} ${pct(s.f[k][m])}`).join(" · "));
    const distances = s.d[run.k];
    const rows = distances.map((values, r) => ({ name: `layer ${r + 1}`, values, highlight: layer === String(r + 1) }));
    if (layer === "mean") {
      rows.push({ name: "mean", highlight: true, values: s.w.map((_, i) => mean(distances.map((row) => row[i]))) });
    }
    const predicted = JSON.parse(s.t[run.k][j]), gold = JSON.parse(s.g);
    const predictedSpans = Trees.spans(predicted), goldSpans = Trees.spans(gold);
    const scroll = (svg) => htmlEl("div", { class: "figure-scroll" }, svg);
    return htmlEl("div", { class: "sentence-body" },
      htmlEl("p", { class: "meta", text: `${s.src} — sentence F1: ${scores.join(" | ")} | right-branching ${pct(s.rb)}` }),
      scroll(Trees.figure({ words: s.w, tree: predicted, compare: goldSpans, unmatched: "extra", rows,
                            caption: `predicted: ${run.label} layer ${layer}, sentence F1 ${pct(s.f[run.k][j])}` })),
      scroll(Trees.figure({ words: s.w, tree: gold, compare: predictedSpans, unmatched: "missed",
                            labels: Trees.labelMap(s.l), caption: "gold" })),
      Trees.legend());
  }

  /* ------------------------------------------------- eval ------------------------------------------------- */
  function renderEval(E) {
    const section = htmlEl("section", { id: "eval" });
    root.append(section);
    section.append(htmlEl("h2", { text: `Evaluation on the ${E.split} split` }));
    const keys = Object.keys(E.checkpoints[0]).filter((k) => typeof E.checkpoints[0][k] === "number");
    const format = (v) => (Number.isInteger(v) ? v.toLocaleString("en") : v.toFixed(4));
    const columns = keys.map((key) => ({ key, head: key === E.key ? `${key} *` : key, format, better: E.better[key] || null }));
    const rows = E.checkpoints.map((c, k) => ({ name: `[${k + 1}] ${c.checkpoint}`, cells: c, attrs: { "data-model": c.checkpoint } }));
    section.append(scoreTable(columns, rows, { nameHead: "checkpoint" }));
    if (E.summary) {
      const cells = Object.fromEntries(Object.entries(E.summary).map(([k, v]) => [k, `${v.mean.toFixed(4)} ± ${v.std.toFixed(4)}`]));
      section.append(scoreTable(Object.keys(cells).map((key) => ({ key, head: key, format: (v) => v, better: null })),
                                [{ name: `mean ± std over ${E.checkpoints.length}`, cells }], { nameHead: "" }));
    }
    section.append(htmlEl("p", { class: "note", text: `* the metric that selects models; the best cell of each metric column is marked.` }));
    if (E.breakdown) {
      const groups = [...new Set(Object.values(E.breakdown.series).flatMap((s) => Object.keys(s)))];
      const series = Object.entries(E.breakdown.series).map(([name, values]) => ({ name, style: "line",
        values: groups.map((g) => (g in values ? values[g] : null)) }));
      section.append(chart({ categories: groups, series, ylabel: E.breakdown.key, xlabel: E.breakdown.title,
                             format: (v) => v.toFixed(2), caption: `${E.breakdown.key} by ${E.breakdown.title}` }));
    }
  }

  /* ----------------------------------------------- syneval ----------------------------------------------- */
  function renderSyneval(S) {
    const section = htmlEl("section", { id: "syneval" });
    root.append(section);
    section.append(htmlEl("h2", { text: "Targeted syntactic evaluation (Marvin & Linzen 2018)" }));
    section.append(htmlEl("p", { class: "meta", text: `templates ${S.data}${S.limit ? `, the first ${S.limit} items of each condition` : ""}` }));
    section.append(htmlEl("ul", { class: "meta" }, ...S.checkpoints.map((c, k) => htmlEl("li", {
      text: `[${k + 1}] ${c.checkpoint}: ${c.unknown_types.length} of ${c.word_types} word types not in the vocabulary; ` +
            `${c.sentences} sentences scored in ${c.seconds.toFixed(1)} s` }))));
    const lines = S.checkpoints[0].cases.flatMap((c, ci) => c.comparisons.map((cmp, m) => ({ ci, m,
      label: m === 0 ? c.label : `${c.label} vs. ${cmp.against}`, pairs: cmp.pairs })));
    const columns = [{ key: "pairs", head: "pairs", format: (v) => v.toLocaleString("en"), better: null }];
    S.checkpoints.forEach((_, k) => columns.push(
      { key: `all${k}`, head: `[${k + 1}] all`, format: fixed(3), better: null },
      { key: `covered${k}`, head: `[${k + 1}] covered`, format: fixed(3), better: null },
      { key: `oov${k}`, head: `[${k + 1}] oov`, format: (v) => String(v), better: null }));
    const rows = lines.map((line) => {
      const cells = { pairs: line.pairs };
      S.checkpoints.forEach((c, k) => {
        const cmp = c.cases[line.ci].comparisons[line.m];
        Object.assign(cells, { [`all${k}`]: cmp.accuracy, [`covered${k}`]: cmp.covered_accuracy, [`oov${k}`]: cmp.oov_pairs });
      });
      return { name: line.label, cells };
    });
    const table = scoreTable(columns, rows, { nameHead: "case" });
    // Here models are compared case by case: the best accuracy of each row is marked.
    if (S.checkpoints.length > 1) {
      table.querySelectorAll("tbody tr").forEach((tr, r) => {
        for (const kind of ["all", "covered"]) {
          const values = S.checkpoints.map((_, k) => rows[r].cells[`${kind}${k}`]);
          const top = Math.max(...values.filter((v) => !missing(v)));
          values.forEach((v, k) => {
            if (v === top) tr.querySelector(`td[data-col="${kind}${k}"]`).classList.add("best");
          });
        }
      });
    }
    section.append(table);
    section.append(htmlEl("p", { class: "note", text: "Accuracy on all pairs, on the pairs without out-of-vocabulary " +
      "words (covered), and the count of pairs with one (oov); with several models, the best of each row is marked." }));
    section.append(chart({ categories: lines.map((l) => l.label), rotate: true, ymax: 1, format: fixed(2), ylabel: "accuracy (all pairs)",
      series: S.checkpoints.map((c, k) => ({ name: `[${k + 1}] ${c.checkpoint}`, values: lines.map((l) => c.cases[l.ci].comparisons[l.m].accuracy) })),
      caption: "Accuracy by case" }));
  }

  if (DATA.parsing) renderParsing(DATA.parsing);
  if (DATA.eval) renderEval(DATA.eval);
  if (DATA.syneval) renderSyneval(DATA.syneval);
})();
