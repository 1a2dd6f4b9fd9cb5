"""Hidden suite of assignment 1: word vectors (notes §1).

Every code question compares the student's function with `reference.word_vectors` on one
or two visible cases (the notes' numbers) and hidden cases drawn from the variant seed.
The hidden cases are built to separate the catalog's mistakes:

- softmax and skip-gram: non-square U (V != d), and one case whose scores are about 1000,
  so that a softmax without the max shift overflows (inf/inf = NaN); in softmax a row holding
  both +1000 and -1000 too, where a min shift overflows. Those large cases use integer or
  quarter-integer inputs, exact in float32, so float32 work still passes. The wrong-axis
  mutant is a softmax over any other axis of the array.
- SGNS: repeated negative indices (a buffered `grad_U[neg] +=` counts them once), the true
  word `o` drawn as a negative too (row o of grad_U gets both terms), small dot products on
  both sides of 0 (a sigmoid whose branch point moved off 0 is wrong there), a case with
  u_o·v_c = 1000 and one with a noise word's u_k·v_c = -1000: exp(x) / (1 + exp(x)) is NaN at
  x = 1000 there. Every loss term is then log σ(+large) = log 1 = 0, so a correct sigmoid
  followed by log (the handout's form) passes; no case needs log σ of a very negative number,
  which underflows to log 0 whatever the sigmoid.
- GloVe: counts far above x_max (a cap at 2 instead of 1 is not "uncapped"); zero counts in
  two cases only, so that a NaN from another mistake is not read as "zeros included".
- analogy: embeddings drawn until an input word would win without the exclusion, and until a
  wrong target (e_b - e_a, e_b alone, the signs of a and c swapped), a dot product (a global
  norm(E)) or a large epsilon picks another word than the cosine.
- co-occurrence: windows of 1 and 3, sentences shorter than the window, a word next to a copy
  of itself (its neighbour, never itself); window 3 tells a one-sided window from a window
  whose bounds are off.
- SVD embeddings, graded up to the sign of each column (Gram and cosine matrices, a custom judge):
  non-symmetric and word-by-context matrices (where V differs from U), k below the rank, and a
  singular-value gap after the k-th so that U_k Σ_k is unique up to those signs.

It stays one file (about 1,140 lines with the domain edges and the field conventions): each
section holds a function's mistakes beside the cases built to separate them; the written
questions are the first section to move out if it grows.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import numpy as np

from grader.mutants import NONFINITE, AnyOf, any_form
from grader.questions import (
    Assignment,
    Case,
    Judgement,
    Tolerance,
    WrongForm,
)
from grader.suites._kit import choice, reference_builder, shown, written
from reference.functional import sigmoid
from reference.word_vectors import (
    analogy,
    best_excluding,
    buffered_scatter_add,
    cooccurrence_matrix,
    cosine_matrix,
    cosine_similarity,
    glove_loss,
    glove_weight,
    gram_matrix,
    halved_sum,
    inverse_distance,
    mean_over_entries,
    mean_over_pairs,
    minus_onehot,
    naive_softmax_loss_and_gradient,
    neg_sampling_loss_and_gradient,
    noise_distribution,
    onehot_minus_probs,
    probs_only,
    softmax,
    svd_embeddings,
    unit_offset,
)

FILE = "word_vectors.py"
EXP_OVERFLOW = float(np.log(np.finfo(np.float64).max))  # ≈ 709.78: exp(x) = inf above it

# The notes' numeric anchor (§1): vocabulary {a, b, c}, v_c = (1, 0), o = a.
NOTES_V_C = np.array([1.0, 0.0])
NOTES_U = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # rows u_a, u_b, u_c


# ---------------------------------------------------------------- mutants not expressible by a hook


def _raw_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp of the raw scores, no max shift: inf/inf = NaN where a score overflows exp."""
    with np.errstate(all="ignore"):
        e = np.exp(np.asarray(x, dtype=np.float64))
        return e / np.sum(e, axis=axis, keepdims=True)


def unstable_softmax(x: np.ndarray, axis: int = -1):
    """The misconception itself: no max shift. Where exp overflows (or a whole row underflows)
    the student's output holds NaN or inf in a pattern that depends on the formula
    (exp(x)/Σexp(x) gives NaN, exp(x - log Σ exp(x)) gives 0 and inf): NONFINITE there."""
    P = _raw_softmax(x, axis)
    return P if np.all(np.isfinite(P)) else NONFINITE


def _other_axis(x: np.ndarray, axis: int) -> int:
    """The axis a student who hard-codes one axis uses: 0 when asked for the last, else the last."""
    ndim = np.ndim(x)
    return 0 if axis % ndim == ndim - 1 else -1


def softmax_wrong_axis(x: np.ndarray, axis: int = -1):
    """A softmax over another axis than the one asked for: the hard-coded one (0 when asked for
    the last, else the last) first, then any other axis of the array."""
    ndim = np.ndim(x)
    first = _other_axis(x, axis)
    others = [a for a in range(ndim) if a != axis % ndim and a != first % ndim]
    outs = [softmax(x, axis=a) for a in (first, *others)]
    return outs[0] if len(outs) == 1 else AnyOf(*outs)


