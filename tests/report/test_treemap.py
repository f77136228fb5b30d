"""The squarified treemap: exact areas, a tiling without gaps or overlaps, the paper's
row decisions, and a self-contained HTML page."""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path

import pytest

from toolchain.report.size import SizeReport, SymbolSize
from toolchain.report.treemap import Rect, squarify, treemap_html, treemap_tiles, write_treemap

EPS = 1e-9  # float layout arithmetic on values of order 1..1e6: relative rounding only


def _overlap(a: Rect, b: Rect) -> float:
    w = min(a.x + a.w, b.x + b.w) - max(a.x, b.x)
    h = min(a.y + a.h, b.y + b.h) - max(a.y, b.y)
    return max(w, 0.0) * max(h, 0.0)


def _check_tiling(rects: list[Rect], sizes: list[float], bounds: Rect) -> None:
    total = sum(sizes)
    for r, s in zip(rects, sizes):
        assert math.isclose(r.area, s / total * bounds.area, rel_tol=1e-9)
        assert r.x >= bounds.x - EPS and r.y >= bounds.y - EPS
        assert r.x + r.w <= bounds.x + bounds.w + 1e-6
        assert r.y + r.h <= bounds.y + bounds.h + 1e-6
    for a, b in itertools.combinations(rects, 2):
        assert _overlap(a, b) < 1e-6 * bounds.area
    assert math.isclose(sum(r.area for r in rects), bounds.area, rel_tol=1e-9)


def _aspect(r: Rect) -> float:
    return max(r.w / r.h, r.h / r.w)


def test_the_papers_example_rows() -> None:
    """Bruls et al.'s example, 6 6 4 3 2 2 1 in a 6 x 4 rectangle: each decision follows
    from the worst aspect ratio of the row (worked by hand in the comments)."""
    rects = squarify([6, 6, 4, 3, 2, 2, 1], Rect(0, 0, 6, 4))
    # {6, 6}: a 3-wide column on the left (adding 4 would raise the worst ratio 1.5 -> 4).
    assert rects[0] == Rect(0, 0, 3, 2) and rects[1] == Rect(0, 2, 3, 2)
    # {4, 3} along the top of what is left (3 x 4): height 7/3.
    assert all(math.isclose(r.h, 7 / 3) and math.isclose(r.y, 0) for r in rects[2:4])
    # Then 2, 2 and 1 each alone in a column of the 3 x 5/3 strip below.
    assert [round(r.x, 9) for r in rects[4:]] == [3.0, 4.2, 5.4]
    _check_tiling(rects, [6, 6, 4, 3, 2, 2, 1], Rect(0, 0, 6, 4))
    assert max(_aspect(r) for r in rects) < 3  # slicing 7 strips of a 6 x 4 would reach 12


@pytest.mark.parametrize("seed", range(5))
def test_random_sizes_tile_exactly(seed: int) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    sizes = sorted((float(v) for v in rng.lognormal(3, 2, size=40)), reverse=True)
    bounds = Rect(10, 20, 960, 480)
    _check_tiling(squarify(sizes, bounds), sizes, bounds)


def test_bad_sizes_are_refused() -> None:
    with pytest.raises(ValueError, match="> 0"):
        squarify([3, 0], Rect(0, 0, 1, 1))
    with pytest.raises(ValueError, match="largest first"):
        squarify([1, 3], Rect(0, 0, 1, 1))
    assert squarify([], Rect(0, 0, 1, 1)) == []


