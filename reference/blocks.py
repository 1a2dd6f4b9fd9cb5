"""Encoder and decoder blocks, task heads, and the shapes through one block (notes §5–6, slides Part 4).

encoder_block, "pre":  U = X + MHA(LN1(X));  out = U + FFN(LN2(U))
encoder_block, "post": U = LN1(X + MHA(X));  out = LN2(U + FFN(U))
decoder_block (pre):   U1 = Y + MHA_causal(LN1(Y));  U2 = U1 + CrossMHA(LN2(U1), memory);
                       out = U2 + FFN(LN3(U2))
Attention has no biases; the FFN (ReLU by default) has b1, b2; every LN uses eps = 1e-5.

Hooks for mutants (keyword-only arguments; defaults are the reference pieces):
- `wrap(x, norm, sublayer)` : how a sublayer is wrapped; defaults `pre_norm_sublayer` /
  `post_norm_sublayer` ("pre-norm adds the normalised input" is
  `wrap=lambda x, n, f: n(x) + f(n(x))`).
- `self_attention` (signature of `multi_head_attention`), `cross_attention` (signature of
  `attention.cross_attention`; "uses decoder keys" is
  `cross_attention=lambda q, mem, *a, **k: attention.cross_attention(q, q, *a[:-1])`),
  `layer_norm` (signature of `norms.layer_norm`), `ffn` (signature of `ffn.feed_forward`),
  `activation` (passed to `ffn`; `lambda z: z` is "FFN missing activation").
- decoder_block `causal=False` is "decoder self-attention not causal".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from reference import attention as _attention
from reference import ffn as _ffn
from reference import norms as _norms
from reference.attention import padding_mask

LN_EPS = 1e-5

ENCODER_KEYS = ("W_Q", "W_K", "W_V", "W_O", "ln1_gamma", "ln1_beta", "ln2_gamma", "ln2_beta")
ENCODER_KEYS += ("W1", "b1", "W2", "b2")
DECODER_KEYS = ("W_Q", "W_K", "W_V", "W_O", "C_Q", "C_K", "C_V", "C_O")
DECODER_KEYS += ("ln1_gamma", "ln1_beta", "ln2_gamma", "ln2_beta", "ln3_gamma", "ln3_beta")
DECODER_KEYS += ("W1", "b1", "W2", "b2")

Array = np.ndarray
Sublayer = Callable[[Array], Array]


def pre_norm_sublayer(x: Array, norm: Sublayer, sublayer: Sublayer) -> Array:
    """x + Sublayer(LN(x)): the residual stream itself is never normalised."""
    return x + sublayer(norm(x))


def post_norm_sublayer(x: Array, norm: Sublayer, sublayer: Sublayer) -> Array:
    """LN(x + Sublayer(x)): the original 2017 placement."""
    return norm(x + sublayer(x))


WRAPS: dict[str, Callable[[Array, Sublayer, Sublayer], Array]] = {
    "pre": pre_norm_sublayer,
    "post": post_norm_sublayer,
}


def _check_params(params: Mapping[str, Array], keys: tuple[str, ...] | list[str]) -> None:
    missing = [k for k in keys if k not in params]
    if missing:
        raise ValueError(f"expected params with keys {list(keys)}; missing {missing}")


def encoder_block(
    X: Array,
    params: Mapping[str, Array],
    n_heads: int,
    norm: str = "pre",
    key_padding_mask: Array | None = None,
    *,
    wrap: Callable[[Array, Sublayer, Sublayer], Array] | None = None,
    self_attention: Callable[..., Array] = _attention.multi_head_attention,
    layer_norm: Callable[..., Array] = _norms.layer_norm,
    ffn: Callable[..., Array] = _ffn.feed_forward,
    activation: str | Callable[[Array], Array] = "relu",
) -> Array:
    """One encoder block on X (..., T, d): U = wrap(X, LN1, MHA), out = wrap(U, LN2, FFN)."""
    _check_params(params, ENCODER_KEYS)
    if wrap is None:
        if norm not in WRAPS:
            raise ValueError(f"expected norm 'pre' or 'post', got {norm!r}")
        wrap = WRAPS[norm]
    p = params
    X = np.asarray(X, dtype=np.float64)

    def ln1(x: Array) -> Array:
        return layer_norm(x, p["ln1_gamma"], p["ln1_beta"], LN_EPS)

    def ln2(x: Array) -> Array:
        return layer_norm(x, p["ln2_gamma"], p["ln2_beta"], LN_EPS)

    def mha(x: Array) -> Array:
        return self_attention(
            x,
            p["W_Q"],
            p["W_K"],
            p["W_V"],
            p["W_O"],
            n_heads,
            causal=False,
            key_padding_mask=key_padding_mask,
        )

    def mlp(x: Array) -> Array:
        return ffn(x, p["W1"], p["b1"], p["W2"], p["b2"], activation=activation)

    U = wrap(X, ln1, mha)  # (..., T, d)
    return wrap(U, ln2, mlp)  # (..., T, d)


def decoder_block(
    Y: Array,
    memory: Array,
    params: Mapping[str, Array],
    n_heads: int,
    memory_padding_mask: Array | None = None,
    *,
    causal: bool = True,
    wrap: Callable[[Array, Sublayer, Sublayer], Array] = pre_norm_sublayer,
    self_attention: Callable[..., Array] = _attention.multi_head_attention,
    cross_attention: Callable[..., Array] = _attention.cross_attention,
    layer_norm: Callable[..., Array] = _norms.layer_norm,
    ffn: Callable[..., Array] = _ffn.feed_forward,
    activation: str | Callable[[Array], Array] = "relu",
) -> Array:
    """One pre-norm decoder block: causal self-attention, cross-attention to memory (..., S, d), FFN."""
    _check_params(params, DECODER_KEYS)
    p = params
    Y = np.asarray(Y, dtype=np.float64)
    memory = np.asarray(memory, dtype=np.float64)

    def ln(i: int) -> Sublayer:
        return lambda x: layer_norm(x, p[f"ln{i}_gamma"], p[f"ln{i}_beta"], LN_EPS)

    def self_mha(x: Array) -> Array:
        return self_attention(x, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=causal)

    def cross_mha(x: Array) -> Array:
        return cross_attention(
            x, memory, p["C_Q"], p["C_K"], p["C_V"], p["C_O"], n_heads, memory_padding_mask
        )

    def mlp(x: Array) -> Array:
        return ffn(x, p["W1"], p["b1"], p["W2"], p["b2"], activation=activation)

    U1 = wrap(Y, ln(1), self_mha)  # (..., T, d)
    U2 = wrap(U1, ln(2), cross_mha)  # (..., T, d)
    return wrap(U2, ln(3), mlp)  # (..., T, d)


# ---------------------------------------------------------------- task heads


def token_classification_logits(H: Array, W_o: Array, b_o: Array) -> Array:
    """a_t = h_t W_o^T + b_o for every token: (..., T, d) -> (..., T, C)."""
    return _ffn.linear(H, W_o, b_o)  # (..., T, C)


def mean_pool(H: Array, mask: Array) -> Array:
    """h̄ = Σ_t m_t h_t / Σ_t m_t over real tokens (mask (..., T), True = real): (..., T, d) -> (..., d)."""
    H = np.asarray(H, dtype=np.float64)
    m = np.asarray(mask, dtype=np.float64)  # (..., T)
    count = m.sum(axis=-1, keepdims=True)  # (..., 1)
    if np.any(count == 0):
        raise ValueError("expected at least one real token per sequence for mean pooling")
    # where(), not a product: padding rows holding inf or nan must not leak into the sum.
    summed = np.where(m[..., None] > 0, H, 0.0).sum(axis=-2)  # (..., d)
    return summed / count  # (..., d)


def masked_mean_pool(H: Array, lengths: Array) -> Array:
    """Mean of the first lengths[b] rows of H (B, T, d) -> (B, d)."""
    H = np.asarray(H, dtype=np.float64)
    return mean_pool(H, padding_mask(lengths, H.shape[-2]))  # (B, d)


def sequence_classification_logits(H: Array, mask: Array, W_o: Array, b_o: Array) -> Array:
    """a = h̄ W_o^T + b_o with h̄ the masked mean over real tokens: (..., T, d) -> (..., C)."""
    return _ffn.linear(mean_pool(H, mask), W_o, b_o)  # (..., C)


# ---------------------------------------------------------------- shapes (a5)


def block_shapes(B: int, T: int, d: int, n_heads: int, d_ff: int) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor in one pre-norm encoder block (notes §6 walkthrough)."""
    if d % n_heads:
        raise ValueError(f"expected d={d} divisible by n_heads={n_heads}")
    h, d_h = n_heads, d // n_heads
    return {
        "input": (B, T, d),
        "q": (B, T, d),  # X W_Q^T, all heads together
        "q_heads": (B, h, T, d_h),
        "scores": (B, h, T, T),
        "weights": (B, h, T, T),
        "context_heads": (B, h, T, d_h),
        "context": (B, T, d),  # heads merged
        "attn_out": (B, T, d),  # after W_O
        "ffn_hidden": (B, T, d_ff),
        "ffn_out": (B, T, d),
        "block_out": (B, T, d),
        "ln_stats": (B, T),  # one mean per token
        "bn_stats": (d,),  # one mean per feature
    }
