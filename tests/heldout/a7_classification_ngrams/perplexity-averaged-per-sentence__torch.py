# question: a7.ngram_perplexity
"""classify.py in torch; a perplexity per sentence, averaged."""

import math
from collections import Counter

import torch


def cosine_similarity(A, B):
    A = torch.as_tensor(A, dtype=torch.float32)
    B = torch.as_tensor(B, dtype=torch.float32)
    if A.dim() == 1:
        return (A @ B / (A.norm() * B.norm())).item()
    An = A / A.norm(dim=1, keepdim=True)
    Bn = B / B.norm(dim=1, keepdim=True)
    return An @ Bn.T


def softmax_cross_entropy(logits, y):
    z = torch.as_tensor(logits, dtype=torch.float32)
    single = z.dim() == 1
    if single:
        z, y = z[None, :], [int(y)]
    y = torch.as_tensor(y, dtype=torch.long)
    logp = torch.log_softmax(z, dim=-1)
    loss = -logp[torch.arange(len(y)), y].mean()
    grad = (logp.exp() - torch.nn.functional.one_hot(y, z.shape[1]).float()) / len(y)
    return loss.item(), (grad[0] if single else grad)


def _avg(token_ids, mask, E):
    ids = torch.as_tensor(token_ids)
    m = torch.as_tensor(mask).float()
    return (E[ids] * m[..., None]).sum(1) / m.sum(1, keepdim=True)


def dan_forward(token_ids, mask, params):
    p = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in params.items()}
    h = torch.relu(_avg(token_ids, mask, p["E"]) @ p["W1"].T + p["b1"])
    return torch.softmax(h @ p["W2"].T + p["b2"], dim=-1)


def dan_backward(token_ids, mask, params, y):
    p = {k: torch.as_tensor(v, dtype=torch.float32) for k, v in params.items()}
    ids = torch.as_tensor(token_ids)
    m = torch.as_tensor(mask)
    avg = _avg(ids, m, p["E"])
    z = avg @ p["W1"].T + p["b1"]
    h = torch.relu(z)
    loss, g = softmax_cross_entropy(h @ p["W2"].T + p["b2"], y)
    g_z = (g @ p["W2"]) * (z > 0)
    g_avg = g_z @ p["W1"]
    n = m.sum(1, keepdim=True)
    rows = (g_avg / n)[:, None, :].expand(-1, ids.shape[1], -1)
    g_E = torch.zeros_like(p["E"]).index_add_(0, ids[m], rows[m])
    return loss, {"E": g_E, "W1": g_z.T @ avg, "b1": g_z.sum(0), "W2": g.T @ h, "b2": g.sum(0)}


def ngram_counts(corpus, n):
    c = Counter()
    for s in corpus:
        toks = ["<s>"] * (n - 1) + s + ["</s>"]
        c.update(zip(*(toks[i:] for i in range(n))))
    return c


def ngram_prob(counts, vocab_size, context, word, k=1.0):
    total = sum(v for g, v in counts.items() if g[:-1] == tuple(context))
    return (counts.get(tuple(context) + (word,), 0) + k) / (total + k * vocab_size)


def ngram_perplexity(counts, vocab_size, sentences, n, k=1.0):
    ppls = []
    for s in sentences:
        toks = ["<s>"] * (n - 1) + list(s) + ["</s>"]
        logs = torch.tensor([
            math.log(ngram_prob(counts, vocab_size, toks[i - n + 1:i], toks[i], k))
            for i in range(n - 1, len(toks))
        ], dtype=torch.float64)
        ppls.append(torch.exp(-logs.mean()))
    return torch.stack(ppls).mean().item()
