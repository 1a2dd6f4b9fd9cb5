"""Word vectors (notes §1): skip-gram, negative sampling, GloVe, SVD embeddings, analogies.

Conventions: the rows of U (V, d) are the outside vectors u_w, v_c (d,) is the center
vector; losses are negative log-likelihoods in nats.

Hooks for the grader's mutants (keyword arguments with the correct default; a mutant is
one call with one piece swapped, never a retyped algorithm):

- `naive_softmax_loss_and_gradient(..., error=...)`: the score-space error P - onehot(o)
  (the notes' observed-minus-expected, signed for the loss). `onehot_minus_probs` gives
  the log-likelihood's gradient (`skipgram-grad-sign`), `minus_onehot` drops the
  expectation (`skipgram-grad-no-expectation`); `outside_error=probs_only` drops the -1
  at row o of grad_U only (`skipgram-gradU-no-onehot`).
- `neg_sampling_loss_and_gradient(..., noise_sign=-1.0, scatter=np.add.at)`:
  `noise_sign=+1.0` scores noise words with log σ(+u_k·v_c) (`sgns-negatives-wrong-sign`);
  `scatter=buffered_scatter_add` counts a repeated negative once in grad_U, as
  `grad_U[idx] += rows` does (`sgns-negatives-deduplicated`); passing
  `np.unique(neg_indices)` deduplicates the loss too.
- `noise_distribution(counts, power=1.0)` (`noise-no-power`).
- `glove_weight(X, cap=False)` (`glove-weight-uncapped`); `glove_loss(..., include=...)`
  chooses which entries enter the sum (`glove-zero-counts-included`); `glove_loss(...,
  total=...)` combines the weighted squared residuals (glove.c's `0.5 * Σ`: `halved_sum`;
  a mean over the summed pairs or over all V² entries: `mean_over_pairs`, `mean_over_entries`).
- `analogy(..., exclude_inputs=False)` (`analogy-inputs-not-excluded`); `offset=` and
  `similarity=` swap the target vector and the score (the hidden cases are chosen so that a
  wrong target, a dot product or a global norm, or a large epsilon picks another word);
  `offset=unit_offset` is gensim's `most_similar`: each input vector scaled to length 1 first.
- `cooccurrence_matrix(..., offsets=...)`: the relative positions counted (0 included: a word
  is its own neighbour; only 1 … window: a one-sided window); `weight(s)` what one neighbour
  at offset s adds (GloVe's cooccur.c adds 1/|s|: `inverse_distance`).
- `svd_embeddings(..., side="V" | scale=False | truncate=False | power=0.5)`: the rows of V
  instead of U, U without Σ, no truncation to k, U Σ^½ (hyperwords' eigenvalue weighting).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from reference.functional import log_sigmoid, log_softmax, sigmoid, softmax

__all__ = [
    "softmax",
    "skipgram_probabilities",
    "probs_minus_onehot",
    "onehot_minus_probs",
    "minus_onehot",
    "probs_only",
    "naive_softmax_loss_and_gradient",
    "buffered_scatter_add",
    "neg_sampling_loss_and_gradient",
    "noise_distribution",
    "glove_weight",
    "positive_counts",
    "glove_loss",
    "glove_loss_and_gradient",
    "plain_sum",
    "halved_sum",
    "mean_over_pairs",
    "mean_over_entries",
    "unit_offset",
    "inverse_distance",
    "cooccurrence_matrix",
    "both_sides",
    "svd_embeddings",
    "gram_matrix",
    "cosine_matrix",
    "cosine_similarity",
    "analogy",
]

ErrorFn = Callable[[np.ndarray, int], np.ndarray]  # (P (V,), o) -> (V,)
ScatterFn = Callable[[np.ndarray, np.ndarray, np.ndarray], None]


# ---------------------------------------------------------------- naive softmax skip-gram


def skipgram_probabilities(v_c: np.ndarray, U: np.ndarray) -> np.ndarray:
    """P(·|c) = softmax(U v_c): P(o|c) = exp(u_o·v_c) / Σ_w exp(u_w·v_c)."""
    return softmax(np.asarray(U, dtype=np.float64) @ np.asarray(v_c, dtype=np.float64))  # (V,)


def _onehot(o: int, V: int) -> np.ndarray:
    y = np.zeros(V)  # (V,)
    y[o] = 1.0
    return y


def probs_minus_onehot(P: np.ndarray, o: int) -> np.ndarray:
    """∂(-log P(o|c))/∂scores = P - onehot(o): expected minus observed (the correct error)."""
    return P - _onehot(o, P.shape[-1])  # (V,)


def onehot_minus_probs(P: np.ndarray, o: int) -> np.ndarray:
    """onehot(o) - P: the log-likelihood's gradient, observed minus expected (a wrong sign for the loss)."""
    return _onehot(o, P.shape[-1]) - P  # (V,)