def _report() -> SizeReport:
    """A report by hand: one symbol spans two components (like the module), two names
    share one address (an alias), and the stack has no symbol."""
    flash = {"runtime": 600, "dispatch": 300, "constants": 1000, "schedule": 100,
             "startup": 0, "harness": 0, "helpers": 0, "other": 0}
    ram = {"arena": 4096, "io": 128, "stack": 2048, "runtime": 0, "other": 0}
    symbols = [
        SymbolSize("mrt_image_module", 1100, "object", ".rodata", "schedule", 0x800,
                   (("schedule", 100), ("constants", 1000))),
        SymbolSize("mrt_module_load", 500, "func", ".text", "runtime", 0x100,
                   (("runtime", 500),)),
        SymbolSize("d0_dense", 300, "func", ".text", "dispatch", 0x400, (("dispatch", 300),)),
        SymbolSize("memcpy", 40, "func", ".text", "runtime", 0x300, (("runtime", 40),)),
        SymbolSize("__aeabi_memcpy", 40, "func", ".text", "runtime", 0x300,
                   (("runtime", 40),)),
        SymbolSize("mrt_image_arena", 4096, "object", ".bss", "arena", 0x2000_0000, (),
                   (("arena", 4096),)),
        SymbolSize("mrt_image_input_0", 128, "object", ".bss", "io", 0x2000_1000, (),
                   (("io", 128),)),
    ]
    return SizeReport("test-board", flash, ram, 2000, 4224, 2048, 8192, 16384, {}, {},
                      symbols)


def test_tiles_follow_the_components_and_their_symbols() -> None:
    report = _report()
    tiles = treemap_tiles(report, "flash")
    comps = {t.component: t for t in tiles if t.depth == 0}
    assert set(comps) == {"runtime", "dispatch", "constants", "schedule"}  # 0 B: no tile
    area = 960 * 480
    for comp, t in comps.items():
        assert math.isclose(t.rect.area, report.flash[comp] / 2000 * area, rel_tol=1e-9)
    kids = {(t.component, t.label): t.size for t in tiles if t.depth == 1}
    # The module is split between schedule and constants; the alias counts once and the
    # 60 runtime bytes no symbol covers get their own tile.
    assert kids[("constants", "mrt_image_module")] == 1000
    assert kids[("schedule", "mrt_image_module")] == 100
    assert ("runtime", "__aeabi_memcpy") not in kids and kids[("runtime", "memcpy")] == 40
    assert kids[("runtime", "(no symbol: runtime)")] == 60
    for comp, t in comps.items():  # the symbols tile their component below its name bar
        inside = [k for k in tiles if k.depth == 1 and k.component == comp]
        assert sum(k.size for k in inside) == report.flash[comp]
        for k in inside:
            assert t.rect.x - EPS <= k.rect.x and k.rect.x + k.rect.w <= t.rect.x + t.rect.w + 1e-6
    ram = {(t.component, t.label): t.size for t in treemap_tiles(report, "ram")}
    assert ram[("stack", "stack")] == 2048 and ram[("arena", "mrt_image_arena")] == 4096


def test_html_is_self_contained(tmp_path: Path) -> None:
    page = treemap_html(_report())
    assert "<script" not in page and "http" not in page and "@import" not in page
    assert "url(" not in page and "<link" not in page
    assert page.count("<svg") == 2
    # Every rectangle has a tooltip with its bytes and share of the budget.
    assert "mrt_image_module: 1,000 B (12.21 % of the Flash budget), constants" in page
    assert re.search(r"stack: 2,048 B \(12\.50 % of the RAM budget\)", page)
    out = tmp_path / "size.html"
    write_treemap(_report(), out)
    assert out.read_text() == page and list(tmp_path.iterdir()) == [out]


def test_layers_split_the_weights_and_label_the_code() -> None:
    """With the build's layers (report/layers.py), the constants are each layer's
    weights plus the pool's own bytes, and the dispatch code carries its layer's label."""
    report = _report()
    report.layers = [
        {"function": "d0_dense", "label": "fc1", "kind": "dot_general", "sources": ["m/fc1"],
         "code_bytes": 300, "weights_bytes": 640},
        {"function": "d1_add", "label": "bias", "kind": "add", "sources": [],
         "code_bytes": 0, "weights_bytes": 0},
    ]
    kids = {(t.component, t.label): t.size for t in treemap_tiles(report, "flash")
            if t.depth == 1}
    assert kids[("constants", "fc1 (weights)")] == 640
    assert kids[("constants", "(pool headers and alignment)")] == 360
    assert ("constants", "bias (weights)") not in kids  # no weights: no rectangle
    assert kids[("dispatch", "fc1 (code)")] == 300
    page = treemap_html(report)
    assert "fc1 (weights): 640 B" in page and '<ul class="legend">' in page
    assert "constants: flash 1,000 B" in page
