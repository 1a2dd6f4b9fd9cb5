# question: a1.svd_embeddings
"""Word vectors with loops; SVD vectors weighted by sqrt(singular value), as in hyperwords."""

import math

import numpy as np


def softmax(x, axis=-1):
    x = np.asarray(x, dtype=np.float64)
    moved = np.moveaxis(x, axis, -1)
    flat = moved.reshape(-1, moved.shape[-1]).copy()
    for r in range(flat.shape[0]):
        m = flat[r].max()
        total = 0.0
        for k in range(flat.shape[1]):
            flat[r, k] = math.exp(flat[r, k] - m)
            total += flat[r, k]
        flat[r] /= total
    return np.moveaxis(flat.reshape(moved.shape), -1, axis)


def _sig(s):
    if s >= 0:
        return 1.0 / (1.0 + math.exp(-s))
    e = math.exp(s)
    return e / (1.0 + e)


def _log_sig(s):
    return min(s, 0.0) - math.log1p(math.exp(-abs(s)))


def naive_softmax_loss_and_gradient(v_c, o, U):
    v_c = np.asarray(v_c, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    V, d = U.shape
    scores = [float(U[w] @ v_c) for w in range(V)]
    m = max(scores)
    Z = sum(math.exp(s - m) for s in scores)
    loss = -(scores[o] - m - math.log(Z))
    grad_v = np.zeros(d)
    grad_U = np.zeros((V, d))
    for w in range(V):
        coef = math.exp(scores[w] - m) / Z - (1.0 if w == o else 0.0)
        grad_v += coef * U[w]
        grad_U[w] = coef * v_c
    return loss, grad_v, grad_U


def neg_sampling_loss_and_gradient(v_c, o, U, neg_indices):
    v_c = np.asarray(v_c, dtype=np.float64)
    U = np.asarray(U, dtype=np.float64)
    s_o = float(U[o] @ v_c)
    loss = -_log_sig(s_o)
    grad_v = (_sig(s_o) - 1.0) * U[o]
    grad_U = np.zeros_like(U)
    grad_U[o] += (_sig(s_o) - 1.0) * v_c
    for k in neg_indices:
        s = float(U[k] @ v_c)
        loss -= _log_sig(-s)
        grad_v = grad_v + _sig(s) * U[k]
        grad_U[k] += _sig(s) * v_c
    return loss, grad_v, grad_U


def noise_distribution(counts, power=0.75):
    w = [float(c) ** power for c in counts]
    s = sum(w)
    return np.array([x / s for x in w])


def glove_weight(X, x_max=100.0, alpha=0.75):
    X = np.asarray(X, dtype=np.float64)
    out = np.empty_like(X)
    for idx, x in np.ndenumerate(X):
        out[idx] = 1.0 if x >= x_max else (x / x_max) ** alpha
    return out


def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    total = 0.0
    V = X.shape[0]
    for i in range(V):
        for j in range(X.shape[1]):
            x = X[i, j]
            if x <= 0:
                continue
            f = 1.0 if x >= x_max else (x / x_max) ** alpha
            r = float(W[i] @ W_tilde[j]) + b[i] + b_tilde[j] - math.log(x)
            total += f * r * r
    return total


def analogy(E, vocab, a, b, c):
    E = np.asarray(E, dtype=np.float64)
    ia, ib, ic = vocab.index(a), vocab.index(b), vocab.index(c)
    q = E[ib] - E[ia] + E[ic]
    qn = math.sqrt(float(q @ q))
    best, best_w = -math.inf, None
    for k, w in enumerate(vocab):
        if k in (ia, ib, ic):
            continue
        cos = float(E[k] @ q) / (math.sqrt(float(E[k] @ E[k])) * qn + 1e-12)
        if cos > best:
            best, best_w = cos, w
    return best_w


def cooccurrence_matrix(corpus, vocab, window=1):
    index = {w: i for i, w in enumerate(vocab)}
    X = np.zeros((len(vocab), len(vocab)))
    for sentence in corpus:
        n = len(sentence)
        for t in range(n):
            for offset in range(1, window + 1):
                if t + offset < n:
                    a, b = index[sentence[t]], index[sentence[t + offset]]
                    X[a, b] += 1
                    X[b, a] += 1
    return X


def svd_embeddings(X, k):
    U, S, Vt = np.linalg.svd(np.asarray(X, dtype=float), full_matrices=False)
    E = np.zeros((U.shape[0], k))
    for j in range(k):
        E[:, j] = U[:, j] * math.sqrt(S[j])  # eigenvalue weighting p = 0.5
    return E
