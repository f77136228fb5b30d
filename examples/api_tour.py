"""A tour of minirt's Python API, cell by cell (`# %%` cells: VS Code, Jupytext, Spyder).

Run from the repository root: `python examples/api_tour.py`. It builds examples/seed.mlir
(out = a * b + c on 4x4 floats) for the cortex-m4 board, prints its size, runs it under
QEMU, checks it against the numpy reference and profiles it. The build goes to a fresh
temporary folder, or to the folder named by MINIRT_TOUR_DIR.
"""

# %% Build the model for a board
import os
import tempfile
from pathlib import Path

import numpy as np

import minirt

out_dir = Path(os.environ.get("MINIRT_TOUR_DIR") or tempfile.mkdtemp(prefix="minirt-tour-"))
build = minirt.build("examples/seed.mlir", board="cortex-m4", out_dir=out_dir / "seed")
print(f"built for {build.board.identifier}: {build.elf}, {build.bin}, {build.hex}")

# %% Its size: flash and RAM by component, against the board's budgets
print(build.size.format_table())
print("flash by component:", build.size.flash)
print("over budget:", build.size.over_budget or "no")
if build.stack is not None:
    print(f"stack: {build.stack.measured} B measured under QEMU, {build.stack.reserved} B "
          "reserved")

# %% Run one inference under QEMU on our own inputs
a = np.arange(16, dtype=np.float32).reshape(4, 4)
b = np.full((4, 4), 0.5, dtype=np.float32)
c = np.ones((4, 4), dtype=np.float32)
run = build.run({"input_0": a, "input_1": b, "input_2": c})
print(run.outputs[0])
print(f"{run.instructions} instructions (one inference; start-up and I/O excluded)")

# %% Check against the numpy reference (raises minirt.Mismatch when they differ)
checked = build.run([a, b, c], check=True)
expected = minirt.reference("examples/seed.mlir", [a, b, c])
assert np.array_equal(checked.outputs[0], expected[0])
print("outputs match the reference")

# %% Where the instructions go: one row per dispatch, then the runtime's own
profile = build.profile([a, b, c])
print(profile.format())
print({row["name"]: row["instructions"] for row in profile.to_json()["dispatches"]})

# %% Errors are minirt.Error, with the commands' one-line messages and exit codes
try:
    build.run([a, b])
except minirt.InputError as e:
    print(f"refused (exit code {e.exit_code}): {e}")
