"""The static HTML of the reports: tables whose best cell of a column is marked, and charts drawn as inline SVG,
written when the report is, so that a page reads, prints and archives with no script (the script of a report
only lets one browse the sentences' trees)."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

PALETTE = ("#2a5bd7", "#d9822b", "#1a8f4c", "#8e44ad", "#c8334a", "#16a2b8", "#7f8c8d", "#b8860b")


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def element(tag: str, content: str = "", **attrs) -> str:
    """`<tag attrs>content</tag>`; attribute names with `_` written with `-`, None values left out."""
    shown = "".join(f' {key.rstrip("_").replace("_", "-")}="{esc(value)}"' for key, value in attrs.items()
                    if value is not None)
    return f"<{tag}{shown}>{content}</{tag}>"


def percent(value) -> str:
    return "–" if missing(value) else f"{100 * value:.1f}"


def fixed(digits: int):
    return lambda value: "–" if missing(value) else f"{value:.{digits}f}"


@dataclass
class Column:
    """A column of a score table: `key` of the row's cells, `head`, `format` (value -> text) and `better`
    ("higher", "lower" or None: no best marked)."""

    key: str
    head: str
    format: object = percent
    better: str | None = "higher"
    title: str = ""


@dataclass
class Row:
    name: str
    cells: dict
    layer: str | None = None
    css: str = ""
    attrs: dict = field(default_factory=dict)


def score_table(columns: list[Column], rows: list[Row], name_head: str = "model", layer_head: str | None = None,
                best_by: str = "column") -> str:
    """A table of numbers whose best cell is marked (`td.best`): the best of each column, or with `best_by="row"`
    the best of each row among the columns that have a `better`."""
    best: dict = {}
    if best_by == "column":
        for c in columns:
            values = [r.cells.get(c.key) for r in rows if not missing(r.cells.get(c.key))]
            if c.better and values:
                best[c.key] = (max if c.better == "higher" else min)(values)
    head = element("th", esc(name_head), class_="name") + (element("th", esc(layer_head)) if layer_head else "")
    head += "".join(element("th", esc(c.head), title=c.title or c.key) for c in columns)
    body = []
    for row in rows:
        if best_by == "row":
            values = [row.cells.get(c.key) for c in columns if c.better and not missing(row.cells.get(c.key))]
            row_best = max(values) if values else None
        cells = element("td", esc(row.name), class_="name")
        if layer_head:
            cells += element("td", esc(row.layer or ""))
        for c in columns:
            value = row.cells.get(c.key)
            top = best.get(c.key) if best_by == "column" else (row_best if c.better else None)
            is_best = not missing(value) and top is not None and value == top
            cells += element("td", esc(c.format(value)), data_col=c.key, class_="best" if is_best else None,
                             title="best" if is_best else None)
        body.append(element("tr", cells, class_=row.css or None, **{f"data_{k}": v for k, v in row.attrs.items()}))
    table = element("table", element("thead", element("tr", head)) + element("tbody", "".join(body)), class_="scores")
    return element("div", table, class_="table-wrap")


def _nice_max(value: float) -> float:
    power = 10 ** math.floor(math.log10(value))
    return next((m * power for m in (1, 2, 2.5, 5, 10) if m * power >= value * 1.0001), 10 * power)


@dataclass
class Series:
    """A series of a chart: one value per category (None: no value), drawn as `bar`s, a `line` or `dots`."""

    name: str
    values: list
    style: str = "bar"
    color: str | None = None
    dashed: bool = False
    errors: list | None = None
    notes: list | None = None  # text added to each value's tooltip


def chart(categories: list[str], series: list[Series], ylabel: str = "", xlabel: str = "", ymax: float | None = None,
          height: int = 230, band: float | None = None, tick_every: int = 1, rotate: bool = False,
          fmt=lambda v: f"{v:.1f}", caption: str = "") -> str:
    """A chart as an SVG figure: `categories` along x, each series' values as grouped bars, a line or dots;
    a legend when there are several series, and a caption."""
    left, right, top = 50, 12, 10
    bottom = (120 if rotate else 30) + (16 if xlabel else 0)
    band = band or max(16.0, min(70.0, 620 / max(len(categories), 1)))
    width = left + right + band * len(categories)
    plot = height - top - bottom
    tops = [v + ((s.errors[i] if s.errors else 0) or 0) for s in series for i, v in enumerate(s.values)
            if not missing(v)]
    y_top = ymax if ymax is not None else _nice_max(max([1e-9, *tops]))

    def y(v):
        return top + plot * (1 - min(v, y_top) / y_top)

    def cx(i):
        return left + band * (i + 0.5)

    parts = []
    for k in range(5):
        v = y_top * k / 4
        parts.append(element("line", x1=left, y1=f"{y(v):.1f}", x2=f"{width - right:.1f}", y2=f"{y(v):.1f}",
                             class_="grid" if k else "axis"))
        parts.append(element("text", esc(fmt(v)), x=left - 5, y=f"{y(v) + 3:.1f}", text_anchor="end", class_="tick"))
    for i, c in enumerate(categories):
        if i % tick_every:
            continue
        if rotate:
            at = f"{cx(i):.1f} {height - bottom + 12}"
            parts.append(element("text", esc(c), x=f"{cx(i):.1f}", y=height - bottom + 12, text_anchor="end",
                                 transform=f"rotate(-35 {at})", class_="tick"))
        else:
            parts.append(element("text", esc(c), x=f"{cx(i):.1f}", y=height - bottom + 14, text_anchor="middle",
                                 class_="tick"))
    if ylabel:
        parts.append(element("text", esc(ylabel), x=12, y=f"{top + plot / 2:.1f}", text_anchor="middle",
                             class_="tick", transform=f"rotate(-90 12 {top + plot / 2:.1f})"))
    if xlabel:
        parts.append(element("text", esc(xlabel), x=f"{left + (width - left - right) / 2:.1f}", y=height - 4,
                             text_anchor="middle", class_="tick"))
    colored = [(s, s.color or PALETTE[k % len(PALETTE)]) for k, s in enumerate(series)]
    bars = [(s, color) for s, color in colored if s.style == "bar"]
    bar_w = min(22.0, band * 0.8 / max(len(bars), 1))
    for k, (s, color) in enumerate(bars):
        for i, v in enumerate(s.values):
            if missing(v):
                continue
            x = cx(i) + (k - len(bars) / 2) * bar_w
            tip = element("title", esc(f"{s.name} — {categories[i]}: {fmt(v)}{s.notes[i] if s.notes else ''}"))
            parts.append(element("rect", tip, x=f"{x:.1f}", y=f"{y(v):.1f}", width=f"{max(bar_w - 1, 1):.1f}",
                                 height=f"{max(y(0) - y(v), 0.5):.1f}", fill=color))
            e = s.errors[i] if s.errors else None
            if e:
                parts.append(element("line", x1=f"{x + bar_w / 2:.1f}", y1=f"{y(v - e):.1f}", x2=f"{x + bar_w / 2:.1f}",
                                     y2=f"{y(v + e):.1f}", stroke="#222", stroke_width="1.2"))
    for s, color in colored:
        if s.style not in ("line", "dots"):
            continue
        points = [(cx(i), y(v), v, i) for i, v in enumerate(s.values) if not missing(v)]
        if s.style == "line":
            for (x1, y1, _, i1), (x2, y2, _, i2) in zip(points, points[1:]):
                if i2 == i1 + 1:
                    parts.append(element("line", x1=f"{x1:.1f}", y1=f"{y1:.1f}", x2=f"{x2:.1f}", y2=f"{y2:.1f}",
                                         stroke=color, stroke_width="2", stroke_dasharray="5 4" if s.dashed else None))
        for x, yy, v, i in points:
            tip = element("title", esc(f"{s.name} — {categories[i]}: {fmt(v)}{s.notes[i] if s.notes else ''}"))
            parts.append(element("circle", tip, cx=f"{x:.1f}", cy=f"{yy:.1f}", r=4 if s.style == "dots" else 3,
                                 fill=color, stroke="#fff"))
    svg = element("svg", "".join(parts), xmlns="http://www.w3.org/2000/svg", width=f"{width:.0f}", height=height,
                  viewBox=f"0 0 {width:.0f} {height}", role="img", aria_label=caption or ylabel)
    legend = ""
    if len(series) > 1:
        legend = element("div", "".join(element("span", element("span", "", class_="swatch", style=f"background:{c}")
                                                + esc(s.name)) for s, c in colored), class_="legend")
    return element("figure", svg + legend + (element("figcaption", esc(caption)) if caption else ""))