def softmax_over_all_entries(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """scipy.special.softmax(x) without an axis: one softmax over every entry (axis=None)."""
    return softmax(x, axis=None)


def skipgram_unstable_softmax(v_c, o, U):
    """Skip-gram with P = exp(s) / Σ exp(s) (no shift): where a score overflows exp, the loss
    (-log P[o], or log Σ exp(s) - s_o) and the gradients built from P hold NaN or inf in a
    pattern that depends on the formula, so every output is NONFINITE there."""
    P = _raw_softmax(np.asarray(U, dtype=np.float64) @ np.asarray(v_c, dtype=np.float64))  # (V,)
    if not np.all(np.isfinite(P)):
        # the loss read off P, or computed on its own with a log-sum-exp (finite, right)
        loss = naive_softmax_loss_and_gradient(v_c, o, U)[0]
        return AnyOf((NONFINITE, NONFINITE, NONFINITE), (loss, NONFINITE, NONFINITE))
    return naive_softmax_loss_and_gradient(v_c, o, U)


def sgns_unstable_sigmoid(v_c, o, U, neg_indices):
    """SGNS with a sigmoid that overflows, e.g. exp(x) / (1 + exp(x)) = inf/inf at x = 1000.

    Where some |u·v_c| exceeds the overflow point of exp (≈ 709.78 in float64) such a student
    gets NaN or inf; which outputs are hit depends on how the formula was written, so those
    outputs are "some NaN or inf" (NONFINITE) and the others the reference's. The hidden cases
    never need log σ of a very negative number, so a correct sigmoid followed by log is finite
    on all of them and is never explained by this.
    """
    loss, grad_v_c, grad_U = neg_sampling_loss_and_gradient(v_c, o, U, neg_indices)
    U = np.asarray(U, dtype=np.float64)  # (V, d)
    neg = np.asarray(neg_indices, dtype=np.int64)  # (K,)
    scores = np.concatenate(
        [[U[o] @ np.asarray(v_c, dtype=np.float64)], U[neg] @ np.asarray(v_c, dtype=np.float64)]
    )
    if np.any(np.abs(scores) > EXP_OVERFLOW):
        return NONFINITE, NONFINITE, NONFINITE
    return loss, grad_v_c, grad_U


def sgns_outside_row_overwritten(v_c, o, U, neg_indices):
    """The true word o drawn as a negative too, and its row of grad_U written with `=` instead of
    accumulated: the row keeps only the positive term (σ(u_o·v_c) - 1) v_c (assigned after the
    noise rows), or only the noise terms (the noise rows assigned after it)."""
    loss, grad_v_c, grad_U = neg_sampling_loss_and_gradient(v_c, o, U, neg_indices)
    v_c = np.asarray(v_c, dtype=np.float64)  # (d,)
    d_o = float(sigmoid(np.asarray(U, dtype=np.float64)[o] @ v_c)) - 1.0
    if o not in set(int(k) for k in np.asarray(neg_indices)):
        return loss, grad_v_c, grad_U  # nothing to overwrite: the mistake does not show
    positive_only, noise_only = grad_U.copy(), grad_U.copy()  # (V, d) each
    positive_only[o] = d_o * v_c
    noise_only[o] = grad_U[o] - d_o * v_c
    return AnyOf((loss, grad_v_c, positive_only), (loss, grad_v_c, noise_only))


def sgns_deduplicated(v_c, o, U, neg_indices):
    """A repeated noise word counted once, in either natural form: only in grad_U (a buffered
    `grad_U[neg] += rows` keeps one of the repeated updates, while the loss and grad_v_c still
    count every draw), or everywhere (the negatives deduplicated up front, `for k in set(neg)`)."""
    neg = np.asarray(neg_indices, dtype=np.int64)  # (K,)
    return AnyOf(
        neg_sampling_loss_and_gradient(v_c, o, U, neg, scatter=buffered_scatter_add),
        neg_sampling_loss_and_gradient(v_c, o, U, np.unique(neg)),
    )


def sgns_true_word_skipped(v_c, o, U, neg_indices):
    """word2vec.c's `if (target == word) continue;`: the samples equal to o dropped (no noise
    term for them), the others kept, repeats included."""
    neg = np.asarray(neg_indices, dtype=np.int64)  # (K,)
    return neg_sampling_loss_and_gradient(v_c, o, U, neg[neg != o])


def glove_averaged(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    """The mean instead of the sum: over the pairs X_ij > 0, or over all V² entries."""
    args = (W, W_tilde, b, b_tilde, X, x_max, alpha)
    return AnyOf(
        glove_loss(*args, total=mean_over_pairs), glove_loss(*args, total=mean_over_entries)
    )


def _include_all(X: np.ndarray) -> np.ndarray:
    return np.ones(np.shape(X), dtype=bool)


# ---------------------------------------------------------------- cases


def _quarters(rng: np.random.Generator, size, scale: float = 2.0) -> np.ndarray:
    """Normal draws rounded to quarters: exact in float32."""
    return np.round(rng.normal(size=size) * scale * 4) / 4


def softmax_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([101, seed])
    spread = np.array([1000.0, 0.0, -1000.0, 500.0])[
        rng.permutation(4)
    ]  # a min shift overflows here
    large = np.stack(
        [
            1000.0 + _quarters(rng, 4),
            _quarters(rng, 4),
            -1000.0 + _quarters(rng, 4),
            spread + _quarters(rng, 4),
        ]
    )  # (4, 4)
    return [
        Case("notes scores (2, 0, 1)", (np.array([2.0, 0.0, 1.0]),), visible=True),
        Case("hidden case 1: 3 rows of 5 logits", (rng.normal(size=(3, 5)) * 2,)),
        Case(
            "hidden case 2: three axes (2, 3, 4), softmax over the last",
            (rng.normal(size=(2, 3, 4)) * 2,),
        ),
        Case("hidden case 3: logits near ±1000 (one row spans both)", (large,)),
        Case(
            "hidden case 4: axis=0 (down the columns)", (rng.normal(size=(4, 3)) * 2,), {"axis": 0}
        ),
        *_softmax_edges(seed),
    ]


# The input domain of every graded function, argument by argument (issue 33, item 4): what the
# handout allows, and the edges the hidden cases are drawn at. Edge cases come after a
# question's other cases, from a stream of their own (salts 151 …), so that every earlier case
# stays exactly as it was.
DOMAINS: dict[str, dict[str, str]] = {
    "a1.softmax": {
        "x": "any shape, float; logits to ±1000 and rows spanning ±1000 (max shift); equal rows",
        "axis": "any axis of x: the last (default), 0, and a middle axis of a 3-D array",
    },
    "a1.naive_softmax": {
        "v_c": "(d,) float; scores to about 1000",
        "o": "an int in [0, V): ids above 256 in a vocabulary of 300 (`is` vs `==`)",
        "U": "(V, d), V != d; V = 300",
    },
    "a1.neg_sampling": {
        "v_c": "(d,) float; dot products to ±1000 and small ones on both sides of 0",
        "o": "an int in [0, V): above 256 in a vocabulary of 300",
        "U": "(V, d)",
        "neg_indices": "(K,) ints, repeats, o itself among them, ids above 256 (K >= 1)",
    },
    "a1.noise": {
        "counts": "(V,) counts >= 0, zeros (a word never seen), large counts",
        "power": "0.75 by default, 0.5",
    },
    "a1.glove_weight": {
        "X": "counts >= 0 of any shape: 0, below, at and far above x_max",
        "x_max, alpha": "100 and 0.75 by default, other values",
    },
    "a1.glove_loss": {
        "W, W_tilde, b, b_tilde": "(V, d), (V, d), (V,), (V,) float",
        "X": "(V, V) counts with and without zeros, far above x_max",
        "x_max, alpha": "the defaults and others",
    },
    "a1.analogy": {
        "E": "(V, d) rows of varied norms",
        "vocab": "V distinct words",
        "a, b, c": "three distinct words of vocab; an input word is the nearest to the target",
    },
    "a1.cooccurrence": {
        "corpus": "sentences of any length: shorter than the window, one word, empty",
        "vocab": "every corpus word, and words the corpus never uses (zero rows)",
        "window": ">= 1: 1 (default), 2, 3, wider than a sentence",
    },
    "a1.svd_embeddings": {
        "X": "(V, C) counts, square or not, symmetric or not",
        "k": "1 <= k < rank, with a singular-value gap after the k-th",
    },
}


def _softmax_edges(seed: int) -> list[Case]:
    """A middle axis of a 3-D array: a softmax that handles only axis 0 and the last one (by
    `x.T` or a hard-coded last axis otherwise) normalises another axis there."""
    rng = np.random.default_rng([151, seed])
    return [
        Case(
            "hidden case 5: axis=1 of a (3, 4, 5) array (a middle axis)",
            (rng.normal(size=(3, 4, 5)) * 2,),
            {"axis": 1},
        )
    ]


def _large_scores_skipgram(rng: np.random.Generator) -> tuple[np.ndarray, int, np.ndarray]:
    """v_c, o, U with integer entries and three scores near 1000 (o among them).

    The large number sits in v_c, not in U: grad_v_c = U^T (ŷ - y) then has no
    cancellation between large terms, so float32 work stays within tolerance.
    """
    V, d = 6, 4
    v_c = np.concatenate([[500.0], rng.integers(-2, 3, size=d - 1).astype(float)])  # (d,)
    U = rng.integers(-3, 4, size=(V, d)).astype(float)  # (V, d)
    U[:, 0] = rng.integers(-1, 2, size=V)
    big = rng.choice(V, size=3, replace=False)
    U[big, 0] = 2.0  # scores 1000 + a few
    return v_c, int(big[0]), U


def skipgram_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([102, seed])
    cases = shown("notes anchor: v_c = (1, 0), o = a", NOTES_V_C.copy(), 0, NOTES_U.copy())
    for i, (V, d) in enumerate([(7, 4), (5, 3)]):
        cases.append(
            Case(
                f"hidden case {i + 1}: V={V}, d={d}",
                (rng.normal(size=d), int(rng.integers(V)), rng.normal(size=(V, d))),
            )
        )
    v_c, o, U = _large_scores_skipgram(rng)
    cases.append(Case("hidden case 3: scores near 1000", (v_c, o, U)))
    edge = np.random.default_rng([152, seed])
    V, d = 300, 4
    cases.append(
        Case(
            "hidden case 4: a vocabulary of 300 words, o above 256",
            (edge.normal(size=d), int(edge.integers(257, V)), edge.normal(size=(V, d))),
        )
    )
    return cases


def _with_repeats(rng: np.random.Generator, V: int, K: int, avoid: int | None) -> np.ndarray:
    """K negative indices with at least one index drawn twice (and one three times when K >= 5)."""
    pool = [w for w in range(V) if w != avoid]
    neg = list(rng.choice(pool, size=K - 2 if K >= 5 else K - 1, replace=True))
    neg += [neg[0]] + ([neg[1]] if K >= 5 else [])
    neg = np.array(neg, dtype=np.int64)
    rng.shuffle(neg)
    return neg


def sgns_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([103, seed])
    cases = shown(
        "notes vectors, o = a, negatives [1, 2, 1]",
        NOTES_V_C.copy(),
        0,
        NOTES_U.copy(),
        np.array([1, 2, 1]),
    )
    V, d = 8, 5
    o = int(rng.integers(V))
    cases.append(
        Case(
            "hidden case 1: V=8, d=5, K=6, a negative drawn twice",
            (rng.normal(size=d), o, rng.normal(size=(V, d)), _with_repeats(rng, V, 6, avoid=o)),
        )
    )
    V, d = 6, 3
    o = int(rng.integers(V))
    neg = np.concatenate(
        [_with_repeats(rng, V, 4, avoid=None), [o]]
    )  # the true word drawn as noise too
    cases.append(
        Case(
            "hidden case 2: V=6, d=3, K=5, the outside word o drawn as a negative too "
            "(row o of grad_U gets both terms)",
            (rng.normal(size=d), o, rng.normal(size=(V, d)), neg),
        )
    )
    # u_o·v_c = 1000 + a few; the noise scores stay small.
    V, d = 7, 4
    v_c = np.concatenate([[4.0], rng.integers(-2, 3, size=d - 1).astype(float)])  # (d,)
    U = rng.integers(-2, 3, size=(V, d)).astype(float)  # (V, d)
    U[:, 0] = rng.integers(-1, 2, size=V)
    o = int(rng.integers(V))
    U[o, 0] = 250.0
    cases.append(
        Case("hidden case 3: u_o·v_c near 1000", (v_c, o, U, _with_repeats(rng, V, 5, avoid=o)))
    )
    # a noise word (drawn twice) with u_k·v_c = -1000 - a few: its term is log σ(+1000 + …) = 0,
    # so σ must be finite at +1000 (exp(x) / (1 + exp(x)) is inf/inf = NaN there).
    V, d = 6, 3
    v_c = np.concatenate([[4.0], rng.integers(-2, 3, size=d - 1).astype(float)])  # (d,)
    U = rng.integers(-2, 3, size=(V, d)).astype(float)  # (V, d)
    U[:, 0] = rng.integers(-1, 2, size=V)
    o, k = (int(w) for w in rng.choice(V, size=2, replace=False))
    U[k, 0] = -250.0
    neg = np.concatenate([_with_repeats(rng, V, 3, avoid=o), [k, k]])
    rng.shuffle(neg)
    cases.append(Case("hidden case 4: a noise word with u_k·v_c near -1000", (v_c, o, U, neg)))
    cases.append(
        Case(
            "hidden case 5: small dot products, |u·v_c| < 1 on both sides of 0",
            _small_scores(rng, V=7, d=4, K=5),
        )
    )
    edge = np.random.default_rng([153, seed])
    V, d = 300, 3
    o = int(edge.integers(257, V))
    big = edge.integers(257, V, size=3)
    neg = np.concatenate([big, [big[0], o], edge.integers(0, V, size=2)])  # a repeat, and o
    edge.shuffle(neg)
    cases.append(
        Case(
            "hidden case 6: a vocabulary of 300 words, o and noise words above 256, o among "
            "the negatives, one drawn twice",
            (edge.normal(size=d), o, edge.normal(size=(V, d)), neg),
        )
    )
    return cases


def _small_scores(rng: np.random.Generator, V: int, d: int, K: int) -> tuple:
    """v_c, o, U, neg with u_o·v_c and every u_k·v_c in (-1, 1), some of each sign, at least 0.1
    from 0: a sigmoid that switches formulas at another point than 0 is wrong there."""
    while True:
        v_c, U = rng.normal(size=d), rng.normal(size=(V, d)) * 0.3  # (d,), (V, d)
        o = int(rng.integers(V))
        neg = rng.choice([w for w in range(V) if w != o], size=K, replace=True)
        s = np.concatenate([[U[o] @ v_c], U[neg] @ v_c])  # (K + 1,)
        if (
            np.all(np.abs(s) < 1.0)
            and np.all(np.abs(s) > 0.1)
            and np.sum(s > 0) >= 2
            and np.sum(s < 0) >= 2
        ):
            return v_c, o, U, neg


def noise_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([104, seed])
    counts = rng.integers(1, 1000, size=10).astype(float)
    counts[rng.integers(10)] = 0.0  # a word never seen
    return [
        Case("counts 81, 16, 1", (np.array([81.0, 16.0, 1.0]),), visible=True),
        Case("hidden case 1: 10 words, one never seen (count 0)", (counts,)),
        Case(
            "hidden case 2: 6 words with large counts",
            (rng.integers(1, 50000, size=6).astype(float),),
        ),
        Case(
            "hidden case 3: power=0.5",
            (rng.integers(1, 500, size=5).astype(float),),
            {"power": 0.5},
        ),
    ]


def _counts(rng: np.random.Generator, shape, high: int = 400, zeros: bool = True) -> np.ndarray:
    """Co-occurrence counts with values on both sides of x_max = 100 (and zeros when asked)."""
    X = rng.integers(1, high, size=shape).astype(float)
    if zeros:
        X[rng.random(size=shape) < 0.3] = 0.0
    return X


def glove_weight_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([105, seed])
    return [
        Case("x = 0, 1, 50, 100, 250", (np.array([0.0, 1.0, 50.0, 100.0, 250.0]),), visible=True),
        Case("hidden case 1: (5, 5) counts", (_counts(rng, (5, 5)),)),
        Case(
            "hidden case 2: x_max=10, alpha=0.5",
            (_counts(rng, (4, 6), high=400),),
            {"x_max": 10.0, "alpha": 0.5},
        ),
        Case("hidden case 3: counts up to 50 times x_max", (_counts(rng, (6, 4), high=5000),)),
    ]


def _glove_args(
    rng: np.random.Generator, V: int, d: int, high: int = 400, zeros: bool = True
) -> tuple:
    return (
        rng.normal(size=(V, d)) * 0.5,
        rng.normal(size=(V, d)) * 0.5,
        rng.normal(size=V) * 0.5,
        rng.normal(size=V) * 0.5,
        _counts(rng, (V, V), high, zeros),
    )


def glove_loss_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([106, seed])
    X = np.array([[10.0, 0.0, 200.0], [3.0, 50.0, 0.0], [0.0, 1.0, 120.0]])
    small = (
        np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]),
        np.array([[0.5, 1.0], [1.0, 0.0], [0.0, 0.5]]),
        np.zeros(3),
        np.zeros(3),
        X,
    )
    return [
        Case("3 words, zeros and counts above x_max", small, visible=True),
        Case("hidden case 1: V=6, d=3, some zero counts", _glove_args(rng, 6, 3)),
        Case(
            "hidden case 2: V=5, d=4, no zero counts",
            _glove_args(rng, 5, 4, high=1000, zeros=False),
        ),
        Case(
            "hidden case 3: x_max=20, alpha=0.5, no zero counts",
            _glove_args(rng, 5, 2, high=400, zeros=False),
            {"x_max": 20.0, "alpha": 0.5},
        ),
        Case(
            "hidden case 4: V=4, d=3, no zero counts, counts up to 20 times x_max",
            _glove_args(rng, 4, 3, high=2000, zeros=False),
        ),
    ]


