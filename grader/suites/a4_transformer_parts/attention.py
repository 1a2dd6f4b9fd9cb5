"""a4's attention questions: scaled dot-product attention, the causal and padding masks and
multi-head attention, with their cases and mistakes (MHA_FORMS, which the blocks and the
forward pass reuse).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from grader.questions import Case
from grader.suites._attention import (
    PADDED_ROW_FILLS,
    WEIGHTS,
    WRONG_AXIS_WEIGHTS,
    after_softmax,
    ignore_mask,
    inverted_with,
    mask_as_numbers,
    merge_heads_no_transpose,
    padded_query_rows,
    split_heads_mixed,
)
from grader.suites.a4_transformer_parts.shared import (
    MICRO_WK1,
    MICRO_WO,
    MICRO_WQ1,
    MICRO_WV1,
    MICRO_WV2,
    MICRO_X,
    _any,
    _lengths,
    _rng,
)
from reference import attention as att

Array = np.ndarray


def _or_masks(*masks: Array | None) -> Array | None:
    """masks-combined-with-or: a key is allowed when either mask allows it."""
    out = None
    for m in masks:
        if m is not None:
            out = np.asarray(m, dtype=bool) if out is None else (out | np.asarray(m, dtype=bool))
    return out


def _project_not_transposed(x: Array, W: Array) -> Array:
    """output-projection-not-transposed: Concat(heads) @ W_O (runs only when W_O is square)."""
    return np.asarray(x, dtype=np.float64) @ np.asarray(W, dtype=np.float64)


def _no_projection(x: Array, W: Array) -> Array:
    """attention-missing-output-projection: the concatenated heads returned as they are."""
    return np.asarray(x, dtype=np.float64)


def _scaled(scale_of: Callable[[int, int, int], float]) -> Callable[..., Array]:
    """An MHA whose attention uses scale_of(d_model, d_k) instead of 1/sqrt(d_k)."""

    def mha(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None, **kw):
        d_k = np.shape(W_Q)[0] // n_heads
        sdpa = partial(
            att.scaled_dot_product_attention, scale=scale_of(np.shape(X)[-1], d_k, n_heads)
        )
        return att.multi_head_attention(
            X, W_Q, W_K, W_V, W_O, n_heads, causal, key_padding_mask, attention=sdpa, **kw
        )

    return mha


def _mha_with(**hooks: Any) -> Callable[..., Array]:
    """The reference MHA with hooks, as a partial: two such mistakes combine by merging their hooks
    (the engine names a composite's own mistake on top of one carried from a dependency)."""
    return partial(att.multi_head_attention, **hooks)


def _unit_scale(dk: int) -> float:
    return 1.0


def _inverse_dk(dk: int) -> float:
    return 1.0 / dk


def _mha_weights(weights_fn) -> Callable[..., Array]:
    return _mha_with(attention=partial(att.scaled_dot_product_attention, weights_fn=weights_fn))


def _mha_ignores_masks(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None, **kw):
    return att.multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, False, None, **kw)


def _mha_ignores_padding(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None, **kw):
    return att.multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal, None, **kw)


def _mha_ignores_causal(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None, **kw):
    return att.multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, False, key_padding_mask, **kw)


# padding-masks-queries: the key padding mask broadcast along the query axis; the padded
# query rows are then fully masked: NaN with a -inf fill, zero with a guarded one, uniform with -1e9.
def _mha_masks_queries(fill: str) -> Callable[..., Array]:
    return _mha_with(
        key_mask_fn=lambda m: np.asarray(m, dtype=bool)[..., :, None],
        attention=partial(att.scaled_dot_product_attention, weights_fn=padded_query_rows(fill)),
    )


def _sdpa(**hooks: Any) -> Callable[..., Array]:
    return partial(att.scaled_dot_product_attention, **hooks)


# The attention mistakes of the heads' machinery (split, merge, output projection, the scaled
# dot-product inside) as hook sets of the reference, one per natural form: the same hooks make
# the multi-head attention forms and, index by index, the cross-attention forms.
HEAD_HOOKS: dict[str, tuple[dict[str, Any], ...]] = {
    # the split without its transpose, the merge with or without
    "heads-reshape-without-transpose": (
        {"split": split_heads_mixed, "merge": merge_heads_no_transpose},
        {"split": split_heads_mixed},
    ),
    # the split right, the merge a bare reshape of (..., h, T, d_h)
    "merge-heads-without-transpose": ({"merge": merge_heads_no_transpose},),
    "output-projection-not-transposed": ({"project": _project_not_transposed},),
    "attention-missing-output-projection": ({"project": _no_projection},),
    "attention-missing-scale": ({"attention": _sdpa(scale=_unit_scale)},),
    "attention-scale-by-dk": ({"attention": _sdpa(scale=_inverse_dk)},),
    # (masked scores filled with -inf or -1e9, as in scaled_dot_product_attention's forms)
    "softmax-wrong-axis": tuple({"attention": _sdpa(weights_fn=w)} for w in WRONG_AXIS_WEIGHTS),
    "mask-after-softmax": ({"attention": _sdpa(weights_fn=after_softmax)},),
    "mask-zero-fill": ({"attention": _sdpa(weights_fn=WEIGHTS["mask-zero-fill"])},),
}


