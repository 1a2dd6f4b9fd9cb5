# question: a4.gpt_forward
"""A4 · the complete forward pass of a decoder-only transformer (numpy)."""

import math

import numpy as np


def _softmax(z, axis=-1):
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


def layer_norm(x, gamma, beta, eps=1e-5):
    mu = x.mean(axis=-1, keepdims=True)
    var = x.var(axis=-1, keepdims=True)
    return gamma * (x - mu) / np.sqrt(var + eps) + beta


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None):
    T = X.shape[-2]
    d_k = W_Q.shape[0] // n_heads
    d_v = W_V.shape[0] // n_heads
    heads = []
    for i in range(n_heads):
        q = X @ W_Q[i * d_k:(i + 1) * d_k].T
        k = X @ W_K[i * d_k:(i + 1) * d_k].T
        v = X @ W_V[i * d_v:(i + 1) * d_v].T
        scores = q @ k.T
        if causal:
            scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
        heads.append(_softmax(scores) @ v)
    return np.concatenate(heads, axis=-1) @ W_O.T


def feed_forward(X, W1, b1, W2, b2, activation="relu"):
    return np.maximum(X @ W1.T + b1, 0.0) @ W2.T + b2


def gpt_forward(token_ids, params, n_heads):
    W_E = np.asarray(params["W_E"], dtype=float)
    T = len(token_ids)
    x = W_E[np.asarray(token_ids)] + params["P"][:T]
    for blk in params["blocks"]:
        x = x + multi_head_attention(layer_norm(x, blk["ln1_gamma"], blk["ln1_beta"]),
                                     blk["W_Q"], blk["W_K"], blk["W_V"], blk["W_O"], n_heads, causal=True)
        x = x + feed_forward(layer_norm(x, blk["ln2_gamma"], blk["ln2_beta"]), blk["W1"], blk["b1"], blk["W2"], blk["b2"])
    x = layer_norm(x, params["lnf_gamma"], params["lnf_beta"])
    W_U = params["W_U"] if "W_U" in params else W_E
    logits = x @ W_U.T
    return _softmax(logits)
