"""Scaled dot-product and multi-head attention, masks, heads, cost (notes §5, slides Part 3).

Conventions (docs/conventions.md): a boolean mask is True where a query may attend to a key (torch's
boolean `attn_mask` for `scaled_dot_product_attention`); masked weights are exactly 0.
A row with no allowed key (fully masked) is defined here to get all-zero weights and hence
an all-zero output row (softmax over an empty set has no value; torch returns NaN there).

Hooks for mutants (each is a keyword argument, so a mutant swaps one piece, never retypes):
- `scaled_dot_product_attention(..., scale=...)`: 1.0 = missing scale, 1/dk = scale by dk,
  1/sqrt(d_model) = scale by the model width; a callable gets d_k (`lambda dk: 1 / dk`), so
  one hook serves every head width.
- `scaled_dot_product_attention(..., weights_fn=...)`: the scores -> weights step;
  `masked_softmax` has `fill` (0.0 = "mask-zero-fill") and `axis` (-2 = "softmax-wrong-axis");
  "mask-after-softmax" is `weights_fn=lambda s, m: softmax(s) * m`.
- `causal_mask(T, offset=-1)` excludes the diagonal; `.T` of it is the transposed mask.
- `key_mask` turns a key padding mask (..., Tk) into an attention mask (..., 1, Tk); a
  mutant masking queries passes its own `key_mask=lambda m: m[..., :, None]`.
- `multi_head_attention(..., causal_mask_fn=...)`: the causal mask MHA builds when `causal`
  (a transposed mask or one without its diagonal, as a student's own MHA may build it).
- `multi_head_attention(..., combine=...)`: how the causal and padding masks are joined
  (default `combine_masks`, their AND; an OR lets a query see what either mask allows).
- `attend_heads(..., split=..., merge=..., attention=..., project=...)`: head split/merge,
  the attention kernel used by `multi_head_attention` and `cross_attention`, and the output
  projection `project(context, W_O)` (default `linear`: context W_Oᵀ).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from reference.ffn import linear
from reference.functional import softmax

WeightsFn = Callable[[np.ndarray, "np.ndarray | None"], np.ndarray]


# ---------------------------------------------------------------- masks


def causal_mask(T: int, *, offset: int = 0) -> np.ndarray:
    """M[i, j] = (j <= i + offset): True where key j is not in query i's future."""
    i = np.arange(T)[:, None]  # (T, 1) queries
    j = np.arange(T)[None, :]  # (1, T) keys
    return j <= i + offset  # (T, T)


def padding_mask(lengths: np.ndarray, T: int) -> np.ndarray:
    """m[b, t] = (t < lengths[b]): True at real tokens, False at padding."""
    lengths = np.asarray(lengths)
    if lengths.ndim != 1:
        raise ValueError(f"expected lengths of shape (B,), got {lengths.shape}")
    if np.any(lengths < 0) or np.any(lengths > T):
        raise ValueError(f"expected lengths in [0, {T}], got {lengths.tolist()}")
    return np.arange(T)[None, :] < lengths[:, None]  # (B, T)


def key_mask(key_padding_mask: np.ndarray) -> np.ndarray:
    """A key padding mask (..., Tk), True = real, as an attention mask (..., 1, Tk) over queries."""
    return np.asarray(key_padding_mask, dtype=bool)[..., None, :]  # (..., 1, Tk)


def combine_masks(*masks: np.ndarray | None) -> np.ndarray | None:
    """The logical AND of the given boolean masks (broadcast); None when all are None."""
    out = None
    for m in masks:
        if m is None:
            continue
        m = np.asarray(m, dtype=bool)
        out = m if out is None else (out & m)
    return out


# ---------------------------------------------------------------- single-head attention


Scale = float | Callable[[int], float] | None


