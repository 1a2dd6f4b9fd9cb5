# question: a2.sequence_perplexity
"""a2 with loops; the scores in log10, as KenLM reports them."""

import math

import numpy as np


def rnn_forward(X, W_x, W_h, b_h, h0=None):
    X, W_x, W_h, b_h = (np.asarray(a, dtype=np.float64) for a in (X, W_x, W_h, b_h))
    T, D = X.shape
    H = W_h.shape[0]
    h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)
    Z = np.zeros((T, H))
    Hs = np.zeros((T, H))
    for t in range(T):
        for i in range(H):
            s = b_h[i]
            for j in range(D):
                s += W_x[i, j] * X[t, j]
            for j in range(H):
                s += W_h[i, j] * h[j]
            Z[t, i] = s
        Hs[t] = np.tanh(Z[t])
        h = Hs[t]
    return Z, Hs


def _backprop(X, W_h, Hs, h0, direct):
    T, H = Hs.shape
    D = X.shape[1]
    dW_x = np.zeros((H, D))
    dW_h = np.zeros((H, H))
    db = np.zeros(H)
    future = np.zeros(H)
    for t in range(T - 1, -1, -1):
        h_prev = Hs[t - 1] if t > 0 else (np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64))
        g_z = (direct[t] + future) * (1.0 - Hs[t] ** 2)
        for i in range(H):
            for j in range(D):
                dW_x[i, j] += g_z[i] * X[t, j]
            for j in range(H):
                dW_h[i, j] += g_z[i] * h_prev[j]
            db[i] += g_z[i]
        future = np.array([sum(g_z[i] * W_h[i, j] for i in range(H)) for j in range(H)])
    return {"W_x": dW_x, "W_h": dW_h, "b_h": db}


def bptt_final_state(X, W_x, W_h, b_h, y, h0=None):
    X = np.asarray(X, dtype=np.float64)
    W_h = np.asarray(W_h, dtype=np.float64)
    _, Hs = rnn_forward(X, W_x, W_h, b_h, h0)
    direct = np.zeros_like(Hs)
    direct[-1] = Hs[-1] - np.asarray(y, dtype=np.float64)
    return _backprop(X, W_h, Hs, h0, direct)


def bptt_sequence_ce(X, W_x, W_h, b_h, W_o, b_o, targets, h0=None):
    X = np.asarray(X, dtype=np.float64)
    W_h = np.asarray(W_h, dtype=np.float64)
    W_o = np.asarray(W_o, dtype=np.float64)
    b_o = np.asarray(b_o, dtype=np.float64)
    _, Hs = rnn_forward(X, W_x, W_h, b_h, h0)
    T, H = Hs.shape
    C = W_o.shape[0]
    loss = 0.0
    g_a = np.zeros((T, C))
    for t in range(T):
        a = [float(W_o[c] @ Hs[t] + b_o[c]) for c in range(C)]
        m = max(a)
        lse = m + math.log(sum(math.exp(v - m) for v in a))
        y = int(targets[t])
        loss += (lse - a[y]) / T
        for c in range(C):
            g_a[t, c] = (math.exp(a[c] - lse) - (1.0 if c == y else 0.0)) / T
    direct = g_a @ W_o
    grads = _backprop(X, W_h, Hs, h0, direct)
    dW_o = np.zeros_like(W_o)
    for t in range(T):
        dW_o += np.outer(g_a[t], Hs[t])
    grads["W_o"] = dW_o
    grads["b_o"] = g_a.sum(axis=0)
    return loss, grads


def clip_by_global_norm(grads, max_norm):
    sq = 0.0
    for g in grads.values():
        for v in np.asarray(g, dtype=np.float64).ravel():
            sq += v * v
    norm = math.sqrt(sq)
    out = {}
    for k, g in grads.items():
        g = np.asarray(g, dtype=np.float64)
        out[k] = g * (max_norm / norm) if norm > max_norm else g.copy()
    return out


def sequence_perplexity(logits, targets):
    total = 0.0
    logits = np.asarray(logits, dtype=np.float64)
    for t in range(logits.shape[0]):
        row = logits[t]
        m = row.max()
        log10_p = (row[int(targets[t])] - m - math.log(np.exp(row - m).sum())) / math.log(10)
        total -= log10_p
    ce = total / logits.shape[0]
    return ce, 10.0 ** ce
