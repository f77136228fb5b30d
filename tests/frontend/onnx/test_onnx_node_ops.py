"""ONNX backend node tests of the ops and features added for issue 20 (empty tensors,
GridSample, cubic Resize, DFT, ...), run through the conformance runner
(toolchain/testing/conformance): every case of each feature passes on the numpy
reference against ONNX's expected outputs, with the test's own tolerance (onnx_close),
and a sample of them (every SAMPLE_EVERY-th per feature, all data sets) is built and run
under QEMU on cortex-m4 and x86-64, judged against the same expected outputs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

import pytest

from toolchain.testing.conformance import onnx_suite
from toolchain.testing.conformance.boards import run_on_board
from toolchain.testing.conformance.run import run_onnx

# feature -> the node tests (by name) that exercise it. (test_unique_bfloat16_* is left
# out: its pinned X is bfloat16, which --input-value does not take.)
FEATURES: dict[str, str] = {
    # inputs with a dimension of 0 are constants; a Split or Slice part of size 0 is one
    "empty tensors": r"^test_(reduce_\w+_empty_set\w*|castlike_(FLOAT|DOUBLE|BFLOAT16|"
                     r"FLOAT16)_to_(FLOAT|DOUBLE|FLOAT16)(_expanded)?|split_zero_size\w*|"
                     r"tri[lu]_zero|reshape_allowzero_reordered|slice_start_out_of_bounds|"
                     r"rotary_embedding\w*|causal_conv_with_state_kernel_size_one\w*)$",
    "CumProd": r"^test_cumprod_\w+$",
    "BitCast": r"^test_bitcast_\w+$",
    # output sizes that depend on values: the deciding inputs pinned (data_dependent.py)
    "Compress": r"^test_compress_\w+$",
    "Unique": r"^test_unique_(length_1|(not_)?sorted\w*)$",
    "NonMaxSuppression": r"^test_nonmaxsuppression_\w+$",
    "NonZero, MelWeightMatrix": r"^test_(nonzero_example|melweightmatrix)$",
    # cubic, antialiased, cropping Resize (resize_filters.py), the aspect ratio kept,
    # half_pixel_symmetric; (the *_align_corners downsampling cases are left out: ONNX's
    # reference divides by the unrounded output length, the spec's text and onnxruntime,
    # as minirt, by the output's: test_onnx_node_suite.py compares them with onnxruntime)
    "Resize": r"^test_resize_\w*(cubic|antialias|tf_crop|not_larger|not_smaller|"
              r"symmetric)\w*(?<!downsample_scales_cubic_align_corners)$",
    # cosine and sine matrices per axis (dft.py); judged as onnx_suite.WHOLE_AXIS_SUMS
    "DFT": r"^test_dft\w*$",
    "STFT": r"^test_stft\w*$",
    # coordinates, taps and weights computed in the graph, one gather per tap
    # combination (grid_sample.py; test_onnx_grid_sample.py covers every combination)
    "GridSample": r"^test_gridsample\w*$",
    # shape operands computed from graph inputs through other nodes (a function body
    # written out, an If's branches), all pinned (shape_operands.py); Range of constants
    # computed at build time (data_dependent.py)
    "computed shape operands": r"^test_((hann|hamming|blackman)window\w*|affine_grid\w*|"
                               r"center_crop_pad\w*_expanded|range_(float|int32)\w*|"
                               r"upsample_nearest)$",
    # one interior-padded placement per block position, summed (col2im.py)
    "Col2Im": r"^test_col2im\w*$",
    # taps sampled by grid_sample.sample, then an im2col contraction (deform_conv.py)
    "DeformConv": r"^test_\w*deform_conv\w*$",
    # fixed comparisons per n-gram length and skip, a one-hot contraction (tfidf.py)
    "TfIdfVectorizer": r"^test_tfidfvectorizer\w*$",
    # scales and zero points given as graph inputs, pinned (shape_operands.QUANT_PARAMS)
    "quantization parameters": r"^test_((de)?quantizelinear(_axis|_u?int16)?|"
                               r"qlinearmatmul_\w+|qlinearconv)$",
    # bfloat16 constants that onnx's reference folds a function body's values to
    "bfloat16 constants": r"^test_attention_\w*bf16\w*$",
    # Dropout's mask in inference (all true); ReduceMax / ReduceMin of booleans (or, and)
    "Dropout mask, boolean Reduce": r"^test_(dropout_default_mask\w*|reduce_m(ax|in)_bool"
                                    r"_inputs)$",
    # LRN (lrn.py), GatherND and ReverseSequence (indexing.py)
    "LRN, GatherND, ReverseSequence, MaxUnpool": r"^test_(lrn\w*|gathernd\w*|"
                                                 r"reversesequence\w*|maxunpool\w*)$",
    # a running maximum over the kernel taps carrying constant positions (pool_indices.py)
    "MaxPool Indices": r"^test_maxpool_with_argmax\w*$",
    # a gather of the update's rows where they land, the cache's elsewhere (indexing.py)
    "TensorScatter": r"^test_tensorscatter\w*$",
    "Det": r"^test_det_\w+$",
    # bilinear samples gathered per region, averaged or the largest (roi_align.py)
    "RoiAlign": r"^test_roialign\w*$",
    # int32 convolution and matmul of operands less their zero points (integer.py)
    "ConvInteger, MatMulInteger": r"^test_(convinteger\w*|matmulinteger)$",
}
SAMPLE_EVERY = 3


@cache
def _results(feature: str) -> list:
    pattern = re.compile(FEATURES[feature])
    return run_onnx([c for c in onnx_suite.collect() if pattern.match(c.name)])


@pytest.mark.parametrize("feature", FEATURES)
def test_feature_passes_on_the_reference(feature: str) -> None:
    results = _results(feature)
    assert results, f"no node test matches {feature}"
    bad = [f"{r.name}: {r.status}: {r.reason}" for r, _ in results if r.status != "pass"]
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("board", ["cortex-m4", "x86-64"])
def test_sample_passes_on_the_board(board: str, tmp_path) -> None:
    sample = [r for f in FEATURES for r in
              sorted(_results(f), key=lambda r: r[0].name)[::SAMPLE_EVERY]]
    bad = [f"{r.name}: {r.status}: {r.reason}"
           for r in run_on_board(sample, board, tmp_path) if r.status != "pass"]
    assert not bad, "\n".join(bad)


def test_a_value_dependent_size_needs_its_inputs_pinned(tmp_path) -> None:
    """Unique of a run-time X is refused in one line naming the input to pin."""
    import onnx
    from onnx import TensorProto, helper

    from toolchain.frontend.onnx.errors import OnnxError
    from toolchain.loader import load_graph

    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, [6])
    y = helper.make_tensor_value_info("Y", TensorProto.FLOAT, ["n"])
    model = helper.make_model(helper.make_graph(
        [helper.make_node("Unique", ["X"], ["Y"])], "g", [x], [y]),
        opset_imports=[helper.make_opsetid("", 13)])
    onnx.save(model, tmp_path / "m.onnx")
    with pytest.raises(OnnxError, match="Unique's output size depends on its values.*"
                                        "--input-value X=VALUE"):
        load_graph(tmp_path / "m.onnx")


def _model(node, inputs: dict, consts: dict, opset: int, rank: int) -> bytes:
    """A one-node model of float inputs `inputs` (name -> array) and initializers, its
    output of rank `rank`."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(k, TensorProto.FLOAT, v.shape)
                      for k, v in inputs.items()],
        [helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, [None] * rank)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]
                             ).SerializeToString()