def attention_scores(Q: np.ndarray, K: np.ndarray, scale: Scale = None) -> np.ndarray:
    """S = Q K^T · scale, scale = 1/sqrt(dk) by default (a callable gets dk)."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    if scale is None:
        scale = 1.0 / math.sqrt(Q.shape[-1])
    elif callable(scale):
        scale = scale(Q.shape[-1])
    return (Q @ np.swapaxes(K, -1, -2)) * scale  # (..., Tq, Tk)


def masked_softmax(
    scores: np.ndarray,
    mask: np.ndarray | None = None,
    *,
    fill: float = -np.inf,
    axis: int = -1,
) -> np.ndarray:
    """A = softmax(S + M) with M = 0 where allowed, -inf elsewhere; fully masked rows -> 0."""
    scores = np.asarray(scores, dtype=np.float64)
    if mask is None:
        return softmax(scores, axis=axis)
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
    filled = np.where(mask, scores, fill)  # (..., Tq, Tk)
    if np.isfinite(fill):
        # A finite fill is an ordinary score: it keeps weight exp(fill) / Σ (a mutant's path).
        return softmax(filled, axis=axis)
    any_allowed = np.any(mask, axis=axis, keepdims=True)  # (..., Tq, 1)
    # A fully masked row would be softmax(-inf, ..., -inf) = NaN: give it finite scores, then
    # zero every masked weight below, so the row is all zeros by definition.
    filled = np.where(any_allowed, filled, 0.0)
    weights = softmax(filled, axis=axis)  # exp(-inf) = 0 exactly at masked entries
    return np.where(mask, weights, 0.0)


def scaled_dot_product_attention(
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    mask: np.ndarray | None = None,
    *,
    scale: Scale = None,
    weights_fn: WeightsFn = masked_softmax,
) -> tuple[np.ndarray, np.ndarray]:
    """out = softmax(Q K^T / sqrt(dk) + M) V; returns (out (..., Tq, dv), weights (..., Tq, Tk))."""
    Q = np.asarray(Q, dtype=np.float64)
    K = np.asarray(K, dtype=np.float64)
    V = np.asarray(V, dtype=np.float64)
    if Q.shape[-1] != K.shape[-1]:
        raise ValueError(
            f"expected queries and keys of equal width dk, got {Q.shape} and {K.shape}"
        )
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(f"expected as many values as keys, got {K.shape} and {V.shape}")
    S = attention_scores(Q, K, scale)  # (..., Tq, Tk)
    A = weights_fn(S, mask)  # (..., Tq, Tk)
    return A @ V, A  # (..., Tq, dv), (..., Tq, Tk)


# ---------------------------------------------------------------- heads


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """(..., T, h·d_h) -> (..., h, T, d_h); head i holds features i·d_h:(i+1)·d_h."""
    x = np.asarray(x)
    *lead, T, width = x.shape
    if width % n_heads:
        raise ValueError(f"expected the last axis ({width}) divisible by n_heads={n_heads}")
    x = x.reshape(*lead, T, n_heads, width // n_heads)  # (..., T, h, d_h)
    return np.swapaxes(x, -3, -2)  # (..., h, T, d_h)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(..., h, T, d_h) -> (..., T, h·d_h): the inverse of split_heads (heads concatenated)."""
    x = np.swapaxes(np.asarray(x), -3, -2)  # (..., T, h, d_h)
    *lead, T, h, d_h = x.shape
    return x.reshape(*lead, T, h * d_h)  # (..., T, h·d_h)


def attend_heads(
    X_q: np.ndarray,
    X_kv: np.ndarray,
    W_Q: np.ndarray,
    W_K: np.ndarray,
    W_V: np.ndarray,
    W_O: np.ndarray,
    n_heads: int,
    mask: np.ndarray | None = None,
    *,
    attention: Callable[..., tuple[np.ndarray, np.ndarray]] = scaled_dot_product_attention,
    split: Callable[[np.ndarray, int], np.ndarray] = split_heads,
    merge: Callable[[np.ndarray], np.ndarray] = merge_heads,
    project: Callable[[np.ndarray, np.ndarray], np.ndarray] = linear,
) -> tuple[np.ndarray, np.ndarray]:
    """Concat_i(Attention(X_q W_Qi^T, X_kv W_Ki^T, X_kv W_Vi^T)) W_O^T and the weights (..., h, Tq, Tk).

    `mask` broadcasts against the per-head scores (..., h, Tq, Tk).
    """
    for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
        if np.shape(W)[0] % n_heads:
            raise ValueError(
                f"expected {name} rows divisible by n_heads={n_heads}, got {np.shape(W)}"
            )
    q = split(linear(X_q, W_Q), n_heads)  # (..., h, Tq, dk)
    k = split(linear(X_kv, W_K), n_heads)  # (..., h, Tk, dk)
    v = split(linear(X_kv, W_V), n_heads)  # (..., h, Tk, dv)
    context, weights = attention(q, k, v, mask)  # (..., h, Tq, dv), (..., h, Tq, Tk)
    return project(merge(context), W_O), weights  # (..., Tq, d), (..., h, Tq, Tk)


