"""--custom-op's errors (docs/custom-ops.md): each is one line naming the operator, the
file or the function, exit 2, and a failed build leaves nothing behind. No QEMU: a
build stops at the kernel's compile, and the reference runs on the host."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from tflite_models import Op, Tensor, build_model

from toolchain.cli import build as build_cli
from toolchain.cli import run as run_cli

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "custom_op"
MODEL = EXAMPLE / "softsign.tflite"


def _one_line(err: str, tool: str, *parts: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith(f"{tool}: error: "), lines[0]
    for p in parts:
        assert p in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def src(tmp_path: Path) -> Path:
    """A copy of the example's kernel and reference, to break."""
    d = tmp_path / "src"
    d.mkdir()
    shutil.copy(EXAMPLE / "kernel.c", d / "kernel.c")
    shutil.copy(EXAMPLE / "reference.py", d / "reference.py")
    return d


def _build(tmp_path: Path, op: str, capsys) -> tuple[int, str]:
    out = tmp_path / "fw"
    code = build_cli.main([str(MODEL), "--board", "x86-64", "-o", str(out), "--custom-op", op])
    assert not out.exists() or code == 0  # a failed build leaves no directory
    return code, capsys.readouterr().err


@pytest.mark.parametrize("spec, parts", [
    ("SoftsignGain={d}/nope.c,{d}/reference.py", ("nope.c: no such file", "SoftsignGain")),
    ("SoftsignGain={d}/kernel.c,{d}/nope.py", ("nope.py: no such file",)),
    ("SoftsignGain={d}/kernel.c", ("expected CODE=KERNEL.c[:C_FUNCTION]",)),
    ("SoftsignGain={d}/reference.py,{d}/kernel.c", ("the kernel must be a .c file",)),
    ("SoftsignGain={d}/kernel.c:no-name,{d}/reference.py", ("the kernel must be a .c",)),
])
def test_bad_option_is_one_line(spec: str, parts: tuple[str, ...], src: Path, tmp_path: Path,
                                capsys) -> None:
    code, err = _build(tmp_path, spec.format(d=src), capsys)
    assert code == 2
    _one_line(err, "minirt-build", *parts)


def test_an_operator_given_twice(src: Path, tmp_path: Path, capsys) -> None:
    op = f"SoftsignGain={src}/kernel.c,{src}/reference.py"
    assert build_cli.main([str(MODEL), "--board", "x86-64", "-o", str(tmp_path / "fw"),
                           "--custom-op", op, "--custom-op", op]) == 2
    _one_line(capsys.readouterr().err, "minirt-build", "gives operator SoftsignGain twice")


def test_unregistered_custom_op_says_how_to_register_it(tmp_path: Path, capsys) -> None:
    assert build_cli.main([str(MODEL), "--board", "x86-64", "-o", str(tmp_path / "fw")]) == 2
    err = capsys.readouterr().err
    assert "operator 0 (CUSTOM:SoftsignGain): CUSTOM:SoftsignGain is not supported; give its " \
           "C kernel and Python reference with --custom-op SoftsignGain=KERNEL.c,REFERENCE.py" \
           in err, err
    assert not (tmp_path / "fw").exists()


def test_compile_error_is_clang_s_first_error_on_one_line(src: Path, tmp_path: Path,
                                                          capsys) -> None:
    kernel = src / "kernel.c"
    lines = kernel.read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if "float gain;" in ln)
    lines[at] = "  float gain = undeclared_thing;"
    kernel.write_text("\n".join(lines) + "\n")
    code, err = _build(tmp_path, f"SoftsignGain={kernel},{src}/reference.py", capsys)
    assert code == 2
    line = _one_line(err, "minirt-build", f"custom op SoftsignGain: {kernel}:{at + 1}:16: "
                     "error: use of undeclared identifier 'undeclared_thing'")
    assert "warning" not in line


def test_kernel_function_not_defined(src: Path, tmp_path: Path, capsys) -> None:
    code, err = _build(tmp_path, f"SoftsignGain={src}/kernel.c:soft_sign,{src}/reference.py",
                       capsys)
    assert code == 2
    _one_line(err, "minirt-build", "custom op SoftsignGain", "kernel.c does not define the "
              "function soft_sign")


def test_a_static_kernel_function_is_not_defined_for_the_link(src: Path, tmp_path: Path,
                                                             capsys) -> None:
    kernel = src / "kernel.c"
    kernel.write_text(kernel.read_text().replace("int32_t softsign_gain(",
                                                 "static int32_t softsign_gain("))
    code, err = _build(tmp_path, f"SoftsignGain={kernel},{src}/reference.py", capsys)
    assert code == 2
    _one_line(err, "minirt-build", "does not define the function softsign_gain (non-static)")


