"""kws_ref_model (MLPerf Tiny keyword spotting, int8 TFLite) in its own names: the
`--profile` table and JSON, size.json, the treemap and the library header name each
dispatch by the TFLite tensor of its layer."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from toolchain.cli import build, run, size

MODEL = Path(__file__).resolve().parents[2] / ".." / "shared" / "models" / "mlperf_tiny" / \
    "kws_ref_model.tflite"
# The TFLite layers of kws_ref_model, in order: a conv, four depthwise + pointwise pairs,
# the average pool and the dense layer (the softmax follows as several dispatches).
LAYERS = ["conv2d", "depthwise_conv2d", "conv2d_1", "depthwise_conv2d_1", "conv2d_2",
          "depthwise_conv2d_2", "conv2d_3", "depthwise_conv2d_3", "conv2d_4",
          "average_pooling2d", "dense"]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """kws_ref_model's cortex-m4 build directory (minirt-build, so it has size.json)."""
    if not MODEL.is_file():
        pytest.skip(f"{MODEL} is absent (the shared MLPerf Tiny models)")
    missing = [t for t in ("clang", "ld.lld", "qemu-system-arm") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"missing tools: {', '.join(missing)}")
    out = tmp_path_factory.mktemp("names") / "kws"
    assert build.main([str(MODEL), "--board", "cortex-m4", "-o", str(out)]) == 0
    return out


def _profile(built: Path, capsys, *extra: str) -> str:
    code = run.main([str(MODEL), "--board", "cortex-m4", "-o", str(built), "--profile",
                     *extra])
    out = capsys.readouterr().out
    assert code == 0, out
    return out


def test_profile_rows_are_the_tflite_layers(built: Path, capsys) -> None:
    out = _profile(built, capsys)
    rows = re.findall(r"^(\S+) +[\d,]* +[\d,]+ ", out, re.M)
    assert rows[:len(LAYERS)] == LAYERS
    # The softmax's dispatches all come from the operator writing 'Identity'.
    assert all(r.startswith("Identity:") for r in rows[len(LAYERS):rows.index("runtime")])
    assert not re.search(r"^d\d+_", out, re.M)


def test_profile_names_full_and_function(built: Path, capsys) -> None:
    full = _profile(built, capsys, "--names", "full")
    assert re.search(r"^functional_1/activation/Relu;.*functional_1/conv2d/Conv2D1 ", full,
                     re.M)
    functions = _profile(built, capsys, "--names", "function")
    assert re.search(r"^d0_\w*convolution\w* ", functions, re.M)


def test_profile_json_is_a_model_report(built: Path, capsys) -> None:
    data = json.loads(_profile(built, capsys, "--json"))
    rows = data["dispatches"]
    assert [r["label"] for r in rows[:len(LAYERS)]] == LAYERS
    conv = rows[0]
    assert conv["sources"][0]["origin"] == "tflite operator 0 (CONV_2D)"
    assert conv["op"] == "convolution" and conv["macs"] == 320_000
    # 64 filters of 10x4x1 int8 and their int32 biases, and its input 49x10 and output
    # 25x5x64 int8 activations.
    assert conv["weights_bytes"] >= 64 * 10 * 4 + 64 * 4
    assert conv["activation_in_bytes"] == 49 * 10 and conv["activation_out_bytes"] == 8000
    timeline = data["arena_timeline"]
    assert [t["label"] for t in timeline] == [r["label"] for r in rows]
    size_json = json.loads((built / "size.json").read_text())
    assert data["arena_peak_bytes"] == max(t["arena_live_bytes"] for t in timeline)
    assert data["arena_peak_bytes"] == size_json["arena_lower_bound"]


def test_size_json_and_treemap_carry_the_names(built: Path, tmp_path: Path, capsys) -> None:
    data = json.loads((built / "size.json").read_text())
    layers = data["layers"]
    assert [layer["label"] for layer in layers[:len(LAYERS)]] == LAYERS
    assert all(layer["function"].startswith(f"d{k}_") for k, layer in enumerate(layers))
    assert layers[0]["weights_bytes"] > 0 and layers[0]["code_bytes"] > 0
    assert any(s.get("label") == "conv2d (code)" for s in data["symbols"])
    page = tmp_path / "kws.html"
    assert size.main([str(built), "--html", str(page)]) == 0
    capsys.readouterr()
    html = page.read_text()
    for label in ("conv2d_1 (weights)", "dense (weights)", "conv2d (code)"):
        assert label in html
    assert '<ul class="legend">' in html and "constants: flash" in html
    assert 'viewBox="0 0 ' in html and "width:100%" in html


def test_library_header_lists_the_layers(tmp_path: Path, capsys) -> None:
    if not MODEL.is_file():
        pytest.skip(f"{MODEL} is absent (the shared MLPerf Tiny models)")
    if shutil.which("clang") is None or shutil.which("ld.lld") is None:
        pytest.skip("missing tools: clang, ld.lld")
    out = tmp_path / "lib"
    assert build.main([str(MODEL), "--board", "cortex-m4", "--emit", "library",
                       "-o", str(out)]) == 0
    capsys.readouterr()
    header = (out / "kws_ref_model.h").read_text()
    assert "dispatches of one inference, in the model's own names" in header
    for k, label in enumerate(LAYERS):
        assert re.search(rf"^ \* +{k}  {re.escape(label)} ", header, re.M), label
    assert "functional_1/conv2d/Conv2D1" in header
