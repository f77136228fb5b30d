"""TfIdfVectorizer (integer pools): how often each n-gram of the pool occurs in each row
of X, the n-gram's tokens `skip + 1` apart for every skip up to max_skip_count
(unigrams once), counted into output position ngram_indexes[i]; then TF (the counts),
IDF (weight, or 1, where the count is not 0) or TFIDF (count times weight).

The pool is constant, so each n-gram length and skip distance is a fixed set of
comparisons: the row's tokens at k * distance, each compared with every pool n-gram's
k-th token, and-ed over k and summed over the start positions; a constant one-hot
matrix then adds the counts into their output positions (a dot_general).
"""

from __future__ import annotations

import numpy as np

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor

MODES = ("TF", "IDF", "TFIDF")


def _pool(ctx: OpContext) -> list[tuple[int, np.ndarray, np.ndarray]]:
    """(n, tokens [G, n], output index [G]) for each n-gram length n in [min, max]."""
    pool = ctx.ints("pool_int64s")
    if pool is None:
        raise Unsupported("only pool_int64s is supported (minirt's tensors hold no "
                          "strings)")
    starts = ctx.ints("ngram_counts", [])
    indexes = ctx.ints("ngram_indexes", [])
    lo, hi = int(ctx.attr("min_gram_length", 1)), int(ctx.attr("max_gram_length", 1))
    out, gram_id = [], 0
    for i, start in enumerate(starts):
        n = i + 1
        end = starts[i + 1] if i + 1 < len(starts) else len(pool)
        count = max(end - start, 0) // n
        if count and lo <= n <= hi:
            tokens = np.asarray(pool[start:start + count * n], np.int64).reshape(count, n)
            ids = np.asarray(indexes[gram_id:gram_id + count], np.int64)
            if ids.size != count:
                raise Unsupported(f"ngram_indexes has {len(indexes)} entries for more "
                                  "n-grams")
            out.append((n, tokens, ids))
        gram_id += count
    return out


def tfidf_vectorizer(ctx: OpContext) -> Tensor:
    """TfIdfVectorizer of an integer X [C] or [B, C] -> float32 [max(ngram_indexes) + 1]
    or [B, that]."""
    x = ctx.input(0)
    shape = tuple(x.type.shape)
    if x.type.dtype.kind not in "iu" or len(shape) not in (1, 2):
        raise Unsupported(f"input of {x.type} (integers [C] or [B, C] expected)")
    mode = ctx.attr("mode", "TF")
    if mode not in MODES:
        raise Unsupported(f"mode {mode!r} is not one of {', '.join(MODES)}")
    indexes = ctx.ints("ngram_indexes", [])
    if not indexes or min(indexes) < 0:
        raise Unsupported("ngram_indexes must be given, each >= 0")
    size = max(indexes) + 1
    rows = ctx.reshape(x, (1, shape[0]) if len(shape) == 1 else shape)
    b, c = rows.type.shape
    skips = int(ctx.attr("max_skip_count", 0))
    f32 = "f32"
    total = ctx.node("broadcast_in_dim", [ctx.constant(0.0, f32)], dims=(), shape=(b, size))
    for n, tokens, ids in _pool(ctx):
        g = tokens.shape[0]
        place = np.zeros((g, size), np.float32)
        np.add.at(place, (np.arange(g), ids), 1.0)
        for distance in range(1, (skips + 1 if n > 1 else 1) + 1):
            span = c - (n - 1) * distance  # start positions with room for the n-gram
            if span < 1:
                continue
            hit = None
            for k in range(n):
                part = ctx.node("slice", [rows], start=(0, k * distance),
                                limit=(b, k * distance + span), strides=(1, 1))
                wide = ctx.broadcast(part, (b, span, g), (0, 1))
                want = ctx.broadcast(ctx.constant(tokens[:, k], x.type.dtype), (b, span, g),
                                     (2,))
                eq = ctx.node("compare", [wide, want], direction="EQ")
                hit = eq if hit is None else ctx.node("and", [hit, eq])
            counts = ctx.node("reduce", [ctx.node("convert", [hit], dtype=f32),
                                         ctx.constant(0.0, f32)], kind="add", dims=(1,))
            total = ctx.node("add", [total, ctx.node(
                "dot_general", [counts, ctx.constant(place, f32)], lhs_batch=(),
                rhs_batch=(), lhs_contract=(1,), rhs_contract=(0,), dtype=f32)])
    weights = ctx.attr("weights")
    if mode != "TF":
        if mode == "IDF":
            total = ctx.node("minimum", [total, ctx.filled(1.0, total)])
        if weights:
            # The weight of the i-th pool n-gram scales its count at ngram_indexes[i].
            if len(weights) != len(indexes) or len(set(indexes)) != len(indexes):
                raise Unsupported(f"weights needs one entry per n-gram ({len(indexes)}) "
                                  "and n-grams at distinct output positions")
            w = np.ones(size, np.float32)
            w[np.asarray(indexes)] = np.asarray(weights, np.float32)
            total = ctx.node("multiply", [total, ctx.broadcast(ctx.constant(w, f32),
                                                               (b, size), (1,))])
    return ctx.reshape(total, (size,) if len(shape) == 1 else (b, size))


__all__ = ["tfidf_vectorizer"]
