# question: all
"""A4 · The Transformer — a correct submission with explicit loops over rows, heads and batches."""

import math

import numpy as np


def _softmax_row(row):
    m = max(row)
    if m == -math.inf:
        return [0.0] * len(row)
    e = [math.exp(v - m) if v != -math.inf else 0.0 for v in row]
    s = sum(e)
    return [v / s for v in e]


def _attention_2d(Q, K, V, mask):
    Tq, d_k = Q.shape
    Tk = K.shape[0]
    W = np.zeros((Tq, Tk))
    for i in range(Tq):
        row = []
        for j in range(Tk):
            if mask is not None and not mask[i, j]:
                row.append(-math.inf)
            else:
                row.append(float(np.dot(Q[i], K[j])) / math.sqrt(d_k))
        W[i] = _softmax_row(row)
    return W @ V, W


def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = np.asarray(Q, float), np.asarray(K, float), np.asarray(V, float)
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    Tq, Tk = Q.shape[-2], K.shape[-2]
    Qb = np.broadcast_to(Q, lead + Q.shape[-2:])
    Kb = np.broadcast_to(K, lead + K.shape[-2:])
    Vb = np.broadcast_to(V, lead + V.shape[-2:])
    M = None if mask is None else np.broadcast_to(np.asarray(mask, bool), lead + (Tq, Tk))
    out = np.zeros(lead + (Tq, V.shape[-1]))
    weights = np.zeros(lead + (Tq, Tk))
    for idx in np.ndindex(*lead):
        o, w = _attention_2d(Qb[idx], Kb[idx], Vb[idx], None if M is None else M[idx])
        out[idx] = o
        weights[idx] = w
    return out, weights


def causal_mask(T):
    return np.array([[j <= i for j in range(T)] for i in range(T)], dtype=bool)


def padding_mask(lengths, T):
    return np.array([[t < int(L) for t in range(T)] for L in lengths], dtype=bool)


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None):
    X = np.asarray(X, float)
    T = X.shape[-2]
    dk = W_Q.shape[0] // n_heads
    dv = W_V.shape[0] // n_heads
    mask = np.ones(X.shape[:-2] + (T, T), dtype=bool)
    if causal:
        mask = mask & causal_mask(T)
    if key_padding_mask is not None:
        mask = mask & np.asarray(key_padding_mask, bool)[..., None, :]
    outs = []
    for i in range(n_heads):
        q = X @ W_Q[i * dk:(i + 1) * dk].T
        k = X @ W_K[i * dk:(i + 1) * dk].T
        v = X @ W_V[i * dv:(i + 1) * dv].T
        o, _ = scaled_dot_product_attention(q, k, v, mask)
        outs.append(o)
    return np.concatenate(outs, axis=-1) @ W_O.T


def layer_norm(x, gamma, beta, eps=1e-5):
    x = np.asarray(x, float)
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty_like(flat)
    d = flat.shape[1]
    for n, row in enumerate(flat):
        mu = sum(row) / d
        var = sum((v - mu) ** 2 for v in row) / d
        out[n] = [(row[i] - mu) / math.sqrt(var + eps) * gamma[i] + beta[i] for i in range(d)]
    return out.reshape(x.shape)


def layer_norm_stats(X):
    X = np.asarray(X, float)
    B, T, d = X.shape
    mean = np.zeros((B, T))
    var = np.zeros((B, T))
    for b in range(B):
        for t in range(T):
            mean[b, t] = X[b, t].sum() / d
            var[b, t] = ((X[b, t] - mean[b, t]) ** 2).sum() / d
    return mean, var


def batch_norm_stats(X):
    X = np.asarray(X, float)
    B, T, d = X.shape
    mean = [sum(X[b, t, j] for b in range(B) for t in range(T)) / (B * T) for j in range(d)]
    var = [sum((X[b, t, j] - mean[j]) ** 2 for b in range(B) for t in range(T)) / (B * T) for j in range(d)]
    return np.array(mean), np.array(var)


def rms_norm(x, gamma, eps=1e-6):
    x = np.asarray(x, float)
    flat = x.reshape(-1, x.shape[-1])
    out = np.empty_like(flat)
    for n, row in enumerate(flat):
        rms = math.sqrt(sum(v * v for v in row) / len(row) + eps)
        out[n] = row / rms * gamma
    return out.reshape(x.shape)


def feed_forward(X, W1, b1, W2, b2, activation="relu"):
    hidden = np.asarray(X, float) @ W1.T + b1
    if activation == "relu":
        hidden = np.where(hidden > 0, hidden, 0.0)
    elif activation == "gelu":
        flat = [0.5 * z * (1 + math.erf(z / math.sqrt(2))) for z in hidden.ravel()]
        hidden = np.array(flat).reshape(hidden.shape)
    else:
        raise ValueError(activation)
    return hidden @ W2.T + b2