def _col2im_all_at_once() -> tuple[bytes, list]:
    """Col2Im with strides, dilations and pads together (each node test has one)."""
    import numpy as np
    from onnx import helper

    # image 7x9, block 2x3, strides 2x1, dilations 1x2, pads 1,0,0,2: 4 x 7 blocks
    x = np.random.default_rng(3).standard_normal((2, 3 * 6, 28)).astype(np.float32)
    node = helper.make_node("Col2Im", ["x", "image", "block"], ["y"], strides=[2, 1],
                            dilations=[1, 2], pads=[1, 0, 0, 2])
    return _model(node, {"x": x}, {"image": np.array([7, 9]), "block": np.array([2, 3])},
                  18, 4), [x]


def _deform_conv_all_at_once() -> tuple[bytes, list]:
    """DeformConv with groups, offset groups, strides, dilations, pads, a mask and a
    bias together, offsets reaching past the image."""
    import numpy as np
    from onnx import helper

    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 7, 6)).astype(np.float32)
    w = rng.standard_normal((6, 2, 3, 2)).astype(np.float32)
    # oH = (7 + 1 + 1 - 2*2 - 1) // 2 + 1 = 3, oW = (6 + 0 + 1 - 1*1 - 1) // 1 + 1 = 6
    offset = rng.uniform(-2.5, 2.5, (2, 2 * 6 * 2, 3, 6)).astype(np.float32)
    b = rng.standard_normal(6).astype(np.float32)
    mask = rng.uniform(0, 1, (2, 2 * 6, 3, 6)).astype(np.float32)
    node = helper.make_node("DeformConv", ["x", "w", "offset", "b", "mask"], ["y"],
                            group=2, offset_group=2, strides=[2, 1], dilations=[2, 1],
                            pads=[1, 0, 1, 1])
    return _model(node, {"x": x, "w": w, "offset": offset, "b": b, "mask": mask}, {},
                  22, 4), [x, w, offset, b, mask]


