# question: a1.neg_sampling
"""SGNS in pure Python lists: the noise rows are summed apart and then assigned into grad_U, which
overwrites row o when the true word was also drawn as a negative."""

import math


def _tolist(a):
    return a.tolist() if hasattr(a, "tolist") else list(a)


def _softmax_row(row):
    m = max(row)
    e = [math.exp(v - m) for v in row]
    s = sum(e)
    return [v / s for v in e]


def softmax(x, axis=-1):
    data = _tolist(x)
    if not isinstance(data[0], list):
        return _softmax_row(data)
    if axis in (-1, 1) and not isinstance(data[0][0], list):
        return [_softmax_row(r) for r in data]
    if axis == 0 and not isinstance(data[0][0], list):
        cols = [_softmax_row([data[i][j] for i in range(len(data))]) for j in range(len(data[0]))]
        return [[cols[j][i] for j in range(len(cols))] for i in range(len(data))]
    import numpy as np  # deeper arrays: fall back to numpy

    a = np.asarray(x, dtype=float)
    e = np.exp(a - a.max(axis=axis, keepdims=True))
    return (e / e.sum(axis=axis, keepdims=True)).tolist()


def _dot(a, b):
    return sum(p * q for p, q in zip(a, b))


def _logsig(s):
    return min(s, 0.0) - math.log1p(math.exp(-abs(s)))


def _sig(s):
    return math.exp(_logsig(s))


def naive_softmax_loss_and_gradient(v_c, o, U):
    v, U = _tolist(v_c), _tolist(U)
    scores = [_dot(u, v) for u in U]
    P = _softmax_row(scores)
    m = max(scores)
    loss = -(scores[o] - m - math.log(sum(math.exp(s - m) for s in scores)))
    delta = [p - (1.0 if w == o else 0.0) for w, p in enumerate(P)]
    grad_v = [sum(delta[w] * U[w][i] for w in range(len(U))) for i in range(len(v))]
    grad_U = [[dw * vi for vi in v] for dw in delta]
    return loss, grad_v, grad_U


def neg_sampling_loss_and_gradient(v_c, o, U, neg_indices):
    v, U = _tolist(v_c), _tolist(U)
    d = len(v)
    grad_U = [[0.0] * d for _ in U]
    s_o = _dot(U[o], v)
    loss = -_logsig(s_o)
    c_o = _sig(s_o) - 1.0
    grad_v = [c_o * u for u in U[o]]
    grad_U[o] = [c_o * vi for vi in v]
    noise_rows = {}  # k -> its summed row, every draw counted
    for k in _tolist(neg_indices):
        s = _dot(U[k], v)
        loss -= _logsig(-s)
        c = _sig(s)
        grad_v = [g + c * u for g, u in zip(grad_v, U[k])]
        row = noise_rows.get(k, [0.0] * d)
        noise_rows[k] = [g + c * vi for g, vi in zip(row, v)]
    for k, row in noise_rows.items():
        grad_U[k] = row  # overwrites row o when o was drawn as noise too
    return loss, grad_v, grad_U


def noise_distribution(counts, power=0.75):
    w = [float(c) ** power for c in _tolist(counts)]
    s = sum(w)
    return [x / s for x in w]


def _f(x, x_max, alpha):
    return 1.0 if x >= x_max else (x / x_max) ** alpha


def glove_weight(X, x_max=100.0, alpha=0.75):
    data = _tolist(X)

    def rec(v):
        return [rec(e) for e in v] if isinstance(v, list) else _f(v, x_max, alpha)

    return rec(data)


def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    W, Wt, b, bt, X = map(_tolist, (W, W_tilde, b, b_tilde, X))
    total = 0.0
    for i, row in enumerate(X):
        for j, x in enumerate(row):
            if x > 0:
                r = _dot(W[i], Wt[j]) + b[i] + bt[j] - math.log(x)
                total += _f(x, x_max, alpha) * r * r
    return total


def analogy(E, vocab, a, b, c):
    E = _tolist(E)
    pos = {w: k for k, w in enumerate(vocab)}
    q = [y - x + z for x, y, z in zip(E[pos[a]], E[pos[b]], E[pos[c]])]
    qn = math.sqrt(_dot(q, q))
    scored = []
    for k, w in enumerate(vocab):
        if w in (a, b, c):
            continue
        scored.append((_dot(E[k], q) / (math.sqrt(_dot(E[k], E[k])) * qn), w))
    return max(scored)[1]


def cooccurrence_matrix(corpus, vocab, window=1):
    pos = {w: i for i, w in enumerate(vocab)}
    X = [[0.0] * len(vocab) for _ in vocab]
    for sentence in corpus:
        for t, w in enumerate(sentence):
            for s in range(max(0, t - window), min(len(sentence), t + window + 1)):
                if s != t:
                    X[pos[w]][pos[sentence[s]]] += 1.0
    return X


def svd_embeddings(X, k):
    import numpy as np  # the SVD itself: no list-only way that is worth writing

    U, S, _ = np.linalg.svd(np.array(X, dtype=float))
    return [[float(U[i][j] * S[j]) for j in range(k)] for i in range(len(U))]