def minus_onehot(P: np.ndarray, o: int) -> np.ndarray:
    """-onehot(o): the error with the expected-vector term dropped."""
    return -_onehot(o, P.shape[-1])  # (V,)


def probs_only(P: np.ndarray, o: int) -> np.ndarray:
    """P: the error without the -1 at row o."""
    return np.array(P, dtype=np.float64)  # (V,)


def naive_softmax_loss_and_gradient(
    v_c: np.ndarray,
    o: int,
    U: np.ndarray,
    *,
    error: ErrorFn = probs_minus_onehot,
    outside_error: ErrorFn | None = None,
) -> tuple[float, np.ndarray, np.ndarray]:
    """loss = -log P(o|c); grad_v_c = Σ_x P(x|c) u_x - u_o = U^T (P - y); grad_U = (P - y) v_c^T.

    Hooks: `error(P, o)` is the score-space error used for grad_v_c (and grad_U unless
    `outside_error` is given, which then is used for grad_U alone).
    """
    v_c = np.asarray(v_c, dtype=np.float64)  # (d,)
    U = np.asarray(U, dtype=np.float64)  # (V, d)
    P = skipgram_probabilities(v_c, U)  # (V,)
    loss = float(-log_softmax(U @ v_c)[o])  # log-sum-exp: finite even when P[o] underflows
    err_c = error(P, o)  # (V,)
    err_u = err_c if outside_error is None else outside_error(P, o)  # (V,)
    grad_v_c = U.T @ err_c  # (d,)
    grad_U = np.outer(err_u, v_c)  # (V, d)
    return loss, grad_v_c, grad_U


# ---------------------------------------------------------------- negative sampling


def buffered_scatter_add(target: np.ndarray, idx: np.ndarray, rows: np.ndarray) -> None:
    """target[idx] += rows with numpy's buffered fancy indexing: a repeated index counts once."""
    target[idx] += rows


def neg_sampling_loss_and_gradient(
    v_c: np.ndarray,
    o: int,
    U: np.ndarray,
    neg_indices: np.ndarray,
    *,
    noise_sign: float = -1.0,
    scatter: ScatterFn = np.add.at,
) -> tuple[float, np.ndarray, np.ndarray]:
    """loss = -log σ(u_o·v_c) - Σ_k log σ(-u_k·v_c), every occurrence of a repeated k counted.

    grad_v_c = (σ(u_o·v_c) - 1) u_o + Σ_k σ(u_k·v_c) u_k;  grad_U[o] += (σ(u_o·v_c) - 1) v_c,
    grad_U[k] += σ(u_k·v_c) v_c for each k. Hooks: `noise_sign` is the sign s in the noise
    term log σ(s u_k·v_c) (correct: -1); `scatter(grad_U, idx, rows)` accumulates the noise
    rows (correct: np.add.at, unbuffered).
    """
    v_c = np.asarray(v_c, dtype=np.float64)  # (d,)
    U = np.asarray(U, dtype=np.float64)  # (V, d)
    neg = np.asarray(neg_indices, dtype=np.int64)  # (K,)
    s_o = float(U[o] @ v_c)
    s_k = U[neg] @ v_c  # (K,)
    loss = float(-log_sigmoid(s_o) - np.sum(log_sigmoid(noise_sign * s_k)))
    d_o = float(sigmoid(s_o)) - 1.0  # ∂loss/∂s_o = -σ(-s_o)
    d_k = -noise_sign * sigmoid(-noise_sign * s_k)  # (K,) ∂loss/∂s_k; = σ(s_k) when s = -1
    grad_v_c = d_o * U[o] + d_k @ U[neg]  # (d,)
    grad_U = np.zeros_like(U)  # (V, d)
    grad_U[o] += d_o * v_c
    scatter(grad_U, neg, np.outer(d_k, v_c))  # (K, d) rows, one per sample
    return loss, grad_v_c, grad_U


