"""a4's feed-forward questions: the position-wise FFN (ReLU, GELU) and SwiGLU, with their cases
and mistakes.
"""

from __future__ import annotations

import numpy as np

from grader.questions import Case
from grader.suites.a4_transformer_parts.shared import BLOCK_H, BLOCK_PARAMS, _rng
from reference import ffn
from reference.functional import sigmoid

Array = np.ndarray


def _identity(z: Array) -> Array:
    return np.asarray(z, dtype=np.float64)


def _ffn_gelu_tanh(X, W1, b1, W2, b2, activation="relu"):
    return ffn.feed_forward(
        X, W1, b1, W2, b2, ffn.gelu_tanh if activation == "gelu" else activation
    )


def _ffn_no_activation(X, W1, b1, W2, b2, activation="relu"):
    return ffn.feed_forward(X, W1, b1, W2, b2, activation=_identity)


def _ffn_cases(seed: int) -> list[Case]:
    r = _rng(409, seed)
    p = BLOCK_PARAMS
    d, dff = 6, 10
    cases = [
        Case(
            "slides microscope MLP on h (ReLU)",
            (BLOCK_H, p["W1"], p["b1"], p["W2"], p["b2"]),
            visible=True,
        )
    ]

    def weights(scale: float) -> tuple[Array, ...]:
        return (
            scale * r.normal(size=(dff, d)),
            0.5 * r.normal(size=dff),
            r.normal(size=(d, dff)),
            r.normal(size=d),
        )

    cases.append(Case("hidden case 1: ReLU, (2, 4, 6)", (r.normal(size=(2, 4, 6)), *weights(0.8))))
    cases.append(
        Case(
            "hidden case 2: ReLU, one token (d,)",
            (r.normal(size=d), *weights(0.8)),
            {"activation": "relu"},
        )
    )
    cases.append(
        Case(
            "hidden case 3: GELU, (5, 6)",
            (r.normal(size=(5, d)), *weights(1.0)),
            {"activation": "gelu"},
        )
    )
    cases.append(
        Case(
            "hidden case 4: GELU, (2, 3, 6)",
            (r.normal(size=(2, 3, d)), *weights(1.0)),
            {"activation": "gelu"},
        )
    )
    return cases


FFN_MUTANTS = {
    "ffn-missing-activation": _ffn_no_activation,
    "gelu-tanh-approximation": _ffn_gelu_tanh,
}


def _swiglu_cases(seed: int) -> list[Case]:
    r = _rng(410, seed)
    d, dff = 6, 8

    def weights() -> tuple[Array, ...]:
        return r.normal(size=(dff, d)), r.normal(size=(dff, d)), r.normal(size=(d, dff)) / 2

    return [
        Case(
            "small case: d = 2, d_ff = 2",
            (
                np.array([[1.0, -1.0], [0.5, 2.0]]),
                np.array([[1.0, 0], [0, 1]]),
                np.array([[1.0, 1], [0, -1]]),
                np.array([[1.0, 0], [0.5, 1]]),
            ),
            visible=True,
        ),
        Case(
            "hidden case 1: batched (B, T, d) = (2, 4, 6)", (r.normal(size=(2, 4, d)), *weights())
        ),
        Case("hidden case 2: one sequence (T, d) = (5, 6)", (r.normal(size=(5, d)), *weights())),
        Case("hidden case 3: one token (d,)", (r.normal(size=d), *weights())),
    ]


SWIGLU_MUTANTS = {
    "ffn-missing-activation": lambda X, W_gate, W_up, W_down: ffn.swiglu_ffn(
        X, W_gate, W_up, W_down, gate=_identity
    ),
    "swiglu-sigmoid-gate": lambda X, W_gate, W_up, W_down: ffn.swiglu_ffn(
        X, W_gate, W_up, W_down, gate=sigmoid
    ),
    "swiglu-gate-up-swapped": lambda X, W_gate, W_up, W_down: ffn.swiglu_ffn(
        X, W_up, W_gate, W_down
    ),
}
