# question: a4.mha
# heads split correctly, merged by a bare reshape
"""A4 · The Transformer — student submission.

Conventions: row vectors (a token is (d,), a sequence (T, d), a batch (B, T, d)); weights in
the torch.nn.Linear layout W (out, in), y = x @ W.T + b; softmax over the last axis.
"""

from __future__ import annotations

import math

import numpy as np

LN_EPS = 1e-5


# ---------------------------------------------------------------- attention and masks


def _softmax(x: np.ndarray) -> np.ndarray:
    x = x - np.max(x, axis=-1, keepdims=True)
    e = np.exp(x)
    return e / np.sum(e, axis=-1, keepdims=True)


def scaled_dot_product_attention(Q, K, V, mask=None):
    """out = softmax(Q K^T / sqrt(dk) + M) V; returns (out (..., Tq, dv), weights (..., Tq, Tk))."""
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    d_k = Q.shape[-1]
    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)  # (..., Tq, Tk)
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask, dtype=bool), scores.shape)
        scores = np.where(mask, scores, -np.inf)
        # a row with no allowed key would be NaN: give it zero weights instead
        empty = ~np.any(mask, axis=-1, keepdims=True)
        scores = np.where(empty, 0.0, scores)
    weights = _softmax(scores)
    if mask is not None:
        weights = np.where(mask, weights, 0.0)
    return weights @ V, weights


def causal_mask(T):
    """M[i, j] = True where key j <= query i."""
    return np.tril(np.ones((T, T), dtype=bool))


def padding_mask(lengths, T):
    """m[b, t] = True where t < lengths[b] (real tokens)."""
    lengths = np.asarray(lengths)
    return np.arange(T)[None, :] < lengths[:, None]


def _split(x, h):
    *lead, T, width = x.shape
    return np.swapaxes(x.reshape(*lead, T, h, width // h), -3, -2)  # (..., h, T, d_h)


def _merge(x):
    *lead, h, T, d_h = x.shape
    return x.reshape(*lead, T, h * d_h)  # (..., h, T, d_h) -> (..., T, h*d_h)


def _attend(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads, mask):
    q = _split(X_q @ W_Q.T, n_heads)  # (..., h, Tq, dk)
    k = _split(X_kv @ W_K.T, n_heads)  # (..., h, Tk, dk)
    v = _split(X_kv @ W_V.T, n_heads)  # (..., h, Tk, dv)
    context, _ = scaled_dot_product_attention(q, k, v, mask)
    return _merge(context) @ W_O.T


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None):
    """Concat(head_1 … head_h) W_O^T with head_i = Attention(X W_Qi^T, X W_Ki^T, X W_Vi^T)."""
    X = np.asarray(X, dtype=np.float64)
    T = X.shape[-2]
    mask = causal_mask(T) if causal else None
    if key_padding_mask is not None:
        pad = np.asarray(key_padding_mask, dtype=bool)[..., None, None, :]  # (..., 1, 1, T)
        mask = pad if mask is None else (mask & pad)
    return _attend(X, X, W_Q, W_K, W_V, W_O, n_heads, mask)


# ---------------------------------------------------------------- norms


def layer_norm(x, gamma, beta, eps=1e-5):
    """γ ⊙ (x − μ) / sqrt(σ² + ε) + β over the last axis (population variance)."""
    x = np.asarray(x, dtype=np.float64)
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta


def layer_norm_stats(X):
    X = np.asarray(X, dtype=np.float64)
    return X.mean(axis=-1), X.var(axis=-1)


def batch_norm_stats(X):
    X = np.asarray(X, dtype=np.float64)
    return X.mean(axis=(0, 1)), X.var(axis=(0, 1))


def rms_norm(x, gamma, eps=1e-6):
    x = np.asarray(x, dtype=np.float64)
    return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps) * gamma


# ---------------------------------------------------------------- feed-forward networks


def _gelu(z):
    erf = np.vectorize(math.erf)
    return 0.5 * z * (1.0 + erf(z / math.sqrt(2.0)))


def feed_forward(X, W1, b1, W2, b2, activation="relu"):
    hidden = np.asarray(X, dtype=np.float64) @ W1.T + b1
    if activation == "relu":
        hidden = np.maximum(hidden, 0.0)
    elif activation == "gelu":
        hidden = _gelu(hidden)
    else:
        raise ValueError(f"unknown activation {activation!r}")
    return hidden @ W2.T + b2


