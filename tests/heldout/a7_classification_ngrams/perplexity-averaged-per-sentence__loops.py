# question: a7.ngram_perplexity
"""classify.py in plain loops; one perplexity per sentence, then their mean."""

import math


def _dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def cosine_similarity(A, B):
    A, B = A.tolist(), B.tolist()
    if not isinstance(A[0], list):
        return _dot(A, B) / math.sqrt(_dot(A, A) * _dot(B, B))
    return [[_dot(a, b) / math.sqrt(_dot(a, a) * _dot(b, b)) for b in B] for a in A]


def _one(z, y):
    top = max(z)
    s = sum(math.exp(v - top) for v in z)
    p = [math.exp(v - top) / s for v in z]
    return -math.log(p[y]), [pi - (1.0 if i == y else 0.0) for i, pi in enumerate(p)]


def softmax_cross_entropy(logits, y):
    z = logits.tolist()
    if not isinstance(z[0], list):
        return _one(z, int(y))
    rows = [_one(zi, int(yi)) for zi, yi in zip(z, y)]
    B = len(rows)
    return sum(r[0] for r in rows) / B, [[g / B for g in r[1]] for r in rows]


def _matvec(W, x):
    return [sum(w * v for w, v in zip(row, x)) for row in W]


def _forward_one(ids, mask, P):
    real = [i for i, keep in zip(ids, mask) if keep]
    d = len(P["E"][0])
    avg = [sum(P["E"][i][j] for i in real) / len(real) for j in range(d)]
    z = [a + b for a, b in zip(_matvec(P["W1"], avg), P["b1"])]
    h = [max(v, 0.0) for v in z]
    logits = [a + b for a, b in zip(_matvec(P["W2"], h), P["b2"])]
    return real, avg, z, h, logits


def _plain(params):
    return {k: v.tolist() for k, v in params.items()}


def dan_forward(token_ids, mask, params):
    P = _plain(params)
    out = []
    for ids, m in zip(token_ids.tolist(), mask.tolist()):
        logits = _forward_one(ids, m, P)[-1]
        top = max(logits)
        e = [math.exp(v - top) for v in logits]
        out.append([v / sum(e) for v in e])
    return out


def dan_backward(token_ids, mask, params, y):
    P = _plain(params)
    grads = {k: [[0.0] * len(r) for r in v] if isinstance(v[0], list) else [0.0] * len(v) for k, v in P.items()}
    B = len(y)
    total = 0.0
    for ids, m, label in zip(token_ids.tolist(), mask.tolist(), y.tolist()):
        real, avg, z, h, logits = _forward_one(ids, m, P)
        loss, g = _one(logits, label)
        total += loss / B
        g = [v / B for v in g]
        for c, gc in enumerate(g):
            grads["b2"][c] += gc
            for j, hj in enumerate(h):
                grads["W2"][c][j] += gc * hj
        g_z = [sum(g[c] * P["W2"][c][j] for c in range(len(g))) * (1.0 if z[j] > 0 else 0.0) for j in range(len(z))]
        for j, gj in enumerate(g_z):
            grads["b1"][j] += gj
            for i, ai in enumerate(avg):
                grads["W1"][j][i] += gj * ai
        g_avg = [sum(g_z[j] * P["W1"][j][i] for j in range(len(g_z))) for i in range(len(avg))]
        for tok in real:
            for i, gi in enumerate(g_avg):
                grads["E"][tok][i] += gi / len(real)
    return total, grads


def ngram_counts(corpus, n):
    counts = {}
    for s in corpus:
        toks = ["<s>"] * (n - 1) + list(s) + ["</s>"]
        for i in range(len(toks) - n + 1):
            key = tuple(toks[i:i + n])
            counts[key] = counts.get(key, 0) + 1
    return counts


def ngram_prob(counts, vocab_size, context, word, k=1.0):
    c_ctx = 0
    for gram, c in counts.items():
        if list(gram[:-1]) == list(context):
            c_ctx += c
    return (counts.get(tuple(context) + (word,), 0) + k) / (c_ctx + k * vocab_size)


def ngram_perplexity(counts, vocab_size, sentences, n, k=1.0):
    ppls = []
    for s in sentences:
        nll, N = 0.0, 0
        toks = ["<s>"] * (n - 1) + list(s) + ["</s>"]
        for i in range(n - 1, len(toks)):
            nll -= math.log(ngram_prob(counts, vocab_size, tuple(toks[i - n + 1:i]), toks[i], k))
            N += 1
        ppls.append(math.exp(nll / N))
    return sum(ppls) / len(ppls)
