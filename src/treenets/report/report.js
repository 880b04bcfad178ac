/* The report's sentence browser: every sentence of a parse-eval report, listed from the JSON inlined in the page
   (see report/__init__.py), filtered by words, sorted, and its trees drawn when it is opened. The tables and
   charts are in the page already. Needs trees.js (svgEl, htmlEl, Trees). */
"use strict";

(() => {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const PAGE = 100;  // sentences listed at a time: the list of a whole treebank would be slow to lay out
  const missing = (v) => v === null || v === undefined;
  const pct = (v) => (missing(v) ? "–" : (100 * v).toFixed(1));
  const mean = (values) => values.reduce((a, b) => a + b, 0) / values.length;
  const layerText = (layer) => (layer ? `layer ${layer}` : "trees");

  const runName = (run, layer) => `${run.label} ${layer ? `layer ${layer}` : run.checkpoint.split("/").pop()}`;

  function renderSentences(add, P, runs) {
    const search = htmlEl("input", { type: "search", id: "search", placeholder: "filter by words, e.g. stock market",
                                     "aria-label": "filter sentences by words" });
    const choice = htmlEl("select", { id: "tree-choice", "aria-label": "whose trees" });
    for (const run of runs) {
      run.layers.forEach((layer, j) => choice.append(htmlEl("option", { value: `${run.k}:${j}`, text: runName(run, layer) })));
    }
    choice.value = `0:${runs[0].shown}`;
    const sort = htmlEl("select", { id: "sort", "aria-label": "order" });
    const orders = [["order", "treebank order"], ["f1-asc", "F1, lowest first"], ["f1-desc", "F1, highest first"],
                    ["len-asc", "length, shortest first"], ["len-desc", "length, longest first"]];
    if (runs.some((run) => run.heads)) orders.splice(3, 0, ["dda-asc", "DDA, lowest first"], ["dda-desc", "DDA, highest first"]);
    for (const [value, text] of orders) sort.append(htmlEl("option", { value, text }));
    const count = htmlEl("span", { id: "sentence-count" });
    add(htmlEl("div", { class: "controls" }, search, htmlEl("label", {}, "trees of ", choice), htmlEl("label", {}, "sort by ", sort), count));
    add(htmlEl("p", { class: "note", text: "Open a sentence to draw its predicted tree (a model's: the distances of every " +
      "layer under the words, the layer that built it highlighted) and its gold tree" +
      (runs.some((run) => run.heads) ? "; for a system that gives dependencies, its arcs against the gold arcs." : ".") }));
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
      const f1 = (s) => s.f[k][j] ?? -1, dda = (s) => (s.dd ? s.dd[k] ?? -1 : -1);
      const order = { "f1-asc": (a, b) => f1(a) - f1(b), "f1-desc": (a, b) => f1(b) - f1(a),
                      "dda-asc": (a, b) => dda(a) - dda(b), "dda-desc": (a, b) => dda(b) - dda(a),
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
      htmlEl("summary", {}, htmlEl("span", { class: "num", text: `#${s.i}` }),
             run.trees ? htmlEl("span", { class: "f1", text: `F1 ${pct(f1)}` }) : null,
             run.heads ? htmlEl("span", { class: "dda", text: `DDA ${pct(s.dd[run.k])}` }) : null,
             htmlEl("span", { class: "len", text: `${s.w.length} words` }), htmlEl("span", { class: "text", text: s.w.join(" ") })));
    // Trees are drawn the first time the row is opened (a treebank's worth of SVG would be slow).
    details.addEventListener("toggle", () => {
      if (details.open && details.children.length === 1) details.append(sentenceBody(s, run, j));
    });
    return details;
  }

  function sentenceBody(s, run, j) {
    const layer = run.layers[j];
    const scores = DATA.parsing.runs.map((r, k) => `[${k + 1}] ` + [
      ...(r.trees ? r.layers.map((l, m) => `${layerText(l)} ${pct(s.f[k][m])}`) : []),
      ...(r.heads ? [`DDA ${pct(s.dd[k])}`] : [])].join(" · "));
    const distances = s.d[run.k];
    const rows = distances.map((values, r) => ({ name: `layer ${r + 1}`, values, highlight: layer === String(r + 1) }));
    if (layer === "mean") {
      rows.push({ name: "mean", highlight: true, values: s.w.map((_, i) => mean(distances.map((row) => row[i]))) });
    }
    const gold = JSON.parse(s.g), text = s.t[run.k][j];
    const predicted = missing(text) ? null : JSON.parse(text);
    const predictedSpans = predicted === null ? new Set() : Trees.spans(predicted), goldSpans = Trees.spans(gold);
    const scroll = (svg) => htmlEl("div", { class: "figure-scroll" }, svg);
    const heads = run.heads ? s.h[run.k] : null;
    return htmlEl("div", { class: "sentence-body" },
      htmlEl("p", { class: "meta", text: `${s.src} — sentence F1: ${scores.join(" | ")} | right-branching ${pct(s.rb)}` }),
      !run.trees ? null : predicted === null ? htmlEl("p", { class: "note", text: `${runName(run, layer)} has no tree for this sentence.` })
        : scroll(Trees.figure({ words: s.w, tree: predicted, compare: goldSpans, unmatched: "extra", rows,
                                ...(s.pl && s.pl[run.k] ? { labels: s.pl[run.k][0], tags: s.pl[run.k][1] } : {}),
                                caption: `predicted: ${runName(run, layer)}, sentence F1 ${pct(s.f[run.k][j])}` })),
      scroll(Trees.figure({ words: s.w, tree: gold, compare: run.trees ? predictedSpans : null, unmatched: "missed",
                            labels: Trees.labelMap(s.l), caption: "gold" })),
      run.trees ? Trees.legend() : null,
      ...(heads ? [
        scroll(Trees.arcs({ words: s.w, heads, gold: s.gh,
                            caption: `dependencies: ${runName(run, layer)} above the words (DDA ${pct(s.dd[run.k])}), gold under them` })),
        Trees.legend(true),
        htmlEl("p", { class: "note", text: `Gold: ${DATA.parsing.dependencies.gold}; punctuation is not among the words, so not scored.` }),
      ] : []));
  }

  const P = DATA.parsing;
  const browser = document.getElementById("sentence-browser");
  if (P && browser) {
    const runs = P.runs.map((run, k) => ({
      ...run, k, label: `[${k + 1}]`,
      shown: run.layers.includes(P.default_layer) ? run.layers.indexOf(P.default_layer) : 0,
    }));
    renderSentences((...nodes) => browser.append(...nodes), P, runs);
  }
})();
