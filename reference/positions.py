"""Fixed sinusoidal position vectors (notes §5, slides Part 4 and Lecture 7; Vaswani et al. §3.5).

p[t, 2r] = sin(t / 10000^(2r/d)),  p[t, 2r+1] = cos(t / 10000^(2r/d)),  r = 0 … d/2 - 1,
feature indices from 0, sin and cos interleaved.

Hooks for mutants: `sinusoidal_positions(..., frequencies=..., layout=...)`:
`frequencies(d)` returns the d/2 angular frequencies ("pe-frequency-exponent" swaps the
exponent), `layout(sin, cos)` places the two (T, d/2) halves into (T, d)
(`layout=lambda s, c: interleave(c, s)` swaps sin and cos, `np.concatenate([s, c], -1)` puts
them in halves).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


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
