"""The Python API (toolchain/api.py, imported as minirt): builds, runs, checks and
profiles with the commands' own code, and raises Errors with their messages."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import minirt
from toolchain import api, pipeline
from toolchain.cli import run as run_cli
from toolchain.diagnostics import CompileError
from toolchain.emu.run import EmuError, EmuTimeout
from toolchain.link.build import LinkError
from toolchain.loader import UsageError

ROOT = Path(__file__).resolve().parents[2]
SEED = ROOT / "examples" / "seed.mlir"
TOOLS = ("clang", "ld.lld", "qemu-system-arm")


def _need_tools() -> None:
    missing = [t for t in TOOLS if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")


@pytest.fixture(scope="module")
def seed_build(tmp_path_factory: pytest.TempPathFactory) -> minirt.Build:
    """examples/seed.mlir (a * b + c on 4x4 f32) built for cortex-m4, from a copy."""
    _need_tools()
    tmp = tmp_path_factory.mktemp("api")
    model = tmp / "seed.mlir"
    shutil.copy(SEED, model)
    return minirt.build(model, "cortex-m4", out_dir=tmp / "fw")


ABC = [np.arange(16, dtype=np.float32).reshape(4, 4), np.full((4, 4), 0.5, np.float32),
       np.ones((4, 4), np.float32)]


def test_build_has_its_files_board_and_size(seed_build: minirt.Build) -> None:
    b = seed_build
    for path in (b.elf, b.bin, b.hex, b.module):
        assert path.is_file() and path.parent == b.out_dir
    assert b.board.identifier == "cortex-m4"
    size = json.loads((b.out_dir / "size.json").read_text())  # minirt-build's record
    assert size["flash_total"] == b.size.flash_total > 0
    assert size["ram"] == b.size.ram and b.size.over_budget == []
    assert b.stack is not None and size["stack_measured"] == b.stack.measured


def test_run_gives_outputs_and_the_count_minirt_run_prints(seed_build: minirt.Build,
                                                            capsys) -> None:
    r = seed_build.run(ABC, check=True)
    a, b, c = ABC
    np.testing.assert_array_equal(r.outputs[0], a * b + c)
    np.testing.assert_array_equal(r.reference[0], a * b + c)
    # minirt-run reuses the API's build (the same stamp) and counts the same inference.
    assert run_cli.main([str(seed_build.model), "--board", "cortex-m4", "-o",
                         str(seed_build.out_dir)]) == 0
    out = capsys.readouterr()
    assert "building" not in out.err
    assert f"instructions: {r.instructions} " in out.out and r.instructions > 0
    # The estimate at the board's clock (MPS2 AN386: 25 MHz), the one minirt-run prints.
    assert r.cycles is not None and r.cycles >= r.instructions
    assert r.ms == pytest.approx(r.cycles / 25e6 * 1e3)
    assert f"estimated cycles: {r.cycles:,} on Cortex-M4" in out.out


def test_inputs_as_a_dict_a_list_or_seeded(seed_build: minirt.Build) -> None:
    by_name = seed_build.run({f"input_{i}": x for i, x in enumerate(ABC)})
    by_order = seed_build.run([x.astype(np.float64) for x in ABC])  # exact: converted
    np.testing.assert_array_equal(by_name.outputs[0], by_order.outputs[0])
    assert by_order.inputs[0].dtype == np.float32
    drawn = seed_build.run(seed=3)
    again = seed_build.run(seed=3)
    np.testing.assert_array_equal(drawn.outputs[0], again.outputs[0])
    assert not np.array_equal(drawn.inputs[0], seed_build.run(seed=4).inputs[0])


@pytest.mark.parametrize("inputs, message", [
    (ABC[:2], "inputs: 2 arrays given, the model takes 3"),
    ({"input_0": ABC[0], "input_1": ABC[1]}, "inputs: missing 'input_2'"),
    ({**{f"input_{i}": x for i, x in enumerate(ABC)}, "x": 1}, "inputs: unknown key 'x'"),
    ([np.ones(3)] * 3, "inputs: 'input_0' has shape (3,), the model expects (4, 4)"),
    ([np.full((4, 4), 1e300)] + ABC[1:], "inputs: 'input_0'[0, 0] is 1e+300, outside f32"),
    (np.ones((4, 4)), "inputs: expected a list of arrays"),
])
def test_bad_inputs_are_input_errors(seed_build: minirt.Build, inputs, message: str) -> None:
    with pytest.raises(minirt.InputError) as e:
        seed_build.run(inputs)
    assert str(e.value).startswith(message) and "\n" not in str(e.value)
    assert e.value.exit_code == 2


def test_profile_is_the_run_per_dispatch(seed_build: minirt.Build) -> None:
    p = seed_build.profile(ABC)
    assert p.total == seed_build.run(ABC).instructions
    dispatches = p.to_json()["dispatches"]
    assert [d["name"] for d in dispatches] == ["d0_multiply_add"]
    # seed.mlir names no op: the row is named by its main op's kind, or by its function.
    assert dispatches[0]["label"] == "add"
    assert re.search(r"^add +", p.format(), re.M)
    assert re.search(r"^d0_multiply_add +", p.format("function"), re.M)


def test_a_mismatch_is_raised_with_its_report(seed_build: minirt.Build, monkeypatch) -> None:
    real = pipeline.run_firmware

    def off_by_one(*args, **kwargs):
        run = real(*args, **kwargs)
        run.outputs = [o + 1 for o in run.outputs]
        return run

    monkeypatch.setattr(pipeline, "run_firmware", off_by_one)
    assert seed_build.run(ABC).outputs[0][0, 0] == 2.0  # without check: as the firmware says
    with pytest.raises(minirt.Mismatch) as e:
        seed_build.run(ABC, check=True)
    assert e.value.exit_code == 1
    assert e.value.problems[0] == "output_0: 16 of 16 elements differ (max abs error 1)"
    assert e.value.run.outputs[0][0, 0] == 2.0


def test_a_changed_model_is_a_stale_build(tmp_path: Path) -> None:
    _need_tools()
    model = tmp_path / "seed.mlir"
    shutil.copy(SEED, model)
    b = minirt.build(model, "cortex-m4", out_dir=tmp_path / "fw")
    model.write_text(SEED.read_text().replace("stablehlo.add", "stablehlo.subtract"))
    with pytest.raises(minirt.InputError, match="is stale"):
        b.run(ABC)


def test_cycle_budget(tmp_path: Path) -> None:
    """The runtime stops an endless loop over max_cycles: BudgetExceeded, exit code 3
    (a loop, since a short inference may read no SysTick tick under QEMU)."""
    _need_tools()
    model = ROOT / "tests" / "e2e" / "data" / "control_flow" / "runaway.mlir"
    x = np.array([1.5, -2.0, 3.25, 4.0], np.float32)
    b = minirt.build(model, "cortex-m4", out_dir=tmp_path / "fw", max_cycles=2_000_000)
    assert b.run({"input_0": x, "input_1": np.int32(0)}, check=True).outputs
    with pytest.raises(minirt.BudgetExceeded) as e:
        b.run({"input_0": x, "input_1": np.int32(1)}, timeout=60)
    assert e.value.exit_code == 3
    assert str(e.value) == ("inference stopped: over the cycle budget of 2000000 cycles "
                            "(status 9)")


def test_reference_is_minirt_run_reference() -> None:
    got = minirt.reference(SEED, ABC)
    a, b, c = ABC
    np.testing.assert_array_equal(got[0], a * b + c)


def test_input_values_pin_an_mlir_argument() -> None:
    """input_values={"input_1": b}: seed.mlir's b becomes a constant, the inputs are a, c."""
    a, b, c = ABC
    got = minirt.reference(SEED, [a, c], input_values={"input_1": b})
    np.testing.assert_array_equal(got[0], a * b + c)


