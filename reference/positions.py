"""Positions: fixed sinusoidal vectors (notes §5, slides Part 4 and Lecture 7; Vaswani et al.
§3.5) and rotary position embeddings (Lecture 7's "modern alternative"; Su et al. 2021, RoPE).

p[t, 2r] = sin(t / 10000^(2r/d)),  p[t, 2r+1] = cos(t / 10000^(2r/d)),  r = 0 … d/2 - 1,
feature indices from 0, sin and cos interleaved.

Hooks for mutants: `sinusoidal_positions(..., frequencies=..., layout=...)`:
`frequencies(d)` returns the d/2 angular frequencies ("pe-frequency-exponent" swaps the
exponent), `layout(sin, cos)` places the two (T, d/2) halves into (T, d)
(`layout=lambda s, c: interleave(c, s)` swaps sin and cos, `np.concatenate([s, c], -1)` puts
them in halves).

RoPE rotates each pair (2i, 2i+1) of the vector at position t by the angle t·θ_i, θ_i =
base^(-2i/d) (the same frequencies as the sinusoids): x' = x cos(tθ) - y sin(tθ),
y' = x sin(tθ) + y cos(tθ). Then q_m·k_n depends only on m - n. Hooks:
`apply_rope(..., pairs=..., sign=..., frequencies=...)`: `pairs(d)` are the index arrays of
each pair's two members (`halves`: i and i + d/2, the rotate_half of GPT-NeoX and Hugging Face's transformers), `sign=-1` rotates
the other way, `frequencies(d, base)` the d/2 angular frequencies (`base^(-i/d)` instead of
`base^(-2i/d)`); `rope_attention(..., rotate_values=True)` rotates V as well as Q and K.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from reference.attention import scaled_dot_product_attention


def position_frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    """ω_r = 1 / base^(2r/d) for r = 0 … d/2 - 1 (for d = 4: divisors 1 and 100)."""
    r = np.arange(d // 2, dtype=np.float64)  # (d/2,)
    return 1.0 / base ** (2.0 * r / d)  # (d/2,)


def interleave(even: np.ndarray, odd: np.ndarray) -> np.ndarray:
    """Place `even` at features 0, 2, 4, … and `odd` at 1, 3, 5, …: (T, d/2) × 2 -> (T, d)."""
    T, half = even.shape
    out = np.empty((T, 2 * half), dtype=np.float64)  # (T, d)
    out[:, 0::2] = even
    out[:, 1::2] = odd
    return out


def sinusoidal_positions(
    T: int,
    d: int,
    *,
    frequencies: Callable[[int], np.ndarray] = position_frequencies,
    layout: Callable[[np.ndarray, np.ndarray], np.ndarray] = interleave,
) -> np.ndarray:
    """P (T, d) with P[t, 2r] = sin(t ω_r), P[t, 2r+1] = cos(t ω_r), ω_r = 10000^(-2r/d)."""
    if d % 2:
        raise ValueError(f"expected an even model width d, got d={d}")
    t = np.arange(T, dtype=np.float64)[:, None]  # (T, 1)
    angles = t * frequencies(d)[None, :]  # (T, d/2)
    return layout(np.sin(angles), np.cos(angles))  # (T, d)


# ---------------------------------------------------------------- rotary positions (RoPE)


def interleaved(d: int) -> tuple[np.ndarray, np.ndarray]:
    """RoFormer's pairs: features (0, 1), (2, 3), …: first members 0, 2, 4 …, second 1, 3, 5 …."""
    return np.arange(0, d, 2), np.arange(1, d, 2)  # (d/2,), (d/2,)


def halves(d: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs across the two halves: (i, i + d/2) (the rotate_half layout of GPT-NeoX and Hugging
    Face's transformers; Meta's LLaMA pairs neighbours, as `interleaved`)."""
    return np.arange(d // 2), np.arange(d // 2, d)  # (d/2,), (d/2,)


def apply_rope(
    X: np.ndarray,
    base: float = 10000.0,
    *,
    pairs: Callable[[int], tuple[np.ndarray, np.ndarray]] = interleaved,
    sign: float = 1.0,
    frequencies: Callable[[int, float], np.ndarray] = position_frequencies,
) -> np.ndarray:
    """RoPE on X (..., T, d): pair (2i, 2i+1) of the token at position t rotated by t·base^(-2i/d).

    (x, y) -> (x cos φ - y sin φ, x sin φ + y cos φ), φ = t θ_i, positions t = 0 … T-1.
    """
    X = np.asarray(X, dtype=np.float64)
    T, d = X.shape[-2], X.shape[-1]
    if d % 2:
        raise ValueError(f"expected an even width d, got d={d}")
    t = np.arange(T, dtype=np.float64)[:, None]  # (T, 1)
    phi = sign * t * frequencies(d, base)[None, :]  # (T, d/2)
    cos, sin = np.cos(phi), np.sin(phi)  # (T, d/2)
    first, second = pairs(d)
    x, y = X[..., first], X[..., second]  # (..., T, d/2) each
    out = np.empty_like(X)  # (..., T, d)
    out[..., first] = x * cos - y * sin
    out[..., second] = x * sin + y * cos
    return out


def rope_attention(
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    mask: np.ndarray | None = None,
    base: float = 10000.0,
    *,
    rope: Callable[..., np.ndarray] = apply_rope,
    rotate_values: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Attention with RoPE: softmax(R(Q) R(K)^T / sqrt(d_k) + M) V; only queries and keys rotate.

    Returns (out (..., Tq, d_v), weights (..., Tq, Tk)). Hook: `rotate_values=True` rotates V too.
    """
    V = rope(V, base) if rotate_values else V
    return scaled_dot_product_attention(rope(Q, base), rope(K, base), V, mask)
