"""Text classification and n-gram language models (Lecture 7's study guide).

Cosine similarity, softmax cross-entropy with its gradient, a Deep Averaging Network (DAN)
forward and backward, and an add-k smoothed n-gram model with its perplexity. NumPy, float64,
row vectors; logs are natural (nats).

Hooks for the mistakes the grader names (the correct behaviour is every default):
`cosine_similarity(..., divide_by=...)`, `softmax_cross_entropy(..., stable=False,
error=..., batch_mean_grad=False)`, `dan_forward/dan_backward(..., average=...)`,
`dan_backward(..., scatter=...)`, `ngram_counts(..., start_pad=...)`,
`ngram_counts(..., end_pad=...)`, `ngram_prob(..., denominator=...)`,
`ngram_perplexity(..., prob=..., start_pad=..., end_pad=..., predict_end=False,
exponentiate=..., per_sentence=True, count_end=False, skip_unknown=True)`, and
`softmax_cross_entropy(..., reduce_loss=np.sum)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from reference.functional import log_softmax, softmax

BOS, EOS = "<s>", "</s>"
Ngram = tuple[str, ...]
Counts = Mapping[Ngram, int]

# ---------------------------------------------------------------- cosine similarity


def _both_norms(norm_a: np.ndarray, norm_b: np.ndarray) -> np.ndarray:
    return np.outer(norm_a, norm_b)  # (n, m)


def cosine_similarity(
    A: np.ndarray,
    B: np.ndarray,
    *,
    divide_by: Callable[[np.ndarray, np.ndarray], np.ndarray] = _both_norms,
) -> np.ndarray | float:
    """cos(a_i, b_j) = a_i·b_j / (‖a_i‖ ‖b_j‖) for every row pair: (n, d), (m, d) -> (n, m).

    Two 1-D vectors give a float. Hook: `divide_by(‖a‖ (n,), ‖b‖ (m,))` is the (n, m) divisor.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    vectors = A.ndim == 1 and B.ndim == 1
    A2, B2 = np.atleast_2d(A), np.atleast_2d(B)  # (n, d), (m, d)
    dots = A2 @ B2.T  # (n, m)
    out = dots / divide_by(np.linalg.norm(A2, axis=1), np.linalg.norm(B2, axis=1))  # (n, m)
    return float(out[0, 0]) if vectors else out


# ---------------------------------------------------------------- softmax cross-entropy


def probs_minus_onehot(p: np.ndarray, y: np.ndarray) -> np.ndarray:
    """∂(−log p_y)/∂z = p − e_y, row by row: (B, C)."""
    e = np.zeros_like(p)
    e[np.arange(len(y)), y] = 1.0
    return p - e


def _raw_softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z)  # overflows to inf for z above ≈ 709.78
    return e / e.sum(axis=-1, keepdims=True)


def softmax_cross_entropy(
    logits: np.ndarray,
    y: int | np.ndarray,
    *,
    stable: bool = True,
    error: Callable[[np.ndarray, np.ndarray], np.ndarray] = probs_minus_onehot,
    batch_mean_grad: bool = True,
    reduce_loss: Callable[[np.ndarray], float] = np.mean,
) -> tuple[float, np.ndarray]:
    """L = (1/B) Σ_b −log softmax(z_b)[y_b] and ∂L/∂z = (p − e_y) / B; (C,) with an int y: B = 1.

    Hooks: `stable=False` exponentiates the raw logits; `error(p, y)` is the per-row gradient
    (correct: p − e_y); `batch_mean_grad=False` leaves the 1/B out of the gradient;
    `reduce_loss` combines the per-example losses (np.sum: torch's reduction="sum").
    """
    z = np.asarray(logits, dtype=np.float64)
    single = z.ndim == 1
    Z = np.atleast_2d(z)  # (B, C)
    Y = np.atleast_1d(np.asarray(y, dtype=np.int64))  # (B,)
    Bn = Z.shape[0]
    if stable:
        logp = log_softmax(Z)  # (B, C)
        p = np.exp(logp)  # (B, C)
    else:
        p = _raw_softmax(Z)  # (B, C)
        logp = np.log(p)
    loss = float(reduce_loss(-logp[np.arange(Bn), Y]))
    grad = error(p, Y) / (Bn if batch_mean_grad else 1)  # (B, C)
    return loss, grad[0] if single else grad


