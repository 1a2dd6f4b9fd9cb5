"""The vanilla RNN forward pass, its output head and the per-position cross-entropy (notes §2).

Row-vector convention of the slides' microscope: z_t = x_t W_x^T + h_{t-1} W_h^T + b_h,
h_t = tanh(z_t), h_{-1} = h0 or zeros; a_t = h_t W_o^T + b_o.

Hooks for the grader's mutants: `rnn_forward(..., activation=...)`;
`sequence_ce(..., reduce=np.sum)` (`ce-sum-not-mean`); `per_position_ce(..., base=2.0)`,
`sequence_ce(..., base=2.0)` (`ce-in-bits`: log base 2); `per_position_ce` is the piece a
perplexity mutant (`perplexity-base-2`) is built from.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from reference.functional import log_softmax

__all__ = [
    "rnn_forward",
    "previous_states",
    "output_logits",
    "per_position_ce",
    "sequence_ce",
    "sequence_perplexity",
]


def rnn_forward(
    X: np.ndarray,
    W_x: np.ndarray,
    W_h: np.ndarray,
    b_h: np.ndarray,
    h0: np.ndarray | None = None,
    *,
    activation: Callable[[np.ndarray], np.ndarray] = np.tanh,
) -> tuple[np.ndarray, np.ndarray]:
    """z_t = x_t W_x^T + h_{t-1} W_h^T + b_h, h_t = tanh(z_t); returns (Z, Hs), both (T, H)."""
    X = np.asarray(X, dtype=np.float64)  # (T, D)
    W_x = np.asarray(W_x, dtype=np.float64)  # (H, D)
    W_h = np.asarray(W_h, dtype=np.float64)  # (H, H)
    b_h = np.asarray(b_h, dtype=np.float64)  # (H,)
    T, H = X.shape[0], W_h.shape[0]
    h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)  # (H,)
    Z = np.zeros((T, H))  # (T, H)
    Hs = np.zeros((T, H))  # (T, H)
    inputs = X @ W_x.T  # (T, H) the input path of every step at once
    for t in range(T):
        Z[t] = inputs[t] + h @ W_h.T + b_h  # (H,)
        h = activation(Z[t])  # (H,)
        Hs[t] = h
    return Z, Hs


def previous_states(Hs: np.ndarray, h0: np.ndarray | None = None) -> np.ndarray:
    """The rows h_{t-1} for t = 0..T-1: h_{-1} (h0 or zeros) followed by h_0..h_{T-2}."""
    Hs = np.asarray(Hs, dtype=np.float64)  # (T, H)
    first = np.zeros(Hs.shape[1]) if h0 is None else np.asarray(h0, dtype=np.float64)  # (H,)
    return np.vstack([first[None, :], Hs[:-1]])  # (T, H)


def output_logits(Hs: np.ndarray, W_o: np.ndarray, b_o: np.ndarray) -> np.ndarray:
    """a_t = h_t W_o^T + b_o for every position."""
    return np.asarray(Hs, dtype=np.float64) @ np.asarray(W_o, dtype=np.float64).T + b_o  # (T, C)


def per_position_ce(logits: np.ndarray, targets: np.ndarray, *, base: float = np.e) -> np.ndarray:
    """ℓ_t = -log softmax(a_t)[y_t] in nats (hook: another log `base`), one per position."""
    logp = log_softmax(np.asarray(logits, dtype=np.float64), axis=-1)  # (T, V)
    targets = np.asarray(targets, dtype=np.int64)  # (T,)
    return -logp[np.arange(logp.shape[0]), targets] / np.log(base)  # (T,)


def sequence_ce(
    logits: np.ndarray,
    targets: np.ndarray,
    *,
    reduce: Callable[[np.ndarray], float] = np.mean,
    base: float = np.e,
) -> float:
    """L = (1/T) Σ_t ℓ_t (hooks: `reduce` combines the per-position losses; log `base`)."""
    return float(reduce(per_position_ce(logits, targets, base=base)))


def sequence_perplexity(logits: np.ndarray, targets: np.ndarray) -> tuple[float, float]:
    """(CE, exp(CE)) with CE the mean per-position cross-entropy in nats."""
    ce = sequence_ce(logits, targets)
    return ce, float(np.exp(ce))
