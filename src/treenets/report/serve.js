/* The page of `treenets serve`: sends the typed sentence to POST api/parse and draws each model's answer with
   trees.js (svgEl, htmlEl, Trees). The models and limits are inlined in the page by the server. */
"use strict";

(() => {
  const DATA = JSON.parse(document.getElementById("serve-data").textContent);
  const $ = (id) => document.getElementById(id);
  const form = $("parse-form"), input = $("sentence"), modelA = $("model-a"), modelB = $("model-b");
  const split = $("split"), error = $("error"), results = $("results");
  const second = $("second"), parentsA = $("parents-a"), parentsB = $("parents-b");
  const byId = Object.fromEntries(DATA.models.map((m) => [m.id, m]));
  let answer = null;  // the last answer of the server, drawn again when the split changes

  $("limits").textContent = `At most ${DATA.limits.words} words and ${DATA.limits.characters} characters.`;
  for (const m of DATA.models) {
    modelA.append(htmlEl("option", { value: m.id, text: m.id }));
    modelB.append(htmlEl("option", { value: m.id, text: m.id }));
  }
  modelB.prepend(htmlEl("option", { value: "", text: "none" }));
  modelB.value = DATA.models.length > 1 ? DATA.models[1].id : "";
  // The split is a choice only where some model builds its trees more than one way (a StructFormer: its own).
  split.closest("label").hidden = !DATA.models.some((m) => m.splits && m.splits.length > 1);

  // A model of two inputs (relatedness, logic) asks for the second below the first; a dependency Tree-LSTM for each
  // sentence's parents too. The first input serves every chosen model.
  const chosen = () => [...new Set([modelA.value, modelB.value].filter(Boolean))].map((id) => byId[id]);
  function showInputs() {
    const pair = chosen().find((m) => m.second);
    second.hidden = !pair;
    second.placeholder = pair ? pair.second : "";
    input.placeholder = pair && chosen().every((m) => m.second) ? pair.first : "the stock market fell sharply";
    parentsA.hidden = parentsB.hidden = !chosen().some((m) => m.parents);
  }
  modelA.addEventListener("change", showInputs);
  modelB.addEventListener("change", showInputs);
  showInputs();

  function showError(message) {
    error.textContent = message;
    error.hidden = !message;
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const models = chosen().map((m) => m.id);
    const query = { sentence: input.value, models };
    if (!second.hidden) query.second = second.value;
    if (!parentsA.hidden) query.parents = [parentsA.value, parentsB.value];
    results.classList.add("busy");
    try {
      const response = await fetch("api/parse", {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(query),
      });
      const body = await response.json();
      if (!response.ok) throw new Error(body.error || `the server answered ${response.status}`);
      answer = body;
      showError("");
      draw();
    } catch (e) {
      answer = null;
      results.replaceChildren();
      showError(e.message);
    } finally {
      results.classList.remove("busy");
    }
  });
  split.addEventListener("change", () => { if (answer) draw(); });

  function draw() {
    results.replaceChildren(...answer.results.map(panel));
  }

  // SST's classes as short marks beside the nodes: -- - 0 + ++ (fine-grained), - + (binary).
  const MARKS = { 5: ["−−", "−", "0", "+", "++"], 2: ["−", "+"] };

  function sentimentPanel(r, info) {
    const marks = MARKS[info.classes.length];
    const words = r.tokens;
    const unknown = new Set(words.map((w, i) => (r.unknown.includes(w) ? i : -1)).filter((i) => i >= 0));
    const p = r.probabilities[r.label];
    const box = htmlEl("section", { class: "panel", "data-model": r.model }, htmlEl("h2", { text: r.model }),
      htmlEl("p", { class: "meta", text: info.description + (r.unknown.length ? `; read as <unk>: ${r.unknown.join(" ")}` : "") }),
      htmlEl("p", { class: "verdict", text: `${info.classes[r.label]} (p = ${p.toFixed(2)})` }));
    if (!r.tree) return box;  // an LSTM: the sentence's class only
    const labels = Object.fromEntries(Object.entries(r.labels).map(([span, label]) => [span, marks[label]]));
    const row = { name: "word class", values: r.word_labels, format: (v) => marks[v] };
    const source = r.parser === "given" ? "given" : ["right-branching", "balanced"].includes(r.parser) ? r.parser
      : `induced by ${r.parser}`;
    box.append(htmlEl("p", { class: "meta", text: `tree: ${source}; the class of every phrase and word: ${marks.join(" ")}` }));
    box.append(htmlEl("div", { class: "figure-scroll" }, Trees.figure({ words, unknown, tree: r.tree, labels,
      rows: [row], caption: "classes" })));
    return box;
  }

  // A model that decodes labelled trees (a grammar): its tree by each decoder, every node's and word's label.
  function decodedPanel(r, info) {
    const words = r.tokens;
    const unknown = new Set(words.map((w, i) => (r.unknown.includes(w) ? i : -1)).filter((i) => i >= 0));
    const perplexity = r.perplexity === null ? "no tree of one word" : `perplexity ${r.perplexity.toFixed(1)}`;
    const box = htmlEl("section", { class: "panel", "data-model": r.model }, htmlEl("h2", { text: r.model }),
      htmlEl("p", { class: "meta", text: `${info.description}; ${words.length} ${info.unit}s; ${perplexity}` +
        (r.unknown.length ? `; read as <unk>: ${r.unknown.join(" ")}` : "") }));
    for (const decoder of r.decoders) {
      const found = r.trees[decoder];
      box.append(htmlEl("div", { class: "figure-scroll" }, Trees.figure({ words, unknown, tree: found.tree,
        labels: found.labels, tags: found.word_labels,
        caption: `${decoder}: every span's nonterminal, every word's preterminal (under it)` })));
    }
    return box;
  }

  // An ensemble: its combined tree, then each member's with its agreement (sentence F1) with the combined one.
  function ensemblePanel(r, info) {
    const words = r.tokens;
    const unknown = new Set(words.map((w, i) => (r.unknown.includes(w) ? i : -1)).filter((i) => i >= 0));
    const scroll = (svg) => htmlEl("div", { class: "figure-scroll" }, svg);
    const box = htmlEl("section", { class: "panel", "data-model": r.model }, htmlEl("h2", { text: r.model }),
      htmlEl("p", { class: "meta", text: `${info.description}; ${words.length} ${info.unit}s` +
        (r.unknown.length ? `; read as <unk>: ${r.unknown.join(" ")}` : "") }));
    if (info.reports.length) {
      box.append(htmlEl("p", { class: "meta" }, "reports: ", ...info.reports.flatMap((rep, k) => [
        k ? ", " : "", htmlEl("a", { href: rep.url, target: "_blank", rel: "noopener", text: rep.name })])));
    }
    box.append(scroll(Trees.figure({ words, unknown, tree: r.tree, caption: `the ensemble's tree (${r.mode})` })));
    box.append(htmlEl("h3", { text: "Its members" }));
    const agreement = (a) => (a === null ? "no tree" : `agreement ${(100 * a).toFixed(1)} (sentence F1 with the ensemble's tree)`);
    box.append(htmlEl("div", { class: "layers" }, ...r.members.map((m) => scroll(Trees.figure({
      words, unknown, tree: m.tree, caption: `${m.model}: ${agreement(m.agreement)}` })))));
    return box;
  }

  // A relatedness model: its expected score of the two sentences and the probability of each point of its scale.
  function relatednessPanel(r, info) {
    const read = r.tokens.map((t, k) => `${k ? "second" : "first"}: ${t.join(" ")}`).join("; ");
    return htmlEl("section", { class: "panel", "data-model": r.model }, htmlEl("h2", { text: r.model }),
      htmlEl("p", { class: "meta", text: `${info.description}; read ${read}` +
        (r.unknown.length ? `; read as <unk>: ${r.unknown.join(" ")}` : "") }),
      htmlEl("p", { class: "verdict", text: `relatedness ${r.score.toFixed(2)} on ${r.scale}` }),
      htmlEl("p", { class: "meta distribution", text: "p of each score: " +
        r.distribution.map((p, k) => `${k + 1}: ${p.toFixed(3)}`).join(", ") }));
  }

  // A logic model: the relation of the premise to the hypothesis, every relation's probability, and for Ordered
  // Memory the tree it induces of each formula beside the tree its brackets give.
  function logicPanel(r, info) {
    const box = htmlEl("section", { class: "panel", "data-model": r.model }, htmlEl("h2", { text: r.model }),
      htmlEl("p", { class: "meta", text: info.description }),
      htmlEl("p", { class: "verdict", text: `${r.relation} ${r.name} (p = ${r.probabilities[r.relation].toFixed(2)})` }),
      htmlEl("p", { class: "meta distribution", text: "p of each relation: " +
        Object.entries(r.probabilities).map(([rel, p]) => `${rel} ${p.toFixed(3)}`).join(", ") }));
    for (const [k, f] of (r.formulas || []).entries()) {
      const name = k ? "hypothesis" : "premise";
      box.append(htmlEl("div", { class: "layers" },
        htmlEl("div", { class: "figure-scroll" }, Trees.figure({ words: f.tokens, unknown: new Set(), tree: f.tree,
          caption: `${name}: the tree it induces` })),
        htmlEl("div", { class: "figure-scroll" }, Trees.figure({ words: f.tokens, unknown: new Set(), tree: f.own,
          caption: `${name}: the tree its brackets give` }))));
    }
    return box;
  }

  function panel(r) {
    const info = byId[r.model];
    if (r.kind === "relatedness") return relatednessPanel(r, info);
    if (r.kind === "logic") return logicPanel(r, info);
    if (r.kind === "sentiment") return sentimentPanel(r, info);
    if (r.kind === "decoded") return decodedPanel(r, info);
    if (r.kind === "ensemble") return ensemblePanel(r, info);
    const words = r.tokens;
    const unknown = new Set(words.map((w, i) => (r.unknown.includes(w) ? i : -1)).filter((i) => i >= 0));
    // A model read between boundary tokens also gives the surprisal of the closing one (a StructFormer has none).
    const surprisal = { name: "surprisal (bits)", values: r.surprisal.slice(0, words.length), format: (v) => v.toFixed(2),
                        extra: r.end_token ? `then ${r.end_token}: ${r.surprisal[words.length].toFixed(2)}` : "" };
    const scroll = (svg) => htmlEl("div", { class: "figure-scroll" }, svg);
    const box = htmlEl("section", { class: "panel", "data-model": r.model }, htmlEl("h2", { text: r.model }),
      htmlEl("p", { class: "meta", text: `${info.description}; ${words.length} ${info.unit}s; perplexity ${r.perplexity.toFixed(1)}` +
        (r.unknown.length ? `; read as <unk>: ${r.unknown.join(" ")}` : "") }));
    if (info.reports.length) {
      box.append(htmlEl("p", { class: "meta" }, "reports: ", ...info.reports.flatMap((rep, k) => [
        k ? ", " : "", htmlEl("a", { href: rep.url, target: "_blank", rel: "noopener", text: rep.name })])));
    }
    if (!r.trees) {
      box.append(scroll(Trees.figure({ words, unknown, rows: [surprisal], caption: "this model gives no syntactic distances" })));
      return box;
    }
    // A model that builds its trees one way only (a StructFormer) shows those whatever split is chosen.
    const shown = r.splits.includes(split.value) ? split.value : r.splits[0];
    const splitText = shown === split.value ? `split ${shown}` : `split ${shown} (its only one)`;
    const trees = r.trees[shown];
    const rows = r.distances.map((values, k) => ({ name: `layer ${k + 1}`, values, highlight: r.default_layer === String(k + 1) }));
    box.append(scroll(Trees.figure({ words, unknown, tree: trees[r.default_layer], rows: [...rows, surprisal],
                                     caption: `layer ${r.default_layer} (the default), ${splitText}; distances of every layer` })));
    if (r.heads) {
      box.append(scroll(Trees.arcs({ words, unknown, heads: r.heads,
                                     caption: "dependencies: each arc from the head to its dependent" })));
    }
    box.append(htmlEl("h3", { text: "Every layer" }));
    box.append(htmlEl("div", { class: "layers" }, ...r.layers.map((layer) => scroll(Trees.figure({
      words, unknown, tree: trees[layer], caption: `layer ${layer}${layer === r.default_layer ? " (default)" : ""}` })))));
    return box;
  }
})();