# The mistakes of the heads' machinery and the scale, in the order they are tried (MHA_FORMS; the
# forward pass names them in the same order).
HEAD_MACHINERY_IDS = (
    "heads-reshape-without-transpose",
    "merge-heads-without-transpose",
    "output-projection-not-transposed",
    "attention-missing-output-projection",
    "attention-missing-scale",
    "attention-scale-by-dk",
)


def _head_forms(make: Callable[..., Callable[..., Array]], mid: str) -> tuple[Callable, ...]:
    """A mistake of HEAD_HOOKS as forms of one reference (`make(**hooks)`)."""
    return tuple(make(**hooks) for hooks in HEAD_HOOKS[mid])


# Each MHA mistake as its natural forms (one function per form; the blocks reuse them).
# attention-scale-by-d-model: the width of the model read from X (d) or from W_Q's rows (h·d_k);
# heads-reshape-without-transpose: the split without its transpose, the merge with or without.
MHA_FORMS: dict[str, tuple[Callable[..., Array], ...]] = {
    **{mid: _head_forms(_mha_with, mid) for mid in HEAD_MACHINERY_IDS},
    "attention-scale-by-d-model": (
        _scaled(lambda d, dk, h: 1.0 / math.sqrt(d)),
        _scaled(lambda d, dk, h: 1.0 / math.sqrt(h * dk)),
    ),
    # d_k = d/h read from X's width, where the projections' head width d_k differs
    "head-width-from-d-model": (_scaled(lambda d, dk, h: 1.0 / math.sqrt(d / h)),),
    "softmax-wrong-axis": _head_forms(_mha_with, "softmax-wrong-axis"),
    # every mask ignored: the output is unmasked attention
    "mask-ignored": (_mha_ignores_masks,),
    # one of the two masks dropped, the other still applied: `causal` never read, or the key
    # padding mask never applied
    "causal-mask-dropped": (_mha_ignores_causal,),
    "padding-mask-dropped": (_mha_ignores_padding,),
    # both masks read the wrong way round, or only the causal mask (the student's own causal_mask
    # inverted: the last query row is then fully masked, NaN, zero or uniform as its fill makes it)
    "mask-inverted": (
        *(_mha_weights(inverted_with(f)) for f in PADDED_ROW_FILLS),
        *(
            _mha_with(
                causal_mask_fn=lambda T: ~att.causal_mask(T),
                attention=partial(
                    att.scaled_dot_product_attention, weights_fn=padded_query_rows(f)
                ),
            )
            for f in PADDED_ROW_FILLS
        ),
    ),
    "masks-combined-with-or": (_mha_with(combine=_or_masks),),
    "mask-after-softmax": _head_forms(_mha_with, "mask-after-softmax"),
    "mask-zero-fill": _head_forms(_mha_with, "mask-zero-fill"),
    "padding-masks-queries": tuple(_mha_masks_queries(f) for f in PADDED_ROW_FILLS),
    # a student's MHA building its own causal mask: transposed (the future, not the past; with a
    # sequence whose only real key is the first, its later queries see no key: NaN, zero or
    # uniform as the fill makes them), or without the diagonal (query 0 then sees no key)
    "causal-mask-transposed": tuple(
        _mha_with(
            causal_mask_fn=lambda T: att.causal_mask(T).T,
            attention=partial(att.scaled_dot_product_attention, weights_fn=padded_query_rows(f)),
        )
        for f in PADDED_ROW_FILLS
    ),
    "causal-mask-excludes-self": tuple(
        _mha_with(
            causal_mask_fn=partial(att.causal_mask, offset=-1),
            attention=partial(att.scaled_dot_product_attention, weights_fn=padded_query_rows(f)),
        )
        for f in PADDED_ROW_FILLS
    ),
}
MHA_VARIANTS: dict[str, Callable[..., Array]] = {
    mid: _any(*forms) for mid, forms in MHA_FORMS.items()
}


# ---------------------------------------------------------------- cases


def _micro_qkv() -> tuple[Array, Array, Array]:
    return MICRO_X @ MICRO_WQ1.T, MICRO_X @ MICRO_WK1.T, MICRO_X @ MICRO_WV1.T


