"""The activation functions ONNX's recurrent ops (LSTM, GRU, RNN) accept by name in
their `activations` attribute, with the defaults of their alpha and beta.

`activation_alpha` and `activation_beta` are read as onnxruntime reads them: consumed
in the order of the activations, each activation taking a value from a list only when
it has that parameter (Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid,
Elu), its default when the list is used up.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from toolchain.frontend.onnx.context import OpContext
from toolchain.frontend.onnx.errors import Unsupported
from toolchain.graph.ir import Tensor

# (ctx, x, alpha, beta) -> f(x)
Builder = Callable[[OpContext, Tensor, float, float], Tensor]


def _op(ctx: OpContext, op: str, *xs: Tensor) -> Tensor:
    return ctx.node(op, list(xs))


def _c(ctx: OpContext, value: float, like: Tensor) -> Tensor:
    return ctx.filled(value, like)


def _relu(ctx: OpContext, x: Tensor, _a: float, _b: float) -> Tensor:
    return _op(ctx, "maximum", x, _c(ctx, 0.0, x))


def _tanh(ctx: OpContext, x: Tensor, _a: float, _b: float) -> Tensor:
    return _op(ctx, "tanh", x)


def _sigmoid(ctx: OpContext, x: Tensor, _a: float, _b: float) -> Tensor:
    return _op(ctx, "logistic", x)


def _affine(ctx: OpContext, x: Tensor, a: float, b: float) -> Tensor:
    return _op(ctx, "add", _op(ctx, "multiply", x, _c(ctx, a, x)), _c(ctx, b, x))


def _leaky_relu(ctx: OpContext, x: Tensor, a: float, _b: float) -> Tensor:
    negative = ctx.node("compare", [x, _c(ctx, 0.0, x)], direction="LT")
    return ctx.node("select", [negative, _op(ctx, "multiply", x, _c(ctx, a, x)), x])


def _thresholded_relu(ctx: OpContext, x: Tensor, a: float, _b: float) -> Tensor:
    above = ctx.node("compare", [x, _c(ctx, a, x)], direction="GT")
    return ctx.node("select", [above, x, _c(ctx, 0.0, x)])


def _scaled_tanh(ctx: OpContext, x: Tensor, a: float, b: float) -> Tensor:
    inner = _op(ctx, "tanh", _op(ctx, "multiply", x, _c(ctx, b, x)))
    return _op(ctx, "multiply", inner, _c(ctx, a, x))


def _hard_sigmoid(ctx: OpContext, x: Tensor, a: float, b: float) -> Tensor:
    return ctx.node("clamp", [_c(ctx, 0.0, x), _affine(ctx, x, a, b), _c(ctx, 1.0, x)])


def _elu(ctx: OpContext, x: Tensor, a: float, _b: float) -> Tensor:
    negative = ctx.node("compare", [x, _c(ctx, 0.0, x)], direction="LT")
    below = _op(ctx, "multiply", _op(ctx, "exponential_minus_one", x), _c(ctx, a, x))
    return ctx.node("select", [negative, below, x])


def _softsign(ctx: OpContext, x: Tensor, _a: float, _b: float) -> Tensor:
    return _op(ctx, "divide", x, _op(ctx, "add", _c(ctx, 1.0, x), _op(ctx, "abs", x)))


def _softplus(ctx: OpContext, x: Tensor, _a: float, _b: float) -> Tensor:
    # max(x, 0) + log1p(exp(-|x|)): no overflow for large x.
    tail = _op(ctx, "log_plus_one", _op(ctx, "exponential", _op(ctx, "negate",
                                                                _op(ctx, "abs", x))))
    return _op(ctx, "add", _relu(ctx, x, 0.0, 0.0), tail)


@dataclass(frozen=True)
class Activation:
    """One named activation: its builder and the defaults of the parameters it has
    (None: it has no such parameter and takes no value from the lists)."""

    build: Builder
    alpha: float | None = None
    beta: float | None = None


ACTIVATIONS: dict[str, Activation] = {
    "relu": Activation(_relu),
    "tanh": Activation(_tanh),
    "sigmoid": Activation(_sigmoid),
    "affine": Activation(_affine, 1.0, 0.0),
    "leakyrelu": Activation(_leaky_relu, 0.01),
    "thresholdedrelu": Activation(_thresholded_relu, 1.0),
    "scaledtanh": Activation(_scaled_tanh, 1.0, 1.0),
    "hardsigmoid": Activation(_hard_sigmoid, 0.2, 0.5),
    "elu": Activation(_elu, 1.0),
    "softsign": Activation(_softsign),
    "softplus": Activation(_softplus),
}

# An activation bound to its parameters: (ctx, x) -> f(x).
Bound = Callable[[OpContext, Tensor], Tensor]


def bind_activations(names: Sequence[str], alphas: Sequence[float],
                     betas: Sequence[float]) -> list[Bound]:
    """The activations `names` with their alpha and beta taken from the lists in order
    (onnxruntime's rule, see the module docstring)."""
    alpha_left, beta_left = list(alphas), list(betas)
    bound: list[Bound] = []
    for name in names:
        act = ACTIVATIONS.get(str(name).lower())
        if act is None:
            raise Unsupported(f"activation '{name}' is not one of "
                              f"{', '.join(sorted(ACTIVATIONS))}")
        a = b = 0.0
        if act.alpha is not None:
            a = alpha_left.pop(0) if alpha_left else act.alpha
        if act.beta is not None:
            b = beta_left.pop(0) if beta_left else act.beta
        bound.append(lambda ctx, x, f=act.build, a=a, b=b: f(ctx, x, a, b))
    return bound


__all__ = ["ACTIVATIONS", "Activation", "Bound", "bind_activations"]
