# question: a4.gpt_forward
"""A4 · decoder-only forward pass in torch (float32), heads batched with view/transpose."""

import math

import torch
import torch.nn.functional as F


def _t(a):
    return torch.as_tensor(a, dtype=torch.float32)


def layer_norm(x, gamma, beta, eps=1e-5):
    x = _t(x)
    mean = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True)  # torch.var: unbiased by default
    return (x - mean) / torch.sqrt(var + eps) * _t(gamma) + _t(beta)


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None):
    X = _t(X)
    T = X.shape[-2]
    q = (X @ _t(W_Q).T).view(T, n_heads, -1).transpose(0, 1)  # (h, T, d_k)
    k = (X @ _t(W_K).T).view(T, n_heads, -1).transpose(0, 1)
    v = (X @ _t(W_V).T).view(T, n_heads, -1).transpose(0, 1)
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])  # (h, T, T)
    if causal:
        future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        scores = scores.masked_fill(future, float("-inf"))
    out = F.softmax(scores, dim=-1) @ v  # (h, T, d_v)
    return out.transpose(0, 1).reshape(T, -1) @ _t(W_O).T


def feed_forward(X, W1, b1, W2, b2, activation="relu"):
    return F.relu(_t(X) @ _t(W1).T + _t(b1)) @ _t(W2).T + _t(b2)


def gpt_forward(token_ids, params, n_heads):
    ids = torch.as_tensor(token_ids, dtype=torch.long)
    W_E = _t(params["W_E"])
    x = W_E[ids] + _t(params["P"])[: len(ids)]
    for p in params["blocks"]:
        h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"])
        x = x + multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=True)
        h = layer_norm(x, p["ln2_gamma"], p["ln2_beta"])
        x = x + feed_forward(h, p["W1"], p["b1"], p["W2"], p["b2"])
    x = layer_norm(x, params["lnf_gamma"], params["lnf_beta"])
    W_U = _t(params.get("W_U", params["W_E"]))
    return torch.softmax(x @ W_U.T, dim=-1)