def _qkv(
    r: np.random.Generator, lead: tuple[int, ...], T_q: int, T_k: int, d_v: int, scale: float = 1.5
) -> tuple[Array, Array, Array]:
    """Q (*lead, T_q, 4) and K (*lead, T_k, 4) drawn at `scale` (spread scores), then V (*lead,
    T_k, d_v), in that order from `r`."""
    return (
        scale * r.normal(size=(*lead, T_q, 4)),
        scale * r.normal(size=(*lead, T_k, 4)),
        r.normal(size=(*lead, T_k, d_v)),
    )


def _sdpa_cases(seed: int) -> list[Case]:
    r = _rng(401, seed)
    Q, K, V = _micro_qkv()
    cases = [
        Case("slides microscope (the/cat/sleeps, no mask)", (Q, K, V), visible=True),
        Case("slides microscope with a causal mask", (Q, K, V, att.causal_mask(3)), visible=True),
    ]
    # batched, T_q != T_k, d_k = 4, d_v = 3
    cases.append(
        Case(
            "hidden case 1: batch of 2 × 3 heads, T_q = 5, T_k = 6, no mask",
            _qkv(r, (2, 3), 5, 6, 3),
        )
    )
    T = 5
    cases.append(
        Case(
            "hidden case 2: batch with a causal mask", (*_qkv(r, (2,), T, T, 3), att.causal_mask(T))
        )
    )
    lengths = _lengths(r, 3, 6)
    pad = att.key_mask(att.padding_mask(lengths, 6))  # (3, 1, 6)
    cases.append(
        Case("hidden case 3: key padding mask (B, 1, T_k)", (*_qkv(r, (3,), 4, 6, 2), pad))
    )
    lengths = _lengths(r, 2, T)
    both = att.combine_masks(
        att.causal_mask(T), att.key_mask(att.padding_mask(lengths, T))
    )  # (2, T, T)
    cases.append(
        Case("hidden case 4: causal and padding masks together", (*_qkv(r, (2,), T, T, 3), both))
    )
    lengths = _lengths(r, 2, 5)
    cases.append(
        Case(
            "hidden case 5: key padding mask, one query per sequence",
            (*_qkv(r, (2,), 1, 5, 3), att.key_mask(att.padding_mask(lengths, 5))),
        )
    )
    cases.append(
        Case(
            "hidden case 6: one unbatched sequence, causal",
            (*_qkv(r, (), 4, 4, 5), att.causal_mask(4)),
        )
    )
    # softmax stability: scores in the thousands, each query row's maximum far from the others'
    # (exp without the row's max shift overflows; a min or global shift overflows or underflows)
    cases.append(
        Case(
            "hidden case 7: large scores (softmax stability), causal",
            (*_qkv(r, (2,), 4, 4, 3, scale=40.0), att.causal_mask(4)),
        )
    )
    # the input domain's edges: a mask leaving exactly one key to each query (a random one) or
    # allowing every key, and sequences of length 1
    one = np.zeros((2, 4, 5), dtype=bool)
    one[0, np.arange(4), r.integers(0, 5, size=4)] = True  # one key per query
    one[1] = True  # every key allowed
    cases.append(
        Case(
            "hidden case 8: a mask leaving one key per query, and one allowing every key",
            (*_qkv(r, (2,), 4, 5, 3), one),
        )
    )
    cases.append(
        Case(
            "hidden case 9: length-1 sequences (T_q = T_k = 1), causal",
            (*_qkv(r, (3,), 1, 1, 2), att.causal_mask(1)),
        )
    )
    return cases


def _sdpa_mutant(weights_fn=None, scale_of=None) -> Callable[..., Any]:
    def f(Q, K, V, mask=None):
        kw: dict[str, Any] = {}
        if weights_fn is not None:
            kw["weights_fn"] = weights_fn
        if scale_of is not None:
            kw["scale"] = scale_of(np.shape(Q)[-1])
        return att.scaled_dot_product_attention(Q, K, V, mask, **kw)

    return f


SDPA_MUTANTS = {
    "attention-missing-scale": _sdpa_mutant(scale_of=lambda dk: 1.0),
    "attention-scale-by-dk": _sdpa_mutant(scale_of=lambda dk: 1.0 / dk),
    # masked scores filled with -inf or with a large negative number (-1e9): along a wrong axis a
    # column can be masked throughout, and the two fills then differ
    "softmax-wrong-axis": _any(*(_sdpa_mutant(w) for w in WRONG_AXIS_WEIGHTS)),
    "mask-ignored": _sdpa_mutant(ignore_mask),
    # a fully masked row (the last one under an inverted causal mask): NaN, zero or uniform
    "mask-inverted": _any(*(_sdpa_mutant(inverted_with(f)) for f in PADDED_ROW_FILLS)),
    "mask-after-softmax": _sdpa_mutant(after_softmax),
    "mask-zero-fill": _sdpa_mutant(WEIGHTS["mask-zero-fill"]),
}