def _tfidf(mode: str, weighted: bool) -> Callable[[], tuple[bytes, list]]:
    """TfIdfVectorizer of unigrams to trigrams, skips up to 2, in `mode` (the node tests
    have TF only); unweighted, two n-grams share an output position, weighted (the
    weight is the n-gram's, so each has a position of its own), they are permuted."""
    def make() -> tuple[bytes, list]:
        import numpy as np
        from onnx import TensorProto, helper

        x = np.random.default_rng(7).integers(0, 5, (3, 11)).astype(np.int64)
        pool = [1, 3, 4, 0, 1, 1, 3, 2, 2, 0, 1, 3, 4, 4, 1]  # 3 uni, 3 bi, 2 tri
        attrs = dict(mode=mode, min_gram_length=1, max_gram_length=3, max_skip_count=2,
                     ngram_counts=[0, 3, 9], ngram_indexes=[0, 1, 2, 3, 4, 5, 2, 6],
                     pool_int64s=pool)
        if weighted:
            attrs["ngram_indexes"] = [6, 1, 2, 3, 4, 5, 0, 7]
            attrs["weights"] = [0.5, 1.5, 2.0, 0.25, 3.0, 1.0, 0.75, 4.0]
        node = helper.make_node("TfIdfVectorizer", ["x"], ["y"], **attrs)
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("x", TensorProto.INT64, x.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, None])])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]
                                 ).SerializeToString(), [x]
    return make


