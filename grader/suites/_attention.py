"""The attention mistake family, declared once: what a4 (attention, multi-head attention, the
blocks) and a5 (split and merge heads, the masked softmax) lift into their own functions.

Heads reshaped without their transpose, and the masked-softmax mistakes as `weights(scores,
mask)` functions that the reference attention takes as a hook: a softmax over the wrong axis,
a mask ignored, read the wrong way round, applied after the softmax, or filled with 0. Fully
masked rows come out as a student's code makes them: NaN (a -inf fill, no guard), zero (a
guarded -inf fill, as the reference does) or uniform (a finite fill such as -1e9). A mask
returned as numbers (`mask_as_numbers`) is the mask builders' own.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from reference import attention as att
from reference.functional import softmax

Array = np.ndarray

# ---------------------------------------------------------------- heads


def split_heads_mixed(x: Array, n_heads: int) -> Array:
    """heads-reshape-without-transpose: (..., T, h·d_h) viewed directly as (..., h, T, d_h)
    (positions and features mixed)."""
    *lead, T, width = x.shape
    return np.reshape(x, (*lead, n_heads, T, width // n_heads))


def merge_heads_no_transpose(x: Array) -> Array:
    """merge-heads-without-transpose: (..., h, T, d_h) reshaped directly to (..., T, h·d_h)."""
    *lead, h, T, d_h = x.shape
    return np.reshape(x, (*lead, T, h * d_h))


def split_heads_unswapped(x: Array, n_heads: int) -> Array:
    """heads-reshape-without-transpose, its other form: the view to (..., T, h, d_h) returned
    without its transpose (the heads axis in the wrong place)."""
    *lead, T, width = x.shape
    return np.reshape(x, (*lead, T, n_heads, width // n_heads))


# ---------------------------------------------------------------- masked softmax


# softmax-wrong-axis: any axis but the last (the query axis -2, the head axis, the batch axis 0;
# `softmax(x, axis=0)` written for a 2-D score matrix is the batch axis on batched inputs)
WRONG_AXES = (-2, -3, 0)


def after_softmax(s: Array, m: Array | None) -> Array:
    """mask-after-softmax: softmax over every key, then zero the masked weights (no renormalising)."""
    return softmax(s) if m is None else softmax(s) * np.asarray(m, dtype=bool)


def ignore_mask(s: Array, m: Array | None) -> Array:
    return att.masked_softmax(s, None)


def nan_rows(s: Array, m: Array | None) -> Array:
    """softmax(S + M) with -inf fill and no guard: a fully masked row is NaN, as in a student's code."""
    if m is None:
        return softmax(s)
    with np.errstate(all="ignore"):
        return softmax(np.where(np.broadcast_to(m, s.shape), s, -np.inf))


def inverted(s: Array, m: Array | None) -> Array:
    """mask-inverted: True read as "masked". Under a causal mask the last row is then fully
    masked and comes out NaN, as the -inf fill of a student's code makes it."""
    return nan_rows(s, None if m is None else ~np.asarray(m, dtype=bool))


def padded_query_rows(fill: str) -> Callable[[Array, Array | None], Array]:
    """Weights when some query rows are fully masked: NaN (-inf fill, no guard), all zero (a
    guarded -inf fill, as the reference does) or uniform (a finite fill such as -1e9)."""
    if fill == "nan":
        return nan_rows
    if fill == "zero":
        return att.masked_softmax
    return partial(att.masked_softmax, fill=-1e9)


PADDED_ROW_FILLS = ("nan", "zero", "uniform")
MASK_FILLS = (-np.inf, -1e9)  # what a student writes into masked scores


def unguarded(axis: int) -> Callable[[Array, Array | None], Array]:
    """softmax(S + M) along `axis` with a -inf fill and no guard: NaN where every entry is masked."""

    def weights(s: Array, m: Array | None) -> Array:
        if m is None:
            return softmax(s, axis=axis)
        with np.errstate(all="ignore"):
            return softmax(np.where(np.broadcast_to(m, s.shape), s, -np.inf), axis=axis)

    return weights


# softmax-wrong-axis: each wrong axis, masked scores filled with -inf (guarded or not) or -1e9
WRONG_AXIS_WEIGHTS = tuple(
    partial(att.masked_softmax, axis=a, fill=f) for f in MASK_FILLS for a in WRONG_AXES
) + tuple(unguarded(a) for a in WRONG_AXES)


def inverted_with(fill: str) -> Callable[[Array, Array | None], Array]:
    """mask-inverted, its fully masked rows as `fill` makes them (see padded_query_rows)."""
    rows = padded_query_rows(fill)
    return lambda s, m: rows(s, None if m is None else ~np.asarray(m, dtype=bool))


WEIGHTS: dict[str, Callable[[Array, Array | None], Array]] = {
    "softmax-wrong-axis": partial(att.masked_softmax, axis=-2),
    "mask-ignored": ignore_mask,
    "mask-inverted": inverted,
    "mask-after-softmax": after_softmax,
    "mask-zero-fill": partial(att.masked_softmax, fill=0.0),
}


def mask_as_numbers(mask: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
    """mask-not-boolean: the boolean `mask(...)` of a mask builder returned as float 0s and 1s."""
    return lambda *args, **kwargs: mask(*args, **kwargs).astype(np.float64)