def swiglu_ffn(X, W_gate, W_up, W_down):
    X = np.asarray(X, float)
    g = X @ W_gate.T
    sig = 0.5 * (1 + np.tanh(g / 2))  # a stable sigmoid
    return (g * sig * (X @ W_up.T)) @ W_down.T


def sinusoidal_positions(T, d):
    P = [[0.0] * d for _ in range(T)]
    for t in range(T):
        for i in range(0, d, 2):
            angle = t / (10000 ** (i / d))
            P[t][i] = math.sin(angle)
            P[t][i + 1] = math.cos(angle)
    return P


def encoder_block(X, params, n_heads, norm="pre", key_padding_mask=None):
    p = params
    X = np.asarray(X, float)
    ln1 = lambda z: layer_norm(z, p["ln1_gamma"], p["ln1_beta"])  # noqa: E731
    ln2 = lambda z: layer_norm(z, p["ln2_gamma"], p["ln2_beta"])  # noqa: E731
    mha = lambda z: multi_head_attention(z, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads,  # noqa: E731
                                         key_padding_mask=key_padding_mask)
    ffn = lambda z: feed_forward(z, p["W1"], p["b1"], p["W2"], p["b2"])  # noqa: E731
    if norm == "pre":
        U = X + mha(ln1(X))
        return U + ffn(ln2(U))
    if norm == "post":
        U = ln1(X + mha(X))
        return ln2(U + ffn(U))
    raise ValueError(norm)


def _cross(xq, mem, p, n_heads, mask):
    dk = p["C_Q"].shape[0] // n_heads
    dv = p["C_V"].shape[0] // n_heads
    outs = []
    for i in range(n_heads):
        q = xq @ p["C_Q"][i * dk:(i + 1) * dk].T
        k = mem @ p["C_K"][i * dk:(i + 1) * dk].T
        v = mem @ p["C_V"][i * dv:(i + 1) * dv].T
        o, _ = scaled_dot_product_attention(q, k, v, mask)
        outs.append(o)
    return np.concatenate(outs, axis=-1) @ p["C_O"].T


def decoder_block(Y, memory, params, n_heads, memory_padding_mask=None):
    p = params
    Y = np.asarray(Y, float)
    memory = np.asarray(memory, float)
    U1 = Y + multi_head_attention(layer_norm(Y, p["ln1_gamma"], p["ln1_beta"]), p["W_Q"], p["W_K"], p["W_V"],
                                  p["W_O"], n_heads, causal=True)
    mask = None
    if memory_padding_mask is not None:
        mask = np.asarray(memory_padding_mask, bool)[..., None, :]
    U2 = U1 + _cross(layer_norm(U1, p["ln2_gamma"], p["ln2_beta"]), memory, p, n_heads, mask)
    return U2 + feed_forward(layer_norm(U2, p["ln3_gamma"], p["ln3_beta"]), p["W1"], p["b1"], p["W2"], p["b2"])


def apply_rope(X, base=10000.0):
    X = np.asarray(X, dtype=np.float64)
    out = X.copy()
    T, d = X.shape[-2], X.shape[-1]
    for t in range(T):
        for i in range(d // 2):
            phi = t * base ** (-2.0 * i / d)
            c, s = math.cos(phi), math.sin(phi)
            x, y = X[..., t, 2 * i], X[..., t, 2 * i + 1]
            out[..., t, 2 * i] = x * c - y * s
            out[..., t, 2 * i + 1] = x * s + y * c
    return out


def gpt_forward(token_ids, params, n_heads):
    W_E = np.asarray(params["W_E"], dtype=np.float64)
    P = np.asarray(params["P"], dtype=np.float64)
    x = np.stack([W_E[tok] + P[t] for t, tok in enumerate(token_ids)])
    for p in params["blocks"]:
        x = x + multi_head_attention(layer_norm(x, p["ln1_gamma"], p["ln1_beta"]), p["W_Q"], p["W_K"], p["W_V"],
                                     p["W_O"], n_heads, causal=True)
        x = x + feed_forward(layer_norm(x, p["ln2_gamma"], p["ln2_beta"]), p["W1"], p["b1"], p["W2"], p["b2"])
    x = layer_norm(x, params["lnf_gamma"], params["lnf_beta"])
    W_U = np.asarray(params.get("W_U", W_E), dtype=np.float64)
    return np.stack([_softmax_row(W_U @ row) for row in x])
