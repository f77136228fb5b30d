"""The im2col kernel's streamed chunk (mrt_i2c_only9_s8 .. only20_s8 in
runtime_c/ukernel/dsp/mrt_im2col_dsp.c, schedule/first_layer_records.py
`FirstLayerPlan.streamed`): a window of 9-20 staged words (but 11 and 16) is one chunk
whose loop loads the staged words again per channel. Bit for bit against
the numpy reference and TFLite Micro under QEMU, over the class of layer it is for:
3x3 over 2-4 channels (9, 14 and 18 words) to 4-8 outputs (every remainder of the
four-channel loop) on 6x6-10x10 maps, SAME and VALID, stride 2, dilation 2, and 5x5
over one channel (13 words); 32 outputs and 10x4 over one channel (20 words) too; 1x7
over 3 channels (11 words) keeps its chunks of 5 and 6. (6x6 over 2 channels to
4 or 5 outputs is scheduled as paired weights instead, so the 2-channel maps here are
10 wide.)
"""

from __future__ import annotations

from pathlib import Path

from test_first_layers_im2col import _loops, _run

# (h, w, cin, cout, kh, kw, stride, dilation, padding), the streamed loop's words
STREAMED = [
    ((8, 8, 3, 5, 3, 3, 1, 1, "SAME"), 14),  # tile_upsample_int8's layer
    ((10, 10, 2, 4, 3, 3, 1, 1, "SAME"), 9),
    ((10, 9, 2, 7, 3, 3, 1, 1, "VALID"), 9),
    ((10, 10, 3, 6, 3, 3, 2, 1, "SAME"), 14),
    ((9, 7, 3, 8, 3, 3, 1, 1, "VALID"), 14),
    ((6, 10, 4, 5, 3, 3, 1, 1, "SAME"), 18),
    ((10, 10, 4, 7, 3, 3, 2, 1, "SAME"), 18),
    ((10, 8, 3, 5, 3, 3, 1, 2, "SAME"), 14),
    ((9, 9, 1, 6, 5, 5, 1, 1, "SAME"), 13),
    ((7, 6, 3, 32, 3, 3, 1, 1, "SAME"), 14),
    ((20, 8, 1, 9, 10, 4, 2, 1, "SAME"), 20),
]
# 11 words: chunks of 5 and a last 6 held in registers (first5, last6).
CHUNKED = [(8, 8, 3, 9, 1, 7, 1, 1, "SAME")]


def test_streamed_windows_on_cortex_m4(tmp_path: Path) -> None:
    loops = _loops(_run([layer for layer, _ in STREAMED], "cortex-m4", tmp_path, seed=21))
    assert {f"mrt_i2c_only{words}_s8" for _, words in STREAMED} <= loops
    assert not any(s.startswith(("mrt_i2c_first", "mrt_i2c_last")) for s in loops)


def test_eleven_words_keep_the_chunks(tmp_path: Path) -> None:
    loops = _loops(_run(CHUNKED, "cortex-m4", tmp_path, seed=22))
    assert loops == {"mrt_i2c_first5_s8", "mrt_i2c_last6_s8"}


def test_streamed_windows_on_cortex_m33(tmp_path: Path) -> None:
    layers = [layer for layer, _ in STREAMED[::3]]
    assert "mrt_i2c_only14_s8" in _loops(_run(layers, "cortex-m33", tmp_path, seed=23))