ANALOGY_WORDS = (
    "man",
    "woman",
    "king",
    "queen",
    "paris",
    "france",
    "rome",
    "italy",
    "apple",
    "tree",
    "big",
    "small",
    "walk",
    "walked",
    "swim",
    "swam",
)


_ANALOGY_ARRAY = np.array(ANALOGY_WORDS)  # drawn from by every attempt (converted once)


def _dot_scores(E: np.ndarray, q: np.ndarray) -> np.ndarray:
    """E q: the ranking of a cosine divided by one global norm(E) (or by none)."""
    return np.asarray(E, dtype=np.float64) @ np.asarray(q, dtype=np.float64)  # (V,)


def _row_norms(E: np.ndarray) -> np.ndarray:
    """`np.linalg.norm(E, axis=-1)` of a float64 array, bit for bit (numpy's 2-norm of rows is
    the square root of the row sums of squares), without its dispatch: the case searches below
    need it hundreds of times per student. tests/test_speed_cosines.py holds it to numpy."""
    return np.sqrt(np.add.reduce(E * E, axis=-1))  # (V,)


def _norm(q: np.ndarray) -> np.float64:
    """`np.linalg.norm(q)` of a float64 vector, bit for bit (the square root of q·q)."""
    return np.sqrt(q.dot(q))


