"""`minirt-build --board`: artifacts, size table and size.json, budgets, quantization."""

from __future__ import annotations

import json
from pathlib import Path

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
    board["budgets"]["flash"] = 1000
    path = tmp_path / "cortex-m4.yaml"  # a descriptor's file name is its identifier
    path.write_text(yaml.safe_dump(board))
    load_board(path)  # the edited descriptor is valid
    out = tmp_path / "fw"
    assert build_cli.main([str(SEED), "--board", str(path), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert "over the budget of 1 000 B" in err
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
    assert "--quantize {none,fp16,int8-weights}" in text and "--quantize-min-elements" in text


def test_quantized_build_reports_saving_and_accuracy(tmp_path: Path, capsys, models_dir) -> None:
    out = tmp_path / "fw"
    model = models_dir / "jax" / "mlp.mlir"
    assert build_cli.main([str(model), "--board", "cortex-m4", "-o", str(out), "--quantize",
                           "int8-weights", "--inputs", str(model.with_suffix(".npz"))]) == 0
    q = json.loads((out / "size.json").read_text())["quantization"]
    assert q["flash_saved_bytes"] > 0
    assert q["ram_bytes"] == q["f32_ram_bytes"]
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
