"""a4's position questions: sinusoidal positions and rotary position embeddings (RoPE), with
their cases and mistakes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from grader.questions import Case
from grader.suites.a4_transformer_parts.shared import _any, _rng
from reference import positions

Array = np.ndarray


def _pe_cases(seed: int) -> list[Case]:
    r = _rng(411, seed)
    return [
        Case("T = 3, d = 4 (divisors 1 and 100)", (3, 4), visible=True),
        Case("hidden case 1: d = 10, T from 6 to 11", (int(r.integers(6, 12)), 10)),
        Case("hidden case 2: d = 16, T from 12 to 19", (int(r.integers(12, 20)), 16)),
        Case(
            "hidden case 3: long and narrow, d = 6, T from 40 to 59", (int(r.integers(40, 60)), 6)
        ),
    ]


def _pe_exponent(k: float) -> Callable[[int, int], Array]:
    """Frequencies 10000^(-k·r/d) for pair r (the handout's k = 2)."""
    return lambda T, d: positions.sinusoidal_positions(
        T, d, frequencies=lambda dd: 1.0 / 10000.0 ** (k * np.arange(dd // 2) / dd)
    )


def _pe_feature_index(T: int, d: int) -> Array:
    """Each feature i with its own exponent i/d: sines right (i = 2r), cosines at (2r+1)/d."""
    sines = positions.sinusoidal_positions(T, d)
    odd = positions.sinusoidal_positions(
        T, d, frequencies=lambda dd: 1.0 / 10000.0 ** ((2 * np.arange(dd // 2) + 1) / dd)
    )
    return positions.interleave(sines[:, 0::2], odd[:, 1::2])


PE_MUTANTS = {
    "pe-sin-cos-swapped": lambda T, d: positions.sinusoidal_positions(
        T, d, layout=lambda s, c: positions.interleave(c, s)
    ),
    # the exponent of pair r: r/d (the pair index where the feature index 2r belongs), 4r/d (the
    # feature index 2r doubled again, `for i in range(0, d, 2): 10000 ** (2 * i / d)`), or each
    # feature its own index i/d
    "pe-frequency-exponent": _any(_pe_exponent(1), _pe_exponent(4), _pe_feature_index),
    "pe-halves-not-interleaved": lambda T, d: positions.sinusoidal_positions(
        T, d, layout=lambda s, c: np.concatenate([s, c], axis=-1)
    ),
}


# ---------------------------------------------------------------- RoPE (Lecture 7, "Rotary Position Embeddings")


def _rope_cases(seed: int) -> list[Case]:
    r = _rng(415, seed)
    # d = 2, θ_0 = 1: position t turns (1, 0) by t radians (a 2-D rotation by hand)
    by_hand = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    return [
        Case(
            "d = 2: (1, 0) at positions 0, 1, 2 and (0, 1) at 3 (angles t radians)",
            (by_hand,),
            visible=True,
        ),
        Case("hidden case 1: one sequence (T, d) = (6, 8)", (r.normal(size=(6, 8)),)),
        Case(
            "hidden case 2: batch × heads (2, 2, 5, 6), base = 100",
            (r.normal(size=(2, 2, 5, 6)),),
            {"base": 100.0},
        ),
        Case("hidden case 3: long and narrow, (12, 4), base = 10", (r.normal(size=(12, 4)), 10.0)),
        # the domain's edge: a length-1 sequence, whose only position (0) is not turned
        Case("hidden case 4: one position, (1, 6)", (r.normal(size=(1, 6)),)),
    ]


def _rope_exponent(k: float) -> Callable[..., Array]:
    """Frequencies base^(-k·i/d) for pair i (the handout's k = 2)."""
    return lambda X, base=10000.0: positions.apply_rope(
        X, base, frequencies=lambda d, b: b ** (-k * np.arange(d // 2) / d)
    )


ROPE_MUTANTS = {
    "rope-halves-not-interleaved": lambda X, base=10000.0: positions.apply_rope(
        X, base, pairs=positions.halves
    ),
    "rope-angle-sign": lambda X, base=10000.0: positions.apply_rope(X, base, sign=-1.0),
    # base^(-i/d) (the pair index without its 2) or base^(-4i/d) (the feature index 2i doubled again)
    "rope-frequency-exponent": _any(_rope_exponent(1.0), _rope_exponent(4.0)),
}
