"""minirt beside IREE 3.13 and TFLite Micro + CMSIS-NN, in one table.

For each shared JAX model (../shared/models/jax/*.mlir, StableHLO exports) and each x86-64
CPU level (the baseline ``x86-64`` and ``x86-64-v3``: AVX2 + FMA; and this machine's
native level, when its CPU has AVX-512: minirt's ``x86-64-v4`` board against IREE's
``--iree-llvmcpu-target-cpu=host``, which also uses what the host has beyond v4):

* host latency: minirt-bench's program (toolchain/bench) against
  ``iree-benchmark-module --device=local-sync`` (one thread, like minirt) on a module
  that ``iree-compile`` built for the same level (``--iree-llvmcpu-target-cpu``), both
  fed the same seeded inputs; median and minimum per inference in microseconds (IREE's:
  the median of its repetitions' real time and the fastest repetition). Runs alternate
  model by model, so both see the same load on a shared machine;
* whether the two agree: IREE's outputs (iree-run-module) against minirt's within
  numpy.isclose(rtol=1e-4, atol=1e-5), TFLite's bound for two f32 summation orders;
* sizes: IREE's .vmfb (code and weights; its runtime is a separate library) against
  minirt's module (.mrt: weights and schedule) and its whole linked image (runtime,
  code and weights; no libc, nothing else to ship);
* compile time: the wall time of ``minirt-build`` and of ``iree-compile``, each a fresh
  process from model file to artifact.

Then minirt's instructions per inference on cortex-m4 under QEMU, measured now: the JAX
models (float), and the MLPerf Tiny int8 models beside TFLite Micro + CMSIS-NN's figures
(bench/tflm_cmsis_nn.json, with their source; measured as bench/mlperf.py does).

Needs the ``bench`` extra (pip install -e '.[bench]'); never part of make test. Writes
bench/results/compare_iree.json and compare_iree.md; progress goes to stderr per model.

With --skip-m4 the cortex-m4 tables of the previous results are carried over, marked
as such. On a machine shared with other jobs the CPU-time ratio is the fair one: wall
time counts the other jobs' preemptions, which fall on either tool.

Usage: python bench/compare_iree.py [--models M,M] [--repeat N] [--skip-m4]
"""

from __future__ import annotations

import argparse
import importlib.util
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

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toolchain.bench.native import build_native_bench, check_native, run_native_bench  # noqa: E402
from toolchain.emu.run import run_image  # noqa: E402
from toolchain.loader import UsageError, load_graph, random_inputs  # noqa: E402
from toolchain.module.reader import read_module  # noqa: E402
from toolchain.pipeline import compile_graph, decode_outputs, encode_inputs  # noqa: E402
from toolchain.reference import run_graph  # noqa: E402
from toolchain.target import load_board  # noqa: E402

SHARED = ROOT.parent / "shared" / "models"
# (minirt board, IREE --iree-llvmcpu-target-cpu): the same named level on both sides.
LEVELS = (("x86-64", "x86-64"), ("x86-64-v3", "x86-64-v3"))
# This machine's native level: minirt's widest board against IREE at `host` (every
# feature this CPU has), where the CPU runs the board's code (check_native).
NATIVE = ("x86-64-v4", "host")
PEER = json.loads((ROOT / "bench" / "tflm_cmsis_nn.json").read_text())
RTOL, ATOL = 1e-4, 1e-5  # IREE against minirt: two f32 summation orders (see above)
# Both tools time windows of this length (minirt: a batch of inferences per sample; IREE:
# google-benchmark's minimum time per repetition), so each figure averages over the same
# span and a loaded machine's preemptions weigh alike on both.
SAMPLE_SECONDS = 0.01
BIN = Path(sys.executable).parent  # the venv's iree-* console scripts


def _tool(name: str) -> str:
    path = shutil.which(name) or (str(BIN / name) if (BIN / name).exists() else None)
    if path is None:
        raise SystemExit(f"bench/compare_iree.py: {name} not found: pip install -e '.[bench]'")
    return path


def _iree_version() -> str:
    out = subprocess.run([_tool("iree-compile"), "--version"], capture_output=True,
                         text=True).stdout
    m = re.search(r"IREE \(https://iree.dev\):\s*\n\s*IREE compiler version (\S+)", out)
    return m.group(1) if m else out.strip().splitlines()[0] if out.strip() else "?"