def _typed_model(node, inputs: dict, out_rank: int, opset: int = 13) -> bytes:
    """A one-node model of inputs of any element type (name -> array)."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(
            k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(node.output[0], TensorProto.FLOAT, [None] * out_rank)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]
                             ).SerializeToString()


def _gather_nd() -> tuple[bytes, list]:
    """GatherND with batch_dims 1, pairs of indices, negative ones, a slice left over."""
    import numpy as np
    from onnx import helper

    rng = np.random.default_rng(11)
    data = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    idx = np.stack([rng.integers(-3, 3, (2, 6)), rng.integers(-4, 4, (2, 6))], -1)
    node = helper.make_node("GatherND", ["data", "idx"], ["y"], batch_dims=1)
    return _typed_model(node, {"data": data, "idx": idx.astype(np.int64)}, 3), [
        data, idx.astype(np.int64)]


def _reverse_sequence() -> tuple[bytes, list]:
    """ReverseSequence with the batch first and a trailing dimension."""
    import numpy as np
    from onnx import helper

    x = np.random.default_rng(12).standard_normal((3, 5, 2)).astype(np.float32)
    lens = np.array([5, 1, 3], np.int64)
    node = helper.make_node("ReverseSequence", ["x", "lens"], ["y"], batch_axis=0,
                            time_axis=1)
    return _typed_model(node, {"x": x, "lens": lens}, 3), [x, lens]


def _lrn() -> tuple[bytes, list]:
    """LRN with its own alpha, beta and bias (onnxruntime takes odd sizes only)."""
    import numpy as np
    from onnx import helper

    x = np.random.default_rng(13).standard_normal((2, 6, 3, 3)).astype(np.float32)
    node = helper.make_node("LRN", ["x"], ["y"], size=5, alpha=0.02, beta=0.6, bias=1.5)
    return _typed_model(node, {"x": x}, 4), [x]


def _int_model(node, inputs: dict, out_rank: int) -> bytes:
    """A one-node model of integer inputs and an int32 output."""
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info(
            k, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info(node.output[0], TensorProto.INT32, [None] * out_rank)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]
                             ).SerializeToString()


def _conv_integer() -> tuple[bytes, list]:
    """ConvInteger of int8 with strides, pads and zero points (onnxruntime takes
    per-tensor ones only)."""
    import numpy as np
    from onnx import helper

    rng = np.random.default_rng(14)
    x = rng.integers(-128, 128, (1, 3, 6, 5)).astype(np.int8)
    w = rng.integers(-128, 128, (4, 3, 3, 2)).astype(np.int8)
    xz, wz = np.array(5, np.int8), np.array(-3, np.int8)
    node = helper.make_node("ConvInteger", ["x", "w", "xz", "wz"], ["y"], strides=[2, 1],
                            pads=[1, 0, 1, 1])
    return _int_model(node, {"x": x, "w": w, "xz": xz, "wz": wz}, 4), [x, w, xz, wz]


def _matmul_integer() -> tuple[bytes, list]:
    """MatMulInteger of uint8 with zero points, B's per column (onnxruntime takes A's
    per tensor only)."""
    import numpy as np
    from onnx import helper

    rng = np.random.default_rng(15)
    a = rng.integers(0, 256, (4, 6)).astype(np.uint8)
    b = rng.integers(0, 256, (6, 3)).astype(np.uint8)
    az = np.array(131, np.uint8)
    bz = rng.integers(0, 256, 3).astype(np.uint8)
    node = helper.make_node("MatMulInteger", ["a", "b", "az", "bz"], ["y"])
    return _int_model(node, {"a": a, "b": b, "az": az, "bz": bz}, 2), [a, b, az, bz]


def _max_pool_indices(order: int) -> Callable[[], tuple[bytes, list]]:
    """MaxPool's Indices with batches, channels, pads, strides and dilations."""
    def make() -> tuple[bytes, list]:
        import numpy as np
        from onnx import TensorProto, helper

        x = np.random.default_rng(16).standard_normal((2, 3, 7, 6)).astype(np.float32)
        node = helper.make_node("MaxPool", ["x"], ["y", "i"], kernel_shape=[3, 2],
                                strides=[2, 1], dilations=[1, 2], pads=[1, 0, 1, 1],
                                storage_order=order)
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None] * 4),
             helper.make_tensor_value_info("i", TensorProto.INT64, [None] * 4)])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]
                                 ).SerializeToString(), [x]
    return make


def _det() -> tuple[bytes, list]:
    """Det of a batch of 4x4 matrices, one singular and one needing a row swap."""
    import numpy as np
    from onnx import helper

    x = np.random.default_rng(18).standard_normal((2, 3, 4, 4)).astype(np.float32)
    x[0, 1, 3] = x[0, 1, 0] + x[0, 1, 2]  # singular
    x[1, 0, 0, 0] = 0.0  # a zero first pivot
    return _typed_model(helper.make_node("Det", ["x"], ["y"]), {"x": x}, 2), [x]


