"""Seq2seq attention and decoding (notes §4): score functions, attend, greedy and beam search.

Attention is score -> softmax -> weighted sum; only the score function varies. Decoding
follows the handout's exact beam search.

Hooks for the grader's mutants: `attend(..., normalize=lambda e: e)` skips the softmax
(`attention-no-softmax`); `additive_scores(..., activation=lambda u: u)` drops the tanh
(`additive-missing-tanh`); `multiplicative_scores(s, H, W.T)` is the transposed form
(`multiplicative-transposed`, square W); `beam_search(..., length_normalize=False)`
(`beam-no-length-normalization`); `greedy_decode(..., choose=last_argmax | keep_bos=True |
stop_at_eos=False)`: ties to the larger id, bos returned, not stopping at eos.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from reference.functional import softmax

__all__ = [
    "dot_scores",
    "multiplicative_scores",
    "reduced_rank_scores",
    "additive_scores",
    "attend",
    "first_argmax",
    "last_argmax",
    "small_int_identity",
    "greedy_decode",
    "hypothesis_key",
    "fairseq_select",
    "beam_search",
]

NextLogProbs = Callable[[list[int]], np.ndarray]
Hypothesis = tuple[list[int], float]  # (tokens from bos on, summed log-probability)


# ---------------------------------------------------------------- attention scores


def dot_scores(s: np.ndarray, H: np.ndarray) -> np.ndarray:
    """e_i = s·h_i."""
    return np.asarray(H, dtype=np.float64) @ np.asarray(s, dtype=np.float64)  # (N,)


def multiplicative_scores(s: np.ndarray, H: np.ndarray, W: np.ndarray) -> np.ndarray:
    """e_i = s^T W h_i, W of shape (d_s, d_h)."""
    H = np.asarray(H, dtype=np.float64)  # (N, d_h)
    return H @ (np.asarray(W, dtype=np.float64).T @ np.asarray(s, dtype=np.float64))  # (N,)


def reduced_rank_scores(s: np.ndarray, H: np.ndarray, U: np.ndarray, V: np.ndarray) -> np.ndarray:
    """e_i = (U s)·(V h_i), U (k, d_s), V (k, d_h)."""
    Us = np.asarray(U, dtype=np.float64) @ np.asarray(s, dtype=np.float64)  # (k,)
    VH = np.asarray(H, dtype=np.float64) @ np.asarray(V, dtype=np.float64).T  # (N, k)
    return VH @ Us  # (N,)


def additive_scores(
    s: np.ndarray,
    H: np.ndarray,
    W1: np.ndarray,
    W2: np.ndarray,
    v: np.ndarray,
    *,
    activation: Callable[[np.ndarray], np.ndarray] = np.tanh,
) -> np.ndarray:
    """e_i = v·tanh(W1 h_i + W2 s), W1 (k, d_h), W2 (k, d_s), v (k,)."""
    hidden = np.asarray(H, dtype=np.float64) @ np.asarray(W1, dtype=np.float64).T  # (N, k)
    hidden = hidden + np.asarray(W2, dtype=np.float64) @ np.asarray(s, dtype=np.float64)  # (N, k)
    return activation(hidden) @ np.asarray(v, dtype=np.float64)  # (N,)


def attend(
    scores: np.ndarray,
    H: np.ndarray,
    *,
    normalize: Callable[[np.ndarray], np.ndarray] = softmax,
) -> tuple[np.ndarray, np.ndarray]:
    """α = softmax(e), a = Σ_i α_i h_i; returns (α, a)."""
    alpha = np.asarray(normalize(np.asarray(scores, dtype=np.float64)), dtype=np.float64)  # (N,)
    return alpha, alpha @ np.asarray(H, dtype=np.float64)  # (N,), (d_h,)


# ---------------------------------------------------------------- decoding


def first_argmax(log_probs: np.ndarray) -> int:
    """argmax with ties to the smaller id (numpy's argmax keeps the first maximum)."""
    return int(np.argmax(log_probs))


def last_argmax(log_probs: np.ndarray) -> int:
    """argmax with ties to the larger id (`>=` in a running-max loop)."""
    return int(log_probs.shape[0] - 1 - np.argmax(log_probs[::-1]))


def small_int_identity(w: int, eos: int) -> bool:
    """What `w is eos` gives on two equal ints that were computed apart: True only where CPython
    shares one object per value (-5 … 256)."""
    return w == eos and -5 <= eos <= 256


def greedy_decode(
    next_log_probs: NextLogProbs,
    bos: int,
    eos: int,
    max_len: int,
    *,
    choose: Callable[[np.ndarray], int] = first_argmax,
    keep_bos: bool = False,
    stop_at_eos: bool = True,
    is_eos: Callable[[int, int], bool] = lambda w, eos: w == eos,
) -> list[int]:
    """y_t = argmax next_log_probs(prefix) (ties to the smaller id) until eos or max_len tokens.

    Returns the tokens after bos, eos included when it was chosen. Hooks: `choose` picks the
    token (`last_argmax`: ties to the larger id), `keep_bos=True` returns bos too,
    `stop_at_eos=False` goes on to max_len tokens after eos, `is_eos(w, eos)` tests a token
    (`small_int_identity`: `w is eos`, true only for the ids CPython caches, -5 … 256).
    """
    tokens = [bos]
    for _ in range(max_len):
        w = choose(np.asarray(next_log_probs(list(tokens)), dtype=np.float64))  # from (V,)
        tokens.append(w)
        if is_eos(w, eos) and stop_at_eos:
            break
    return tokens if keep_bos else tokens[1:]


def tokens_after_bos(tokens: list[int]) -> int:
    """The length a hypothesis is normalised by: its tokens after bos (eos included)."""
    return len(tokens) - 1


def hypothesis_key(
    tokens: list[int],
    score: float,
    length_normalize: bool,
    length: Callable[[list[int]], int] = tokens_after_bos,
) -> float:
    """The final ranking key: score / (tokens after bos) when normalising, else the score."""
    n = length(tokens)
    return score / n if length_normalize and n > 0 else score


def fairseq_select(
    ranked: list[Hypothesis], beam_size: int, eos: int
) -> tuple[list[Hypothesis], list[Hypothesis]]:
    """fairseq's step (SequenceGenerator): of the 2·beam_size best candidates, those among the
    first beam_size that end in eos finish, and the live beam is the first beam_size that do
    not: a finished hypothesis leaves the beam instead of taking one of its slots."""
    top = ranked[: 2 * beam_size]
    done = [c for c in top[:beam_size] if c[0][-1] == eos]
    return done, [c for c in top if c[0][-1] != eos][:beam_size]


def beam_search(
    next_log_probs: NextLogProbs,
    bos: int,
    eos: int,
    beam_size: int,
    max_len: int,
    length_normalize: bool = True,
    *,
    length: Callable[[list[int]], int] = tokens_after_bos,
    start_score: float = 0.0,
    rank: Callable[[list[int], float], float] | None = None,
    keep: int | None = None,
    read: Callable[[list[int]], Sequence[float]] | None = None,
    select: Callable[[list[Hypothesis], int, int], tuple[list[Hypothesis], list[Hypothesis]]]
    | None = None,
    finish: Callable[[float, float], float] | None = None,
) -> list[int]:
    """The handout's beam search: score = Σ log P(y_i | y_<i) over tokens after bos.

    Each of at most `max_len` steps expands every live hypothesis by every token and keeps
    the `beam_size` best candidates; kept candidates ending in eos are finished. Stops once
    `beam_size` have finished or none is live. The winner among the finished (the live if
    none finished) maximises score / length when `length_normalize`, else score. Ties: the
    earlier candidate wins (live order, then token id; finishing order at the end).
    Returns the tokens after bos, eos included when it finished. Hooks (wrong forms the hidden
    trees must tell apart): `length(tokens)` is the normaliser (correct: `tokens_after_bos`),
    `start_score` the score of the bare [bos] (correct: 0), `rank(tokens, score)` replaces the
    final ranking key (correct: `hypothesis_key`), `keep` the candidates kept per step (correct:
    None, `beam_size`), `select(ranked, beam_size, eos)` the step's (newly finished, live) from
    the ranked candidates (correct: None, the first `beam_size` split by their last token;
    `fairseq_select`: finished hypotheses leave the beam), `finish(score, eos_logp)` a finished
    hypothesis' stored score (correct: None, the score with eos; `lambda s, lp: s - lp` drops
    eos's log-probability). `read(tokens)` is not a mistake but a faster way to the same numbers:
    the prefix's log-probabilities as plain floats, read in place of
    `next_log_probs(tokens)` (the grader's hidden trees are tables of floats).
    """
    if beam_size < 1:
        raise ValueError(f"expected beam_size >= 1, got {beam_size}")
    live: list[tuple[list[int], float]] = [([bos], start_score)]
    finished: list[tuple[list[int], float]] = []
    for _ in range(max_len):
        candidates: list[tuple[list[int], float]] = []
        for tokens, score in live:
            if read is None:
                logp = np.asarray(next_log_probs(list(tokens)), dtype=np.float64).tolist()  # (V,)
            else:
                logp = read(tokens)  # (V,) the same floats
            candidates.extend((tokens + [w], score + logp[w]) for w in range(len(logp)))
        ranked = sorted(candidates, key=lambda cand: -cand[1])  # stable: ties keep order
        parents = {tuple(t): s for t, s in live} if finish is not None else {}
        if select is None:
            done, live = [], []
            for tokens, score in ranked[: keep or beam_size]:
                (done if tokens[-1] == eos else live).append((tokens, score))
        else:
            done, live = select(ranked, beam_size, eos)
        if finish is not None:
            done = [(t, finish(s, s - parents[tuple(t[:-1])])) for t, s in done]
        finished.extend(done)
        if len(finished) >= beam_size or not live:
            break
    pool = finished if finished else live
    if rank is None:

        def rank(tokens: list[int], score: float) -> float:
            return hypothesis_key(tokens, score, length_normalize, length)

    best_tokens, _ = max(
        pool, key=lambda hyp: rank(hyp[0], hyp[1])
    )  # max keeps the first of equal keys
    return best_tokens[1:]
