"""`minirt-build --board`: artifacts, size table and size.json, budgets, quantization."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from toolchain.cli import build as build_cli
from toolchain.target import load_board

REPO = Path(__file__).resolve().parents[2]
SEED = REPO / "examples" / "seed.mlir"
ARTIFACTS = ["firmware.elf", "firmware.bin", "firmware.hex", "firmware.map", "model.mrt",
             "size.json"]


def test_build_writes_artifacts_and_size_json(tmp_path: Path, capsys) -> None:
    out = tmp_path / "fw"
    assert build_cli.main([str(SEED), "--board", "cortex-m4", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    for name in ARTIFACTS:
        assert (out / name).exists(), name
    size = json.loads((out / "size.json").read_text())
    assert size["flash_total"] == sum(size["flash"].values())
    assert set(size["flash"]) >= {"runtime", "dispatch", "constants", "schedule", "startup",
                                  "helpers"}
    assert "component" in text and "total" in text and size["compile_seconds"] > 0


def test_over_budget_exits_1_but_keeps_the_report(tmp_path: Path, capsys) -> None:
    board = yaml.safe_load((REPO / "boards" / "cortex-m4.yaml").read_text())
    board["budgets"]["flash"] = 512  # the seed image is 996 B
    path = tmp_path / "cortex-m4.yaml"  # a descriptor's file name is its identifier
    path.write_text(yaml.safe_dump(board))
    load_board(path)  # the edited descriptor is valid
    out = tmp_path / "fw"
    assert build_cli.main([str(SEED), "--board", str(path), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "over the budget of 512 B" in err
    assert (out / "size.json").exists()


def test_board_is_required(capsys) -> None:
    assert build_cli.main([str(SEED)]) == 2
    assert "--board is required" in capsys.readouterr().err


def test_bad_build_leaves_nothing_behind(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.mlir"
    bad.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                   "  %0 = stablehlo.add %a, %a : tensor<8xf32>\n  return %0 : tensor<4xf32>\n}\n")
    out = tmp_path / "fw"
    assert build_cli.main([str(bad), "--board", "cortex-m4", "-o", str(out)]) == 2
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [bad]


def test_help_documents_quantization(capsys) -> None:
    try:
        build_cli.main(["--help"])
    except SystemExit as e:
        assert e.code == 0
    text = capsys.readouterr().out
    assert "--quantize {none,fp16,int8-weights,int4-weights,int8}" in text
    assert "--quantize-min-elements" in text


def test_quantized_build_reports_saving_and_accuracy(tmp_path: Path, capsys, models_dir) -> None:
    out = tmp_path / "fw"
    model = models_dir / "jax" / "mlp.mlir"
    assert build_cli.main([str(model), "--board", "cortex-m4", "-o", str(out), "--quantize",
                           "int8-weights", "--inputs", str(model.with_suffix(".npz"))]) == 0
    q = json.loads((out / "size.json").read_text())["quantization"]
    assert q["flash_saved_bytes"] > 0
    # Weights live in flash: the static RAM is the f32 build's (each build's stack is
    # measured for its own code, and dequantizing may take a few bytes more).
    assert q["ram_static_bytes"] == q["f32_ram_static_bytes"]
    assert q["constants_bytes"] * 2 < q["f32_constants_bytes"]
    assert q["accuracy"]["cosine_similarity"] >= 0.999
    assert "accuracy against the f32 model" in capsys.readouterr().out


def test_failed_link_leaves_no_half_written_artifacts(tmp_path: Path, capsys) -> None:
    board = yaml.safe_load((REPO / "boards" / "cortex-m4.yaml").read_text())
    board["flash"]["length"] = board["budgets"]["flash"] = 512  # the image cannot fit
    boards = tmp_path / "boards"
    boards.mkdir()
    path = boards / "cortex-m4.yaml"
    path.write_text(yaml.safe_dump(board))
    out = tmp_path / "out" / "fw"
    assert build_cli.main([str(SEED), "--board", str(path), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "error:" in err and "Traceback" not in err
    assert not out.exists() and list((tmp_path / "out").iterdir()) == []


def test_bad_inputs_are_refused_before_the_build(tmp_path: Path, capsys) -> None:
    """`--quantize int8-weights --inputs bad.npz` used to exit 2 after the finished build
    was moved into place, where a later minirt-run reused it."""
    bad = tmp_path / "bad.npz"
    bad.write_text("not an npz")
    out = tmp_path / "fw"
    for quantize in ("int8-weights", "none"):
        assert build_cli.main([str(SEED), "--board", "cortex-m4", "-o", str(out), "--quantize",
                               quantize, "--inputs", str(bad)]) == 2
        err = capsys.readouterr().err
        assert err.strip() == f"minirt-build: error: {bad}: cannot read inputs: not an .npz " \
                              "archive (np.savez writes one, with arrays input_0, input_1, ...)"
        assert not out.exists()


def test_bad_inputs_leave_a_previous_build_untouched(tmp_path: Path, capsys) -> None:
    out = tmp_path / "fw"
    assert build_cli.main([str(SEED), "--board", "cortex-m4", "-o", str(out)]) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    wrong = tmp_path / "wrong.npz"
    np.savez(wrong, input_0=np.zeros((4, 4)), input_1=np.zeros((4, 4)),
             input_2=np.full((4, 4), 1e300))  # float64 1e300 is no f32
    assert build_cli.main([str(SEED), "--board", "cortex-m4", "-o", str(out), "--quantize",
                           "fp16", "--inputs", str(wrong)]) == 2
    assert "'input_2'[0, 0] is 1e+300, outside f32's range" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


@pytest.mark.parametrize("what", ["file", "under-a-file", "someone's-directory"])
def test_output_that_is_not_a_build_directory(what: str, tmp_path: Path, capsys) -> None:
    mine = tmp_path / "mine"
    if what == "someone's-directory":
        mine.mkdir()
        (mine / "thesis.tex").write_text("years of work")
        out, message = mine, "not a minirt build (it holds thesis.tex and has no build.json)"
    else:
        mine.write_text("years of work")
        out, message = ((mine, "exists and is not a directory") if what == "file"
                        else (mine / "fw", "mine is not a directory"))
    assert build_cli.main([str(SEED), "--board", "cortex-m4", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("minirt-build: error: ") and message in err
    assert len(err.strip().splitlines()) == 1
    assert (mine.read_text() if mine.is_file() else (mine / "thesis.tex").read_text()) == \
        "years of work"


def test_quantized_build_that_fits_only_quantized(tmp_path: Path, capsys) -> None:
    """The f32 comparison build is made first and may not fit the board: that is no
    reason to fail the quantized build the user asked for."""
    w = np.random.default_rng(0).standard_normal((256, 256)).round(3)
    dense = "[" + ", ".join("[" + ", ".join(map(str, row)) + "]" for row in w) + "]"
    model = tmp_path / "wide.mlir"
    model.write_text(
        "func.func @main(%x: tensor<1x256xf32>) -> tensor<1x256xf32> {\n"
        f"  %w = stablehlo.constant dense<{dense}> : tensor<256x256xf32>\n"
        "  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : "
        "(tensor<1x256xf32>, tensor<256x256xf32>) -> tensor<1x256xf32>\n"
        "  return %0 : tensor<1x256xf32>\n}\n")
    board = yaml.safe_load((REPO / "boards" / "cortex-m4.yaml").read_text())
    board["flash"]["length"] = board["budgets"]["flash"] = 160 * 1024  # f32 weights: 256 KB
    path = tmp_path / "boards" / "cortex-m4.yaml"
    path.parent.mkdir()
    path.write_text(yaml.safe_dump(board))
    out = tmp_path / "fw"
    assert build_cli.main([str(model), "--board", str(path), "-o", str(out), "--quantize",
                           "int8-weights"]) == 0
    text = capsys.readouterr().out
    assert ("no f32 build to compare with: the model for board cortex-m4 does not fit the "
            "board's memory: it overflows FLASH by ") in text
    q = json.loads((out / "size.json").read_text())["quantization"]
    assert q["f32_flash_bytes"] is None and "does not fit" in q["f32_build_error"]


def test_the_command_process_ends_with_its_output_and_status(tmp_path: Path) -> None:
    """As a process, minirt-build ends without Python's finalization (common.exit_now):
    its buffered output must still all arrive, and its exit status be the tool's."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "toolchain.cli.build", str(SEED), "--board", "cortex-m4"]
    done = subprocess.run([*cmd, "-o", str(tmp_path / "fw"), "--timings"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any(ln.startswith("minirt-build: wrote ") for ln in lines)
    assert lines[-1].split()[0] == "total"  # the table, printed last, arrived whole
    bad = subprocess.run([*cmd, "-o", str(tmp_path / "fw2"), "--max-cycles", "0"], env=env,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "--max-cycles" in bad.stderr
