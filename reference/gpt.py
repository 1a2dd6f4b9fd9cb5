"""The complete forward pass of a decoder-only transformer (Lecture 7, "The Complete Forward Pass").

    x = W_E[ids] + P[:T]                      # embed: token embedding + learned position
    for block in blocks:                      # pre-norm blocks, causal self-attention
        x = x + attn(ln_1(x))
        x = x + ffn(ln_2(x))                  # ReLU FFN
    x = LN_f(x)                               # final LayerNorm
    logits = x @ W_U.T                        # unembed; W_U = W_E when tied (no "W_U" key)
    probs = softmax(logits)                   # over the vocabulary

Each block holds the encoder-block keys of a4 (W_Q W_K W_V W_O ln1_* ln2_* W1 b1 W2 b2); every
LayerNorm uses eps = 1e-5. The blocks are reference/blocks.encoder_block with its attention made
causal: the formulas are written once.

Hooks for mutants (keyword-only, defaults are the reference pieces):
- `final_norm=False`: no LN_f before the unembedding.
- `norm="post"`: post-norm blocks, LN(x + f(x)).
- `positions="after"`: P added after the blocks (just before LN_f), not to the embeddings.
- `unembed(x, params)`: the logits; `transposed_embedding` multiplies by W_E itself
  (square W_E only), `always_tied` uses W_E even when W_U is given.
- `causal=False`: no causal mask in the blocks' self-attention.
- `softmax_axis=-2`: the softmax over positions instead of the vocabulary.
- `self_attention`, `layer_norm`, `ffn`: the blocks' pieces (a student's own earlier
  mistake threaded through, for follow-through credit).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from reference import attention as _attention
from reference import blocks as _blocks
from reference import ffn as _ffn
from reference import norms as _norms
from reference.functional import softmax

Array = np.ndarray
GPT_KEYS = ("W_E", "P", "blocks", "lnf_gamma", "lnf_beta")


def tied_or_untied(x: Array, params: Mapping[str, Any]) -> Array:
    """logits = x W_U^T with W_U = params["W_U"] when given, else W_E (weight tying)."""
    W_U = np.asarray(params.get("W_U", params["W_E"]), dtype=np.float64)  # (V, d)
    return x @ W_U.T  # (..., T, V)


def transposed_embedding(x: Array, params: Mapping[str, Any]) -> Array:
    """x W_E without the transpose: only defined when W_E is square (V = d)."""
    return x @ np.asarray(params.get("W_U", params["W_E"]), dtype=np.float64)  # (..., T, V)


def always_tied(x: Array, params: Mapping[str, Any]) -> Array:
    """x W_E^T even when an untied W_U is given."""
    return x @ np.asarray(params["W_E"], dtype=np.float64).T  # (..., T, V)


def _causal(self_attention: Callable[..., Array], causal: bool) -> Callable[..., Array]:
    """The MHA an encoder block calls (it asks for causal=False), with `causal` imposed."""

    def mha(x: Array, *weights: Any, **kw: Any) -> Array:
        kw.pop("causal", None)
        return self_attention(x, *weights, causal=causal, **kw)

    return mha


def gpt_forward(
    token_ids: Sequence[int] | Array,
    params: Mapping[str, Any],
    n_heads: int,
    *,
    final_norm: bool = True,
    norm: str = "pre",
    positions: str = "input",
    unembed: Callable[[Array, Mapping[str, Any]], Array] = tied_or_untied,
    causal: bool = True,
    softmax_axis: int = -1,
    self_attention: Callable[..., Array] = _attention.multi_head_attention,
    layer_norm: Callable[..., Array] = _norms.layer_norm,
    ffn: Callable[..., Array] = _ffn.feed_forward,
) -> Array:
    """Next-token probabilities (T, V) of a decoder-only pre-norm transformer on token_ids (T,)."""
    missing = [k for k in GPT_KEYS if k not in params]
    if missing:
        raise ValueError(
            f"expected params with keys {list(GPT_KEYS)} (and optional W_U); missing {missing}"
        )
    ids = np.asarray(token_ids, dtype=np.int64)  # (T,)
    W_E = np.asarray(params["W_E"], dtype=np.float64)  # (V, d)
    P = np.asarray(params["P"], dtype=np.float64)  # (T_max, d)
    T, T_max = ids.shape[-1], P.shape[0]
    if T_max < T:
        raise ValueError(f"expected at most {T_max} tokens (the rows of P), got {T}")
    x = W_E[ids]  # (T, d)
    if positions == "input":
        x = x + P[:T]  # (T, d)
    attn = _causal(self_attention, causal)
    for block in params["blocks"]:
        x = _blocks.encoder_block(
            x, block, n_heads, norm, self_attention=attn, layer_norm=layer_norm, ffn=ffn
        )  # (T, d)
    if positions == "after":
        x = x + P[:T]  # (T, d)
    if final_norm:
        x = layer_norm(x, params["lnf_gamma"], params["lnf_beta"], _blocks.LN_EPS)  # (T, d)
    logits = unembed(x, params)  # (T, V)
    return softmax(logits, axis=softmax_axis)  # (T, V)