def _timed(cmd: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of a command; CPU = its user + system time, which other jobs
    on a loaded machine do not inflate as they do the wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _iree_bench(vmfb: Path, input_files: list[Path], repeat: int) -> tuple[float, float, float]:
    """(median, min, median CPU) microseconds per inference from iree-benchmark-module's
    JSON: ``repeat`` repetitions of SAMPLE_SECONDS each."""
    cmd = [_tool("iree-benchmark-module"), f"--module={vmfb}", "--device=local-sync",
           "--function=main", f"--benchmark_repetitions={repeat}",
           f"--benchmark_min_time={SAMPLE_SECONDS}s", "--benchmark_format=json",
           *[f"--input=@{f}" for f in input_files]]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=True)
    runs = [b for b in json.loads(proc.stdout)["benchmarks"] if b.get("run_type") == "iteration"]
    scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}
    wall = [b["real_time"] * scale[b["time_unit"]] for b in runs]
    cpu = [b["cpu_time"] * scale[b["time_unit"]] for b in runs]
    return statistics.median(wall), min(wall), statistics.median(cpu)


def _iree_outputs(vmfb: Path, input_files: list[Path], work: Path, count: int) -> list:
    outs = [work / f"iree_out_{i}.npy" for i in range(count)]
    subprocess.run([_tool("iree-run-module"), f"--module={vmfb}", "--device=local-sync",
                    "--function=main", *[f"--input=@{f}" for f in input_files],
                    *[f"--output=@{o}" for o in outs]], capture_output=True, text=True,
                   check=True)
    return [np.load(o) for o in outs]


def host_row(model: Path, level: str, repeat: int, work: Path, iree_target: str = "") -> dict:
    """One model at one CPU level (minirt board ``level``, IREE CPU ``iree_target``, the
    same by default): minirt and IREE latency, sizes, compile times."""
    iree_target = iree_target or level
    board = load_board(level)
    check_native(board)
    graph = load_graph(model)
    inputs = random_inputs(graph, 0)
    files = []
    for i, x in enumerate(inputs):
        files.append(work / f"{model.stem}_in_{i}.npy")
        np.save(files[-1], x)
    bench = build_native_bench(graph, board, work / f"{model.stem}-{level}-bench",
                               log=lambda _: None)
    module = (bench.out_dir / "model.mrt").read_bytes()
    raw = encode_inputs(read_module(module).inputs, inputs)
    minirt = run_native_bench(bench, raw, repeat, min_sample_ns=int(SAMPLE_SECONDS * 1e9))
    ours = decode_outputs(read_module(module).outputs, minirt.outputs)
    vmfb = work / f"{model.stem}-{level}.vmfb"
    iree_compile, iree_compile_cpu = _timed([
        _tool("iree-compile"), str(model), "--iree-hal-target-device=local",
        "--iree-hal-local-target-device-backends=llvm-cpu",
        f"--iree-llvmcpu-target-cpu={iree_target}", "-o", str(vmfb)])
    minirt_compile, minirt_compile_cpu = _timed([
        sys.executable, "-m", "toolchain.cli.build", str(model), "--board", level,
        "-o", str(work / f"{model.stem}-{level}-fw")])
    iree_median, iree_min, iree_cpu = _iree_bench(vmfb, files, repeat)
    theirs = _iree_outputs(vmfb, files, work, len(ours))
    agree = all(np.isclose(a, b, rtol=RTOL, atol=ATOL).all() for a, b in zip(ours, theirs))
    want = run_graph(graph, inputs)  # the graph the program computes (prepared in place)
    checked = all(np.isclose(a, b, rtol=1e-5, atol=1e-6).all() for a, b in zip(ours, want))
    return {
        "model": model.stem, "level": level, "iree_cpu": iree_target,
        "minirt_median_us": round(minirt.median_us, 3), "minirt_min_us": round(minirt.min_us, 3),
        "minirt_cpu_us": round(minirt.cpu_median_us, 3), "minirt_batch": minirt.batch,
        "iree_median_us": round(iree_median, 3), "iree_min_us": round(iree_min, 3),
        "iree_cpu_us": round(iree_cpu, 3),
        "ratio_median": round(minirt.median_us / iree_median, 3),
        "ratio_min": round(minirt.min_us / iree_min, 3),
        "ratio_cpu": round(minirt.cpu_median_us / iree_cpu, 3),
        "minirt_module_bytes": len(module), "minirt_image_bytes": bench.image_bytes,
        "iree_vmfb_bytes": vmfb.stat().st_size,
        "minirt_compile_s": round(minirt_compile, 2), "iree_compile_s": round(iree_compile, 2),
        "minirt_compile_cpu_s": round(minirt_compile_cpu, 2),
        "iree_compile_cpu_s": round(iree_compile_cpu, 2),
        "minirt_check": "ok" if checked else "MISMATCH",
        "outputs_agree": agree,
    }