def swiglu_ffn(X, W_gate, W_up, W_down):
    X = np.asarray(X, dtype=np.float64)
    g = X @ W_gate.T
    swish = g / (1.0 + np.exp(-g))
    return (swish * (X @ W_up.T)) @ W_down.T


def sinusoidal_positions(T, d):
    t = np.arange(T)[:, None]
    omega = 1.0 / 10000 ** (np.arange(0, d, 2) / d)  # (d/2,)
    P = np.zeros((T, d))
    P[:, 0::2] = np.sin(t * omega)
    P[:, 1::2] = np.cos(t * omega)
    return P


def apply_rope(X, base=10000.0):
    """RoPE: pair (2i, 2i+1) at position t rotated by t * base^(-2i/d)."""
    X = np.asarray(X, dtype=np.float64)
    T, d = X.shape[-2], X.shape[-1]
    theta = base ** (-np.arange(0, d, 2) / d)  # (d/2,)
    angle = np.arange(T)[:, None] * theta  # (T, d/2)
    cos, sin = np.cos(angle), np.sin(angle)
    x, y = X[..., 0::2], X[..., 1::2]
    out = np.empty_like(X)
    out[..., 0::2] = x * cos - y * sin
    out[..., 1::2] = x * sin + y * cos
    return out


# ---------------------------------------------------------------- blocks


def encoder_block(X, params, n_heads, norm="pre", key_padding_mask=None):
    p = params
    X = np.asarray(X, dtype=np.float64)

    def mha(x):
        return multi_head_attention(x, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads,
                                    key_padding_mask=key_padding_mask)

    def ffn(x):
        return feed_forward(x, p["W1"], p["b1"], p["W2"], p["b2"])

    def ln(x, i):
        return layer_norm(x, p[f"ln{i}_gamma"], p[f"ln{i}_beta"], LN_EPS)

    if norm == "pre":
        U = X + mha(ln(X, 1))
        return U + ffn(ln(U, 2))
    if norm == "post":
        U = ln(X + mha(X), 1)
        return ln(U + ffn(U), 2)
    raise ValueError(f"norm must be 'pre' or 'post', got {norm!r}")


def decoder_block(Y, memory, params, n_heads, memory_padding_mask=None):
    p = params
    Y = np.asarray(Y, dtype=np.float64)
    memory = np.asarray(memory, dtype=np.float64)

    def ln(x, i):
        return layer_norm(x, p[f"ln{i}_gamma"], p[f"ln{i}_beta"], LN_EPS)

    U1 = Y + multi_head_attention(ln(Y, 1), p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=True)
    mask = None
    if memory_padding_mask is not None:
        mask = np.asarray(memory_padding_mask, dtype=bool)[..., None, None, :]  # (..., 1, 1, S)
    U2 = U1 + _attend(ln(U1, 2), memory, p["C_Q"], p["C_K"], p["C_V"], p["C_O"], n_heads, mask)
    return U2 + feed_forward(ln(U2, 3), p["W1"], p["b1"], p["W2"], p["b2"])


# ---------------------------------------------------------------- the complete forward pass


def gpt_forward(token_ids, params, n_heads):
    """Next-token probabilities (T, V) of a decoder-only pre-norm transformer (Lecture 7)."""
    ids = np.asarray(token_ids, dtype=np.int64)
    W_E = np.asarray(params["W_E"], dtype=np.float64)  # (V, d)
    x = W_E[ids] + np.asarray(params["P"], dtype=np.float64)[: len(ids)]  # (T, d)
    for p in params["blocks"]:
        h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"], LN_EPS)
        x = x + multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=True)
        h = layer_norm(x, p["ln2_gamma"], p["ln2_beta"], LN_EPS)
        x = x + feed_forward(h, p["W1"], p["b1"], p["W2"], p["b2"])
    x = layer_norm(x, params["lnf_gamma"], params["lnf_beta"], LN_EPS)
    W_U = np.asarray(params.get("W_U", W_E), dtype=np.float64)  # tied unless given
    return _softmax(x @ W_U.T)  # (T, V)
