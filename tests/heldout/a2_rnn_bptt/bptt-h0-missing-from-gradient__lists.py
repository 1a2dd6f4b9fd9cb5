# question: a2.bptt_final_state
"""a2 in lists; the first recurrent input is taken as zeros in the backward pass."""

import math


def _l(a):
    return a.tolist() if hasattr(a, "tolist") else [list(r) if isinstance(r, (list, tuple)) else r for r in a]


def _mv(M, v):
    return [sum(m * x for m, x in zip(row, v)) for row in M]


def _vm(v, M):  # row vector times matrix
    return [sum(v[i] * M[i][j] for i in range(len(v))) for j in range(len(M[0]))]


def rnn_forward(X, W_x, W_h, b_h, h0=None):
    X, W_x, W_h, b_h = map(_l, (X, W_x, W_h, b_h))
    h = [0.0] * len(b_h) if h0 is None else [float(v) for v in _l(h0)]
    Z, Hs = [], []
    for x in X:
        z = [a + b + c for a, b, c in zip(_mv(W_x, x), _mv(W_h, h), b_h)]
        h = [math.tanh(v) for v in z]
        Z.append(z)
        Hs.append(h)
    return Z, Hs


def _backprop(X, W_h, Hs, h0, direct):
    T, H, D = len(Hs), len(Hs[0]), len(X[0])
    dWx = [[0.0] * D for _ in range(H)]
    dWh = [[0.0] * H for _ in range(H)]
    db = [0.0] * H
    future = [0.0] * H
    init = [0.0] * H  # h_{-1}
    for t in reversed(range(T)):
        prev = Hs[t - 1] if t else init
        gz = [(direct[t][i] + future[i]) * (1 - Hs[t][i] ** 2) for i in range(H)]
        for i in range(H):
            dWx[i] = [dWx[i][j] + gz[i] * X[t][j] for j in range(D)]
            dWh[i] = [dWh[i][j] + gz[i] * prev[j] for j in range(H)]
            db[i] += gz[i]
        future = _vm(gz, W_h)
    return {"W_x": dWx, "W_h": dWh, "b_h": db}


def bptt_final_state(X, W_x, W_h, b_h, y, h0=None):
    X, W_h, y = _l(X), _l(W_h), _l(y)
    _, Hs = rnn_forward(X, W_x, W_h, b_h, h0)
    direct = [[0.0] * len(y) for _ in Hs]
    direct[-1] = [h - t for h, t in zip(Hs[-1], y)]
    return _backprop(X, W_h, Hs, h0, direct)


def bptt_sequence_ce(X, W_x, W_h, b_h, W_o, b_o, targets, h0=None):
    X, W_h, W_o, b_o, targets = map(_l, (X, W_h, W_o, b_o, targets))
    _, Hs = rnn_forward(X, W_x, W_h, b_h, h0)
    T = len(Hs)
    loss = 0.0
    G = []
    for t in range(T):
        a = [s + b for s, b in zip(_mv(W_o, Hs[t]), b_o)]
        m = max(a)
        lse = m + math.log(sum(math.exp(v - m) for v in a))
        loss += (lse - a[int(targets[t])]) / T
        G.append([(math.exp(v - lse) - (1.0 if c == int(targets[t]) else 0.0)) / T for c, v in enumerate(a)])
    direct = [_vm(g, W_o) for g in G]
    grads = _backprop(X, W_h, Hs, h0, direct)
    grads["W_o"] = [[sum(G[t][c] * Hs[t][i] for t in range(T)) for i in range(len(Hs[0]))] for c in range(len(W_o))]
    grads["b_o"] = [sum(G[t][c] for t in range(T)) for c in range(len(W_o))]
    return loss, grads


def _flat(a):
    if isinstance(a, list):
        for e in a:
            yield from _flat(e)
    else:
        yield float(a)


def _scale(a, s):
    return [_scale(e, s) for e in a] if isinstance(a, list) else float(a) * s


def clip_by_global_norm(grads, max_norm):
    lists = {k: _l(v) if hasattr(v, "tolist") else v for k, v in grads.items()}
    norm = math.sqrt(sum(v * v for g in lists.values() for v in _flat(g)))
    s = max_norm / norm if norm > max_norm else 1.0
    return {k: _scale(g, s) for k, g in lists.items()}


def sequence_perplexity(logits, targets):
    rows, ys = _l(logits), _l(targets)
    nll = 0.0
    for row, y in zip(rows, ys):
        m = max(row)
        nll += m + math.log(sum(math.exp(v - m) for v in row)) - row[int(y)]
    ce = nll / len(rows)
    return ce, math.exp(ce)