def _search_cosines(E: np.ndarray, q: np.ndarray) -> np.ndarray:
    """`cosine_similarity(E, q)` of float64 arrays, bit for bit, at about half its cost (the
    reference's operations in its order); a zero norm goes to the reference itself."""
    denom = _row_norms(E) * _norm(q)  # (V,)
    if not (denom > 0).all():
        return cosine_similarity(E, q)
    return (E @ q) / denom  # (V,)


def _large_epsilon(E: np.ndarray, q: np.ndarray) -> np.ndarray:
    """e_w·q / (‖e_w‖ ‖q‖ + 1): an epsilon big enough to change the ranking."""
    E = np.asarray(E, dtype=np.float64)  # (V, d)
    q = np.asarray(q, dtype=np.float64)  # (d,)
    return E @ q / (_row_norms(E) * _norm(q) + 1.0)  # (V,)


# Wrong analogies a hidden case must tell from the right one (not catalog mistakes: plain bugs
# that must lose points): a large epsilon, a wrong target vector, a dot product. In the order a
# random candidate most often ties with them (the search stops at the first tie): the large
# epsilon ties 97% of the candidates, b - a 61%.
WRONG_ANALOGIES = (
    partial(analogy, similarity=_large_epsilon),
    partial(analogy, offset=lambda e_a, e_b, e_c: e_b - e_a),
    partial(analogy, similarity=_dot_scores),
    partial(analogy, offset=lambda e_a, e_b, e_c: e_b),
    partial(analogy, offset=lambda e_a, e_b, e_c: e_a - e_b + e_c),
    partial(analogy, offset=lambda e_a, e_b, e_c: e_b + e_a - e_c),
)


