"""LayerNorm, RMSNorm and the statistics that tell LayerNorm from BatchNorm (notes §6, slides 7).

The handout's rule: population variance (divide by d), epsilon inside the square root, as
torch.nn.LayerNorm. The notes (§5, §6) and the Lecture-7 slides write the denominator
σ + ε with ε outside the root; the handout fixes the torch convention and the grader names
the other as `layernorm-eps-outside-sqrt`.

Hooks for mutants: `layer_norm(..., axis=..., variance=..., denominator=...)`:
`axis` is the feature axis ("layernorm-wrong-axis"), `variance(x, axis)` the spread
(`lambda x, axis: np.var(x, axis=axis, keepdims=True, ddof=1)` for the unbiased one),
`denominator(var, eps)` how ε enters (default sqrt(var + eps)).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def population_variance(x: np.ndarray, axis: int | tuple[int, ...] = -1) -> np.ndarray:
    """σ² = (1/n) Σ (x - μ)², kept as a broadcastable axis."""
    return np.var(np.asarray(x, dtype=np.float64), axis=axis, keepdims=True)


def std_eps_inside(var: np.ndarray, eps: float) -> np.ndarray:
    """The handout's denominator sqrt(σ² + ε) (torch.nn.LayerNorm)."""
    return np.sqrt(var + eps)


def layer_norm(
    x: np.ndarray,
    gamma: np.ndarray,
    beta: np.ndarray,
    eps: float = 1e-5,
    *,
    axis: int = -1,
    variance: Callable[[np.ndarray, int], np.ndarray] = population_variance,
    denominator: Callable[[np.ndarray, float], np.ndarray] = std_eps_inside,
) -> np.ndarray:
    """LN(x) = γ ⊙ (x - μ) / sqrt(σ² + ε) + β, μ and σ² over the d features of each token."""
    x = np.asarray(x, dtype=np.float64)
    mu = np.mean(x, axis=axis, keepdims=True)  # (..., T, 1)
    var = variance(x, axis)  # (..., T, 1)
    return (x - mu) / denominator(var, eps) * np.asarray(gamma) + np.asarray(beta)  # (..., T, d)


def _check_btd(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 3:
        raise ValueError(f"expected X of shape (B, T, d), got {X.shape}")
    return X


def layer_norm_stats(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """LayerNorm's statistics: one (mean, population variance) per token, shapes (B, T)."""
    X = _check_btd(X)
    return X.mean(axis=-1), X.var(axis=-1)  # (B, T), (B, T)


def batch_norm_stats(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """BatchNorm's statistics: one (mean, population variance) per feature over B and T, shapes (d,)."""
    X = _check_btd(X)
    return X.mean(axis=(0, 1)), X.var(axis=(0, 1))  # (d,), (d,)


def rms_norm(
    x: np.ndarray,
    gamma: np.ndarray,
    eps: float = 1e-6,
    *,
    denominator: Callable[[np.ndarray, float], np.ndarray] = std_eps_inside,
) -> np.ndarray:
    """RMSNorm(x) = γ ⊙ x / sqrt((1/d) Σ x_i² + ε): no centring, no β (Zhang & Sennrich 2019).

    Hook: `denominator(mean_square, eps)`, how ε enters (default sqrt(mean(x²) + ε), as LLaMA
    and torch.nn.RMSNorm; many implementations divide by sqrt(mean(x²)) + ε).
    """
    x = np.asarray(x, dtype=np.float64)
    rms = denominator(np.mean(x * x, axis=-1, keepdims=True), eps)  # (..., T, 1)
    return x / rms * np.asarray(gamma)  # (..., T, d)
