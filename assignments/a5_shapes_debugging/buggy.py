"""A teammate's transformer utilities: every function has exactly one bug. Find and fix them.

Copy this file to fixed.py (or start from the stub fixed.py) and correct each function.
Inputs arrive as torch tensors (float64 / int64 / bool); return torch tensors.
Shapes use the course's letters: B batch, T positions, d model width, h heads,
d_h = d / h head size, V vocabulary, d_ff FFN width.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, d) -> (B, h, T, d_h); head i holds features i*d_h:(i+1)*d_h of every position."""
    B, T, d = x.shape
    d_h = d // n_heads
    return x.reshape(B, n_heads, T, d_h)  # (B, h, T, d_h)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, h, T, d_h) -> (B, T, h*d_h): the inverse of split_heads (heads concatenated in order)."""
    B, h, T, d_h = x.shape
    return x.contiguous().view(B, T, h * d_h)  # (B, T, d)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis; mask is bool, broadcastable, True = may attend; masked weights exactly 0."""
    scores = scores.masked_fill(~mask, 0.0)  # (..., Tq, Tk)
    return torch.softmax(scores, dim=-1)  # (..., Tq, Tk)


def causal_lm_loss(logits: torch.Tensor, tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Mean cross-entropy of logits[b, t] against tokens[b, t+1], over targets that are not pad_id."""
    B, T, V = logits.shape
    pred = logits[:, :-1].reshape(-1, V)  # (B*(T-1), V): positions 0 .. T-2
    target = tokens[:, 1:].reshape(-1)  # (B*(T-1),): the next token
    return F.cross_entropy(pred, target)  # scalar


def masked_mean_pool(H: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Mean of the first lengths[b] rows of H[b]: (B, T, d) -> (B, d)."""
    return H.mean(dim=1)  # (B, d)


def block_shapes(B: int, T: int, d: int, n_heads: int, d_ff: int) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor in one pre-norm encoder block (LN/BN stats: the shape of the mean)."""
    d_h = d // n_heads
    return {
        "input": (B, T, d),
        "q": (B, T, d),
        "q_heads": (B, n_heads, T, d_h),
        "scores": (B, T, T),
        "weights": (B, T, T),
        "context_heads": (B, n_heads, T, d_h),
        "context": (B, T, d),
        "attn_out": (B, T, d),
        "ffn_hidden": (B, T, d_ff),
        "ffn_out": (B, T, d),
        "block_out": (B, T, d),
        "ln_stats": (B, T),
        "bn_stats": (d,),
    }
