# question: all
"""A4 · The Transformer — a correct submission: numpy float32 with einsum, masks filled with -1e9."""

from math import erf, sqrt

import numpy as np

f32 = np.float32


def softmax(x, axis=-1):
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = Q.astype(f32), K.astype(f32), V.astype(f32)
    scores = np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(f32(Q.shape[-1]))
    if mask is not None:
        scores = np.where(mask, scores, f32(-1e9))
    A = softmax(scores)
    if mask is not None:
        A = A * mask  # rows with no allowed key: all zero
    return np.einsum("...qk,...kd->...qd", A, V), A


def causal_mask(T):
    i = np.arange(T)
    return i[:, None] >= i[None, :]


def padding_mask(lengths, T):
    return np.arange(T) < np.asarray(lengths).reshape(-1, 1)


def _proj_heads(X, W, h):
    W = W.astype(f32)
    Wh = W.reshape(h, W.shape[0] // h, W.shape[1])  # (h, dk, d)
    return np.einsum("...td,hkd->...htk", X.astype(f32), Wh)


def _out(ctx, W_O, h):
    W_O = W_O.astype(f32)
    Wh = W_O.reshape(W_O.shape[0], h, W_O.shape[1] // h)  # (d, h, dv)
    return np.einsum("...htv,dhv->...td", ctx, Wh)


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None):
    T = X.shape[-2]
    q, k, v = (_proj_heads(X, W, n_heads) for W in (W_Q, W_K, W_V))
    mask = np.ones((T, T), dtype=bool)
    if causal:
        mask = causal_mask(T)
    if key_padding_mask is not None:
        mask = mask & np.expand_dims(key_padding_mask, (-2, -3))
    ctx, _ = scaled_dot_product_attention(q, k, v, mask)
    return _out(ctx, W_O, n_heads)


def layer_norm(x, gamma, beta, eps=1e-5):
    x = x.astype(f32)
    mu = x.mean(-1, keepdims=True)
    var = np.square(x - mu).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma.astype(f32) + beta.astype(f32)


def layer_norm_stats(X):
    X = X.astype(f32)
    return X.mean(axis=2), X.var(axis=2)


def batch_norm_stats(X):
    d = X.shape[-1]
    flat = X.astype(f32).reshape(-1, d)
    return flat.mean(axis=0), flat.var(axis=0)


def rms_norm(x, gamma, eps=1e-6):
    x = x.astype(f32)
    return gamma.astype(f32) * x / np.sqrt(np.square(x).mean(axis=-1, keepdims=True) + eps)


_erf = np.vectorize(erf)


def feed_forward(X, W1, b1, W2, b2, activation="relu"):
    h = np.einsum("...d,fd->...f", X.astype(f32), W1.astype(f32)) + b1.astype(f32)
    h = np.maximum(h, 0) if activation == "relu" else 0.5 * h * (1 + _erf(h / sqrt(2)))
    return np.einsum("...f,df->...d", h.astype(f32), W2.astype(f32)) + b2.astype(f32)


def swiglu_ffn(X, W_gate, W_up, W_down):
    X = X.astype(f32)
    g = X @ W_gate.T.astype(f32)
    u = X @ W_up.T.astype(f32)
    return (g / (1 + np.exp(-g)) * u) @ W_down.T.astype(f32)


def sinusoidal_positions(T, d):
    ang = np.outer(np.arange(T), np.power(10000.0, -np.arange(0, d, 2) / d))
    return np.stack([np.sin(ang), np.cos(ang)], axis=-1).reshape(T, d)


def encoder_block(X, params, n_heads, norm="pre", key_padding_mask=None):
    P = params
    def attn(z):
        return multi_head_attention(z, P["W_Q"], P["W_K"], P["W_V"], P["W_O"], n_heads,
                                    key_padding_mask=key_padding_mask)
    def ffn(z):
        return feed_forward(z, P["W1"], P["b1"], P["W2"], P["b2"])
    if norm == "post":
        U = layer_norm(X + attn(X), P["ln1_gamma"], P["ln1_beta"])
        return layer_norm(U + ffn(U), P["ln2_gamma"], P["ln2_beta"])
    U = X + attn(layer_norm(X, P["ln1_gamma"], P["ln1_beta"]))
    return U + ffn(layer_norm(U, P["ln2_gamma"], P["ln2_beta"]))


def decoder_block(Y, memory, params, n_heads, memory_padding_mask=None):
    P = params
    U1 = Y + multi_head_attention(layer_norm(Y, P["ln1_gamma"], P["ln1_beta"]), P["W_Q"], P["W_K"], P["W_V"],
                                  P["W_O"], n_heads, causal=True)
    q = _proj_heads(layer_norm(U1, P["ln2_gamma"], P["ln2_beta"]), P["C_Q"], n_heads)
    k = _proj_heads(memory, P["C_K"], n_heads)
    v = _proj_heads(memory, P["C_V"], n_heads)
    mask = None
    if memory_padding_mask is not None:
        mask = np.expand_dims(memory_padding_mask, (-2, -3))
    ctx, _ = scaled_dot_product_attention(q, k, v, mask)
    U2 = U1 + _out(ctx, P["C_O"], n_heads)
    return U2 + feed_forward(layer_norm(U2, P["ln3_gamma"], P["ln3_beta"]), P["W1"], P["b1"], P["W2"], P["b2"])


def apply_rope(X, base=10000.0):
    X = np.asarray(X, dtype=f32)
    T, d = X.shape[-2:]
    theta = (f32(base) ** (-np.arange(0, d, 2, dtype=f32) / f32(d))).astype(f32)
    phi = np.einsum("t,i->ti", np.arange(T, dtype=f32), theta)
    x, y = X[..., 0::2], X[..., 1::2]
    out = np.empty_like(X)
    out[..., 0::2] = x * np.cos(phi) - y * np.sin(phi)
    out[..., 1::2] = x * np.sin(phi) + y * np.cos(phi)
    return out


def gpt_forward(token_ids, params, n_heads):
    W_E = np.asarray(params["W_E"], dtype=f32)
    x = W_E[np.asarray(token_ids)] + np.asarray(params["P"], dtype=f32)[: len(token_ids)]
    for p in params["blocks"]:
        a = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
        x = x + multi_head_attention(a, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=True)
        x = x + feed_forward(layer_norm(x, p["ln2_gamma"], p["ln2_beta"]), p["W1"], p["b1"], p["W2"], p["b2"])
    x = layer_norm(x, params["lnf_gamma"], params["lnf_beta"])
    logits = np.einsum("td,vd->tv", x, np.asarray(params["W_U"] if "W_U" in params else W_E, dtype=f32))
    return softmax(logits, axis=-1)
