# question: a4.rope
"""RoPE with complex numbers: each pair is x + iy, multiplied by a unit phase."""

import numpy as np


def apply_rope(X, base=10000.0):
    X = np.asarray(X, dtype=np.float64)
    T, d = X.shape[-2], X.shape[-1]
    freqs = 1.0 / base ** (np.arange(0, d, 2) / d)
    phase = np.exp(-1j * np.outer(np.arange(T), freqs))  # (T, d/2)
    z = (X[..., 0::2] + 1j * X[..., 1::2]) * phase
    out = np.zeros_like(X)
    out[..., 0::2] = z.real
    out[..., 1::2] = z.imag
    return out
