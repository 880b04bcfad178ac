/* Trees, dependency arcs and per-word bars drawn as SVG, shared by the report (report.js) and `treenets serve` (serve.js).

   A tree is nested arrays whose leaves are word positions (0-based integers): repeated words stay apart and
   spans are compared by position. A span is the string "start-end" (end exclusive) of a node covering two or
   more words. Everything is built with DOM calls (textContent, setAttribute), never from HTML text, so that
   words typed by a user or read from a treebank cannot inject markup. */
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function svgEl(name, attrs, text) {
  const node = document.createElementNS(SVG_NS, name);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  if (text !== undefined) node.textContent = text;
  return node;
}

function htmlEl(name, attrs, ...children) {
  const node = document.createElement(name);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else node.setAttribute(key, value);
  }
  for (const child of children) if (child !== null && child !== undefined) node.append(child);
  return node;
}

const Trees = (() => {
  const CHAR = 7, WORD_PAD = 12, MIN_WORD = 28, LEFT = 92, RIGHT = 16, ROW = 38, WORDS_H = 20;
  const MIN_SCALE = 0.7;

  /* Spans of a tree: the set of "start-end" of its nodes covering two or more words, the root included. */
  function spans(tree) {
    const found = new Set();
    (function walk(node) {
      if (!Array.isArray(node)) return [node, node + 1];
      const parts = node.map(walk);
      const span = [parts[0][0], parts[parts.length - 1][1]];
      if (span[1] - span[0] > 1) found.add(span.join("-"));
      return span;
    })(tree);
    return found;
  }

  /* x of each word's centre, and the drawing's width: words get room for their text. */
  function wordPositions(words) {
    const xs = [];
    let x = LEFT;
    for (const word of words) {
      const width = Math.max(MIN_WORD, word.length * CHAR + WORD_PAD);
      xs.push(x + width / 2);
      x += width;
    }
    return { xs, width: x + RIGHT };
  }

  /* A node's position: leaves at their word; a parent at the mean x of its children, one level above the
     highest (as treenets.trees.draw lays out the PNG figures). */
  function place(node, xs) {
    if (!Array.isArray(node)) return { x: xs[node], level: 0, start: node, end: node + 1, children: [] };
    const children = node.map((child) => place(child, xs));
    return {
      x: children.reduce((sum, c) => sum + c.x, 0) / children.length,
      level: 1 + Math.max(...children.map((c) => c.level)),
      start: children[0].start, end: children[children.length - 1].end, children,
    };
  }

  /* A sentence drawn as one SVG: optionally a tree above the words, then rows of bars under them.

     words: the tokens; tree: a tree over them (or null); compare: spans of the other tree, to colour the nodes
     found in both ("match") and the others (`unmatched`: "extra" for a prediction, "missed" for gold);
     labels: {span: label} shown beside nodes; tags: a label under each word (a grammar's preterminals), or null;
     unknown: set of positions to mark; rows: [{name, values, highlight, format, extra}] bars per word, from the
     row's smallest value (a stub) to its largest (full height), the range printed under the row's name (`extra`:
     text after the last word); caption: a title. */
  function figure({ words, tree = null, compare = null, unmatched = "extra", labels = null, tags = null,
                    unknown = null, rows = [], caption = "" }) {
    const positions = wordPositions(words);
    const xs = positions.xs, tail = rows.some((row) => row.extra) ? 130 : 0;  // room for the rows' `extra` text
    const width = positions.width + tail;
    const root = tree === null ? null : place(tree, xs);
    const levels = root ? root.level : 0;
    const step = root ? Math.max(10, Math.min(22, 300 / Math.max(levels, 1))) : 0;
    const top = (caption ? 22 : 8) + (labels ? 10 : 0);  // (room for the root's label under the caption)
    const base = top + levels * step;  // y of the leaves
    const tagsH = tags ? 14 : 0;
    const height = base + WORDS_H + tagsH + rows.length * ROW + 6;
    // Narrower boxes shrink the drawing (the viewBox keeps its proportions) down to MIN_SCALE of its size,
    // where words stay readable; below that the box scrolls instead (long sentences, two panels side by side).
    const svg = svgEl("svg", { width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                               style: `max-width: 100%; height: auto; min-width: ${Math.round(MIN_SCALE * width)}px`,
                               "aria-label": caption || words.join(" ") });
    if (caption) svg.append(svgEl("text", { x: 4, y: 14, class: "caption" }, caption));
    if (root) {
      const whole = `${root.start}-${root.end}`;
      const y = (node) => base - node.level * step;
      (function draw(node) {
        if (!node.children.length) return;
        const span = `${node.start}-${node.end}`;
        let kind = "";
        if (compare && span !== whole) kind = compare.has(span) ? "match" : unmatched;
        for (const child of node.children) {
          svg.append(svgEl("line", { x1: node.x, y1: y(node), x2: child.x, y2: y(child), class: `edge ${kind}` }));
          draw(child);
        }
        const dot = svgEl("circle", { cx: node.x, cy: y(node), r: 2.6, class: `node ${kind}` });
        dot.append(svgEl("title", {}, words.slice(node.start, node.end).join(" ")));
        svg.append(dot);
        if (labels && labels[span]) svg.append(svgEl("text", { x: node.x + 4, y: y(node) - 3, class: "label" }, labels[span]));
      })(root);
    }
    words.forEach((word, i) => {
      const text = svgEl("text", { x: xs[i], y: base + 15, "text-anchor": "middle",
                                   class: unknown && unknown.has(i) ? "word unknown" : "word" }, word);
      svg.append(text);
      if (tags) svg.append(svgEl("text", { x: xs[i], y: base + 15 + tagsH, "text-anchor": "middle", class: "tag" },
                                 tags[i]));
    });
    rows.forEach((row, r) => {
      const bottom = base + WORDS_H + tagsH + (r + 1) * ROW - 4;
      const finite = row.values.filter((v) => v !== null && Number.isFinite(v));
      // Bars span the row's range, from its smallest value to its largest: distances often differ by
      // hundredths, and the tree splits at the largest whatever their level.
      const low = Math.min(...finite), high = Math.max(...finite);
      const format = row.format || ((v) => v.toFixed(3));
      svg.append(svgEl("line", { x1: LEFT - 4, y1: bottom, x2: width - tail - RIGHT, y2: bottom, class: "axis" }));
      svg.append(svgEl("text", { x: LEFT - 8, y: bottom - 12, "text-anchor": "end",
                                 class: row.highlight ? "row-name highlight" : "row-name" }, row.name));
      svg.append(svgEl("text", { x: LEFT - 8, y: bottom - 1, "text-anchor": "end", class: "tick" },
                       finite.length ? `${format(low)}–${format(high)}` : ""));
      row.values.forEach((value, i) => {
        if (value === null || !Number.isFinite(value)) return;
        const h = 3 + (high > low ? (value - low) / (high - low) : 1) * (ROW - 11);
        const bar = svgEl("rect", { x: xs[i] - 7, y: bottom - h, width: 14, height: Math.max(h, 0.5),
                                    class: row.highlight ? "bar highlight" : "bar" });
        bar.append(svgEl("title", {}, `${words[i]}: ${format(value)}`));
        svg.append(bar);
      });
      if (row.extra) svg.append(svgEl("text", { x: width - tail, y: bottom - 4, class: "tick" }, row.extra));
    });
    return svg;
  }

  const ARC_MAX = 110, ROOT_ROOM = 16, ARROW = 6;

  /* The height of the arc between two x positions: flatter than a half circle, and capped so that long
     sentences stay low. */
  const arcHeight = (x1, x2) => Math.min(ARC_MAX, 8 + 0.4 * Math.abs(x2 - x1));

  /* A dependency tree drawn as arcs over the words (one SVG, class "arcs"): each arc (a path) from a word's
     head to the word, with an arrowhead at the word; a word whose head is 0 marked by a line down from "ROOT".

     words: the tokens; heads: each word's head (CoNLL's: 1-based, 0 for the root); gold: the gold heads, or
     null: with them, the predicted arcs above the words are coloured "match" (the gold head) or "extra" (any
     other), and the gold arcs are drawn under the words, "match" where predicted and "missed" where not;
     unknown: set of positions to mark; caption: a title. */
  function arcs({ words, heads, gold = null, unknown = null, caption = "" }) {
    const positions = wordPositions(words), xs = positions.xs;
    const width = Math.max(positions.width, caption.length * 6 + 8);  // room for the caption too
    const span = (h) => h.reduce((most, head, i) => (head ? Math.max(most, arcHeight(xs[head - 1], xs[i])) : most), 0);
    const top = (caption ? 22 : 6) + ROOT_ROOM;
    const above = top + Math.max(span(heads), 20);  // where arcs meet the words from above
    const below = above + WORDS_H + 2;  // and from below
    const height = gold ? below + Math.max(span(gold), 20) + ROOT_ROOM + 4 : above + WORDS_H + 4;
    const svg = svgEl("svg", { class: "arcs", width, height, viewBox: `0 0 ${width} ${height}`, role: "img",
                               style: `max-width: 100%; height: auto; min-width: ${Math.round(MIN_SCALE * width)}px`,
                               "aria-label": caption || words.join(" ") });
    if (caption) svg.append(svgEl("text", { x: 4, y: 14, class: "caption" }, caption));
    const name = (head) => (head ? words[head - 1] : "ROOT");

    /* The arcs of `h` on one side of the words (`up`: above, else below), each coloured by `kind(i)`. */
    function side(h, up, base, set, kind, tip) {
      const sign = up ? -1 : 1;
      h.forEach((head, i) => {
        const x = xs[i], cls = kind(i);
        const title = svgEl("title", {}, tip(i));
        if (head === 0) {  // the root: a line from the "ROOT" mark to the word
          const end = up ? top - 4 : base + Math.max(span(h), 20);
          svg.append(svgEl("line", { x1: x, y1: end, x2: x, y2: base, class: `root-line ${set} ${cls}` }));
          svg.append(svgEl("text", { x, y: up ? end - 3 : end + 11, "text-anchor": "middle", class: `root ${set}` }, "ROOT"));
        } else {
          const from = xs[head - 1] + (x > xs[head - 1] ? 3 : -3);  // beside the head's arrows, which end at x
          const rx = Math.abs(x - from) / 2, ry = arcHeight(from, x);
          // Drawn from the head to the word: clockwise (sweep 1) bends up when going right, down going left.
          const sweep = (x > from) === up ? 1 : 0;
          const arc = svgEl("path", { d: `M ${from} ${base} A ${rx} ${ry} 0 0 ${sweep} ${x} ${base}`, class: `arc ${set} ${cls}` });
          arc.append(title);
          svg.append(arc);
        }
        const tipY = base, backY = base + sign * ARROW;
        svg.append(svgEl("polygon", { points: `${x - 3.5},${backY} ${x + 3.5},${backY} ${x},${tipY}`, class: `arrow ${set} ${cls}` }));
      });
    }

    const predictedTip = (i) => `${name(heads[i])} → ${words[i]}` +
      (gold && gold[i] !== heads[i] ? ` (gold: ${name(gold[i])} → ${words[i]})` : "");
    side(heads, true, above, "predicted", (i) => (gold ? (gold[i] === heads[i] ? "match" : "extra") : ""), predictedTip);
    words.forEach((word, i) => {
      svg.append(svgEl("text", { x: xs[i], y: above + 15, "text-anchor": "middle",
                                 class: unknown && unknown.has(i) ? "word unknown" : "word" }, word));
    });
    if (gold) {
      side(gold, false, below, "gold", (i) => (gold[i] === heads[i] ? "match" : "missed"),
           (i) => `gold: ${name(gold[i])} → ${words[i]}`);
    }
    return svg;
  }

  /* {span: label} from [[start, end, label], ...]; a unary chain's labels joined, outermost first. */
  function labelMap(labeled) {
    const map = {};
    for (const [start, end, label] of labeled) {
      const span = `${start}-${end}`;
      map[span] = map[span] ? `${label}/${map[span]}` : label;
    }
    return map;
  }

  /* The legend of the colours of `figure`, or with `dependencies` of `arcs`. */
  function legend(dependencies = false) {
    const item = (cls, text) => htmlEl("span", {}, htmlEl("span", { class: "swatch", style: `background: var(--${cls})` }), text);
    return dependencies
      ? htmlEl("div", { class: "legend" }, item("match", "arc (or root) as in gold"), item("extra", "predicted arc not in gold"),
               item("missed", "gold arc missed (under the words)"))
      : htmlEl("div", { class: "legend" }, item("match", "span in both trees"), item("extra", "predicted only"),
               item("missed", "gold span missed"));
  }

  return { spans, figure, arcs, labelMap, legend };
})();
