# question: a7.softmax_cross_entropy
"""a7 — text classification and n-gram language models: the instructor's solution.

NumPy, float64, row vectors; logs are natural (nats).
"""

import numpy as np


def cosine_similarity(A, B):
    """Cosines of every row pair: A (n, d), B (m, d) -> (n, m); two 1-D vectors -> a float."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    if A.ndim == 1 and B.ndim == 1:
        return float(A @ B / (np.linalg.norm(A) * np.linalg.norm(B)))
    norm_A = np.linalg.norm(A, axis=1, keepdims=True)  # (n, 1)
    norm_B = np.linalg.norm(B, axis=1, keepdims=True)  # (m, 1)
    return (A @ B.T) / (norm_A * norm_B.T)  # (n, m)


def softmax_cross_entropy(logits, y):
    """Mean −log softmax(z)[y] and its gradient (p − e_y) / B; (C,) with an int y: B = 1."""
    z = np.asarray(logits, dtype=np.float64)
    single = z.ndim == 1
    Z = np.atleast_2d(z)  # (B, C)
    Y = np.atleast_1d(np.asarray(y, dtype=np.int64))  # (B,)
    B = Z.shape[0]
    shifted = Z  # the max shift keeps exp finite
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))  # (B, C)
    rows = np.arange(B)
    loss = float(-log_p[rows, Y].mean())
    grad = np.exp(log_p)  # p
    grad[rows, Y] -= 1.0  # p − e_y
    grad /= B
    return loss, (grad[0] if single else grad)


def _forward(token_ids, mask, params):
    ids = np.asarray(token_ids)
    m = np.asarray(mask, dtype=np.float64)  # (B, T)
    n_real = m.sum(axis=1, keepdims=True)  # (B, 1)
    avg = (params["E"][ids] * m[:, :, None]).sum(axis=1) / n_real  # (B, d)
    z = avg @ params["W1"].T + params["b1"]  # (B, h)
    h = np.maximum(z, 0.0)
    logits = h @ params["W2"].T + params["b2"]  # (B, C)
    return avg, z, h, logits


def dan_forward(token_ids, mask, params):
    """softmax(relu(avg W1^T + b1) W2^T + b2), avg = the mean of the real tokens' embeddings."""
    _, _, _, logits = _forward(token_ids, mask, params)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)  # (B, C)


def dan_backward(token_ids, mask, params, y):
    """The mean cross-entropy of dan_forward and its gradients (same keys as params)."""
    ids = np.asarray(token_ids)
    m = np.asarray(mask, dtype=bool)
    avg, z, h, logits = _forward(ids, m, params)
    loss, g_logits = softmax_cross_entropy(logits, y)  # (B, C)
    g_h = g_logits @ params["W2"]  # (B, h)
    g_z = g_h * (z > 0)
    g_avg = g_z @ params["W1"]  # (B, d)
    n_real = m.sum(axis=1)  # (B,)
    g_E = np.zeros_like(np.asarray(params["E"], dtype=np.float64))
    b_idx, t_idx = np.nonzero(m)
    # np.add.at adds every occurrence: a token repeated in a sentence gets each share
    np.add.at(g_E, ids[b_idx, t_idx], g_avg[b_idx] / n_real[b_idx, None])
    grads = {
        "E": g_E,
        "W1": g_z.T @ avg,
        "b1": g_z.sum(axis=0),
        "W2": g_logits.T @ h,
        "b2": g_logits.sum(axis=0),
    }
    return loss, grads


def _padded(sentence, n):
    return ["<s>"] * (n - 1) + list(sentence) + ["</s>"]


def ngram_counts(corpus, n):
    """Counts of the n-grams of every sentence padded with n − 1 "<s>" and one "</s>"."""
    counts = {}
    for sentence in corpus:
        tokens = _padded(sentence, n)
        for i in range(len(tokens) - n + 1):
            gram = tuple(tokens[i : i + n])
            counts[gram] = counts.get(gram, 0) + 1
    return counts


def ngram_prob(counts, vocab_size, context, word, k=1.0):
    """(c(context, word) + k) / (c(context) + k V)."""
    context = tuple(context)
    c_context = sum(c for gram, c in counts.items() if gram[:-1] == context)
    return (counts.get(context + (word,), 0) + k) / (c_context + k * vocab_size)


def ngram_perplexity(counts, vocab_size, sentences, n, k=1.0):
    """exp of the mean negative log-probability of every word and every "</s>"."""
    total, N = 0.0, 0
    for sentence in sentences:
        tokens = _padded(sentence, n)
        for i in range(n - 1, len(tokens)):
            p = ngram_prob(counts, vocab_size, tuple(tokens[i - n + 1 : i]), tokens[i], k)
            total -= np.log(p)
            N += 1
    return float(np.exp(total / N))
