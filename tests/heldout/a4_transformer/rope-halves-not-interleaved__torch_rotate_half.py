# question: a4.rope
"""RoPE the way the LLaMA / GPT-NeoX code writes it: rotate_half."""

import torch


def _rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rope(X, base=10000.0):
    X = torch.as_tensor(X, dtype=torch.float64)
    T, d = X.shape[-2], X.shape[-1]
    inv_freq = 1.0 / base ** (torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,)
    freqs = torch.outer(torch.arange(T, dtype=torch.float64), inv_freq)  # (T, d/2)
    emb = torch.cat((freqs, freqs), dim=-1)  # (T, d)
    return X * emb.cos() + _rotate_half(X) * emb.sin()
