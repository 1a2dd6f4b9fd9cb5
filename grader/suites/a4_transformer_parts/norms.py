"""a4's normalisation questions: LayerNorm, LayerNorm's and BatchNorm's statistics and RMSNorm,
with their cases and mistakes (the LayerNorm variants the blocks and the forward pass reuse).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from grader.questions import Case
from grader.suites.a4_transformer_parts.shared import BLOCK_H, _any, _rng
from reference import norms

Array = np.ndarray

# layernorm-wrong-axis: down the tokens (-2) or the batch (0)
LN_WRONG_AXES = (-2, 0)


def _unbiased(x: Array, axis: int) -> Array:
    n = np.shape(x)[axis]
    return norms.population_variance(x, axis) * n / (n - 1)


def _eps_outside(var: Array, eps: float) -> Array:
    """layernorm-eps-outside-sqrt: the notes' σ + ε, σ = sqrt(var)."""
    return norms.std_eps_inside(var, 0.0) + eps


def _ln_variant(**hooks: Any) -> Callable[..., Array]:
    return lambda x, gamma, beta, eps=1e-5, **kw: norms.layer_norm(
        x, gamma, beta, eps, **hooks, **kw
    )


def _ln_cases(seed: int) -> list[Case]:
    r = _rng(405, seed)
    g, b = 1.0 + 0.3 * r.normal(size=6), 0.2 * r.normal(size=6)
    g8, b8 = 1.0 + 0.3 * r.normal(size=8), 0.2 * r.normal(size=8)
    return [
        Case(
            "slides microscope: LN_1 of h (γ = 1, β = 0)",
            (BLOCK_H, np.ones(4), np.zeros(4)),
            visible=True,
        ),
        Case("hidden case 1: (B, T, d) = (2, 4, 6)", (2.0 * r.normal(size=(2, 4, 6)) + 1.0, g, b)),
        Case("hidden case 2: (T, d) = (5, 6)", (2.0 * r.normal(size=(5, 6)) - 0.5, g, b)),
        Case("hidden case 3: one token (d,)", (3.0 * r.normal(size=6), g, b)),
        Case(
            "hidden case 4: tiny features (scale 1e-3)",
            (1e-3 * r.normal(size=(3, 8)) + 0.02, g8, b8),
        ),
        Case("hidden case 5: eps = 1e-2", (0.3 * r.normal(size=(2, 3, 6)), g, b), {"eps": 1e-2}),
    ]


LN_MUTANTS = {
    "layernorm-wrong-axis": _any(*(_ln_variant(axis=a) for a in LN_WRONG_AXES)),
    "layernorm-unbiased-variance": _ln_variant(variance=_unbiased),
    "layernorm-eps-outside-sqrt": _ln_variant(denominator=_eps_outside),
}


def _stats_cases(salt: int) -> Callable[[int], list[Case]]:
    def cases(seed: int) -> list[Case]:
        r = _rng(salt, seed)
        return [
            Case("slides microscope h as (1, 3, 4)", (BLOCK_H[None],), visible=True),
            Case(
                "hidden case 1: (B, T, d) = (2, 5, 6), per-feature offsets",
                (2.0 * r.normal(size=(2, 5, 6)) + r.normal(size=6),),
            ),
            Case(
                "hidden case 2: (B, T, d) = (3, 4, 7), per-feature scales",
                (r.normal(size=(3, 4, 7)) * np.arange(1, 8),),
            ),
        ]

    return cases


LN_STATS_MUTANTS = {
    # over T, or over B
    "layernorm-wrong-axis": _any(
        lambda X: norms.layer_norm_stats(np.swapaxes(X, -1, -2)),
        lambda X: norms.layer_norm_stats(np.moveaxis(X, 0, -1)),
    ),
    "layernorm-unbiased-variance": lambda X: _rescale_var(norms.layer_norm_stats(X), X.shape[-1]),
}
BN_STATS_MUTANTS = {
    "batchnorm-over-batch-only": lambda X: norms.layer_norm_stats(np.moveaxis(X, 0, -1)),  # (T, d)
    "layernorm-unbiased-variance": lambda X: _rescale_var(
        norms.batch_norm_stats(X), X.shape[0] * X.shape[1]
    ),
}


def _rescale_var(stats: tuple[Array, Array], n: int) -> tuple[Array, Array]:
    mean, var = stats
    return mean, var * n / (n - 1)


def _rms_cases(seed: int) -> list[Case]:
    r = _rng(408, seed)
    g = 1.0 + 0.3 * r.normal(size=6)
    return [
        Case("slides microscope h (γ = 1)", (BLOCK_H, np.ones(4)), visible=True),
        Case(
            "hidden case 1: batched (B, T, d) = (2, 4, 6), nonzero means",
            (r.normal(size=(2, 4, 6)) + 1.5, g),
        ),
        Case("hidden case 2: one sequence (T, d) = (5, 6)", (2.0 * r.normal(size=(5, 6)) - 1.0, g)),
        Case("hidden case 3: eps = 0.5", (r.normal(size=(3, 6)) + 0.5, g), {"eps": 0.5}),
        # mean(x²) near 1e-6: the default eps = 1e-6 halves it again, no eps or 1e-5 do not
        Case(
            "hidden case 4: tiny features (scale 1e-3), default eps",
            (1e-3 * r.normal(size=(2, 3, 6)), g),
        ),
    ]


RMS_MUTANTS = {
    # RMSNorm that centres first is LayerNorm without β
    "rmsnorm-subtracts-mean": lambda x, gamma, eps=1e-6: norms.layer_norm(
        x, gamma, np.zeros(np.shape(gamma)), eps
    ),
    # sqrt(mean(x²)) with no eps, or a default other than 1e-6 (the LayerNorm's 1e-5)
    "rmsnorm-missing-eps": _any(
        lambda x, gamma, eps=1e-6: norms.rms_norm(x, gamma, 0.0),
        lambda x, gamma, eps=1e-5: norms.rms_norm(x, gamma, eps),
    ),
    # sqrt(mean(x²)) + ε, as many implementations write it (`x / (x.norm(dim=-1) / sqrt(d) + eps)`)
    "rmsnorm-eps-outside-sqrt": lambda x, gamma, eps=1e-6: norms.rms_norm(
        x, gamma, eps, denominator=_eps_outside
    ),
}
