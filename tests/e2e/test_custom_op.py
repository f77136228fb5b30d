"""Operators of the user's own (--custom-op, docs/custom-ops.md) in firmware under QEMU:
the worked example (examples/custom_op) checked on four boards (riscv32: its float
constant must not land in RAM-only small data), an int8 kernel that
requantizes with the scales the ABI passes, a kernel that disagrees with its reference
(the check fails) and one that returns a failure (the run stops, naming the operator)."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest
from tflite_models import Op, Tensor, build_model

from toolchain.cli import run

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "custom_op"
DATA = Path(__file__).resolve().parent / "data" / "custom_op"


def _example_op(kernel: Path = EXAMPLE / "kernel.c") -> str:
    return f"SoftsignGain={kernel},{EXAMPLE / 'reference.py'}"


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64", "cortex-m0plus", "riscv32"])
def test_example_matches_its_reference(board: str, tmp_path: Path, capsys) -> None:
    argv = [str(EXAMPLE / "softsign.tflite"), "--board", board, "-o", str(tmp_path / "fw"),
            "--custom-op", _example_op(), "--check"]
    assert run.main(argv) == 0, capsys.readouterr().err
    assert "check: outputs match the reference" in capsys.readouterr().out


def test_the_committed_model_is_the_script_s() -> None:
    """examples/custom_op/softsign.tflite is what make_model.py writes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_model", EXAMPLE / "make_model.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.model() == (EXAMPLE / "softsign.tflite").read_bytes()


def test_a_kernel_that_disagrees_fails_the_check(tmp_path: Path, capsys) -> None:
    """The same build directory: the right kernel passes; the kernel edited to compute
    another gain is rebuilt (the stamp holds the kernel's bytes) and fails --check."""
    kernel = tmp_path / "src" / "kernel.c"
    kernel.parent.mkdir()
    shutil.copy(EXAMPLE / "kernel.c", kernel)
    argv = [str(EXAMPLE / "softsign.tflite"), "--board", "x86-64", "-o", str(tmp_path / "fw"),
            "--custom-op", _example_op(kernel), "--check"]
    assert run.main(argv) == 0
    capsys.readouterr()
    text = kernel.read_text()
    assert "y[i] = gain * x[i]" in text
    kernel.write_text(text.replace("y[i] = gain * x[i]", "y[i] = 1.5f * gain * x[i]"))
    assert run.main(argv) == 1
    out, err = capsys.readouterr()
    assert "minirt-run: building" in err
    assert "check FAILED against the reference" in err
    assert "output_0: 16 of 16 elements differ" in err


def test_a_failing_kernel_stops_the_run_naming_the_op(tmp_path: Path, capsys) -> None:
    argv = [str(EXAMPLE / "softsign.tflite"), "--board", "cortex-m4",
            "-o", str(tmp_path / "fw"), "--custom-op", _example_op(DATA / "failing.c")]
    assert run.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("minirt-run: error: custom op SoftsignGain"), err
    assert "softsign_gain in failing.c" in err and "non-zero status" in err


def _int8_model(path: Path, limit: int) -> Path:
    x = Tensor((2, 3, 5), "int8", scale=0.05, zero_point=-7, name="x")
    c = Tensor((2, 3, 5), "int8", scale=0.02, zero_point=4, name="clipped")
    y = Tensor((2, 3, 5), "int8", scale=0.02, zero_point=4, name="y")
    ops = [Op("CUSTOM:CLIP_SCALE", [x], [c], bytes([limit])),
           Op("RELU", [c], [y], {})]
    path.write_bytes(build_model(ops, [x], [y]))
    return path


def test_int8_kernel_requantizes_with_the_abi_s_scales(tmp_path: Path, capsys) -> None:
    """The kernel reads both tensors' scale and zero point from its descriptors; the
    outputs equal the reference's exactly (the check compares integers exactly), and the
    reference really clips (some inputs lie beyond the limit)."""
    model = _int8_model(tmp_path / "clip.tflite", 40)
    # Both sides of the limits (input -47 .. 33), and odd steps from the zero point, whose
    # requantized values (x 2.5) are ties: rounded away from zero on both sides.
    x = np.linspace(-60, 50, 30).round().astype(np.int8).reshape(2, 3, 5)
    np.savez(tmp_path / "in.npz", input_0=x)
    op = f"CLIP_SCALE={DATA / 'clip_scale.c'},{DATA / 'clip_scale.py'}"
    argv = [str(model), "--board", "cortex-m4", "-o", str(tmp_path / "fw"), "--custom-op", op,
            "--inputs", str(tmp_path / "in.npz"), "--check",
            "--save-outputs", str(tmp_path / "out.npz")]
    assert run.main(argv) == 0, capsys.readouterr().err
    got = np.load(tmp_path / "out.npz")["output_0"]
    # 40 * 0.05 = 2.0 real: 100 steps of the output's 0.02 above its zero point 4.
    assert got.max() == 104 and got.min() == 4  # RELU after the clip: 0 real is 4
    assert len(np.unique(got)) > 10