def _causal_cases(seed: int) -> list[Case]:
    r = _rng(402, seed)
    return (
        [Case("T = 3 (the slides' causal mask)", (3,), visible=True)]
        + [
            Case(f"hidden case {i + 1}: a longer sequence, T = {int(T)}", (int(T),))
            for i, T in enumerate(r.integers(4, 9, size=2))
        ]
        + [Case("hidden case 3: a single position, T = 1", (1,))]
    )


CAUSAL_MUTANTS = {
    "causal-mask-transposed": lambda T: att.causal_mask(T).T,
    "causal-mask-excludes-self": lambda T: att.causal_mask(T, offset=-1),
    "mask-inverted": lambda T: ~att.causal_mask(T),
    "mask-not-boolean": mask_as_numbers(att.causal_mask),
}


def _padding_cases(seed: int) -> list[Case]:
    r = _rng(403, seed)
    return [
        Case("lengths (3, 1, 2), T = 3", (np.array([3, 1, 2]), 3), visible=True),
        Case("hidden case 1: 4 sequences of random lengths, T = 6", (r.integers(1, 7, size=4), 6)),
        Case(
            "hidden case 2: one empty and one full sequence",
            (np.array([0, 5, int(r.integers(1, 5))]), 5),
        ),
    ]


PADDING_MUTANTS = {
    "mask-inverted": lambda lengths, T: ~att.padding_mask(lengths, T),
    "mask-not-boolean": mask_as_numbers(att.padding_mask),
}


def _mha_weights_set(r: np.random.Generator, d: int = 6, h: int = 2, dk: int = 4, dv: int = 3):
    """W_Q, W_K (h·d_k, d), W_V (h·d_v, d), W_O (d, h·d_v): d_k != d/h, d != d_k²."""
    return (
        0.5 * r.normal(size=(h * dk, d)),
        0.5 * r.normal(size=(h * dk, d)),
        r.normal(size=(h * dv, d)),
        r.normal(size=(d, h * dv)) / math.sqrt(h * dv),
    )


def _micro_two_heads() -> tuple[Array, ...]:
    W_Q = np.vstack([MICRO_WQ1, MICRO_WK1])  # head 2's W_Q = head 1's W_K
    W_K = np.vstack([MICRO_WK1, MICRO_WQ1])
    W_V = np.vstack([MICRO_WV1, MICRO_WV2])
    return MICRO_X, W_Q, W_K, W_V, MICRO_WO


def _mha_cases(seed: int) -> list[Case]:
    r = _rng(404, seed)
    cases = [Case("slides microscope: two heads and W_O", (*_micro_two_heads(), 2), visible=True)]
    T = 5
    cases.append(
        Case(
            "hidden case 1: unbatched, h = 2, d_k = 4, d = 6",
            (r.normal(size=(T, 6)), *_mha_weights_set(r), 2),
        )
    )
    cases.append(
        Case(
            "hidden case 2: batched, causal",
            (r.normal(size=(2, T, 6)), *_mha_weights_set(r), 2),
            {"causal": True},
        )
    )
    lengths = np.array([T, int(r.integers(2, T))])
    cases.append(
        Case(
            "hidden case 3: batched, key padding mask",
            (r.normal(size=(2, T, 6)), *_mha_weights_set(r), 2),
            {"key_padding_mask": att.padding_mask(lengths, T)},
        )
    )
    lengths = np.array([int(r.integers(2, T)), T, int(r.integers(1, T))])
    cases.append(
        Case(
            "hidden case 4: batched, causal and key padding",
            (r.normal(size=(3, T, 6)), *_mha_weights_set(r), 2),
            {"causal": True, "key_padding_mask": att.padding_mask(lengths, T)},
        )
    )
    cases.append(
        Case(
            "hidden case 5: three heads, d_k = 2, d_v = 2",
            (r.normal(size=(2, 4, 6)), *_mha_weights_set(r, d=6, h=3, dk=2, dv=2), 3),
        )
    )
    # the input domain's edges: one position (T = 1), and a sequence whose only real token is
    # the first, under the causal mask (each of its queries is left one key)
    cases.append(
        Case(
            "hidden case 6: one position (T = 1), causal, padding mask all True",
            (r.normal(size=(2, 1, 6)), *_mha_weights_set(r), 2),
            {"causal": True, "key_padding_mask": att.padding_mask(np.array([1, 1]), 1)},
        )
    )
    cases.append(
        Case(
            "hidden case 7: causal, one sequence with a single real token",
            (r.normal(size=(2, T, 6)), *_mha_weights_set(r), 2),
            {"causal": True, "key_padding_mask": att.padding_mask(np.array([1, T]), T)},
        )
    )
    return cases