@pytest.mark.parametrize("kwargs, message", [
    ({"model": "no/such.mlir"}, "no/such.mlir: no such file"),
    ({"board": "no-such-board"}, "unknown board 'no-such-board'"),
    ({"quantize": "int2"},
     "--quantize must be one of none, fp16, int8-weights, int4-weights, int8"),
    ({"quantize": "int8"}, "--quantize int8 needs --calibration"),
    ({"int8_io": True}, "--int8-io applies to --quantize int8 only"),
    ({"max_cycles": 0}, "--max-cycles must be between 1 and"),
    ({"max_cycles": 2.5}, "--max-cycles must be an integer"),
    ({"input_shapes": {"x": (1, -2)}}, "input_shapes['x']: expected a sequence of integers"),
    ({"input_shapes": {"x": (1, 2)}}, "--input-shape applies to .onnx models only"),
    ({"input_values": {"x": 1}}, "--input-value names x, which is no input of the model "
                                 "(its inputs: input_0, input_1, input_2)"),
    ({"input_values": {"input_0": "a"}}, "input_values['input_0']: expected numbers"),
    ({"input_values": {"input_0": [1.0, 2.0]}}, "--input-value input_0: a value of float64 "
     "shape (2,), but input 'input_0' is declared f32 [4, 4]"),
])
def test_bad_build_arguments_are_input_errors(kwargs: dict, message: str,
                                              tmp_path: Path) -> None:
    args = {"model": SEED, "board": "cortex-m4", **kwargs}
    with pytest.raises(minirt.InputError) as e:
        minirt.build(args.pop("model"), args.pop("board"), out_dir=tmp_path / "fw", **args)
    assert message in str(e.value) and "\n" not in str(e.value)
    assert not (tmp_path / "fw").exists()