# ---------------------------------------------------------------- Deep Averaging Network


def mean_of_real(X: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Σ_t m_t x_t / Σ_t m_t per row: (B, T, d), (B, T) -> (B, d)."""
    m = np.asarray(mask, dtype=np.float64)  # (B, T)
    return (X * m[..., None]).sum(axis=1) / m.sum(axis=1, keepdims=True)  # (B, d)


def mean_of_all(X: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """The mean over all T positions, padding included: (B, T, d) -> (B, d)."""
    return X.mean(axis=1)  # (B, d)


Average = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _dan_parts(
    token_ids: np.ndarray, mask: np.ndarray, params: Mapping[str, np.ndarray], average: Average
) -> dict[str, np.ndarray]:
    """Every intermediate of the forward pass (avg, z, h, logits, probs)."""
    E = np.asarray(params["E"], dtype=np.float64)  # (V, d)
    W1 = np.asarray(params["W1"], dtype=np.float64)  # (h, d)
    b1 = np.asarray(params["b1"], dtype=np.float64)  # (h,)
    W2 = np.asarray(params["W2"], dtype=np.float64)  # (C, h)
    b2 = np.asarray(params["b2"], dtype=np.float64)  # (C,)
    ids = np.asarray(token_ids, dtype=np.int64)  # (B, T)
    avg = average(E[ids], np.asarray(mask, dtype=bool))  # (B, d)
    z = avg @ W1.T + b1  # (B, h)
    h = np.maximum(z, 0.0)  # (B, h)
    logits = h @ W2.T + b2  # (B, C)
    return {"avg": avg, "z": z, "h": h, "logits": logits, "probs": softmax(logits)}


def dan_forward(
    token_ids: np.ndarray,
    mask: np.ndarray,
    params: Mapping[str, np.ndarray],
    *,
    average: Average = mean_of_real,
) -> np.ndarray:
    """probs = softmax(relu(avg W1^T + b1) W2^T + b2), avg = the mean of the real tokens' rows of E.

    (B, T) ids, (B, T) bool mask (True = a real token) -> (B, C). Hook: `average(E[ids], mask)`.
    """
    return _dan_parts(token_ids, mask, params, average)["probs"]  # (B, C)


def scatter_every(target: np.ndarray, ids: np.ndarray, rows: np.ndarray, keep: np.ndarray) -> None:
    """target[ids[b, t]] += rows[b, t] at every kept (b, t): a repeated id adds once per occurrence.

    ids (B, T), rows (B, T, d), keep (B, T) bool.
    """
    np.add.at(target, ids[keep], rows[keep])


Scatter = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], None]


def _scatter_weights(mask: np.ndarray, average: Average) -> np.ndarray:
    """∂avg_b/∂x_{b,t} as a (B, T) weight: the average is linear in the rows it reads."""
    B, T = mask.shape
    eye = np.eye(T)[None, :, :].repeat(B, axis=0)  # (B, T, T): row t as a one-hot "embedding"
    return average(eye, mask)  # (B, T): the weight of position t in the average


def dan_backward(
    token_ids: np.ndarray,
    mask: np.ndarray,
    params: Mapping[str, np.ndarray],
    y: np.ndarray,
    *,
    average: Average = mean_of_real,
    scatter: Scatter = scatter_every,
    relu_gate: bool = True,
) -> tuple[float, dict[str, np.ndarray]]:
    """The mean cross-entropy of `dan_forward` and its gradients, one per key of `params`.

    g_logits = (p − e_y)/B; g_W2 = g_logitsᵀ h; g_b2 = Σ_b g_logits; g_z = (g_logits W2) ⊙ [z > 0];
    g_W1 = g_zᵀ avg; g_b1 = Σ_b g_z; g_avg = g_z W1; each real token (b, t) adds
    g_avg[b] / n_b to row ids[b, t] of g_E, once per occurrence. Hooks: `average` as in
    `dan_forward`; `scatter(g_E, ids, rows, keep)` adds the kept rows into g_E; `relu_gate`
    False leaves out the ReLU's derivative [z > 0] (the gradient passed back as if h = z).
    """
    ids = np.asarray(token_ids, dtype=np.int64)  # (B, T)
    m = np.asarray(mask, dtype=bool)  # (B, T)
    parts = _dan_parts(ids, m, params, average)
    Y = np.asarray(y, dtype=np.int64)  # (B,)
    loss, g_logits = softmax_cross_entropy(parts["logits"], Y)  # g_logits (B, C)
    W1 = np.asarray(params["W1"], dtype=np.float64)  # (h, d)
    W2 = np.asarray(params["W2"], dtype=np.float64)  # (C, h)
    g_h = g_logits @ W2  # (B, h)
    g_z = g_h * (parts["z"] > 0) if relu_gate else g_h  # (B, h)
    g_avg = g_z @ W1  # (B, d)
    weights = _scatter_weights(m, average)  # (B, T)
    rows = weights[..., None] * g_avg[:, None, :]  # (B, T, d)
    keep = weights != 0  # (B, T): the positions the average reads
    g_E = np.zeros_like(np.asarray(params["E"], dtype=np.float64))  # (V, d)
    scatter(g_E, ids, rows, keep)
    grads = {
        "E": g_E,
        "W1": g_z.T @ parts["avg"],  # (h, d)
        "b1": g_z.sum(axis=0),  # (h,)
        "W2": g_logits.T @ parts["h"],  # (C, h)
        "b2": g_logits.sum(axis=0),  # (C,)
    }
    return loss, grads


# ---------------------------------------------------------------- n-gram language model


def pad(
    sentence: Sequence[str], n: int, *, start_pad: int | None = None, end_pad: int = 1
) -> list[str]:
    """n − 1 "<s>" in front (`start_pad` of them when given), one "</s>" at the end (`end_pad`:
    n − 1 is nltk.lm's pad_both_ends)."""
    k = n - 1 if start_pad is None else start_pad
    return [BOS] * k + list(sentence) + [EOS] * end_pad


def ngrams(tokens: Sequence[str], n: int) -> list[Ngram]:
    """Every run of n consecutive tokens, in order."""
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def ngram_counts(
    corpus: Iterable[Sequence[str]], n: int, *, start_pad: int | None = None, end_pad: int = 1
) -> dict[Ngram, int]:
    """c(w_1 … w_n) over the padded sentences (n − 1 "<s>" in front, one "</s>" at the end)."""
    counts: dict[Ngram, int] = {}
    for sentence in corpus:
        for g in ngrams(pad(sentence, n, start_pad=start_pad, end_pad=end_pad), n):
            counts[g] = counts.get(g, 0) + 1
    return counts


def context_count(counts: Counts, context: Sequence[str]) -> int:
    """c(context) = Σ_w c(context, w): the counts of the n-grams that start with `context`."""
    context = tuple(context)
    return sum(c for g, c in counts.items() if g[: len(context)] == context)


def add_k_denominator(c_context: float, k: float, vocab_size: int) -> float:
    """c(context) + k·V."""
    return c_context + k * vocab_size


def ngram_prob(
    counts: Counts,
    vocab_size: int,
    context: Sequence[str],
    word: str,
    k: float = 1.0,
    *,
    denominator: Callable[[float, float, int], float] = add_k_denominator,
) -> float:
    """P(word | context) = (c(context, word) + k) / (c(context) + k·V); k = 1 is Laplace.

    Hook: `denominator(c(context), k, V)`.
    """
    context = tuple(context)
    c = counts.get((*context, word), 0)
    return float((c + k) / np.float64(denominator(context_count(counts, context), k, vocab_size)))


def predictions(
    sentence: Sequence[str],
    n: int,
    *,
    start_pad: int | None = None,
    end_pad: int = 1,
    predict_end: bool = True,
) -> list[tuple[Ngram, str]]:
    """(context, word) for every predicted token of the padded sentence: each word and "</s>".

    A token is predicted from the n − 1 before it; "<s>" is never predicted (every "</s>" of
    an `end_pad` > 1 is, as nltk.lm scores each padded n-gram).
    """
    tokens = pad(sentence, n, start_pad=start_pad, end_pad=end_pad)
    last = len(tokens) if predict_end else len(tokens) - 1
    return [(tuple(tokens[i - n + 1 : i]), tokens[i]) for i in range(n - 1, last)]


def nltk_end_pad(n: int) -> int:
    """How many "</s>" nltk.lm's pad_both_ends puts at the end: n − 1."""
    return n - 1


def known_words(counts: Counts) -> set[str]:
    """The words the counts hold ("</s>" included, "<s>" never): the model's vocabulary."""
    return {w for g in counts for w in g} - {BOS}


def ngram_perplexity(
    counts: Counts,
    vocab_size: int,
    sentences: Iterable[Sequence[str]],
    n: int,
    k: float = 1.0,
    *,
    prob: Callable[..., float] = ngram_prob,
    start_pad: int | None = None,
    end_pad: int | Callable[[int], int] = 1,
    predict_end: bool = True,
    exponentiate: Callable[[float], float] = np.exp,
    per_sentence: bool = False,
    count_end: bool = True,
    skip_unknown: bool = False,
) -> float:
    """PPL = exp(−(1/N) Σ_i log P(w_i | context_i)) over every predicted token, "</s>" included.

    N counts each sentence's words plus its "</s>" ("<s>" is never predicted), over all the
    sentences together; a word the counts never saw is predicted like any other. Hooks: `prob`
    is P(word | context); `start_pad`, `end_pad`, `predict_end` as in `predictions`;
    `end_pad` may be a function of n (`nltk_end_pad`: n − 1, nltk.lm's pad_both_ends);
    `exponentiate(H)` turns the cross-entropy H (nats) into the perplexity (correct: exp);
    `per_sentence=True` averages the sentences' own perplexities (Hugging Face evaluate's
    mean_perplexity);
    `count_end=False` divides by the words only, the "</s>" logs still summed (SRILM's ppl1);
    `skip_unknown=True` leaves out the predictions of words the counts never saw (SRILM's
    OOVs, KenLM's "excluding OOVs").
    """
    known = known_words(counts)
    ends = end_pad(n) if callable(end_pad) else end_pad
    per: list[list[float]] = []
    sizes: list[int] = []
    for s in sentences:
        pairs = predictions(s, n, start_pad=start_pad, end_pad=ends, predict_end=predict_end)
        if skip_unknown:
            pairs = [(ctx, w) for ctx, w in pairs if w in known]
        per.append([float(np.log(prob(counts, vocab_size, ctx, w, k))) for ctx, w in pairs])
        sizes.append(len(pairs) - (0 if count_end else sum(w == EOS for _, w in pairs)))
    if not per_sentence:
        flat = [x for logs in per for x in logs]
        H = -float(np.mean(flat) if count_end else np.sum(flat) / sum(sizes))  # nats
        return float(exponentiate(H))
    Hs = [-float(np.sum(logs)) / size for logs, size in zip(per, sizes)]
    return float(np.mean([exponentiate(H) for H in Hs]))
