"""Random differential testing of the whole compiler (`make fuzz`; docs/random_graphs.md).

Generates --graphs random graphs (toolchain/testing/random_graphs.py: every graph op,
random shapes, element types and attributes, chains that fusion works on), sends each
through StableHLO MLIR and the importer when StableHLO can spell it, compiles them
--batch to a firmware for every board, runs them under QEMU and compares every output
with the numpy reference (integers exactly, floats within the tolerance of their op
chain: toolchain/testing/tolerance.py). Every failure is shrunk on its board and saved
as a reproducer (MLIR + inputs) under bench/results/fuzz_failures/. Writes
bench/results/random_graphs.json and random_graphs.md; exits 1 on any failure.

    python bench/random_graphs.py [--graphs 1000] [--boards ...] [--jobs 2] [--seed 0]
    python bench/random_graphs.py --replay SEED [--boards ...]   # one graph, verbose
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.graph.printer import print_graph  # noqa: E402
from toolchain.target import list_boards  # noqa: E402
from toolchain.testing.campaign import Campaign, minimize, run_campaign  # noqa: E402
from toolchain.testing.difftest import BOARDS, prepare, run_single  # noqa: E402
from toolchain.testing.shrink import save_reproducer  # noqa: E402
from toolchain.testing.tolerance import SAFETY  # noqa: E402

RESULTS = ROOT / "bench" / "results"
FAILURES = RESULTS / "fuzz_failures"
# Seeds of a campaign: --seed picks a block of this many, so campaigns never overlap.
SEED_BLOCK = 1_000_000
# Shrinking costs a build per candidate: the first failures of each kind are enough.
MAX_SHRUNK = 12


def _shown(path: Path) -> str:
    """`path` from the repository when it is inside it."""
    try:
        return str(path.resolve().relative_to(ROOT))
    except ValueError:
        return str(path)


def write_results(c: Campaign, args: argparse.Namespace, reproducers: list[str]) -> str:
    """Writes random_graphs.json and random_graphs.md into args.results; returns the
    markdown."""
    results = Path(args.results)
    summary = c.summary()
    failures = [{"board": o.board, "seed": o.seed, "status": o.status,
                 "detail": o.detail[:2000]} for o in c.failures()]
    data = {"command": "python bench/random_graphs.py " + " ".join(sys.argv[1:]),
            "seeds": [c.seeds[0], c.seeds[-1]] if c.seeds else [],
            "batch": args.batch, "max_ops": args.max_ops, "jobs": args.jobs,
            "host": platform.machine(), **summary, "failures": failures,
            "reproducers": reproducers}
    results.mkdir(parents=True, exist_ok=True)
    (results / "random_graphs.json").write_text(json.dumps(data, indent=2) + "\n")
    lines = ["# Random differential testing", "",
             f"{len(c.seeds)} random graphs (seeds {data['seeds'][0]} to {data['seeds'][-1]}) "
             f"on each of {len(c.boards)} boards, {len(c.failures())} failures, "
             f"{summary['seconds']} s with {args.jobs} jobs (`{data['command']}`).", "",
             f"{summary['graphs_through_mlir']} of the {len(c.seeds)} graphs went through "
             "StableHLO MLIR (printed, parsed, imported and compared with the generated "
             "graph); the others hold minirt's own ops, which StableHLO cannot spell. "
             f"Floats compare within {SAFETY:g} x the largest move of the reference when "
             "every inexact op is moved by its error budget; exact values and integers "
             "compare equal.", "",
             "| board | graphs | ok | mismatches | build failures | crashes | host failures "
             "| ops covered |", "|---|---|---|---|---|---|---|---|"]
    for b, r in summary["boards"].items():
        lines.append(f"| {b} | {r['graphs']} | {r['ok']} | {r['mismatches']} | "
                     f"{r['build_failures']} | {r['crashes']} | {r['host_failures']} | "
                     f"{r['ops_covered']} of {summary['graph_ops']} |")
    per_op = {}
    for r in summary["boards"].values():
        for op, n in r["graphs_per_op"].items():
            per_op[op] = max(per_op.get(op, 0), n)
    lines += ["", "Graphs holding each op (on each board): " + ", ".join(
        f"{op} {n}" for op, n in sorted(per_op.items())) + ".", "",
        "Graphs holding each element type: " + ", ".join(
            f"{t} {n}" for t, n in summary["graphs_per_element_type"].items()) + ".", ""]
    if summary["ops_not_generated"]:
        lines += ["Graph ops the generator does not draw yet: "
                  + ", ".join(summary["ops_not_generated"]) + ".", ""]
    if failures:
        lines += ["## Failures", ""]
        for f in failures[:50]:
            first = f["detail"].splitlines()[0] if f["detail"] else ""
            lines.append(f"- {f['board']} seed {f['seed']}: {f['status']}: {first[:200]}")
        lines.append("")
    if reproducers:
        lines += ["Reproducers (shrunk): " + ", ".join(reproducers), ""]
    text = "\n".join(lines)
    (results / "random_graphs.md").write_text(text)
    return text


def replay(seed: int, boards: list[str], max_ops: int) -> int:
    case = prepare(seed, max_ops)
    print(print_graph(case.rg.graph))
    if case.mlir:
        print(case.mlir)
    rc = 0
    with tempfile.TemporaryDirectory() as work:
        for b in boards:
            o = run_single(case, b, Path(work))
            print(f"{b}: {o.status}\n{o.detail}".rstrip())
            rc |= not o.ok
    return rc


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--graphs", type=int, default=1000, help="graphs per board (default 1000)")
    p.add_argument("--boards", nargs="+", default=list(BOARDS))
    p.add_argument("--jobs", type=int, default=2, help="firmware builds at once (default 2)")
    p.add_argument("--seed", type=int, default=0, help="campaign number: seeds "
                   f"SEED*{SEED_BLOCK} onwards (default 0)")
    p.add_argument("--batch", type=int, default=25, help="graphs per firmware (default 25)")
    p.add_argument("--max-ops", type=int, default=8, help="ops per graph at most (default 8)")
    p.add_argument("--replay", type=int, metavar="SEED", help="run one graph and print it")
    p.add_argument("--no-shrink", action="store_true", help="save failures unshrunk")
    p.add_argument("--results", type=Path, default=RESULTS,
                   help="where the summary and fuzz_failures/ go (default bench/results)")
    args = p.parse_args(argv)
    for name in ("graphs", "jobs", "batch", "max_ops"):
        if getattr(args, name) < (2 if name == "max_ops" else 1):
            p.error(f"--{name.replace('_', '-')} must be at least "
                    f"{2 if name == 'max_ops' else 1}")
    known = list_boards()
    unknown = [b for b in args.boards if b not in known]
    if unknown:
        p.error(f"unknown board {unknown[0]!r}; known: {', '.join(known)}")
    if args.replay is not None:
        return replay(args.replay, args.boards, args.max_ops)
    seeds = list(range(args.seed * SEED_BLOCK, args.seed * SEED_BLOCK + args.graphs))
    c = run_campaign(seeds, tuple(args.boards), args.jobs, args.batch, args.max_ops)
    reproducers = []
    failures_dir = args.results / FAILURES.name
    if failures_dir.exists():
        shutil.rmtree(failures_dir)  # reproducers of this campaign only
    if c.failures():
        with tempfile.TemporaryDirectory() as work:
            seen = set()
            for o in c.failures():
                key = (o.board, o.status, o.detail.split(":")[0] if o.status == "build" else "")
                if key in seen or len(reproducers) >= MAX_SHRUNK:
                    continue
                seen.add(key)
                print(f"random_graphs: shrinking {o.board} seed {o.seed} ({o.status})",
                      file=sys.stderr, flush=True)
                case, small = minimize(o, args.max_ops, Path(work), budget=0 if
                                       args.no_shrink else 60)
                d = save_reproducer(failures_dir / f"{o.board}-seed{o.seed}", small.rg.graph,
                                    small.inputs, {"board": o.board, "seed": o.seed,
                                                   "status": o.status, "detail": o.detail,
                                                   "nodes_before": len(case.rg.graph.walk()),
                                                   "nodes_after": len(small.rg.graph.walk())})
                reproducers.append(_shown(d))
    print(write_results(c, args, reproducers))
    return 1 if c.failures() else 0


if __name__ == "__main__":
    sys.exit(main())
