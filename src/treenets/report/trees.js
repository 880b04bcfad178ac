/* Trees and per-word bars drawn as SVG, shared by the report (report.js) and `treenets serve` (serve.js).

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
     labels: {span: label} shown beside nodes; unknown: set of positions to mark; rows: [{name, values,
     highlight, format, extra}] bars per word, from the row's smallest value (a stub) to its largest (full
     height), the range printed under the row's name (`extra`: text after the last word); caption: a title. */
  function figure({ words, tree = null, compare = null, unmatched = "extra", labels = null, unknown = null,
                    rows = [], caption = "" }) {
    const positions = wordPositions(words);
    const xs = positions.xs, tail = rows.some((row) => row.extra) ? 130 : 0;  // room for the rows' `extra` text
    const width = positions.width + tail;
    const root = tree === null ? null : place(tree, xs);
    const levels = root ? root.level : 0;
    const step = root ? Math.max(10, Math.min(22, 300 / Math.max(levels, 1))) : 0;
    const top = caption ? 22 : 8;
    const base = top + levels * step;  // y of the leaves
    const height = base + WORDS_H + rows.length * ROW + 6;
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
    });
    rows.forEach((row, r) => {
      const bottom = base + WORDS_H + (r + 1) * ROW - 4;
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

  /* {span: label} from [[start, end, label], ...]; a unary chain's labels joined, outermost first. */
  function labelMap(labeled) {
    const map = {};
    for (const [start, end, label] of labeled) {
      const span = `${start}-${end}`;
      map[span] = map[span] ? `${label}/${map[span]}` : label;
    }
    return map;
  }

  /* The legend of the colours of `figure`. */
  function legend() {
    const item = (cls, text) => htmlEl("span", {}, htmlEl("span", { class: "swatch", style: `background: var(--${cls})` }), text);
    return htmlEl("div", { class: "legend" }, item("match", "span in both trees"), item("extra", "predicted only"),
                  item("missed", "gold span missed"));
  }

  return { spans, figure, labelMap, legend };
})();