def noise_distribution(counts: np.ndarray, power: float = 0.75) -> np.ndarray:
    """P_n(w) = count(w)^power / Σ_w' count(w')^power (unigram^{3/4}, renormalised)."""
    c = np.asarray(counts, dtype=np.float64) ** power  # (V,)
    return c / c.sum()


# ---------------------------------------------------------------- GloVe


def glove_weight(
    X: np.ndarray, x_max: float = 100.0, alpha: float = 0.75, *, cap: bool = True
) -> np.ndarray:
    """f(x) = (x/x_max)^alpha for x < x_max, 1 at and above x_max, 0 at x = 0.

    Hook: `cap=False` keeps (x/x_max)^alpha above x_max too.
    """
    X = np.asarray(X, dtype=np.float64)
    f = (np.maximum(X, 0.0) / x_max) ** alpha
    return np.minimum(f, 1.0) if cap else f


def positive_counts(X: np.ndarray) -> np.ndarray:
    """The entries GloVe's sum runs over: X_ij > 0 (log X_ij is undefined at 0)."""
    return np.asarray(X) > 0


def _glove_residual(W, W_tilde, b, b_tilde, X, include) -> tuple[np.ndarray, np.ndarray]:
    """r_ij = w_i·w̃_j + b_i + b̃_j - log X_ij on the included entries, 0 elsewhere; and the mask."""
    X = np.asarray(X, dtype=np.float64)  # (V, V)
    mask = np.asarray(include(X), dtype=bool)  # (V, V)
    pred = W @ W_tilde.T + b[:, None] + b_tilde[None, :]  # (V, V) w_i·w̃_j + b_i + b̃_j
    with np.errstate(divide="ignore", invalid="ignore"):
        # log only where summed; a mutant that includes zeros gets log 0 = -inf there
        logX = np.where(mask, np.log(np.where(mask, X, 1.0)), 0.0)  # (V, V)
    return np.where(mask, pred - logX, 0.0), mask  # (V, V)


def plain_sum(terms: np.ndarray, mask: np.ndarray) -> float:
    """Σ_ij of the weighted squared residuals (zero outside the mask): the handout's J."""
    return float(np.sum(terms))


def halved_sum(terms: np.ndarray, mask: np.ndarray) -> float:
    """½ Σ: GloVe's own C code (glove.c: `cost += 0.5 * fdiff * diff`)."""
    return 0.5 * float(np.sum(terms))


def mean_over_pairs(terms: np.ndarray, mask: np.ndarray) -> float:
    """The mean over the summed pairs X_ij > 0 (a PyTorch `loss.mean()` over the nonzero pairs)."""
    return float(np.sum(terms)) / float(np.sum(mask))


def mean_over_entries(terms: np.ndarray, mask: np.ndarray) -> float:
    """The mean over all V² entries (a `.mean()` of the masked dense matrix)."""
    return float(np.sum(terms)) / float(np.size(terms))


def glove_loss(
    W: np.ndarray,
    W_tilde: np.ndarray,
    b: np.ndarray,
    b_tilde: np.ndarray,
    X: np.ndarray,
    x_max: float = 100.0,
    alpha: float = 0.75,
    *,
    weight: Callable[..., np.ndarray] = glove_weight,
    include: Callable[[np.ndarray], np.ndarray] = positive_counts,
    total: Callable[[np.ndarray, np.ndarray], float] = plain_sum,
) -> float:
    """J = Σ_{X_ij > 0} f(X_ij) (w_i·w̃_j + b_i + b̃_j - log X_ij)^2.

    Hooks: `weight(X, x_max, alpha)` is f; `include(X)` the bool mask of summed entries;
    `total(terms, mask)` combines the (V, V) terms f r² (zero outside the mask).
    """
    W = np.asarray(W, dtype=np.float64)  # (V, d)
    r, mask = _glove_residual(
        W,
        np.asarray(W_tilde, dtype=np.float64),
        np.asarray(b, dtype=np.float64),
        np.asarray(b_tilde, dtype=np.float64),
        X,
        include,
    )  # (V, V)
    f = np.where(mask, weight(np.asarray(X, dtype=np.float64), x_max, alpha), 0.0)  # (V, V)
    return total(f * r * r, mask)