def _head_mask(
    T_q: int,
    causal: bool,
    key_padding_mask: np.ndarray | None,
    key_mask_fn: Callable[[np.ndarray], np.ndarray],
    causal_mask_fn: Callable[[int], np.ndarray] = causal_mask,
    combine: Callable[..., np.ndarray | None] = combine_masks,
) -> np.ndarray | None:
    """The attention mask for per-head scores (..., h, Tq, Tk), or None."""
    pad = None
    if key_padding_mask is not None:
        pad = key_mask_fn(key_padding_mask)[..., None, :, :]  # (..., 1, 1|Tq, Tk): all heads
    return combine(causal_mask_fn(T_q) if causal else None, pad)


def multi_head_attention(
    X: np.ndarray,
    W_Q: np.ndarray,
    W_K: np.ndarray,
    W_V: np.ndarray,
    W_O: np.ndarray,
    n_heads: int,
    causal: bool = False,
    key_padding_mask: np.ndarray | None = None,
    *,
    key_mask_fn: Callable[[np.ndarray], np.ndarray] = key_mask,
    causal_mask_fn: Callable[[int], np.ndarray] = causal_mask,
    combine: Callable[..., np.ndarray | None] = combine_masks,
    **hooks,
) -> np.ndarray:
    """MHA(X) = Concat(head_1 … head_h) W_O^T, head_i = softmax(X W_Qi^T (X W_Ki^T)^T / sqrt(dk) + M) X W_Vi^T.

    X (..., T, d); key_padding_mask (..., T), True = real key; `hooks` go to attend_heads.
    """
    X = np.asarray(X, dtype=np.float64)
    mask = _head_mask(X.shape[-2], causal, key_padding_mask, key_mask_fn, causal_mask_fn, combine)
    out, _ = attend_heads(X, X, W_Q, W_K, W_V, W_O, n_heads, mask, **hooks)
    return out  # (..., T, d)


def cross_attention(
    Y: np.ndarray,
    memory: np.ndarray,
    W_Q: np.ndarray,
    W_K: np.ndarray,
    W_V: np.ndarray,
    W_O: np.ndarray,
    n_heads: int,
    memory_padding_mask: np.ndarray | None = None,
    *,
    key_mask_fn: Callable[[np.ndarray], np.ndarray] = key_mask,
    **hooks,
) -> np.ndarray:
    """CrossMHA(Y, M): queries from Y (..., T, d), keys and values from memory (..., S, d); -> (..., T, d).

    memory_padding_mask (..., S), True = real memory position; `hooks` go to attend_heads.
    """
    Y = np.asarray(Y, dtype=np.float64)
    memory = np.asarray(memory, dtype=np.float64)
    mask = _head_mask(Y.shape[-2], False, memory_padding_mask, key_mask_fn)
    out, _ = attend_heads(Y, memory, W_Q, W_K, W_V, W_O, n_heads, mask, **hooks)
    return out  # (..., T, d)


# ---------------------------------------------------------------- cost


def attention_cost(T: int, d: int, n_heads: int = 1) -> dict[str, int]:
    """Multiply-add counts for one self-attention layer: QK^T and AV are T²d each, O(T²d).

    Keys: score_macs (h heads × T² × d_h = T²d), value_macs (T²d), projection_macs (4Td²,
    the Q/K/V/O maps), score_memory (h·T² entries of S, and again of A, per sequence),
    total_macs. Linear in d and quadratic in T: doubling T multiplies the T² terms by 4.
    """
    if d % n_heads:
        raise ValueError(f"expected d={d} divisible by n_heads={n_heads}")
    d_h = d // n_heads
    score = n_heads * T * T * d_h
    value = n_heads * T * T * d_h
    proj = 4 * T * d * d
    return {
        "score_macs": score,
        "value_macs": value,
        "projection_macs": proj,
        "score_memory": n_heads * T * T,
        "total_macs": score + value + proj,
    }
