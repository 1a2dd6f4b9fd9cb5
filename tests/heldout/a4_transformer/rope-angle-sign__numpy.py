# question: a4.rope
"""RoPE in numpy, interleaved pairs."""

import numpy as np


def apply_rope(X, base=10000.0):
    X = np.asarray(X, dtype=np.float64)
    T, d = X.shape[-2], X.shape[-1]
    theta = base ** (-np.arange(0, d, 2) / d)
    angle = np.arange(T)[:, None] * theta
    c, s = np.cos(angle), np.sin(angle)
    out = np.empty_like(X)
    out[..., 0::2] = X[..., 0::2] * c + X[..., 1::2] * s
    out[..., 1::2] = -X[..., 0::2] * s + X[..., 1::2] * c
    return out