def test_options_reach_the_kernel_as_stored(tmp_path: Path, capsys) -> None:
    """Another gain in the model's options: the kernel reads it from the options bytes,
    not from anything compiled in (both sides agree, and the result changed)."""
    x = Tensor((1, 16), "float32", name="x")
    y = Tensor((1, 16), "float32", name="y")
    model = tmp_path / "gain.tflite"
    model.write_bytes(build_model([Op("CUSTOM:SoftsignGain", [x], [y],
                                      struct.pack("<f", -3.0))], [x], [y]))
    inputs = tmp_path / "in.npz"
    np.savez(inputs, input_0=np.linspace(-4, 4, 16, dtype=np.float32).reshape(1, 16))
    argv = [str(model), "--board", "x86-64", "-o", str(tmp_path / "fw"),
            "--custom-op", _example_op(), "--inputs", str(inputs), "--check",
            "--save-outputs", str(tmp_path / "out.npz")]
    assert run.main(argv) == 0, capsys.readouterr().err
    got = np.load(tmp_path / "out.npz")["output_0"]
    assert got[0, 0] == pytest.approx(-3.0 * -4 / 5)


def test_python_api_takes_custom_ops(tmp_path: Path) -> None:
    """minirt.build(..., custom_ops=[...]) and minirt.reference(..., custom_ops=[...]): the
    same strings as --custom-op; a run checks against the user's reference, and a bad
    one is an InputError."""
    import minirt

    build = minirt.build(EXAMPLE / "softsign.tflite", "x86-64", out_dir=tmp_path / "fw",
                         custom_ops=[_example_op()])
    x = np.linspace(-3, 3, 16, dtype=np.float32).reshape(1, 16)
    result = build.run([x], check=True)
    want = minirt.reference(EXAMPLE / "softsign.tflite", [x], custom_ops=[_example_op()])
    np.testing.assert_allclose(result.outputs[0], want[0], rtol=1e-6)
    with pytest.raises(minirt.InputError, match="nope.c: no such file"):
        minirt.reference(EXAMPLE / "softsign.tflite", [x],
                         custom_ops=[f"SoftsignGain={tmp_path}/nope.c,{EXAMPLE}/reference.py"])


def _onnx_model(path: Path, declared: bool = True) -> Path:
    """x (1, 16) -> my.ops.SoftsignGain(options = gain 2.0 as bytes) -> Relu -> y."""
    from onnx import TensorProto, helper

    node = helper.make_node("SoftsignGain", ["x"], ["s"], domain="my.ops", name="soft",
                            options=struct.pack("<f", 2.0))
    relu = helper.make_node("Relu", ["s"], ["y"], name="relu")
    f = TensorProto.FLOAT
    graph = helper.make_graph(
        [node, relu], "g", [helper.make_tensor_value_info("x", f, [1, 16])],
        [helper.make_tensor_value_info("y", f, [1, 16])],
        value_info=[helper.make_tensor_value_info("s", f, [1, 16])] if declared else [])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17),
                                                    helper.make_opsetid("my.ops", 1)])
    path.write_bytes(model.SerializeToString())
    return path


def test_onnx_custom_domain_node(tmp_path: Path, capsys) -> None:
    """An ONNX node of a custom domain runs the same kernel: its `options` attribute's
    bytes are the options, its output's type the value_info's."""
    model = _onnx_model(tmp_path / "soft.onnx")
    argv = [str(model), "--board", "x86-64", "-o", str(tmp_path / "fw"),
            "--custom-op", _example_op(), "--check"]
    assert run.main(argv) == 0, capsys.readouterr().err
    assert "check: outputs match the reference" in capsys.readouterr().out
    bare = _onnx_model(tmp_path / "bare.onnx", declared=False)
    assert run.main([str(bare), "--reference", "--custom-op", _example_op()]) == 2
    assert "its output 's' has no static type in the file" in capsys.readouterr().err


def test_a_failing_kernel_in_stream_mode_is_named_too(tmp_path: Path, capsys) -> None:
    argv = [str(EXAMPLE / "softsign.tflite"), "--board", "x86-64", "--stream", "2",
            "-o", str(tmp_path / "fw"), "--custom-op", _example_op(DATA / "failing.c")]
    assert run.main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith("minirt-run: error: custom op SoftsignGain"), err
