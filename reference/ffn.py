"""The per-token affine maps and the position-wise feed-forward network (notes §5–6, slides 7).

Weights use the torch.nn.Linear layout: W has shape (out, in) and y = x @ W.T + b. Every
function broadcasts over any leading axes: a linear layer only touches the last axis.

Hooks for mutants: `feed_forward(..., activation=...)` takes a name from ACTIVATIONS or any
callable z -> g(z), so "FFN missing activation" is `activation=lambda z: z` and "GELU by the
tanh approximation" is `activation=gelu_tanh`; `swiglu_ffn(..., gate=...)` swaps the gate.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from reference.functional import sigmoid

_erf = np.vectorize(math.erf, otypes=[np.float64])


def linear(x: np.ndarray, W: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """y = x W^T + b: the torch.nn.Linear map on the last axis, broadcast over the rest."""
    y = np.asarray(x, dtype=np.float64) @ np.asarray(W, dtype=np.float64).T  # (..., out)
    if b is not None:
        y = y + np.asarray(b, dtype=np.float64)  # (..., out)
    return y


def relu(z: np.ndarray) -> np.ndarray:
    """ReLU(z) = max(0, z)."""
    return np.maximum(np.asarray(z, dtype=np.float64), 0.0)


def gelu(z: np.ndarray) -> np.ndarray:
    """GELU(z) = z Φ(z) = z (1 + erf(z / √2)) / 2, exact (torch's approximate='none')."""
    z = np.asarray(z, dtype=np.float64)
    return 0.5 * z * (1.0 + _erf(z / math.sqrt(2.0)))


def gelu_tanh(z: np.ndarray) -> np.ndarray:
    """GELU's tanh approximation z (1 + tanh(√(2/π) (z + 0.044715 z³))) / 2 (approximate='tanh')."""
    z = np.asarray(z, dtype=np.float64)
    return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))


def swish(z: np.ndarray) -> np.ndarray:
    """Swish(z) = z σ(z) (= SiLU)."""
    z = np.asarray(z, dtype=np.float64)
    return z * sigmoid(z)


ACTIVATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "relu": relu,
    "gelu": gelu,
}


def resolve_activation(activation: str | Callable[[np.ndarray], np.ndarray]) -> Callable:
    """The activation function for a name in ACTIVATIONS, or the callable itself."""
    if callable(activation):
        return activation
    try:
        return ACTIVATIONS[activation]
    except KeyError:
        raise ValueError(
            f"expected activation 'relu' or 'gelu' (or a callable), got {activation!r}"
        ) from None


def feed_forward(
    X: np.ndarray,
    W1: np.ndarray,
    b1: np.ndarray,
    W2: np.ndarray,
    b2: np.ndarray,
    activation: str | Callable[[np.ndarray], np.ndarray] = "relu",
) -> np.ndarray:
    """FFN(x) = W2 g(W1 x + b1) + b2, per token; g = ReLU or exact GELU (or a callable hook)."""
    g = resolve_activation(activation)
    hidden = g(linear(X, W1, b1))  # (..., T, d_ff)
    return linear(hidden, W2, b2)  # (..., T, d)


def swiglu_ffn(
    X: np.ndarray,
    W_gate: np.ndarray,
    W_up: np.ndarray,
    W_down: np.ndarray,
    *,
    gate: Callable[[np.ndarray], np.ndarray] = swish,
) -> np.ndarray:
    """SwiGLU(x) = W_down (Swish(W_gate x) ⊙ W_up x), no biases (Shazeer 2020)."""
    hidden = gate(linear(X, W_gate)) * linear(X, W_up)  # (..., T, d_ff)
    return linear(hidden, W_down)  # (..., T, d)
