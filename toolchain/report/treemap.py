"""A treemap of a firmware image's flash and RAM, as one self-contained HTML file.

The layout is the squarified treemap of Bruls, Huizing and van Wijk ("Squarified
Treemaps", 2000): items in decreasing size are laid in rows along the shorter side of
the space left, and an item joins the current row only while that does not make the
row's worst aspect ratio worse; so rectangles stay close to squares and small symbols
stay visible. Each memory is one map: a rectangle per component, split into its
symbols (plus one rectangle for the bytes no symbol covers: padding, merged strings,
the stack). When the build names its layers (report/layers.py), the constants are split
into each layer's weights and the dispatch code is labelled by layer, in the model's own
names. A legend keys the colours; the maps scale to the window's width (viewBox).

The page is inline SVG and CSS only: no script, no font or style sheet from the
network, so it can be attached to a CI run and opened anywhere. Every rectangle carries
a <title> (the browser's tooltip) with its name, bytes and share of the budget.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from toolchain.report.size import COMPONENT_LABELS, SizeReport

__all__ = ["Rect", "Tile", "squarify", "treemap_html", "treemap_tiles", "write_treemap"]

# One colour per component; symbols are drawn lighter inside their component's colour.
_COLOURS: dict[str, str] = {
    "runtime": "#4e79a7",
    "dispatch": "#f28e2b",
    "constants": "#59a14f",
    "schedule": "#76b7b2",
    "startup": "#edc948",
    "harness": "#b07aa1",
    "helpers": "#ff9da7",
    "arena": "#e15759",
    "io": "#9c755f",
    "stack": "#bab0ac",
    "other": "#7f7f7f",
}

_WIDTH, _HEIGHT = 960.0, 480.0  # px of each map
_HEADER = 16.0  # px of a component's name bar above its symbols
_CHAR = 6.2  # px per character of the 11 px label font, to decide whether a label fits
_CHAR_SMALL = 4.6  # the same for the 8 px font of labels that do not fit otherwise


@dataclass(frozen=True)
class Rect:
    """An axis-aligned rectangle: top-left corner, width and height."""

    x: float
    y: float
    w: float
    h: float

    @property
    def area(self) -> float:
        return self.w * self.h


@dataclass(frozen=True)
class Tile:
    """One drawn rectangle of a map: a component (depth 0) or a symbol in it (depth 1)."""

    rect: Rect
    label: str
    size: int
    component: str
    depth: int


def _worst(row: Sequence[float], side: float) -> float:
    """The largest aspect ratio (>= 1) of a row of areas laid along a side of length
    `side`: the row's thickness is sum/side, each item's length area/thickness."""
    total = sum(row)
    s2, t2 = side * side, total * total
    return max(max(s2 * a / t2, t2 / (s2 * a)) for a in row)


def squarify(sizes: Sequence[float], bounds: Rect) -> list[Rect]:
    """Rectangles tiling `bounds` with areas proportional to `sizes` (all > 0, largest
    first: the algorithm's order), in the order of `sizes`."""
    if any(s <= 0 for s in sizes):
        raise ValueError("treemap sizes must be > 0")
    if list(sizes) != sorted(sizes, reverse=True):
        raise ValueError("treemap sizes must come largest first")
    if not sizes:
        return []
    scale = bounds.area / sum(sizes)
    areas = [s * scale for s in sizes]
    x, y, w, h = bounds.x, bounds.y, bounds.w, bounds.h
    out: list[Rect] = []
    i = 0
    while i < len(areas):
        side = min(w, h)
        row = [areas[i]]
        i += 1
        while i < len(areas) and _worst([*row, areas[i]], side) <= _worst(row, side):
            row.append(areas[i])
            i += 1
        thickness = sum(row) / side
        offset = 0.0
        for a in row:
            length = a / thickness
            if w >= h:  # a column at the left, items stacked downwards
                out.append(Rect(x, y + offset, thickness, length))
            else:  # a row at the top, items side by side
                out.append(Rect(x + offset, y, length, thickness))
            offset += length
        if w >= h:
            x, w = x + thickness, w - thickness
        else:
            y, h = y + thickness, h - thickness
    return out


def _children(report: SizeReport, memory: str, component: str, size: int) -> list[tuple[str, int]]:
    """The symbols of one component in one memory, largest first, with the bytes no
    symbol covers as a last child. Aliases (two names, one address) count once; if
    symbols overlap beyond the component's bytes they are scaled down to fit."""
    if memory == "flash" and component == "constants" and report.layers:
        return _weights(report, size)
    seen: dict[tuple[int, int], str] = {}
    kids: list[tuple[str, int]] = []
    for sym in report.symbols:
        parts = dict(sym.flash_parts if memory == "flash" else sym.ram_parts)
        n = parts.get(component, 0)
        if n <= 0:
            continue
        key = (sym.address, sym.size)
        if key in seen:
            continue
        seen[key] = sym.name
        kids.append((report.symbol_label(sym.name), n))
    covered = sum(n for _, n in kids)
    if covered > size:  # overlapping symbols: keep the proportions, not the sum
        kids = [(name, max(1, n * size // covered)) for name, n in kids]
        covered = sum(n for _, n in kids)
    if size > covered:
        label = "stack" if component == "stack" else f"(no symbol: {component})"
        kids.append((label, size - covered))
    kids = [(name, n) for name, n in kids if n > 0]
    kids.sort(key=lambda kv: (-kv[1], kv[0]))
    return kids


def _weights(report: SizeReport, size: int) -> list[tuple[str, int]]:
    """The constants of each layer as their own rectangles (the weights a dispatch reads
    first, report/layers.py), and what the pool holds besides (quantization records,
    the alignment between entries) as one more."""
    kids = [(f"{layer['label']} (weights)", int(layer["weights_bytes"]))
            for layer in report.layers if layer["weights_bytes"] > 0]
    covered = sum(n for _, n in kids)
    if covered > size:  # cannot be (the pool holds every weight), but never draw past it
        kids = [(name, max(1, n * size // covered)) for name, n in kids]
        covered = sum(n for _, n in kids)
    if size > covered:
        kids.append(("(pool headers and alignment)", size - covered))
    kids.sort(key=lambda kv: (-kv[1], kv[0]))
    return kids


def treemap_tiles(report: SizeReport, memory: str, bounds: Rect | None = None) -> list[Tile]:
    """The tiles of one memory's map ("flash" or "ram"): its components (depth 0), each
    split into its symbols (depth 1) below a name bar."""
    bounds = bounds or Rect(0.0, 0.0, _WIDTH, _HEIGHT)
    sizes = report.flash if memory == "flash" else report.ram
    comps = sorted(((k, v) for k, v in sizes.items() if v > 0), key=lambda kv: (-kv[1], kv[0]))
    tiles: list[Tile] = []
    for (comp, size), rect in zip(comps, squarify([v for _, v in comps], bounds)):
        tiles.append(Tile(rect, COMPONENT_LABELS.get(comp, comp), size, comp, 0))
        header = _HEADER if rect.h > 3 * _HEADER and rect.w > 40 else 0.0
        inner = Rect(rect.x, rect.y + header, rect.w, rect.h - header)
        kids = _children(report, memory, comp, size)
        for (name, n), r in zip(kids, squarify([n for _, n in kids], inner)):
            tiles.append(Tile(r, name, n, comp, 1))
    return tiles


def _fitting_label(t: Tile, r: Rect) -> tuple[str, bool] | None:
    """The text a tile shows and whether in the small font: its label (a component's
    with its bytes), else without its ``(code)`` / ``(weights)`` note, else either in
    the small font; None when nothing fits (the tooltip still names it)."""
    full = f"{t.label} {t.size:,} B" if t.depth == 0 else t.label
    short = full.rsplit(" (", 1)[0] if t.depth and full.endswith(")") else full
    for small, char, line in ((False, _CHAR, 13), (True, _CHAR_SMALL, 10)):
        for text in dict.fromkeys((full, short)):
            if r.w > len(text) * char + 4 and r.h > line:
                return text, small
    return None


def _svg(report: SizeReport, memory: str) -> str:
    title = "Flash" if memory == "flash" else "RAM"
    total = report.flash_total if memory == "flash" else report.ram_total
    budget = report.budget_flash if memory == "flash" else report.budget_ram
    # The viewBox scales the map to the window's width (CSS: width 100 %, height auto).
    parts = [f'<svg viewBox="0 0 {_WIDTH:g} {_HEIGHT:g}" preserveAspectRatio="xMinYMin meet" '
             f'role="img" aria-label="{title} treemap">']
    for t in treemap_tiles(report, memory):
        r = t.rect
        pct = report.percent(memory, t.size)
        tip = html.escape(f"{t.label}: {t.size:,} B ({pct:.2f} % of the {title} budget)"
                          + (f", {COMPONENT_LABELS.get(t.component, t.component)}"
                             if t.depth else ""))
        cls = f"c-{t.component} d{t.depth}"
        parts.append(f'<g class="{cls}"><title>{tip}</title>'
                     f'<rect x="{r.x:.2f}" y="{r.y:.2f}" width="{r.w:.2f}" '
                     f'height="{r.h:.2f}"/>')
        label = _fitting_label(t, r)
        if label is not None:
            text, small = label
            parts.append(f'<text x="{r.x + 3:.2f}" y="{r.y + (9 if small else 12):.2f}"'
                         + (' class="s"' if small else "") + f">{html.escape(text)}</text>")
        parts.append("</g>")
    parts.append("</svg>")
    return (f"<h2>{title}: {total:,} B of {budget:,} B "
            f"({report.percent(memory, total):.2f} % of the budget)</h2>\n" + "".join(parts))


def _legend(report: SizeReport) -> str:
    """A colour key of the components either map shows, with their bytes."""
    items = []
    for key, label in COMPONENT_LABELS.items():
        used = [f"{m} {n:,} B" for m, n in (("flash", report.flash.get(key, 0)),
                                            ("RAM", report.ram.get(key, 0))) if n]
        if used:
            items.append(f'<li><span class="key k-{key}"></span>'
                         f"{html.escape(label)}: {', '.join(used)}</li>")
    return '<ul class="legend">' + "".join(items) + "</ul>"


def treemap_html(report: SizeReport, title: str = "") -> str:
    """One self-contained HTML page: the flash and RAM treemaps and the size table."""
    css = "".join(f".c-{k} rect{{fill:{c}}}.k-{k}{{background:{c}}}"
                  for k, c in _COLOURS.items())
    heading = html.escape(title or f"minirt size: board {report.board}")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{heading}</title>
<style>
body{{font:14px sans-serif;margin:16px}}
svg{{display:block;width:100%;height:auto;border:1px solid #888;margin-bottom:8px}}
.legend{{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:4px 16px}}
.legend .key{{display:inline-block;width:12px;height:12px;margin-right:4px;vertical-align:-1px}}
rect{{stroke:#fff;stroke-width:1}}
g.d1 rect{{fill-opacity:.55}}
text{{font:11px sans-serif;fill:#000;pointer-events:none}}
text.s{{font-size:8px}}
{css}
</style></head>
<body>
<h1>{heading}</h1>
<p>Area is bytes. Hover over a rectangle for its name, size and share of the budget.
Code and weights are named by the model's own layers where the build knows them.</p>
{_legend(report)}
{_svg(report, "flash")}
{_svg(report, "ram")}
<h2>Table</h2>
<pre>{html.escape(report.format_budget_table(symbols=20))}</pre>
</body></html>
"""


def write_treemap(report: SizeReport, path: Path, title: str = "") -> None:
    """Writes treemap_html to `path` (whole, or not at all: a temporary file renamed)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(treemap_html(report, title), encoding="utf-8")
    tmp.replace(path)
