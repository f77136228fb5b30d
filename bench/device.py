"""The device image on every board that has a UART, under QEMU with the UART on a pty:
the same outputs as the semihosting image, and the cycles the image counted beside the
semihosting image's instructions and estimated cycles (docs/device.md, docs/cycles.md).

For each model and board: the semihosting image runs under QEMU (instructions, the
estimate at the board's clock), the device image (`--harness device`) runs under QEMU
with its UART wired to a pseudo-terminal and answers over the device protocol, as
`minirt-run --device` talks to a flashed board. Both runs get the same seeded inputs;
their outputs must be equal bit for bit. Under QEMU the device's cycle counter counts
QEMU's modelled clock (`-icount`), not the board's cycles: the column says what the
counter gives there, so a real board's figure can be set beside it.

Writes bench/results/device.{json,md}; exits 1 when any outputs differ.

    python bench/device.py [--boards B ...] [--models M ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import minirt  # noqa: E402
from toolchain.target import list_boards, load_board  # noqa: E402

SHARED = ROOT.parent / "shared" / "models" / "mlperf_tiny"
RESULTS = ROOT / "bench" / "results"
MODELS = [ROOT / "examples" / "seed.mlir", SHARED / "kws_ref_model.tflite"]


def uart_boards() -> list[str]:
    """Every bare-metal board whose file has a `uart:` block (or whose QEMU sibling
    has one: the image is then rebuilt for the sibling's UART)."""
    out = []
    for name in list_boards():
        board = load_board(name)
        if board.uart is not None:
            out.append(name)
    return out


def measure(model: Path, board: str, work: Path) -> dict:
    """One row: both images built and run on the same inputs."""
    row: dict = {"model": model.stem, "board": board}
    try:
        host = minirt.build(model, board, out_dir=work / f"{model.stem}-{board}")
        run = host.run(seed=0)
        device = minirt.build(model, board, out_dir=work / f"{model.stem}-{board}-device",
                              harness="device")
        dev = device.run(seed=0)
    except minirt.Error as e:
        row["error"] = str(e).splitlines()[0]
        return row
    same = len(run.outputs) == len(dev.outputs) and all(
        a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
        for a, b in zip(run.outputs, dev.outputs, strict=True))
    row.update(instructions=run.instructions, estimated_cycles=run.cycles,
               device_cycles=dev.device_cycles, same_outputs=same,
               flash_semihost=host.size.flash_total, flash_device=device.size.flash_total)
    return row


def _markdown(rows: list[dict]) -> str:
    lines = ["# The device image under QEMU (`python bench/device.py`)", "",
             "Each board's device image (`--harness device`) served one inference over its "
             "UART, wired by QEMU to a pseudo-terminal, as `minirt-run --device` talks to a "
             "flashed board; the semihosting image ran the same inputs. `same outputs`: "
             "bit for bit. `device cycles`: what the image's counter gave under QEMU "
             "(`-icount`: QEMU's modelled clock, not the board's; docs/device.md). "
             "Flash of both images in bytes.", "",
             "| model | board | instructions | estimated cycles | device cycles | same outputs "
             "| flash, semihost | flash, device |",
             "|---|---|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['model']} | {r['board']} | {r['error']} ||||||")
            continue
        est = f"{r['estimated_cycles']:,}" if r["estimated_cycles"] is not None else "n/a"
        lines.append(f"| {r['model']} | {r['board']} | {r['instructions']:,} | {est} | "
                     f"{r['device_cycles']:,} | {'yes' if r['same_outputs'] else 'NO'} | "
                     f"{r['flash_semihost']:,} | {r['flash_device']:,} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--boards", nargs="+", default=None,
                   help="default: every board with a uart: block")
    p.add_argument("--models", nargs="+", type=Path, default=None)
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args()
    models = [m for m in (args.models or MODELS) if m.exists()]
    if args.models is None and len(models) < len(MODELS):
        print(f"device: {SHARED} is absent: the seed only", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory(prefix="minirt-device-") as tmp:
        for model in models:
            for board in args.boards or uart_boards():
                row = measure(model, board, Path(tmp))
                print(f"device: {model.stem} on {board}: "
                      + (row.get("error") or f"{row['device_cycles']:,} cycles, outputs "
                         + ("equal" if row["same_outputs"] else "DIFFER")),
                      file=sys.stderr, flush=True)
                rows.append(row)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "device.json").write_text(json.dumps(rows, indent=2) + "\n")
    (args.out / "device.md").write_text(_markdown(rows))
    print(_markdown(rows))
    bad = [r for r in rows if "error" in r or not r["same_outputs"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
