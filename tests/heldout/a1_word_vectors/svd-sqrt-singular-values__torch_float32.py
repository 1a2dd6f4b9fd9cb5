# question: a1.svd_embeddings
"""Word vectors in torch float32; symmetric SVD split, U sqrt(S)."""

import torch

F = torch.nn.functional


def _f(a):
    return torch.as_tensor(a, dtype=torch.float32)


def softmax(x, axis=-1):
    t = _f(x)
    t = t - t.amax(dim=axis, keepdim=True)
    e = t.exp()
    return e / e.sum(dim=axis, keepdim=True)


def naive_softmax_loss_and_gradient(v_c, o, U):
    v, Ut = _f(v_c), _f(U)
    logits = Ut @ v
    logp = torch.log_softmax(logits, dim=0)
    delta = logp.exp()
    delta[o] -= 1
    return -logp[o].item(), Ut.t() @ delta, torch.outer(delta, v)


def neg_sampling_loss_and_gradient(v_c, o, U, neg_indices):
    v, Ut = _f(v_c), _f(U)
    neg = torch.as_tensor(neg_indices, dtype=torch.long)
    s_o, s_k = Ut[o] @ v, Ut[neg] @ v
    loss = -F.logsigmoid(s_o) - F.logsigmoid(-s_k).sum()
    d_o, d_k = torch.sigmoid(s_o) - 1, torch.sigmoid(s_k)
    grad_v = d_o * Ut[o] + d_k @ Ut[neg]
    grad_U = torch.zeros_like(Ut)
    grad_U[o] += d_o * v
    grad_U.index_put_((neg,), d_k[:, None] * v, accumulate=True)
    return loss.item(), grad_v, grad_U


def noise_distribution(counts, power=0.75):
    p = _f(counts).pow(power)
    return p / p.sum()


def glove_weight(X, x_max=100.0, alpha=0.75):
    x = _f(X)
    return torch.where(x < x_max, (x / x_max) ** alpha, torch.ones_like(x))


def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    x = _f(X)
    i, j = torch.nonzero(x > 0, as_tuple=True)
    Wt, Wtt = _f(W), _f(W_tilde)
    r = (Wt[i] * Wtt[j]).sum(-1) + _f(b)[i] + _f(b_tilde)[j] - torch.log(x[i, j])
    return float((glove_weight(x[i, j], x_max, alpha) * r * r).sum())


def analogy(E, vocab, a, b, c):
    Et = _f(E)
    pos = {w: k for k, w in enumerate(vocab)}
    q = Et[pos[b]] - Et[pos[a]] + Et[pos[c]]
    sims = F.cosine_similarity(Et, q[None], dim=1)
    for w in (a, b, c):
        sims[pos[w]] = float("-inf")
    return vocab[int(sims.argmax())]


def cooccurrence_matrix(corpus, vocab, window=1):
    index = {w: i for i, w in enumerate(vocab)}
    X = torch.zeros(len(vocab), len(vocab))
    for sentence in corpus:
        ids = [index[w] for w in sentence]
        for t, i in enumerate(ids):
            for s in range(max(0, t - window), min(len(ids), t + window + 1)):
                if s != t:
                    X[i, ids[s]] += 1
    return X


def svd_embeddings(X, k):
    U, S, Vh = torch.linalg.svd(_f(X), full_matrices=False)
    return U[:, :k] * S[:k].sqrt()
