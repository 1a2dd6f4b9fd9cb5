# question: a4.swiglu
# silu(up) * gate
"""A4 · The Transformer — a correct submission written in torch, float32 throughout."""

import math

import torch

F32 = torch.float32


def _t(a):
    return torch.as_tensor(a, dtype=F32)


def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = _t(Q), _t(K), _t(V)
    scores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))
    if mask is not None:
        scores = scores.masked_fill(~torch.as_tensor(mask, dtype=torch.bool), float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    weights = torch.nan_to_num(weights, nan=0.0)  # a row with no allowed key
    return weights @ V, weights


def causal_mask(T):
    return torch.tril(torch.ones(T, T, dtype=torch.bool))


def padding_mask(lengths, T):
    lengths = torch.as_tensor(lengths)
    return torch.arange(T)[None, :] < lengths[:, None]


def _heads(x, h):
    *lead, T, w = x.shape
    return x.view(*lead, T, h, w // h).transpose(-3, -2)


def _unheads(x):
    x = x.transpose(-3, -2)
    return x.reshape(*x.shape[:-2], -1)


def _mha(xq, xkv, Wq, Wk, Wv, Wo, h, mask):
    Wq, Wk, Wv, Wo = _t(Wq), _t(Wk), _t(Wv), _t(Wo)
    q, k, v = _heads(xq @ Wq.T, h), _heads(xkv @ Wk.T, h), _heads(xkv @ Wv.T, h)
    ctx, _ = scaled_dot_product_attention(q, k, v, mask)
    return _unheads(ctx) @ Wo.T


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None):
    X = _t(X)
    T = X.shape[-2]
    mask = causal_mask(T) if causal else None
    if key_padding_mask is not None:
        pad = torch.as_tensor(key_padding_mask, dtype=torch.bool)[..., None, None, :]
        mask = pad if mask is None else mask & pad
    return _mha(X, X, W_Q, W_K, W_V, W_O, n_heads, mask)


def layer_norm(x, gamma, beta, eps=1e-5):
    x = _t(x)
    mu = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return _t(gamma) * (x - mu) / torch.sqrt(var + eps) + _t(beta)


def layer_norm_stats(X):
    X = _t(X)
    return X.mean(-1), X.var(-1, unbiased=False)


def batch_norm_stats(X):
    X = _t(X)
    return X.mean(dim=(0, 1)), X.var(dim=(0, 1), unbiased=False)


def rms_norm(x, gamma, eps=1e-6):
    x = _t(x)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * _t(gamma)


def feed_forward(X, W1, b1, W2, b2, activation="relu"):
    hidden = _t(X) @ _t(W1).T + _t(b1)
    if activation == "relu":
        hidden = torch.relu(hidden)
    elif activation == "gelu":
        hidden = torch.nn.functional.gelu(hidden)
    else:
        raise ValueError(activation)
    return hidden @ _t(W2).T + _t(b2)


def swiglu_ffn(X, W_gate, W_up, W_down):
    X = _t(X)
    up, gate = X @ _t(W_up).T, X @ _t(W_gate).T
    return (gate * torch.nn.functional.silu(up)) @ _t(W_down).T


def sinusoidal_positions(T, d):
    pos = torch.arange(T, dtype=F32).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=F32) * (-math.log(10000.0) / d))
    P = torch.zeros(T, d)
    P[:, 0::2] = torch.sin(pos * div)
    P[:, 1::2] = torch.cos(pos * div)
    return P


def encoder_block(X, params, n_heads, norm="pre", key_padding_mask=None):
    p = params
    X = _t(X)

    def attn(x):
        return multi_head_attention(x, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads,
                                    key_padding_mask=key_padding_mask)

    def ffn(x):
        return feed_forward(x, p["W1"], p["b1"], p["W2"], p["b2"])

    if norm == "pre":
        U = X + attn(layer_norm(X, p["ln1_gamma"], p["ln1_beta"]))
        return U + ffn(layer_norm(U, p["ln2_gamma"], p["ln2_beta"]))
    U = layer_norm(X + attn(X), p["ln1_gamma"], p["ln1_beta"])
    return layer_norm(U + ffn(U), p["ln2_gamma"], p["ln2_beta"])


def decoder_block(Y, memory, params, n_heads, memory_padding_mask=None):
    p = params
    Y, memory = _t(Y), _t(memory)
    x = layer_norm(Y, p["ln1_gamma"], p["ln1_beta"])
    U1 = Y + multi_head_attention(x, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=True)
    mask = None
    if memory_padding_mask is not None:
        mask = torch.as_tensor(memory_padding_mask, dtype=torch.bool)[..., None, None, :]
    q_in = layer_norm(U1, p["ln2_gamma"], p["ln2_beta"])
    U2 = U1 + _mha(q_in, memory, p["C_Q"], p["C_K"], p["C_V"], p["C_O"], n_heads, mask)
    return U2 + feed_forward(layer_norm(U2, p["ln3_gamma"], p["ln3_beta"]), p["W1"], p["b1"], p["W2"], p["b2"])


def apply_rope(X, base=10000.0):
    X = _t(X)
    T, d = X.shape[-2], X.shape[-1]
    theta = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    phi = torch.arange(T, dtype=torch.float32)[:, None] * theta
    cos, sin = phi.cos().repeat_interleave(2, dim=-1), phi.sin().repeat_interleave(2, dim=-1)
    rotated = torch.stack([-X[..., 1::2], X[..., 0::2]], dim=-1).flatten(-2)  # (-y, x) per pair
    return X * cos + rotated * sin


def gpt_forward(token_ids, params, n_heads):
    ids = torch.as_tensor(token_ids, dtype=torch.long)
    W_E = _t(params["W_E"])
    x = W_E[ids] + _t(params["P"])[: ids.shape[0]]
    for p in params["blocks"]:
        x = x + multi_head_attention(layer_norm(x, p["ln1_gamma"], p["ln1_beta"]), p["W_Q"], p["W_K"], p["W_V"],
                                     p["W_O"], n_heads, causal=True)
        x = x + feed_forward(layer_norm(x, p["ln2_gamma"], p["ln2_beta"]), p["W1"], p["b1"], p["W2"], p["b2"])
    x = layer_norm(x, params["lnf_gamma"], params["lnf_beta"])
    W_U = _t(params["W_U"]) if "W_U" in params else W_E
    return torch.softmax(x @ W_U.T, dim=-1)
