"""A picture of the size treemap: kws_ref_model (MLPerf Tiny keyword spotting, int8) built
for a board, its treemap page (minirt-size --html: weights per layer and code labelled in
the model's own names, a legend) rendered by headless Chromium into a PNG.

Writes bench/results/treemap_<model>.html and bench/results/treemap_<model>.png.

    python bench/treemap_screenshot.py [--model PATH] [--board cortex-m4] [--width 1280]

Needs Chromium (Debian: ``apt-get install --no-install-recommends chromium``; any
``chromium``, ``chromium-browser`` or ``google-chrome`` on PATH, or --browser PATH).
Not part of ``make test``: a browser is no build dependency.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import minirt  # noqa: E402
from toolchain.report.treemap import write_treemap  # noqa: E402

MODEL = ROOT.parent / "shared" / "models" / "mlperf_tiny" / "kws_ref_model.tflite"
RESULTS = ROOT / "bench" / "results"
BROWSERS = ("chromium", "chromium-browser", "google-chrome")
# The page's height at the default width: two maps, the legend and the size table.
HEIGHT = 1500


def find_browser(given: str | None) -> str:
    """The browser to render with; exits with how to get one when there is none."""
    for name in ([given] if given else BROWSERS):
        path = shutil.which(name) if name else None
        if path:
            return path
    sys.exit("treemap_screenshot: no Chromium found (looked for "
             f"{', '.join([given] if given else BROWSERS)}); install it, e.g. on Debian "
             "'apt-get install --no-install-recommends chromium', or pass --browser PATH")


def screenshot(browser: str, page: Path, png: Path, width: int, height: int) -> None:
    """Renders `page` at width x height CSS pixels into `png` with headless Chromium."""
    with tempfile.TemporaryDirectory(prefix="minirt-chromium-") as profile:
        cmd = [browser, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
               f"--user-data-dir={profile}", f"--window-size={width},{height}",
               f"--screenshot={png}", page.resolve().as_uri()]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0 or not png.is_file():
        sys.exit(f"treemap_screenshot: {browser} failed (exit {done.returncode}): "
                 f"{(done.stderr or done.stdout).strip()[-400:]}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=MODEL)
    ap.add_argument("--board", default="cortex-m4")
    ap.add_argument("--width", type=int, default=1280, help="page width in CSS pixels")
    ap.add_argument("--height", type=int, default=HEIGHT, help="page height in CSS pixels")
    ap.add_argument("--browser", help="the Chromium binary (default: the first on PATH)")
    args = ap.parse_args(argv)
    if not args.model.is_file():
        sys.exit(f"treemap_screenshot: {args.model}: no such model (the shared MLPerf Tiny "
                 "models, ../shared/models/mlperf_tiny)")
    browser = find_browser(args.browser)
    RESULTS.mkdir(parents=True, exist_ok=True)
    page = RESULTS / f"treemap_{args.model.stem}.html"
    png = RESULTS / f"treemap_{args.model.stem}.png"
    with tempfile.TemporaryDirectory(prefix="minirt-treemap-") as tmp:
        build = minirt.build(args.model, args.board, out_dir=Path(tmp) / "build")
        write_treemap(build.size, page, title=f"minirt size: {args.model.name} on board "
                                              f"{args.board}")
    screenshot(browser, page, png, args.width, args.height)
    print(f"treemap_screenshot: wrote {page.relative_to(ROOT)} and {png.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