def m4_jax_row(model: Path, work: Path) -> dict:
    """minirt's instructions per inference of a JAX model on cortex-m4 (its .npz inputs)."""
    board = load_board("cortex-m4")
    graph = load_graph(model)
    data = np.load(model.with_suffix(".npz"))
    inputs = [data[f"input_{i}"] for i in range(len(graph.inputs))]
    build = compile_graph(graph, board, work / f"{model.stem}-m4", log=lambda _: None)
    module = read_module(build.module)
    run = run_image(board, build.elf, encode_inputs(module.inputs, inputs))
    ok = run.exit_code == 0 and run.outputs is not None and all(
        np.isclose(g, w, rtol=1e-5, atol=1e-6).all()
        for g, w in zip(decode_outputs(module.outputs, run.outputs), run_graph(graph, inputs)))
    return {"model": model.stem, "board": "cortex-m4", "instructions": run.instructions,
            "check": "ok" if ok else "MISMATCH"}


def _mlperf():
    spec = importlib.util.spec_from_file_location("bench_mlperf", ROOT / "bench" / "mlperf.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _fmt(x) -> str:
    if isinstance(x, bool):
        return "yes" if x else "NO"
    if isinstance(x, float):
        return f"{x:,.3f}" if x < 100 else f"{x:,.1f}"
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def _table(rows: list[dict], cols: list[str]) -> list[str]:
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(_fmt(r.get(c, "-")) for c in cols) + " |" for r in rows]
    return lines


