"""The a5 functions on torch tensors, defined by the NumPy reference (one source of truth).

Each function converts its tensors to NumPy float64 / int64, calls the reference, and
returns a tensor with the input's dtype and device. No autograd graph is kept: these are
for checking values and shapes, not for training.
"""

from __future__ import annotations

import numpy as np
import torch

from reference import attention, blocks, masking
from reference.blocks import block_shapes

__all__ = [
    "split_heads",
    "merge_heads",
    "masked_softmax",
    "causal_lm_loss",
    "masked_mean_pool",
    "block_shapes",
]


def _np(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def _like(a: np.ndarray, ref: torch.Tensor) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a)).to(dtype=ref.dtype, device=ref.device)


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, d) -> (B, h, T, d_h); head i = features i·d_h:(i+1)·d_h."""
    return _like(attention.split_heads(_np(x), n_heads), x)  # (B, h, T, d_h)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, h, T, d_h) -> (B, T, h·d_h): the inverse of split_heads."""
    return _like(attention.merge_heads(_np(x)), x)  # (B, T, d)


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """softmax over the last axis with masked (False) entries exactly 0; fully masked rows all 0."""
    return _like(attention.masked_softmax(_np(scores), _np(mask).astype(bool)), scores)


def causal_lm_loss(logits: torch.Tensor, tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Mean CE(logits[b, t], tokens[b, t+1]) over t < T-1 and tokens[b, t+1] != pad_id (scalar)."""
    loss = masking.causal_lm_loss(_np(logits), _np(tokens), pad_id)
    return torch.tensor(loss, dtype=logits.dtype, device=logits.device)


def masked_mean_pool(H: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """Mean of the first lengths[b] rows: (B, T, d) -> (B, d)."""
    return _like(blocks.masked_mean_pool(_np(H), _np(lengths)), H)  # (B, d)
