# question: a1.neg_sampling
"""SGNS whose row o of grad_U is assigned after the noise rows: when o is also drawn as a negative,
its noise terms are lost.

Conventions: row vectors; the rows of U (V, d) are the outside vectors u_w, v_c (d,) is
the center vector; softmax over the last axis; natural logs.
"""

import numpy as np


def softmax(x, axis=-1):
    """exp(x - max) / Σ exp(x - max) along `axis`: the max shift keeps exp finite."""
    x = np.asarray(x, dtype=np.float64)
    z = x - np.max(x, axis=axis, keepdims=True)
    e = np.exp(z)
    return e / np.sum(e, axis=axis, keepdims=True)


def _sigmoid(x):
    """σ(x) without overflow: exp only ever sees -|x|."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _log_sigmoid(x):
    """log σ(x) = min(x, 0) - log(1 + exp(-|x|))."""
    x = np.asarray(x, dtype=np.float64)
    return np.minimum(x, 0.0) - np.log1p(np.exp(-np.abs(x)))


def naive_softmax_loss_and_gradient(v_c, o, U):
    """loss = -log P(o|c), P = softmax(U v_c); grad_v_c = U^T (ŷ - y); grad_U = (ŷ - y) v_c^T."""
    v_c = np.asarray(v_c, dtype=np.float64)  # (d,)
    U = np.asarray(U, dtype=np.float64)  # (V, d)
    scores = U @ v_c  # (V,)
    y_hat = softmax(scores)  # (V,)
    m = scores.max()
    loss = float(-(scores[o] - m - np.log(np.sum(np.exp(scores - m)))))  # log-sum-exp
    delta = y_hat.copy()  # (V,) ŷ - y
    delta[o] -= 1.0
    grad_v_c = U.T @ delta  # (d,)
    grad_U = np.outer(delta, v_c)  # (V, d)
    return loss, grad_v_c, grad_U


def neg_sampling_loss_and_gradient(v_c, o, U, neg_indices):
    """loss = -log σ(u_o·v_c) - Σ_k log σ(-u_k·v_c); a repeated k counts each time."""
    v_c = np.asarray(v_c, dtype=np.float64)  # (d,)
    U = np.asarray(U, dtype=np.float64)  # (V, d)
    neg = np.asarray(neg_indices, dtype=np.int64)  # (K,)
    s_o = U[o] @ v_c
    s_k = U[neg] @ v_c  # (K,)
    loss = float(-_log_sigmoid(s_o) - np.sum(_log_sigmoid(-s_k)))
    d_o = _sigmoid(s_o) - 1.0
    d_k = _sigmoid(s_k)  # (K,)
    grad_v_c = d_o * U[o] + d_k @ U[neg]  # (d,)
    grad_U = np.zeros_like(U)  # (V, d)
    np.add.at(grad_U, neg, np.outer(d_k, v_c))  # noise rows, repeats counted
    grad_U[o] = d_o * v_c  # the true word's row
    return loss, grad_v_c, grad_U


def noise_distribution(counts, power=0.75):
    """count^power, renormalised to sum to 1."""
    c = np.asarray(counts, dtype=np.float64) ** power
    return c / c.sum()


def glove_weight(X, x_max=100.0, alpha=0.75):
    """f(x) = (x / x_max)^alpha below x_max, 1 at and above, 0 at 0."""
    X = np.asarray(X, dtype=np.float64)
    return np.minimum((X / x_max) ** alpha, 1.0)


def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    """Σ over X_ij > 0 of f(X_ij) (w_i·w̃_j + b_i + b̃_j - log X_ij)^2."""
    X = np.asarray(X, dtype=np.float64)  # (V, V)
    pos = X > 0
    pred = W @ W_tilde.T + b[:, None] + b_tilde[None, :]  # (V, V)
    r = pred[pos] - np.log(X[pos])
    return float(np.sum(glove_weight(X[pos], x_max, alpha) * r**2))


def analogy(E, vocab, a, b, c):
    """The word w ∉ {a, b, c} maximising cos(e_w, e_b - e_a + e_c)."""
    E = np.asarray(E, dtype=np.float64)  # (V, d)
    idx = {w: i for i, w in enumerate(vocab)}
    target = E[idx[b]] - E[idx[a]] + E[idx[c]]  # (d,)
    sims = E @ target / (np.linalg.norm(E, axis=1) * np.linalg.norm(target) + 1e-12)  # (V,)
    for w in (a, b, c):
        sims[idx[w]] = -np.inf
    return vocab[int(np.argmax(sims))]


def cooccurrence_matrix(corpus, vocab, window=1):
    """X_ij = how often word j occurs within `window` positions of word i (not itself)."""
    idx = {w: i for i, w in enumerate(vocab)}
    X = np.zeros((len(vocab), len(vocab)))  # (V, V)
    for sentence in corpus:
        ids = [idx[w] for w in sentence]
        for t, i in enumerate(ids):
            lo, hi = max(0, t - window), min(len(ids), t + window + 1)
            for s in range(lo, hi):
                if s != t:
                    X[i, ids[s]] += 1
    return X


def svd_embeddings(X, k):
    """The rows of U_k Σ_k from X = U Σ V^T (each column defined up to its sign)."""
    U, S, _ = np.linalg.svd(np.asarray(X, dtype=np.float64), full_matrices=False)
    return U[:, :k] * S[:k]  # (V, k)