def _summary(host: list[dict]) -> list[str]:
    """Per level, the worst (highest) minirt / IREE CPU-time ratio over the models."""
    lines = []
    for level in dict.fromkeys(r["level"] for r in host):
        rows = [r for r in host if r["level"] == level]
        worst = max(rows, key=lambda r: r["ratio_cpu"])
        lines.append(f"- {level} (IREE `{rows[0]['iree_cpu']}`): worst CPU-time ratio "
                     f"{worst['ratio_cpu']:.3f} ({worst['model']}), "
                     f"{'every model at or below' if worst['ratio_cpu'] <= 1.0 else 'above'} "
                     "1.0x")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", help="JAX model names (default: every shared one)")
    ap.add_argument("--repeat", type=int, default=50,
                    help="timed windows of 10 ms per tool, model and level (default: 50)")
    ap.add_argument("--skip-m4", action="store_true", help="no cortex-m4 instruction counts")
    args = ap.parse_args()
    if not (SHARED / "jax").is_dir():
        print(f"bench/compare_iree.py: {SHARED / 'jax'} is absent", file=sys.stderr)
        return 2
    models = sorted((SHARED / "jax").glob("*.mlir"))
    if args.models:
        models = [m for m in models if m.stem in args.models.split(",")]
    version = _iree_version()
    levels = list(LEVELS)
    try:
        check_native(load_board(NATIVE[0]))
        levels.append(NATIVE)
    except UsageError as e:
        print(f"bench/compare_iree.py: no native-level rows: {e}", file=sys.stderr)
    load = [round(x, 2) for x in os.getloadavg()]  # before: what else the machine ran
    host, m4, mlperf = [], [], []
    with tempfile.TemporaryDirectory(prefix="minirt-iree-") as tmp:
        work = Path(tmp)
        for model in models:
            for level, iree_cpu in levels:
                row = host_row(model, level, args.repeat, work, iree_cpu)
                host.append(row)
                print(f"{model.stem:12} {level:10} minirt {row['minirt_median_us']:>10.3f} us  "
                      f"IREE {row['iree_median_us']:>10.3f} us  x{row['ratio_median']:.2f}  "
                      f"(cpu x{row['ratio_cpu']:.2f}) agree={row['outputs_agree']} "
                      f"check={row['minirt_check']}",
                      file=sys.stderr, flush=True)
        if not args.skip_m4:
            for model in models:
                m4.append(m4_jax_row(model, work))
                print(f"{model.stem:12} cortex-m4  {m4[-1]['instructions']:>12,} instructions "
                      f"{m4[-1]['check']}", file=sys.stderr, flush=True)
            bench_mlperf = _mlperf()
            for name in PEER["models"]:
                row = bench_mlperf.bench_one(name, "cortex-m4", work)
                peer = PEER["models"][name]
                mlperf.append({"model": name, "minirt_instructions": row.get("instructions"),
                               "tflm_cmsis_nn_instructions": peer["instructions"],
                               "ratio": round(row["instructions"] / peer["instructions"], 3)
                               if row.get("instructions") else None,
                               "minirt_code_bytes": row.get("code_bytes"),
                               "tflm_code_bytes": peer["code_bytes"],
                               "check": row["check"]})
                print(f"{name:24} cortex-m4  {row.get('instructions') or '-':>12} instructions "
                      f"(TFLM + CMSIS-NN {peer['instructions']:,}) {row['check']}",
                      file=sys.stderr, flush=True)
    cpu = next((line.split(":", 1)[1].strip() for line in
                Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    record = {"iree": version, "host_cpu": cpu, "repeat": args.repeat,
              "sample_seconds": SAMPLE_SECONDS, "load_average": load, "host": host,
              "cortex_m4_jax": m4, "cortex_m4_mlperf_int8": mlperf, "peer_source": PEER["source"]}
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    carried = args.skip_m4 and (out / "compare_iree.json").is_file()
    if carried:  # keep the last measured cortex-m4 tables, marked as carried over
        previous = json.loads((out / "compare_iree.json").read_text())
        m4 = previous.get("cortex_m4_jax", [])
        mlperf = previous.get("cortex_m4_mlperf_int8", [])
        record["cortex_m4_jax"], record["cortex_m4_mlperf_int8"] = m4, mlperf
        record["cortex_m4_carried_over"] = True
    (out / "compare_iree.json").write_text(json.dumps(record, indent=2) + "\n")
    text = [
        "# minirt beside IREE and TFLite Micro + CMSIS-NN (`python bench/compare_iree.py`)", "",
        f"Host: {cpu}, shared with other jobs (load average {load[0]} at the start; "
        "latencies move with the load, and both tools ran alternately, model by model). "
        f"IREE {version}, `iree-benchmark-module --device=local-sync`; minirt-bench. Each "
        f"tool: {args.repeat} windows of {SAMPLE_SECONDS * 1000:g} ms, each the mean of "
        "its inferences; median and min of the windows' wall time, and the median of "
        "their CPU time (the process's, which preemption by other jobs does not count). "
        "Times in microseconds per inference; ratio = minirt / IREE (below 1: minirt is "
        "faster). Sizes in bytes: IREE's .vmfb (code and weights, runtime library apart) "
        "beside minirt's module (.mrt) and whole image (runtime included). Compile: wall "
        "and CPU seconds of minirt-build and iree-compile, each a fresh process. "
        "agree: IREE's outputs within isclose(1e-4, 1e-5) of minirt's; check: minirt's "
        "against its reference (1e-5, 1e-6).", "",
        "The machine runs other jobs beside this bench, so wall times (median, min) "
        "carry their preemptions; the CPU-time ratio (ratio_cpu) is the fair comparison.",
        "",
        "## Host latency at the same CPU level", "",
        "level: minirt's board; iree_cpu: IREE's `--iree-llvmcpu-target-cpu`. The "
        "x86-64-v4 rows are this machine's native level: IREE at `host` may use every "
        "feature the CPU has (AVX-512 IFMA, VBMI, ...), minirt the x86-64-v4 set.", "",
        *_summary(host), "",
        *_table(host, ["model", "level", "iree_cpu", "minirt_median_us", "iree_median_us",
                       "ratio_median", "minirt_min_us", "iree_min_us", "ratio_min", "minirt_cpu_us",
                       "iree_cpu_us", "ratio_cpu", "outputs_agree", "minirt_check"]), "",
        "## Sizes and compile times", "",
        *_table(host, ["model", "level", "minirt_module_bytes", "minirt_image_bytes",
                       "iree_vmfb_bytes", "minirt_compile_s", "iree_compile_s",
                       "minirt_compile_cpu_s", "iree_compile_cpu_s"]), ""]
    if m4:
        if carried:
            text += ["The cortex-m4 tables below are the previous run's (--skip-m4: not "
                     "measured again; host rows only changed).", ""]
        text += ["## cortex-m4: instructions per inference (QEMU, exact)", "",
                 *_table(m4, ["model", "instructions", "check"]), "",
                 "## cortex-m4, MLPerf Tiny int8, beside TFLite Micro + CMSIS-NN", "",
                 f"Their figures: {PEER['source']}", "",
                 *_table(mlperf, ["model", "minirt_instructions", "tflm_cmsis_nn_instructions",
                                  "ratio", "minirt_code_bytes", "tflm_code_bytes", "check"]),
                 ""]
    (out / "compare_iree.md").write_text("\n".join(text))
    ok = all(r["minirt_check"] == "ok" and r["outputs_agree"] for r in host) and all(
        r["check"] == "ok" for r in m4 + mlperf)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
