# question: a4.rope
"""RoPE in numpy: the first half of the features rotates with the second half."""

import numpy as np


def apply_rope(X, base=10000.0):
    X = np.asarray(X, dtype=np.float64)
    T, d = X.shape[-2:]
    half = d // 2
    theta = base ** (-2 * np.arange(half) / d)
    phi = np.arange(T)[:, None] * theta[None, :]  # (T, d/2)
    a, b = X[..., :half], X[..., half:]
    return np.concatenate([a * np.cos(phi) - b * np.sin(phi), a * np.sin(phi) + b * np.cos(phi)], axis=-1)
