# question: a4.rope
"""RoPE in torch float32."""

import torch


def apply_rope(X, base=10000.0):
    X = torch.as_tensor(X, dtype=torch.float32)
    T, d = X.shape[-2], X.shape[-1]
    i = torch.arange(0, d, 2, dtype=torch.float32)  # 0, 2, 4, ...: the pair's first feature
    theta = base ** (-2 * i / d)
    angle = torch.arange(T, dtype=torch.float32)[:, None] * theta
    x, y = X[..., 0::2], X[..., 1::2]
    out = torch.stack([x * torch.cos(angle) - y * torch.sin(angle), x * torch.sin(angle) + y * torch.cos(angle)],
                      dim=-1)
    return out.flatten(-2)