def _separating_analogy(rng: np.random.Generator, V: int, d: int) -> tuple:
    """Embeddings (rows of varied norms) and a, b, c where an input word would win without the
    exclusion and every wrong analogy above picks another word, with clear margins.

    Each attempt draws the same numbers in the same order whatever its tests decide (the words
    and a, b, c as positions: a Generator's choice from a sequence draws what a choice of as
    many positions draws), and its tests are cheapest first, on plain floats (the sorted scores
    and their margins are the same numbers whether numpy or Python sorts them);
    tests/test_speed_cases.py holds the earlier form as the oracle."""
    n_words = len(ANALOGY_WORDS)
    for _ in range(20000):
        E = rng.normal(size=(V, d)) * rng.uniform(0.3, 3.0, size=(V, 1))  # (V, d)
        picks = rng.choice(n_words, size=V, replace=False).tolist()
        inputs = rng.choice(V, size=3, replace=False).tolist()  # a, b, c by position
        target = E[inputs[1]] - E[inputs[0]] + E[inputs[2]]  # (d,)
        cos = _search_cosines(E, target)  # (V,)
        if int(cos.argmax()) not in inputs:
            continue  # an input word must win without the exclusion (the cheapest test first)
        scores = cos.tolist()
        top = sorted(scores, reverse=True)
        if not top[0] - top[1] > 0.02:
            continue  # no near-tie, even in float32
        rest = sorted((x for i, x in enumerate(scores) if i not in inputs), reverse=True)
        if not rest[0] - rest[1] > 0.02:
            continue  # nor among the words that may answer
        if best_excluding(cos, inputs) == best_excluding(_large_epsilon(E, target), inputs):
            continue  # the large epsilon ties (most candidates): seen from these scores, cheaply
        vocab = [ANALOGY_WORDS[i] for i in picks]
        a, b, c = (vocab[i] for i in inputs)
        want = analogy(E, vocab, a, b, c)
        if all(f(E, vocab, a, b, c) != want for f in WRONG_ANALOGIES):  # stops at the first tie
            return E, vocab, a, b, c
    raise RuntimeError("no separating analogy case found")  # pragma: no cover


def analogy_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([107, seed])
    vocab = ["man", "woman", "king", "queen", "apple"]
    E = np.array(
        [[1.0, 0.0, 0.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0], [2.5, 1.2, 1.1], [0.0, -1.0, 1.0]]
    )
    return [
        Case("man : woman :: king : ?", (E, vocab, "man", "woman", "king"), visible=True),
        Case(
            "hidden case 1: 8 words, an input word is the nearest", _separating_analogy(rng, 8, 4)
        ),
        Case(
            "hidden case 2: 10 words, an input word is the nearest", _separating_analogy(rng, 10, 5)
        ),
        Case(
            "hidden case 3: 12 words, an input word is the nearest", _separating_analogy(rng, 12, 3)
        ),
        Case(
            "hidden case 4: 10 words of very different norms",
            _normalized_apart(np.random.default_rng([157, seed]), 10, 4),
        ),
        Case(
            "hidden case 5: 9 words, every word that may answer points away from e_b - e_a + e_c",
            _all_candidates_opposed(np.random.default_rng([159, seed]), 9, 4),
        ),
    ]


def _all_candidates_opposed(rng: np.random.Generator, V: int, d: int) -> tuple:
    """Embeddings where every word but a, b, c has a negative cosine with e_b - e_a + e_c (rows
    drawn, then flipped away from the target: the target depends on the inputs only), so an
    exclusion by a score of 0 (`sims[i] = 0`, `not np.inf`) lets an input win; the best allowed
    word wins by a clear margin (float32 too)."""
    for _ in range(5000):
        E = rng.normal(size=(V, d)) * rng.uniform(0.3, 3.0, size=(V, 1))  # (V, d)
        vocab = rng.choice(_ANALOGY_ARRAY, size=V, replace=False).tolist()
        inputs = [int(i) for i in rng.choice(V, size=3, replace=False)]  # a, b, c by position
        target = E[inputs[1]] - E[inputs[0]] + E[inputs[2]]  # (d,)
        others = [i for i in range(V) if i not in inputs]
        E[others] *= -np.sign(E[others] @ target)[:, None]  # each row away from the target
        cos = _search_cosines(E, target)  # (V,)
        rest = np.sort(cos[others])[::-1]
        if rest[0] < -0.05 and rest[0] - rest[1] > 0.02 and cos[inputs].max() > 0.05:
            a, b, c = (vocab[i] for i in inputs)
            return E, vocab, a, b, c
    raise RuntimeError("no case found")  # pragma: no cover


def _normalized_apart(rng: np.random.Generator, V: int, d: int) -> tuple:
    """Embeddings of very different norms and a, b, c where the raw target e_b - e_a + e_c and
    gensim's ê_b - ê_a + ê_c (each input scaled to length 1 first) pick different words, and an
    input word would win without the exclusion; clear margins (float32 too)."""
    for _ in range(5000):
        E = rng.normal(size=(V, d)) * rng.uniform(0.2, 4.0, size=(V, 1))  # (V, d)
        vocab = rng.choice(_ANALOGY_ARRAY, size=V, replace=False).tolist()
        a, b, c = (str(w) for w in rng.choice(vocab, size=3, replace=False))
        inputs = [vocab.index(w) for w in (a, b, c)]
        e_a, e_b, e_c = E[inputs[0]], E[inputs[1]], E[inputs[2]]
        cos = _search_cosines(E, e_b - e_a + e_c)  # (V,)
        unit = _search_cosines(E, unit_offset(e_a, e_b, e_c))  # (V,)
        if int(np.argmax(cos)) not in inputs:
            continue
        rest = np.sort(np.delete(cos, inputs))[::-1]
        rest_unit = np.sort(np.delete(unit, inputs))[::-1]
        if rest[0] - rest[1] < 0.05 or rest_unit[0] - rest_unit[1] < 0.05:
            continue
        if best_excluding(cos, inputs) != best_excluding(unit, inputs):
            return E, vocab, a, b, c
    raise RuntimeError("no case found")  # pragma: no cover


