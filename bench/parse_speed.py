"""Times parsing (and importing) the largest shared model, autoencoder.mlir (2.2 MB).

Writes bench/results/parse_speed.json so a change can be compared with the last run.
Usage: python bench/parse_speed.py [MODEL.mlir] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.frontend import import_module  # noqa: E402
from toolchain.mlir import parse_file  # noqa: E402

DEFAULT = ROOT.parent / "shared" / "models" / "jax" / "autoencoder.mlir"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", default=str(DEFAULT))
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    path = Path(args.model)
    if not path.exists():
        print(f"parse_speed: {path}: no such file (the shared models are beside the repo)")
        return 2
    parse_s, import_s = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        module = parse_file(path)
        t1 = time.perf_counter()
        import_module(module)
        t2 = time.perf_counter()
        parse_s.append(t1 - t0)
        import_s.append(t2 - t1)
    result = {
        "model": path.name,
        "bytes": path.stat().st_size,
        "parse_seconds_median": round(statistics.median(parse_s), 4),
        "parse_seconds_max": round(max(parse_s), 4),
        "import_seconds_median": round(statistics.median(import_s), 4),
        "repeat": args.repeat,
        "python": platform.python_version(),
    }
    out = ROOT / "bench" / "results" / "parse_speed.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
