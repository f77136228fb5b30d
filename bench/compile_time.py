"""minirt-build's compile time per stage on cortex-m4, beside iree-compile's.

For each shared JAX model (../shared/models/jax/*.mlir) and each MLPerf Tiny int8 model
(../shared/models/mlperf_tiny/*_int8.tflite, *_quant.tflite, kws_ref_model.tflite):

* ``minirt-build --board cortex-m4 --timings``, each run a fresh process from model file
  to firmware: its total wall and CPU time (user + system of the process and its clang,
  ld.lld and QEMU children) and every stage's wall and CPU seconds (the --timings table,
  toolchain/timings.py). Three figures: ``cold``, the first build with an empty cache
  (toolchain/link/object_cache.py); ``new model``, the median of ``--repeat`` builds
  with the runtime objects cached but not this model's code (the cache's codegen/
  emptied before each: toolchain/codegen/object_cache.py), what a user's edited model
  costs; and ``warm``, the median of ``--repeat`` builds with both cached, what
  building the same model again costs. Python's bytecode
  is cached (in a temporary PYTHONPYCACHEPREFIX, warmed by one build first) as it is for
  an installed package, whatever PYTHONDONTWRITEBYTECODE says here;
* for the JAX models, ``iree-compile`` with compare_iree.py's flags for the host (llvm-cpu,
  ``--iree-llvmcpu-target-cpu=x86-64``): wall and CPU, median of ``--repeat`` runs
  alternating with minirt's, so both see the same load on a shared machine; and the
  ratios minirt / IREE of each (below 1: minirt compiles faster), warm and new model.

CPU time is the figure to compare on a loaded machine: other jobs stretch the wall time
of both tools, not the CPU time they use. IREE comes from the ``bench`` extra
(``pip install -e '.[bench]'``, or ``pip install "iree-base-compiler==3.13.*"``); without
it the bench says so and records minirt's times alone.

With ``--baseline DIR`` (another checkout of minirt, e.g. ``git archive COMMIT | tar -x
-C DIR``) its minirt-build is timed too, in the same rounds, for a before / after
table; its stages are recorded when it has ``--timings``.

Writes bench/results/compile_time.json and compile_time.md; progress goes to stderr.
Usage: python bench/compile_time.py [--models M,M] [--repeat N] [--baseline DIR]
       python bench/compile_time.py --markdown-only  (the .md again from the .json)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "models"
BOARD = "cortex-m4"
IREE_LEVEL = "x86-64"  # compare_iree.py's baseline host CPU level
INSTALL_IREE = ("pip install -e '.[bench]'  (or: pip install \"iree-base-compiler==3.13.*\")")


def _models(names: list[str] | None) -> list[Path]:
    jax = sorted((SHARED / "jax").glob("*.mlir"))
    tiny = [SHARED / "mlperf_tiny" / f"{n}.tflite" for n in
            ("kws_ref_model", "vww_96_int8", "pretrainedResnet_quant", "ad01_int8")]
    found = [p for p in jax + tiny if p.exists()]
    if names:
        found = [p for p in found if p.stem in names]
    return found


def _iree_compile() -> str | None:
    found = shutil.which("iree-compile")
    local = Path(sys.executable).parent / "iree-compile"
    return found or (str(local) if local.exists() else None)


def _timed(cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, float, str]:
    """(wall, CPU, stdout) of a command run in `cwd`; CPU = user + system of it and its
    children."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):  # 1: over a budget, still a whole build
        raise SystemExit(f"bench/compile_time.py: {' '.join(cmd)} failed "
                         f"({proc.returncode}):\n{proc.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, proc.stdout


def parse_timings(stdout: str) -> dict[str, dict[str, float]]:
    """The stage table `minirt-build --timings` prints: {stage: {"wall", "cpu"}},
    without its total line."""
    lines = stdout.splitlines()
    start = max(i for i, line in enumerate(lines) if line.split()[:3] == ["stage", "wall", "s"])
    stages = {}
    for line in lines[start + 1:]:
        name, wall, cpu = line.rsplit(None, 2)
        if name.strip() == "total":
            break
        stages[name.strip()] = {"wall": float(wall), "cpu": float(cpu)}
    return stages


def _minirt(model: Path, out: Path, env: dict[str, str], tree: Path = ROOT) -> dict:
    """One minirt-build of `model` from checkout `tree`, with its stages when it has
    --timings (a baseline checkout may not)."""
    env = {**env, "PYTHONPATH": os.pathsep.join([str(tree), env.get("PYTHONPATH", "")])}
    timings = tree == ROOT or "--timings" in (tree / "toolchain" / "cli" / "build.py").read_text()
    wall, cpu, stdout = _timed([sys.executable, "-m", "toolchain.cli.build", str(model),
                                "--board", BOARD, "-o", str(out),
                                *(["--timings"] if timings else [])], env,
                                cwd=tree)  # `python -m` puts the directory it runs in first
    return {"wall": wall, "cpu": cpu, "stages": parse_timings(stdout) if timings else {}}


def _median_run(runs: list[dict]) -> dict:
    """The medians of several runs, per total and per stage (a stage missing from a
    run counts 0 there)."""
    names = list(dict.fromkeys(n for r in runs for n in r["stages"]))
    stages = {name: {k: round(statistics.median(r["stages"].get(name, {}).get(k, 0.0)
                                                for r in runs), 3)
                     for k in ("wall", "cpu")} for name in names}
    return {"wall": round(statistics.median(r["wall"] for r in runs), 3),
            "cpu": round(statistics.median(r["cpu"] for r in runs), 3), "stages": stages}


def measure(model: Path, repeat: int, work: Path, env: dict[str, str],
            iree: str | None, baseline: Path | None = None) -> dict:
    """One model: minirt cold, new model and warm, the baseline checkout's minirt and
    IREE (JAX models), round by round."""
    cache = work / f"objects-{model.stem}"
    cold_env = {**env, "MINIRT_CACHE_DIR": str(cache)}
    cold = _minirt(model, work / f"{model.stem}-cold", cold_env)
    warm, fresh, theirs, before = [], [], [], []
    jax = model.suffix == ".mlir"
    for i in range(repeat):
        shutil.rmtree(cache / "codegen", ignore_errors=True)  # this model's code: not yet
        fresh.append(_minirt(model, work / f"{model.stem}-new{i}", cold_env))
        warm.append(_minirt(model, work / f"{model.stem}-warm{i}", cold_env))
        if baseline is not None:
            before.append(_minirt(model, work / f"{model.stem}-base{i}",
                                  {**env, "MINIRT_CACHE_DIR": str(work / "base-cache")},
                                  baseline))
        if jax and iree is not None:
            wall, cpu, _ = _timed([
                iree, str(model), "--iree-hal-target-device=local",
                "--iree-hal-local-target-device-backends=llvm-cpu",
                f"--iree-llvmcpu-target-cpu={IREE_LEVEL}", "-o",
                str(work / f"{model.stem}.vmfb")], env)
            theirs.append({"wall": wall, "cpu": cpu})
    row = {"model": model.stem, "format": model.suffix[1:],
           "cold": _median_run([cold]), "new_model": _median_run(fresh),
           "warm": _median_run(warm), "iree": None}
    if before:
        row["baseline"] = _median_run(before)
    if theirs:
        row["iree"] = {k: round(statistics.median(t[k] for t in theirs), 3)
                       for k in ("wall", "cpu")}
        row["ratio"] = {k: round(row["warm"][k] / row["iree"][k], 3) for k in ("wall", "cpu")}
        row["ratio_new_model"] = {k: round(row["new_model"][k] / row["iree"][k], 3)
                                  for k in ("wall", "cpu")}
        row["ratio_cold"] = {k: round(row["cold"][k] / row["iree"][k], 3)
                             for k in ("wall", "cpu")}
    shutil.rmtree(cache, ignore_errors=True)
    return row


def _markdown(record: dict) -> str:
    rows = record["rows"]
    stages = list(dict.fromkeys(s for r in rows for s in r["warm"]["stages"]))
    text = [
        "# minirt-build compile time, per stage (cortex-m4)",
        "",
        f"Written by `python bench/compile_time.py` on {record['host']} "
        f"({record['cpus']} CPUs, shared with other work while measured); "
        f"{record['repeat']} warm builds per model (median); IREE "
        f"{record['iree_version'] or 'not installed'} compiling the same JAX models for "
        f"the host (llvm-cpu, `--iree-llvmcpu-target-cpu={record['iree_level']}`, "
        "compare_iree.py's flags) in the same rounds. CPU = user + system of the process "
        "and its children (clang, ld.lld, QEMU), the figure to compare on a loaded "
        "machine; wall in brackets. *Cold*: the first build, empty cache; *new model*: "
        "runtime objects cached, not this model's code (LLVM runs: what an edited model "
        "costs); *warm*: the same model built again (its code from the codegen cache). "
        "Python bytecode cached, as for an installed package.",
        "",
        "| model | minirt warm CPU s (wall) | minirt new model CPU s (wall) | minirt cold "
        "CPU s (wall) | iree-compile CPU s (wall) | minirt / IREE CPU (wall), warm | "
        "new model |",
        "|---|---|---|---|---|---|---|",
    ]

    def pair(v: dict | None) -> str:
        return f"{v['cpu']:.2f} ({v['wall']:.2f})" if v else "—"

    for r in rows:
        # Records written before the new-model figure have none.
        text.append(f"| {r['model']} | {pair(r['warm'])} | {pair(r.get('new_model'))} | "
                    f"{pair(r['cold'])} | {pair(r['iree'])} | {pair(r.get('ratio'))} | "
                    f"{pair(r.get('ratio_new_model'))} |")
    if record["iree_version"] is None:
        text += ["", f"iree-compile was not found; install it with `{INSTALL_IREE}`."]
    based = [r for r in rows if "baseline" in r]
    if based:
        text += ["", f"## Before and after: `{record['baseline']}` against this tree", "",
                 "The baseline's builds with its own cache warm, medians of the same "
                 "rounds, beside this tree's new-model and warm builds. CPU s (wall s).", "",
                 "| model | before | after, new model | after, warm | new model / before "
                 "CPU | warm / before CPU |", "|---|---|---|---|---|---|"]
        for r in based:
            b, n, w = r["baseline"], r.get("new_model"), r["warm"]
            text.append(f"| {r['model']} | {pair(b)} | {pair(n)} | {pair(w)} | "
                        + (f"{n['cpu'] / b['cpu']:.2f}" if n else "—")
                        + f" | {w['cpu'] / b['cpu']:.2f} |")
        stages_b = list(dict.fromkeys(s for r in based for s in r["baseline"]["stages"]))
        if stages_b:
            text += ["", "Stages before (CPU s), to set beside the table below:", "",
                     "| stage | " + " | ".join(r["model"] for r in based) + " |",
                     "|---|" + "---|" * len(based)]
            for st in stages_b:
                cells = [f"{r['baseline']['stages'][st]['cpu']:.2f}"
                         if st in r["baseline"]["stages"] else "—" for r in based]
                text.append(f"| {st} | " + " | ".join(cells) + " |")
    for kind, title in (("new_model", "new model"), ("warm", "warm build")):
        if not all(kind in r for r in rows):
            continue
        text += ["", f"## Stages, {title}: CPU seconds (wall in brackets)", "",
                 "| stage | " + " | ".join(r["model"] for r in rows) + " |",
                 "|---|" + "---|" * len(rows)]
        for s in stages:
            cells = [pair(r[kind]["stages"].get(s)) for r in rows]
            text.append(f"| {s} | " + " | ".join(cells) + " |")
    text += ["", "`start-up`: Python and the command's imports; `other`: what no finer stage "
             "claims (options, checks, the staging directory). See docs/benchmarks.md.", ""]
    return "\n".join(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="comma-separated model stems (default: all)")
    ap.add_argument("--repeat", type=int, default=3, help="new-model and warm builds (and "
                    "IREE runs) per model (default 3)")
    ap.add_argument("--baseline", metavar="DIR", help="another minirt checkout to time in "
                    "the same rounds (before / after)")
    ap.add_argument("--markdown-only", action="store_true", help="write compile_time.md "
                    "again from compile_time.json, measuring nothing")
    args = ap.parse_args()
    out = ROOT / "bench" / "results"
    if args.markdown_only:
        record = json.loads((out / "compile_time.json").read_text())
        (out / "compile_time.md").write_text(_markdown(record))
        return 0
    baseline = Path(args.baseline).resolve() if args.baseline else None
    models = _models(args.models.split(",") if args.models else None)
    if not models:
        print(f"bench/compile_time.py: no models under {SHARED}", file=sys.stderr)
        return 2
    iree = _iree_compile()
    version = None
    if iree is None:
        print(f"bench/compile_time.py: iree-compile not found, recording minirt alone; "
              f"install it with: {INSTALL_IREE}", file=sys.stderr)
    else:
        said = subprocess.run([iree, "--version"], capture_output=True, text=True).stdout
        m = re.search(r"IREE compiler version (\S+)", said)  # as compare_iree.py reads it
        version = m.group(1) if m else (said.strip().splitlines() or ["?"])[0]
    with tempfile.TemporaryDirectory(prefix="minirt-compile-time-") as tmp:
        work = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
        # One build first: compiles the bytecode and pages in the interpreter.
        _minirt(models[0], work / "warm-up", {**env, "MINIRT_CACHE_DIR": str(work / "w")})
        if baseline is not None:
            _minirt(models[0], work / "warm-up-base",
                    {**env, "MINIRT_CACHE_DIR": str(work / "base-cache")}, baseline)
        rows = []
        for model in models:
            rows.append(measure(model, args.repeat, work, env, iree, baseline))
            r = rows[-1]
            print(f"{model.stem}: minirt warm {r['warm']['cpu']:.2f} s CPU "
                  f"({r['warm']['wall']:.2f} wall), new model {r['new_model']['cpu']:.2f}, "
                  f"cold {r['cold']['cpu']:.2f}"
                  + (f"; iree-compile {r['iree']['cpu']:.2f} s CPU "
                     f"({r['iree']['wall']:.2f} wall)" if r["iree"] else ""),
                  file=sys.stderr)
    record = {"board": BOARD, "iree_level": IREE_LEVEL, "iree_version": version,
              "repeat": args.repeat, "host": platform.machine(), "cpus": os.cpu_count(),
              "python": platform.python_version(),
              "baseline": str(args.baseline) if baseline else None, "rows": rows}
    out.mkdir(parents=True, exist_ok=True)
    (out / "compile_time.json").write_text(json.dumps(record, indent=2) + "\n")
    (out / "compile_time.md").write_text(_markdown(record))
    print(f"wrote {out / 'compile_time.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