def test_a_model_error_has_its_location(tmp_path: Path) -> None:
    model = tmp_path / "bad.mlir"
    model.write_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                     "  %0 = stablehlo.frobnicate %a : tensor<2xf32>\n"
                     "  return %0 : tensor<2xf32>\n}\n")
    with pytest.raises(minirt.InputError) as e:
        minirt.reference(model)
    assert re.match(rf"{re.escape(str(model))}:2:\d+: error: ", str(e.value))
    assert isinstance(e.value.__cause__, CompileError)


@pytest.mark.parametrize("raised, kind, code", [
    (UsageError("u"), minirt.InputError, 2),
    (LinkError("l"), minirt.InputError, 2),
    (pipeline.FirmwareFailed("f"), minirt.FirmwareError, 1),
    (EmuError("e"), minirt.FirmwareError, 1),
    (EmuTimeout("t"), minirt.Timeout, 124),
    (pipeline.OverBudget("o"), minirt.BudgetExceeded, 3),
])
def test_every_failure_is_an_error_with_the_commands_exit_code(raised, kind, code) -> None:
    with pytest.raises(kind) as e, api._errors():
        raise raised
    assert isinstance(e.value, minirt.Error) and e.value.exit_code == code
    assert e.value.__cause__ is raised


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}


def test_readme_example_runs_verbatim(tmp_path: Path) -> None:
    """README.md's "Python API" block, as written, in a folder holding examples/seed.mlir."""
    _need_tools()
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.DOTALL).group(1)
    (tmp_path / "examples").mkdir()
    shutil.copy(SEED, tmp_path / "examples" / "seed.mlir")
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    # The profile's table: seed.mlir names no op, so its one row is its op's kind.
    assert re.search(r"^add +[\d,]* +[\d,]+ ", proc.stdout, re.M)
    assert (tmp_path / "build" / "seed-api" / "firmware.elf").is_file()


def test_api_tour_runs(tmp_path: Path) -> None:
    _need_tools()
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "api_tour.py")],
                          cwd=ROOT, env={**_env(), "MINIRT_TOUR_DIR": str(tmp_path)},
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "outputs match the reference" in proc.stdout
    assert "refused (exit code 2): inputs: 2 arrays given, the model takes 3" in proc.stdout
    assert (tmp_path / "seed" / "firmware.elf").is_file()