# ---------------------------------------------------------------- count-based vectors (notes §1)

# The classic window-1 corpus of the count-based view (tests/reference/test_ref_coverage.py).
TOY_CORPUS = (("I", "like", "deep", "learning"), ("I", "like", "NLP"), ("I", "enjoy", "flying"))
TOY_VOCAB = ("I", "like", "enjoy", "deep", "learning", "NLP", "flying")
_WORDS = ("cat", "dog", "sat", "on", "the", "mat", "ran", "fast")


def _sentences(rng: np.random.Generator, vocab: list[str], lengths: list[int]) -> list[list[str]]:
    return [[str(w) for w in rng.choice(vocab, size=n)] for n in lengths]


def cooccurrence_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([105, seed])
    vocab = list(_WORDS[: int(rng.integers(6, 9))])
    corpus = _sentences(rng, vocab, [int(n) for n in rng.integers(4, 10, size=3)])
    short = _sentences(rng, vocab, [2, 3, int(rng.integers(5, 8))])
    repeated = _sentences(rng, vocab, [int(rng.integers(5, 8))])
    repeated[0][1] = repeated[0][2] = repeated[0][
        0
    ]  # a word next to itself: its neighbour, not itself
    return [
        Case(
            "the toy corpus, window 1",
            ([list(s) for s in TOY_CORPUS], list(TOY_VOCAB)),
            visible=True,
        ),
        Case("hidden case 1: 3 sentences, window 3", (corpus, vocab, 3)),
        Case("hidden case 2: sentences shorter than the window (3)", (short, vocab), {"window": 3}),
        Case("hidden case 3: a word repeated next to itself, window 3", (repeated, vocab, 3)),
        Case("hidden case 4: 3 sentences, window 1 by default", (corpus, vocab)),
        _cooccurrence_edge(seed),
    ]


def _cooccurrence_edge(seed: int) -> Case:
    """An empty sentence, a one-word sentence and a vocabulary word the corpus never uses (its
    row and column stay 0), window 2: the handout's corpus is any list of lists of words."""
    rng = np.random.default_rng([155, seed])
    vocab = list(_WORDS)
    used = vocab[:-1]  # the last word never occurs
    corpus = [
        _sentences(rng, used, [int(rng.integers(5, 8))])[0],
        [],
        [str(rng.choice(used))],
        _sentences(rng, used, [int(rng.integers(3, 6))])[0],
    ]
    return Case(
        "hidden case 5: an empty sentence, a one-word sentence, a word never used, window 2",
        (corpus, vocab, 2),
    )


COOCCURRENCE_MUTANTS = {
    "cooccurrence-counts-self": partial(cooccurrence_matrix, offsets=lambda w: range(-w, w + 1)),
    # only the words after (or only those before) each word
    "cooccurrence-one-sided-window": any_form(
        partial(cooccurrence_matrix, offsets=lambda w: range(1, w + 1)),
        partial(cooccurrence_matrix, offsets=lambda w: range(-w, 0)),
    ),
    "cooccurrence-distance-weighted": partial(cooccurrence_matrix, weight=inverse_distance),
}


def _gap(X: np.ndarray, k: int) -> bool:
    """The k-th and (k+1)-th singular values well apart: U_k Σ_k is unique up to column signs."""
    S = np.linalg.svd(X, compute_uv=False)
    return bool(S[k - 1] - S[k] > 0.1 * S[0])


def _counts_with_gap(rng: np.random.Generator, shape: tuple[int, int], k: int) -> np.ndarray:
    """Integer counts, not symmetric, with a singular-value gap after the k-th."""
    while True:
        X = rng.integers(0, 7, size=shape).astype(np.float64)
        if _gap(X, k) and not (X.shape[0] == X.shape[1] and np.allclose(X, X.T)):
            return X


def _symmetric_counts(rng: np.random.Generator, k: int) -> np.ndarray:
    """A co-occurrence matrix of a random corpus (window 2), with a singular-value gap after the k-th."""
    while True:
        corpus = _sentences(rng, list(_WORDS), [int(n) for n in rng.integers(6, 12, size=4)])
        X = cooccurrence_matrix(corpus, _WORDS, 2)
        if _gap(X, k):
            return X


def svd_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([106, seed])
    return [
        Case(
            "the toy corpus' co-occurrence matrix, k = 2",
            (cooccurrence_matrix(TOY_CORPUS, TOY_VOCAB), 2),
            visible=True,
        ),
        Case(
            "hidden case 1: square counts, not symmetric (one-sided windows), k = 2",
            (_counts_with_gap(rng, (6, 6), 2), 2),
        ),
        Case(
            "hidden case 2: a word-by-context matrix, 7 words × 5 contexts, k = 3",
            (_counts_with_gap(rng, (7, 5), 3), 3),
        ),
        Case("hidden case 3: 8 words × 6 contexts, k = 1", (_counts_with_gap(rng, (8, 6), 1), 1)),
        Case(
            "hidden case 4: a symmetric co-occurrence matrix from a random corpus, k = 3",
            (_symmetric_counts(rng, 3), 3),
        ),
    ]


SVD_MUTANTS = {
    "svd-missing-singular-values": partial(svd_embeddings, scale=False),
    "svd-uses-V": partial(svd_embeddings, side="V"),
    "svd-not-truncated": partial(svd_embeddings, truncate=False),
    "svd-sqrt-singular-values": partial(svd_embeddings, power=0.5),
}
SVD_TOL = Tolerance(rtol=1e-4, atol=1e-6)


