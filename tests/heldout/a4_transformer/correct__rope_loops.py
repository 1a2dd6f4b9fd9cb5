# question: a4.rope
"""RoPE with explicit 2 x 2 rotation matrices, one per position and pair."""

import math

import numpy as np


def apply_rope(X, base=10000.0):
    X = np.asarray(X, dtype=np.float64)
    out = np.empty_like(X)
    T, d = X.shape[-2], X.shape[-1]
    for t in range(T):
        for i in range(d // 2):
            phi = t / base ** (2 * i / d)
            R = np.array([[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]])
            out[..., t, 2 * i : 2 * i + 2] = X[..., t, 2 * i : 2 * i + 2] @ R.T
    return out