def _reference_run(src: Path, capsys) -> tuple[int, str]:
    code = run_cli.main([str(MODEL), "--reference", "--custom-op",
                         f"SoftsignGain={src}/kernel.c,{src}/reference.py"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("body, parts", [
    ("    raise ValueError('gain out of range')\n",
     ("reference.py:softsign_gain raised ValueError: gain out of range",)),
    ("    return [x, x]\n", ("returned 2 arrays; the model declares 1 results",)),
    ("    return x[:, :8]\n", ("result 0 has shape (1, 8)",)),
    ("    return x.astype(np.float64) + 0.1\n", ("float64 values that f32 cannot hold",)),
])
def test_reference_errors_are_one_line(body: str, parts: tuple[str, ...], src: Path,
                                       capsys) -> None:
    ref = src / "reference.py"
    text = ref.read_text()
    head = text[: text.index("    return (gain")]
    ref.write_text(head + body)
    code, err = _reference_run(src, capsys)
    assert code == 2
    _one_line(err, "minirt-run", "custom op SoftsignGain", *parts)


def test_reference_without_the_function(src: Path, capsys) -> None:
    (src / "reference.py").write_text("def other(inputs, options, quant):\n    return 0\n")
    code, err = _reference_run(src, capsys)
    assert code == 2
    _one_line(err, "minirt-run", "defines no function 'softsign_gain'")


def test_reference_that_does_not_import(src: Path, capsys) -> None:
    (src / "reference.py").write_text("import no_such_module_here\n")
    code, err = _reference_run(src, capsys)
    assert code == 2
    _one_line(err, "minirt-run", "importing", "raised ModuleNotFoundError")


def test_reference_run_uses_the_user_s_function(src: Path, tmp_path: Path, capsys) -> None:
    x = np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 16)
    np.savez(tmp_path / "in.npz", input_0=x)
    assert run_cli.main([str(MODEL), "--reference", "--inputs", str(tmp_path / "in.npz"),
                         "--custom-op", f"SoftsignGain={src}/kernel.c,{src}/reference.py",
                         "--save-outputs", str(tmp_path / "out.npz")]) == 0
    got = np.load(tmp_path / "out.npz")["output_0"]
    bias = np.linspace(-0.5, 0.5, 16, dtype=np.float32)
    np.testing.assert_array_equal(got[0], (2 * x / (1 + np.abs(x)))[0] + bias)


def test_per_channel_quantized_tensor_is_refused(src: Path, tmp_path: Path, capsys) -> None:
    x = Tensor((2, 3), "int8", scale=[0.1, 0.2, 0.3], zero_point=[0, 0, 0],
               quantized_dimension=1, name="x")
    y = Tensor((2, 3), "int8", scale=0.1, zero_point=0, name="y")
    model = tmp_path / "pc.tflite"
    model.write_bytes(build_model([Op("CUSTOM:SoftsignGain", [x], [y], b"")], [x], [y]))
    assert run_cli.main([str(model), "--reference", "--custom-op",
                         f"SoftsignGain={src}/kernel.c,{src}/reference.py"]) == 2
    assert "quantized per channel" in capsys.readouterr().err


def test_an_operator_the_model_lacks_beside_one_it_has(src: Path, tmp_path: Path,
                                                       capsys) -> None:
    ops = [f"SoftsignGain={src}/kernel.c,{src}/reference.py",
           f"Other={src}/kernel.c:softsign_gain,{src}/reference.py:softsign_gain"]
    assert run_cli.main([str(MODEL), "--reference", "--custom-op", ops[0],
                         "--custom-op", ops[1]]) == 2
    _one_line(capsys.readouterr().err, "minirt-run", "--custom-op Other: the model has no "
              "custom operator Other (it has SoftsignGain)")


def test_custom_op_on_an_mlir_model(src: Path, capsys) -> None:
    assert run_cli.main([str(REPO / "examples" / "seed.mlir"), "--reference", "--custom-op",
                         f"SoftsignGain={src}/kernel.c,{src}/reference.py"]) == 2
    _one_line(capsys.readouterr().err, "minirt-run", "--custom-op applies to .tflite and "
              ".onnx models")


@pytest.mark.parametrize("tool", [build_cli, run_cli])
def test_help_documents_the_option(tool, capsys) -> None:
    with pytest.raises(SystemExit):
        tool.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--custom-op CODE=KERNEL.c[:C_FN],REFERENCE.py[:PY_FN]" in text
    assert "runtime_c/include/mrt_custom_op.h" in text and "docs/custom-ops.md" in text


def test_reference_imports_a_helper_beside_it(src: Path, capsys) -> None:
    """The reference's directory is where its own imports are found (as for a script)."""
    (src / "gain_helper.py").write_text("import numpy as np\n\n\ndef gain(options):\n"
                                        "    return np.frombuffer(options, '<f4')[0]\n")
    (src / "reference.py").write_text(
        "import numpy as np\nfrom gain_helper import gain\n\n\n"
        "def softsign_gain(inputs, options, quant):\n    (x,) = inputs\n"
        "    return (gain(options) * x / (np.float32(1) + np.abs(x))).astype(np.float32)\n")
    code, err = _reference_run(src, capsys)
    assert code == 0, err