def glove_loss_and_gradient(
    W: np.ndarray,
    W_tilde: np.ndarray,
    b: np.ndarray,
    b_tilde: np.ndarray,
    X: np.ndarray,
    x_max: float = 100.0,
    alpha: float = 0.75,
    *,
    weight: Callable[..., np.ndarray] = glove_weight,
    include: Callable[[np.ndarray], np.ndarray] = positive_counts,
) -> tuple[float, dict[str, np.ndarray]]:
    """J as in `glove_loss`, with ∂J/∂W = 2 (f⊙r) W̃, ∂J/∂W̃ = 2 (f⊙r)^T W, ∂J/∂b = 2 Σ_j f r, ∂J/∂b̃ = 2 Σ_i f r."""
    W = np.asarray(W, dtype=np.float64)  # (V, d)
    W_tilde = np.asarray(W_tilde, dtype=np.float64)  # (V, d)
    b = np.asarray(b, dtype=np.float64)  # (V,)
    b_tilde = np.asarray(b_tilde, dtype=np.float64)  # (V,)
    r, mask = _glove_residual(W, W_tilde, b, b_tilde, X, include)  # (V, V)
    f = np.where(mask, weight(np.asarray(X, dtype=np.float64), x_max, alpha), 0.0)  # (V, V)
    fr = f * r  # (V, V)
    loss = float(np.sum(fr * r))
    grads = {
        "W": 2.0 * fr @ W_tilde,  # (V, d)
        "W_tilde": 2.0 * fr.T @ W,  # (V, d)
        "b": 2.0 * fr.sum(axis=1),  # (V,)
        "b_tilde": 2.0 * fr.sum(axis=0),  # (V,)
    }
    return loss, grads


# ---------------------------------------------------------------- count-based vectors


def both_sides(window: int) -> list[int]:
    """The offsets of a symmetric window: -window … -1 and 1 … window (the word itself excluded)."""
    return [s for s in range(-window, window + 1) if s != 0]


def inverse_distance(s: int) -> float:
    """1/|s|: what GloVe's cooccur.c adds for a neighbour s positions away (its default)."""
    return 1.0 / abs(s)


def cooccurrence_matrix(
    corpus: Sequence[Sequence[str]],
    vocab: Sequence[str],
    window: int = 1,
    *,
    offsets: Callable[[int], Sequence[int]] = both_sides,
    weight: Callable[[int], float] | None = None,
) -> np.ndarray:
    """X_ij = number of times word j occurs within `window` positions of word i (symmetric).

    Hooks: `offsets(window)` are the relative positions counted as neighbours (a word counted
    as its own neighbour includes 0; a one-sided window keeps only 1 … window); `weight(s)` is
    what one neighbour at offset s adds (default 1: a count).
    """
    index = {w: i for i, w in enumerate(vocab)}
    X = np.zeros((len(vocab), len(vocab)))  # (V, V)
    for sentence in corpus:
        ids = [index[w] for w in sentence]
        for t, i in enumerate(ids):
            for s in offsets(window):
                if 0 <= t + s < len(ids):
                    X[i, ids[t + s]] += 1.0 if weight is None else weight(s)
    return X


