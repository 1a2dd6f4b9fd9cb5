# question: a4.rope
"""RoPE in torch float32: pairs stacked on a last axis of 2, then flattened back (interleaved)."""

import torch


def apply_rope(X, base=10000.0):
    X = torch.as_tensor(X, dtype=torch.float32)
    T, d = X.shape[-2], X.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)  # (d/2,)
    angle = torch.arange(T, dtype=torch.float32)[:, None] * theta  # (T, d/2)
    pairs = X.reshape(*X.shape[:-1], d // 2, 2)
    x, y = pairs[..., 0], pairs[..., 1]
    rotated = torch.stack([x * angle.cos() - y * angle.sin(), x * angle.sin() + y * angle.cos()], dim=-1)
    return rotated.reshape(X.shape)
