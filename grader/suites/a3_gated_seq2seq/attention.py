"""a3's attention scores and `attend`: dot, multiplicative, reduced-rank and additive scores,
the softmax-weighted sum, and the mistakes their cases must tell apart."""

from __future__ import annotations

import numpy as np

from grader.mutants import AnyOf
from grader.questions import Case
from reference import seq2seq

# ---------------------------------------------------------------- attention scores


def _dot_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([33, seed])
    visible = (np.array([1.0, 2.0]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    cases = [Case("small example", visible, visible=True)]
    for i, (N, d) in enumerate([(5, 3), (2, 6), (4, 4)]):
        cases.append(
            Case(
                f"hidden case {i + 1}: N={N} encoder states, d={d}",
                (rng.normal(size=d), rng.normal(size=(N, d))),
            )
        )
    return cases


def _multiplicative_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([34, seed])
    visible = (
        np.array([1.0, -1.0]),
        np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
        np.array([[1.0, 2.0], [0.0, 1.0]]),  # square and not symmetric
    )
    cases = [Case("small example (square, non-symmetric W)", visible, visible=True)]
    # Mostly square non-symmetric W (a transpose changes values), one non-square (d_s != d_h).
    for i, (N, d_s, d_h) in enumerate([(4, 3, 3), (5, 4, 4), (3, 2, 5)]):
        args = (rng.normal(size=d_s), rng.normal(size=(N, d_h)), rng.normal(size=(d_s, d_h)))
        shape = "square non-symmetric W" if d_s == d_h else "non-square W"
        cases.append(Case(f"hidden case {i + 1}: N={N}, d_s={d_s}, d_h={d_h}, {shape}", args))
    return cases


def _reduced_rank_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([35, seed])
    visible = (
        np.array([1.0, 0.0, -1.0]),
        np.array([[1.0, 2.0], [0.0, 1.0]]),
        np.array([[1.0, 0.0, 1.0]]),
        np.array([[2.0, -1.0]]),
    )
    cases = [Case("small example (k=1)", visible, visible=True)]
    for i, (N, d_s, d_h, k) in enumerate([(4, 3, 5, 2), (3, 6, 2, 3), (5, 4, 4, 2)]):
        args = (
            rng.normal(size=d_s),
            rng.normal(size=(N, d_h)),
            rng.normal(size=(k, d_s)),
            rng.normal(size=(k, d_h)),
        )
        cases.append(Case(f"hidden case {i + 1}: N={N}, d_s={d_s}, d_h={d_h}, rank k={k}", args))
    return cases


def _additive_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([36, seed])
    visible = (
        np.array([1.0, -1.0]),
        np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]]),
        np.array([[0.5, -1.0, 0.0], [1.0, 0.5, 0.5]]),
        np.array([[1.0, 0.0], [0.5, 1.0]]),
        np.array([1.0, -2.0]),
    )
    cases = [Case("small example", visible, visible=True)]
    for i, (N, d_s, d_h, k) in enumerate([(4, 3, 5, 6), (3, 2, 4, 3), (5, 4, 3, 2)]):
        args = (
            rng.normal(size=d_s),
            rng.normal(size=(N, d_h)),
            rng.normal(size=(k, d_h)),  # W1 (k, d_h); pre-activations of order 1: tanh bends
            rng.normal(size=(k, d_s)),  # W2 (k, d_s)
            rng.normal(size=k),
        )
        cases.append(
            Case(f"hidden case {i + 1}: N={N}, d_s={d_s}, d_h={d_h}, attention width k={k}", args)
        )
    return cases


def _attend_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([37, seed])
    anchor = (np.array([2.0, 0.0, 1.0]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    cases = [Case("notes' numeric anchor (e = 2, 0, 1)", anchor, visible=True)]
    for i, (N, d) in enumerate([(5, 3), (4, 2)]):
        cases.append(
            Case(
                f"hidden case {i + 1}: N={N} scores, d_h={d}",
                (rng.normal(size=N) * 2, rng.normal(size=(N, d))),
            )
        )
    big = rng.normal(size=4) * 3 + 800.0  # exp(800) overflows: the max shift is needed
    cases.append(
        Case(
            "hidden case 3: large scores (exp overflows without the max shift)",
            (big, rng.normal(size=(4, 3))),
        )
    )
    spread = np.array([800.0, -800.0, 795.0, 0.0, -10.0])[rng.permutation(5)] + np.round(
        rng.normal(size=5), 1
    )
    cases.append(
        Case(
            "hidden case 4: scores from -800 to 800 (a shift by the minimum overflows)",
            (spread, rng.normal(size=(5, 3))),
        )
    )
    return cases


def _multiplicative_transposed(s, H, W):
    return seq2seq.multiplicative_scores(s, H, np.asarray(W).T)


def _additive_no_tanh(s, H, W1, W2, v):
    return seq2seq.additive_scores(s, H, W1, W2, v, activation=lambda u: u)


def _sum_normalize(e: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return e / e.sum()


def _attend_no_softmax(scores, H):
    """Weights without the exponential: the raw scores, or the scores divided by their sum
    (normalised, but a sum-to-one that is not a softmax: negative weights, no exp)."""
    return AnyOf(
        seq2seq.attend(scores, H, normalize=lambda e: e),
        seq2seq.attend(scores, H, normalize=_sum_normalize),
    )