def svd_embeddings(
    X: np.ndarray,
    k: int,
    *,
    side: str = "U",
    scale: bool = True,
    truncate: bool = True,
    power: float = 1.0,
) -> np.ndarray:
    """Rows of U_k Σ_k from X = U Σ V^T: the best rank-k embedding of the co-occurrence rows.

    Singular vectors are defined up to the sign of each column, so is the result. Hooks:
    `side="V"` takes the rows of V (the context side) instead of U, `scale=False` leaves out
    Σ, `truncate=False` keeps every singular direction instead of the first k, `power=0.5`
    scales by Σ^½ (hyperwords' eigenvalue weighting, Levy, Goldberg & Dagan 2015).
    """
    X = np.asarray(X, dtype=np.float64)  # (V, C)
    U, S, Vh = np.linalg.svd(X, full_matrices=False)  # (V, r), (r,), (r, C)
    vectors = U if side == "U" else Vh.T  # (V, r) or (C, r)
    n = k if truncate else S.shape[0]
    return vectors[:, :n] * S[:n] ** power if scale else vectors[:, :n].copy()  # (V, k)


def gram_matrix(E: np.ndarray) -> np.ndarray:
    """G = E E^T: every dot product between rows, unchanged by flipping the sign of a column."""
    E = np.asarray(E, dtype=np.float64)  # (V, k)
    return E @ E.T  # (V, V)


def cosine_matrix(E: np.ndarray) -> np.ndarray:
    """C_ij = cos(e_i, e_j) for every pair of rows (a zero row gets 0): sign-free like the Gram."""
    E = np.asarray(E, dtype=np.float64)  # (V, k)
    norms = np.linalg.norm(E, axis=-1)  # (V,)
    denom = np.outer(norms, norms)  # (V, V)
    G = gram_matrix(E)
    return np.divide(G, denom, out=np.zeros_like(G), where=denom > 0)


# ---------------------------------------------------------------- similarity and analogy


def cosine_similarity(E: np.ndarray, q: np.ndarray) -> np.ndarray:
    """cos(e_i, q) = e_i·q / (‖e_i‖ ‖q‖) for each row of E (a zero vector gets 0)."""
    E = np.asarray(E, dtype=np.float64)  # (..., d)
    q = np.asarray(q, dtype=np.float64)  # (d,)
    denom = np.linalg.norm(E, axis=-1) * np.linalg.norm(q)  # (...)
    dots = E @ q  # (...)
    return np.divide(dots, denom, out=np.zeros_like(dots), where=denom > 0)


def analogy(
    E: np.ndarray,
    vocab: list[str],
    a: str,
    b: str,
    c: str,
    *,
    exclude_inputs: bool = True,
    offset: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None,
    similarity: Callable[[np.ndarray, np.ndarray], np.ndarray] = cosine_similarity,
) -> str:
    """a : b :: c : ? = argmax_w cos(e_w, e_b - e_a + e_c) over w ∉ {a, b, c}.

    Ties go to the earlier vocabulary word. Hooks: `exclude_inputs=False` lets a, b, c win;
    `offset(e_a, e_b, e_c)` is the target vector (correct: e_b - e_a + e_c); `similarity(E, q)`
    scores every row against it (correct: the cosine, each row by its own norm).
    """
    E = np.asarray(E, dtype=np.float64)  # (V, d)
    index = {w: i for i, w in enumerate(vocab)}
    for w in (a, b, c):
        if w not in index:
            raise ValueError(f"expected a word of the vocabulary, got {w!r}")
    e_a, e_b, e_c = E[index[a]], E[index[b]], E[index[c]]  # (d,) each
    target = e_b - e_a + e_c if offset is None else offset(e_a, e_b, e_c)  # (d,)
    excluded = [index[a], index[b], index[c]] if exclude_inputs else []
    return vocab[best_excluding(similarity(E, target), excluded)]


def unit_offset(e_a: np.ndarray, e_b: np.ndarray, e_c: np.ndarray) -> np.ndarray:
    """ê_b - ê_a + ê_c with ê = e/‖e‖: gensim's `most_similar(positive=[b, c], negative=[a])`
    (its mean of the unit vectors has the same direction, so the same cosines)."""
    return e_b / np.linalg.norm(e_b) - e_a / np.linalg.norm(e_a) + e_c / np.linalg.norm(e_c)


def best_excluding(sims: np.ndarray, excluded: list[int]) -> int:
    """The index of the best score among the rows not in `excluded` (the earlier on ties)."""
    sims = np.array(sims, dtype=np.float64)  # (V,) a copy
    sims[excluded] = -np.inf
    return int(np.argmax(sims))