def _sign_free(E: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """What a sign flip of a column leaves unchanged: the Gram matrix and the cosine matrix."""
    return gram_matrix(E), cosine_matrix(E)


def _close(got: np.ndarray, want: np.ndarray, atol: float) -> bool:
    return bool(np.all(np.abs(got - want) <= atol + SVD_TOL.rtol * np.abs(want)))


def _same_up_to_signs(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal Gram matrices (to a tolerance scaled by its largest entry) and equal cosines."""
    if got.shape != want.shape:
        return False
    (G, C), (G_want, C_want) = _sign_free(got), _sign_free(want)
    scale = max(float(np.max(np.abs(G_want))), 1.0) if G_want.size else 1.0
    return _close(G, G_want, SVD_TOL.atol * scale) and _close(C, C_want, 10 * SVD_TOL.atol)


def _svd_verdict(case: Case, E: np.ndarray) -> tuple[bool, str, str | None]:
    """(passed, detail, misconception) for one case of svd_embeddings."""
    X, k = case.args
    want = svd_embeddings(X, k)
    if _same_up_to_signs(E, want):
        return True, "", None
    if E.shape != want.shape:
        detail = f"expected shape {want.shape}, got {E.shape}"
    else:
        detail = "the dot products (and cosines) between your rows differ from those of U_k Σ_k"
    for mid, mutant in SVD_MUTANTS.items():
        if _same_up_to_signs(E, mutant(X, k)):
            return False, detail, mid
    return False, detail, None


def _embedding_array(out: Any) -> np.ndarray | None:
    try:
        E = np.asarray(out, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return E if E.ndim == 2 and np.all(np.isfinite(E)) else None


def judge_svd(cases: Sequence[Case], outputs: Sequence[Any]) -> Judgement:
    """Each case graded up to the sign of each column: the Gram matrix E Eᵀ and the cosine
    similarities between rows must match those of U_k Σ_k (raw signs are never compared)."""
    j = Judgement(
        how="compared up to the sign of each column: the dot products and cosine "
        "similarities between your rows"
    )
    named: list[str] = []
    for case, out in zip(cases, outputs):
        if out is None:
            continue
        E = _embedding_array(out)
        if E is None:
            j.checks.append(
                (case.name, False, "expected a finite 2-D array of numbers (one row per word)")
            )
            continue
        ok, detail, mid = _svd_verdict(case, E)
        j.checks.append((case.name, ok, detail))
        if mid is not None:
            named.append(mid)
    failed = sum(not ok for _, ok, _ in j.checks) + sum(out is None for out in outputs)
    if named:
        top = max(set(named), key=lambda m: (named.count(m), -list(SVD_MUTANTS).index(m)))
        if 2 * named.count(top) >= failed:
            j.misconceptions = [top]
    return j


# ---------------------------------------------------------------- written questions


def _anchor(numbers) -> tuple[np.ndarray, np.ndarray]:
    v_c = np.array(numbers["v_c"], dtype=np.float64)  # (2,)
    U = np.array([numbers["u_a"], numbers["u_b"], numbers["u_c"]], dtype=np.float64)  # (3, 2)
    return v_c, U


def anchor_grad(numbers) -> list[float]:
    """∂J/∂v_c for J = -log P(a|c) with the student's vectors."""
    v_c, U = _anchor(numbers)
    return [float(x) for x in naive_softmax_loss_and_gradient(v_c, 0, U)[1]]


def anchor_wrong_forms(numbers) -> list[WrongForm]:
    v_c, U = _anchor(numbers)
    sign = naive_softmax_loss_and_gradient(v_c, 0, U, error=onehot_minus_probs)[1]
    no_exp = naive_softmax_loss_and_gradient(v_c, 0, U, error=minus_onehot)[1]
    return [
        WrongForm(
            [float(x) for x in sign],
            "skipgram-grad-sign",
            "this is u_a - E[u], the gradient of log P(a|c) (the notes' anchor); the loss "
            "J = -log P(a|c) has the opposite sign.",
        ),
        WrongForm(
            [float(x) for x in no_exp],
            "skipgram-grad-no-expectation",
            "this is -u_a alone: the expected vector Σ_x P(x|c) u_x is missing.",
        ),
    ]


def noise_probability(numbers) -> float:
    counts = np.array(numbers["noise_counts"], dtype=np.float64)
    return float(noise_distribution(counts)[numbers["noise_words"].index(numbers["noise_word"])])


def noise_wrong_forms(numbers) -> list[WrongForm]:
    counts = np.array(numbers["noise_counts"], dtype=np.float64)
    plain = float(
        noise_distribution(counts, power=1.0)[numbers["noise_words"].index(numbers["noise_word"])]
    )
    return [
        WrongForm(
            plain,
            "noise-no-power",
            "this is the plain unigram probability count / Σ count; "
            "SGNS raises the counts to the 3/4 power first, then renormalises.",
        )
    ]


SKIPGRAM_SYMBOLS = ("u_a", "u_b", "u_c", "v_c", "p_a", "p_b", "p_c")
# the softmax probabilities as defined names, so that a derivation may start from the loss
# J = -log p_a and use p_w or exp(u_w v_c) / Σ interchangeably (1-D vectors: d = 1)
_SOFTMAX_SUM = "exp(u_a v_c) + exp(u_b v_c) + exp(u_c v_c)"
SKIPGRAM_DEFINED = tuple(f"p_{w} = exp(u_{w} v_c)/({_SOFTMAX_SUM})" for w in "abc")
SGNS_SYMBOLS = ("u_o", "u_1", "u_2", "v_c")

WRITTEN = (
    written(
        "a1.w_skipgram_grad",
        "Skip-gram center-vector gradient in symbols",
        6,
        "skipgram_grad_symbolic",
        "expression",
        lambda n: "-u_a + p_a u_a + p_b u_b + p_c u_c",
        lambda n: [
            WrongForm(
                "u_a - p_a u_a - p_b u_b - p_c u_c",
                "skipgram-grad-sign",
                "this is observed minus expected, the gradient of log P(a|c); the loss "
                "J = -log P(a|c) has the opposite sign.",
            ),
            WrongForm(
                "-u_a",
                "skipgram-grad-no-expectation",
                "the derivative of log Σ_w exp(u_w v_c), the expectation Σ_x p_x u_x, is missing.",
            ),
            WrongForm(
                "-u_a + u_a exp(u_a v_c) + u_b exp(u_b v_c) + u_c exp(u_c v_c)",
                "skipgram-grad-unnormalized",
                "the derivative of log Σ_w exp(u_w v_c) divides by the sum, which this step dropped.",
            ),
        ],
        symbols=SKIPGRAM_SYMBOLS,
        relations=SKIPGRAM_DEFINED,
        steps=True,
    ),
    choice(
        "a1.w_observed_expected",
        "Reading the gradient: observed minus expected",
        3,
        "observed_minus_expected",
        "A",
        (
            "B",
            "skipgram-grad-sign",
            "the log-likelihood's gradient is observed minus expected, u_o - E[u_x]; "
            "expected minus observed is the gradient of the loss -log P(o|c).",
        ),
    ),
    written(
        "a1.w_anchor",
        "The numeric anchor with your numbers",
        5,
        "skipgram_anchor_grad",
        "array",
        anchor_grad,
        anchor_wrong_forms,
        tolerance=Tolerance(rtol=0.0, atol=2e-3),
    ),
    written(
        "a1.w_sgns_grad",
        "SGNS gradient w.r.t. v_c (1-D)",
        6,
        "sgns_grad_symbolic",
        "expression",
        lambda n: "(sigmoid(u_o v_c) - 1) u_o + sigmoid(u_1 v_c) u_1 + sigmoid(u_2 v_c) u_2",
        lambda n: [
            WrongForm(
                "(sigmoid(u_o v_c) - 1) u_o - sigmoid(-u_1 v_c) u_1 - sigmoid(-u_2 v_c) u_2",
                "sgns-negatives-wrong-sign",
                "this differentiates -log σ(+u_k v_c) for the noise words; their term is "
                "-log σ(-u_k v_c), whose derivative is +σ(u_k v_c) u_k.",
            ),
            WrongForm(
                "(1 - sigmoid(u_o v_c)) u_o - sigmoid(u_1 v_c) u_1 - sigmoid(u_2 v_c) u_2",
                "skipgram-grad-sign",
                "this is the gradient of the objective J_t the notes maximise; the loss "
                "is -J_t, with the opposite sign.",
            ),
        ],
        symbols=SGNS_SYMBOLS,
    ),
    choice("a1.w_why_three_quarters", "Why unigram^(3/4)", 3, "why_three_quarters", "C"),
    written(
        "a1.w_noise_probability",
        "A noise probability with your counts",
        4,
        "noise_probability",
        "number",
        noise_probability,
        noise_wrong_forms,
        tolerance=Tolerance(rtol=2e-3, atol=1e-4),
    ),
    choice(
        "a1.w_exclude_inputs", "Why analogies exclude the input words", 3, "why_exclude_inputs", "B"
    ),
)


# ---------------------------------------------------------------- the assignment

_question = reference_builder("a1", FILE)  # every code question (grader/suites/_kit.py)
QUESTIONS = (
    _question(
        softmax,
        "Stable softmax",
        7,
        softmax_cases,
        {
            "softmax-unstable": unstable_softmax,
            "softmax-wrong-axis": softmax_wrong_axis,
            "softmax-over-all-entries": softmax_over_all_entries,
        },
    ),
    _question(
        naive_softmax_loss_and_gradient,
        "Skip-gram loss and gradients (full softmax)",
        13,
        skipgram_cases,
        {
            "softmax-unstable": skipgram_unstable_softmax,
            "skipgram-grad-sign": partial(
                naive_softmax_loss_and_gradient, error=onehot_minus_probs
            ),
            "skipgram-grad-no-expectation": partial(
                naive_softmax_loss_and_gradient, error=minus_onehot
            ),
            "skipgram-gradU-no-onehot": partial(
                naive_softmax_loss_and_gradient, outside_error=probs_only
            ),
        },
        id="a1.naive_softmax",
        output_names=("loss", "grad_v_c", "grad_U"),
        # built on the student's softmax: an unstable one is charged once, in question 1 (its
        # wrong axis cannot reach a score vector)
        depends_on=("a1.softmax",),
    ),
    _question(
        neg_sampling_loss_and_gradient,
        "Skip-gram with negative sampling (SGNS)",
        13,
        sgns_cases,
        {
            "sigmoid-unstable": sgns_unstable_sigmoid,
            "sgns-negatives-wrong-sign": partial(neg_sampling_loss_and_gradient, noise_sign=1.0),
            "sgns-negatives-deduplicated": sgns_deduplicated,
            "sgns-outside-row-overwritten": sgns_outside_row_overwritten,
            "sgns-true-word-skipped": sgns_true_word_skipped,
        },
        id="a1.neg_sampling",
        output_names=("loss", "grad_v_c", "grad_U"),
    ),
    _question(
        noise_distribution,
        "Noise distribution unigram^(3/4)",
        5,
        noise_cases,
        {"noise-no-power": lambda counts, power=0.75: noise_distribution(counts, power=1.0)},
        id="a1.noise",
    ),
    _question(
        glove_weight,
        "GloVe weighting f(x)",
        5,
        glove_weight_cases,
        {"glove-weight-uncapped": partial(glove_weight, cap=False)},
    ),
    _question(
        glove_loss,
        "GloVe loss",
        9,
        glove_loss_cases,
        {
            "glove-zero-counts-included": partial(glove_loss, include=_include_all),
            "glove-weight-uncapped": partial(glove_loss, weight=partial(glove_weight, cap=False)),
            "glove-loss-halved": partial(glove_loss, total=halved_sum),
            "glove-loss-averaged": glove_averaged,
        },
    ),
    _question(
        analogy,
        "Analogies by cosine similarity",
        6,
        analogy_cases,
        {
            "analogy-inputs-not-excluded": partial(analogy, exclude_inputs=False),
            "analogy-inputs-normalized": partial(analogy, offset=unit_offset),
        },
    ),
)

# Added after the original questions so that their numbers stay as they were.
COUNT_BASED = (
    _question(
        cooccurrence_matrix,
        "Co-occurrence counts in a window",
        6,
        cooccurrence_cases,
        COOCCURRENCE_MUTANTS,
        id="a1.cooccurrence",
    ),
    _question(
        svd_embeddings,
        "SVD embeddings (rows of U_k Σ_k)",
        6,
        svd_cases,
        SVD_MUTANTS,
        custom=judge_svd,
    ),
)

ASSIGNMENT = Assignment(
    "a1_word_vectors",
    "Assignment 1: word vectors (skip-gram, negative sampling, GloVe, analogies)",
    FILE,
    QUESTIONS + WRITTEN + COUNT_BASED,
)