def _roi_align(mode: str, half: str) -> Callable[[], tuple[bytes, list]]:
    """RoiAlign over two batches, a spatial scale, regions past the image and a tiny
    one (opset 16: onnxruntime has no later kernel)."""
    def make() -> tuple[bytes, list]:
        import numpy as np
        from onnx import TensorProto, helper

        x = np.random.default_rng(19).standard_normal((2, 3, 9, 11)).astype(np.float32)
        rois = np.array([[0, 0, 20, 16], [-4, 3, 6, 30], [10, 2, 22, 9], [3, 3, 3.5, 3.5]],
                        np.float32)
        b = np.array([0, 1, 1, 0], np.int64)
        node = helper.make_node("RoiAlign", ["x", "r", "b"], ["y"], mode=mode,
                                coordinate_transformation_mode=half, output_height=3,
                                output_width=4, sampling_ratio=2, spatial_scale=0.5)
        graph = helper.make_graph(
            [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape),
                          helper.make_tensor_value_info("r", TensorProto.FLOAT, rois.shape),
                          helper.make_tensor_value_info("b", TensorProto.INT64, b.shape)],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3, 3, 4])])
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 16)]
                                 ).SerializeToString(), [x, rois, b]
    return make


ORT_CASES = {**{f"RoiAlign {m} {h}": _roi_align(m, h) for m in ("avg", "max")
                for h in ("half_pixel", "output_half_pixel")},
             "Det": _det,
             "MaxPool Indices": _max_pool_indices(0),
             "MaxPool Indices column-major": _max_pool_indices(1),
             "ConvInteger": _conv_integer, "MatMulInteger": _matmul_integer,
             "GatherND": _gather_nd, "ReverseSequence": _reverse_sequence, "LRN": _lrn,
             "Col2Im": _col2im_all_at_once, "DeformConv": _deform_conv_all_at_once,
             "TfIdfVectorizer TF": _tfidf("TF", False),
             "TfIdfVectorizer IDF": _tfidf("IDF", True),
             "TfIdfVectorizer IDF unweighted": _tfidf("IDF", False),
             "TfIdfVectorizer TFIDF": _tfidf("TFIDF", True)}


@pytest.mark.parametrize("name", ORT_CASES)
def test_matches_onnxruntime(name: str) -> None:
    """Combinations the node tests leave out, against onnxruntime."""
    import numpy as np
    from onnx_models import import_bytes, run_ort

    from toolchain.reference import run_graph

    data, inputs = ORT_CASES[name]()
    want = run_ort(data, inputs)
    if want is None:
        pytest.skip("onnxruntime is not installed")
    got = run_graph(import_bytes(data), inputs)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        if w.dtype.kind in "iu":
            assert np.array_equal(g, w)
        else:
            assert np.allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", ["linear", "circular"])
@pytest.mark.parametrize("axis", [1, 2, -1])
def test_tensor_scatter_matches_onnx(mode: str, axis: int) -> None:
    """TensorScatter on other axes, the cache filled to its end and (circular) wrapping
    around, against ONNX's reference evaluator (onnxruntime may predate opset 24)."""
    import numpy as np
    from onnx import TensorProto, helper
    from onnx.reference import ReferenceEvaluator
    from onnx_models import import_bytes

    from toolchain.reference import run_graph

    rng = np.random.default_rng(17)
    past = rng.standard_normal((3, 5, 6, 4)).astype(np.float32)
    ax = axis % 4
    ushape = list(past.shape)
    ushape[ax] = 3 if mode == "linear" else 4
    upd = rng.standard_normal(ushape).astype(np.float32)
    m = past.shape[ax]
    w = np.array([0, m - ushape[ax], 1] if mode == "linear" else [m - 1, 2, 0], np.int64)
    node = helper.make_node("TensorScatter", ["p", "u", "w"], ["y"], mode=mode, axis=axis)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("p", TensorProto.FLOAT, past.shape),
                      helper.make_tensor_value_info("u", TensorProto.FLOAT, upd.shape),
                      helper.make_tensor_value_info("w", TensorProto.INT64, w.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, past.shape)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
    want = ReferenceEvaluator(model).run(None, {"p": past, "u": upd, "w": w})[0]
    got = run_graph(import_bytes(model.SerializeToString()), [past, upd, w])[0]
    assert np.array_equal(got, want)
