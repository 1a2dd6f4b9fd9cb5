# question: a4.rope
"""RoPE with loops over positions and pairs."""

import math

import numpy as np


def apply_rope(X, base=10000.0):
    X = np.array(X, dtype=np.float64)
    out = X.copy()
    T, d = X.shape[-2], X.shape[-1]
    for t in range(T):
        for i in range(d // 2):
            phi = t * base ** (-i / d)
            x, y = X[..., t, 2 * i], X[..., t, 2 * i + 1]
            out[..., t, 2 * i] = x * math.cos(phi) - y * math.sin(phi)
            out[..., t, 2 * i + 1] = x * math.sin(phi) + y * math.cos(phi)
    return out
