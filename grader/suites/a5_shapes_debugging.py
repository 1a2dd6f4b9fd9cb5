"""a5_shapes_debugging — the hidden suite: heads, masks, the LM loss, pooling, block shapes.

Students get `buggy.py` (one planted bug per function) and submit `fixed.py`. Inputs reach
them as torch tensors (`torch_inputs=True`); the references are `reference/shapes_torch.py`
(torch in, torch out, defined by the NumPy reference), imported lazily so this module loads
with numpy only. Mutants receive the same torch tensors, turn them into NumPy arrays and
call `reference/` with one piece swapped (never a retyped formula).

Hidden cases are built so that every mistake shows: T != d_h and h >= 2 (a reshape without
a transpose moves values), B >= 2 sequences of different lengths with padding present
(lengths in [1, T-1] for most rows, one full row), a pad_id that occurs among the targets
and is not always 0, query rows that keep at least one allowed and one masked key under
both the right and the inverted reading, and T_q != T_k in one masked-softmax case.
block_shapes has its own judge (`judge_block_shapes`): shapes are tuples of ints, so a float
entry (`d / n_heads` gives 4.0, which `x.view` refuses) fails even where 4.0 == 4, and it is
named alongside any shape mistake the mutants explain.

It stays one file (about 920 lines): each bug's mutant, the cases built to show it and
the written question about it are read side by side.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.mutants import AnyOf, any_form
from grader.questions import Assignment, Case, CodeQuestion, Judgement, WrittenQuestion, WrongForm
from grader.suites._attention import (
    WEIGHTS,
    WRONG_AXIS_WEIGHTS,
    inverted_with,
    mask_as_numbers,
    merge_heads_no_transpose,
    split_heads_mixed,
    split_heads_unswapped,
)
from grader.suites._kit import builder, shown, written
from reference import attention as att
from reference import blocks, masking, visibility

FILE = "fixed.py"
Array = np.ndarray

# The notes' shape walkthrough (§6): B=2 sequences, T=4 tokens, d=8, h=2 heads, d_ff=32.
WALKTHROUGH = {"B": 2, "T": 4, "d": 8, "n_heads": 2, "d_ff": 32}


def _edge_rng(salt: int, seed: int) -> np.random.Generator:
    """The domain edges' own stream: drawing them leaves every earlier case as it was."""
    return np.random.default_rng([salt, seed, 33])


# The domain of every graded function's arguments, as the handout defines it; the cases named
# "domain edge" sit at its edges, after the other cases.
DOMAINS: dict[str, dict[str, str]] = {
    "split_heads": {"x": "(B, T, d) float64, d = h·d_h", "n_heads": "h >= 1 dividing d"},
    "merge_heads": {"x": "(B, h, T, d_h) float64"},
    "masked_softmax": {
        "scores": "(..., T_q, T_k) of any size (hundreds apart, up to 1000, included)",
        "mask": "bool, broadcastable, at least one True in every row (a row with none is "
        "outside the domain: the handout's A = softmax(S + M) is NaN there)",
    },
    "causal_lm_loss": {
        "logits": "(B, T, V) of any size (spread over ±1000 included)",
        "tokens": "(B, T) int64, right-padded, every row at least 2 real tokens",
        "pad_id": "an id in [0, V)",
    },
    "masked_mean_pool": {"H": "(B, T, d)", "lengths": "(B,) in [1, T]"},
    "block_shapes": {"B, T, d, n_heads, d_ff": "positive ints, n_heads dividing d"},
    "task_mask": {"task": "tagging, next_token or classification", "lengths": "(B,) in [2, T]"},
    "task_loss_positions": {"task": "as task_mask's", "lengths": "(B,) in [2, T]"},
}


def _rng(salt: int, seed: int) -> np.random.Generator:
    return np.random.default_rng([salt, seed])


def _np(t: Any) -> Array:
    """A torch tensor (or array) as a NumPy array, without importing torch here."""
    if hasattr(t, "detach"):
        return t.detach().cpu().numpy()
    return np.asarray(t)


# The trusted a5 functions on the grader's side: the NumPy reference that
# reference/shapes_torch.py wraps for torch (one source of truth). Only the student's
# process gets torch tensors; the grader compares plain arrays and never imports torch.
REFERENCES: dict[str, Callable[..., Any]] = {
    "split_heads": att.split_heads,
    "merge_heads": att.merge_heads,
    "masked_softmax": lambda scores, mask: att.masked_softmax(
        scores, np.asarray(mask).astype(bool)
    ),
    "causal_lm_loss": masking.causal_lm_loss,
    "masked_mean_pool": blocks.masked_mean_pool,
    "block_shapes": blocks.block_shapes,
    "task_mask": lambda task, lengths, T: visibility.task_mask(task, _np(lengths), T),
    "task_loss_positions": lambda task, lengths, T: visibility.task_loss_positions(
        task, _np(lengths), T
    ),
}


# ---------------------------------------------------------------- mutants (reference pieces)


def _split_no_transpose(x: Any, n_heads: int) -> AnyOf:
    """heads-reshape-without-transpose, in either natural form (grader/suites/_attention.py)."""
    a = _np(x)
    return AnyOf(split_heads_mixed(a, n_heads), split_heads_unswapped(a, n_heads))


def _merge_no_transpose(x: Any) -> Array:
    """merge-heads-without-transpose (grader/suites/_attention.py)."""
    return merge_heads_no_transpose(_np(x))


def _softmax_with(fn: Callable[..., Array]) -> Callable[[Any, Any], Array]:
    return lambda scores, mask: fn(_np(scores), _np(mask).astype(bool))


def _loss_not_shifted(logits: Any, tokens: Any, pad_id: int) -> AnyOf:
    """lm-loss-not-shifted: CE(logits[b, t], tokens[b, t]) over the non-pad tokens.

    Natural forms: over every position (no slicing at all), or with logits and tokens sliced
    alike, both `[:, :-1]` or both `[:, 1:]`.
    """
    lg, tok = _np(logits), _np(tokens)
    targets = np.where(tok == pad_id, masking.IGNORE_INDEX, tok)  # (B, T), no shift
    return AnyOf(
        masking.token_cross_entropy(lg, targets),
        masking.token_cross_entropy(lg[:, :-1], targets[:, :-1]),
        masking.token_cross_entropy(lg[:, 1:], targets[:, 1:]),
    )


def _loss_with_padding(logits: Any, tokens: Any, pad_id: int) -> AnyOf:
    """lm-loss-includes-padding: shifted targets, but the padded ones still counted.

    Natural forms: pad_id kept as a target (no ignore_index), or the padded targets left out
    of the sum but the mean still divided by every shifted position, B·(T-1).
    """
    _, all_targets = masking.next_token_targets(
        _np(tokens), pad_id=masking.IGNORE_INDEX
    )  # no pad ever matches
    shifted = _np(logits)[:, :-1]  # logits (B, T-1, V)
    _, targets = masking.next_token_targets(_np(tokens), pad_id)
    real = np.mean(targets != masking.IGNORE_INDEX)  # share of real targets
    return AnyOf(
        masking.token_cross_entropy(shifted, all_targets),
        masking.token_cross_entropy(shifted, targets) * real,  # Σ real / B(T-1)
    )


def _loss_per_sequence(logits: Any, tokens: Any, pad_id: int) -> float:
    """lm-loss-mean-per-sequence: each sequence's own mean over its real targets, then the mean
    over the batch (Keras-style per-sample losses), not one mean over every real target."""
    lg = _np(logits)[:, :-1]  # (B, T-1, V)
    _, targets = masking.next_token_targets(_np(tokens), pad_id)  # (B, T-1)
    return float(np.mean([masking.token_cross_entropy(lg[b], targets[b]) for b in range(len(lg))]))


def _loss_summed(logits: Any, tokens: Any, pad_id: int) -> float:
    """lm-loss-summed: the real targets' losses summed (torch's reduction="sum")."""
    _, targets = masking.next_token_targets(_np(tokens), pad_id)  # (B, T-1)
    n = int(np.sum(targets != masking.IGNORE_INDEX))
    return masking.causal_lm_loss(_np(logits), _np(tokens), pad_id) * n


def _softmax_unshifted(scores: Any, mask: Any) -> Any:
    """softmax-unstable: exp of the raw scores, no max shift. Where a score passes ≈ 709.78, exp
    overflows to inf and the row's weights are inf/inf = NaN there, 0 at its finite entries.
    Natural forms: the masked scores filled before exp (their weights 0, or NaN-free), or exp
    of every score multiplied by the mask (an overflowing masked score gives inf·0 = NaN)."""
    s, m = _np(scores), np.broadcast_to(_np(mask).astype(bool), np.shape(scores))
    with np.errstate(all="ignore"):
        filled = np.where(m, np.exp(np.where(m, s, 0.0)), 0.0)  # (..., Tq, Tk)
        times_mask = np.exp(s) * m  # (..., Tq, Tk)
        forms = [e / e.sum(axis=-1, keepdims=True) for e in (filled, times_mask)]
    if all(np.array_equal(f, forms[0], equal_nan=True) for f in forms):
        return forms[0]
    return AnyOf(*forms)


def _pool_all_rows(H: Any, lengths: Any) -> AnyOf:
    """pool-includes-padding: the padding rows summed in (every row counted as real).

    Natural forms: the mean over all T rows, or the sum over all T rows divided by lengths[b].
    """
    a, n = _np(H), _np(lengths)
    full = np.full(a.shape[0], a.shape[1], dtype=np.int64)  # (B,) = T
    mean_all = blocks.masked_mean_pool(a, full)  # (B, d)
    return AnyOf(mean_all, mean_all * (a.shape[1] / n[:, None]))  # Σ_all / lengths[b]


def _pool_divides_by_T(H: Any, lengths: Any) -> Array:
    """pool-divides-by-T: the real rows summed, but divided by T instead of lengths[b]."""
    a, n = _np(H), _np(lengths)
    return blocks.masked_mean_pool(a, n) * (n[:, None] / a.shape[1])  # (B, d)


def _shapes_scores_missing_heads(B: int, T: int, d: int, n_heads: int, d_ff: int) -> dict:
    s = blocks.block_shapes(B, T, d, n_heads, d_ff)
    drop_heads = {k: s[k][:1] + s[k][2:] for k in ("scores", "weights")}  # (B, T, T)
    return {**s, **drop_heads}


def _shapes_ln_per_feature(B: int, T: int, d: int, n_heads: int, d_ff: int) -> dict:
    s = blocks.block_shapes(B, T, d, n_heads, d_ff)
    return {**s, "ln_stats": s["bn_stats"]}  # (d,)


def _shapes_bn_per_token(B: int, T: int, d: int, n_heads: int, d_ff: int) -> dict:
    s = blocks.block_shapes(B, T, d, n_heads, d_ff)
    return {**s, "bn_stats": s["ln_stats"]}  # (B, T)


def _task_mask_with(**hooks: Any) -> Callable[[str, Any, int], Array]:
    return lambda task, lengths, T: visibility.task_mask(task, _np(lengths), T, **hooks)


def _positions_with(**hooks: Any) -> Callable[[str, Any, int], Array]:
    return lambda task, lengths, T: visibility.task_loss_positions(task, _np(lengths), T, **hooks)


MUTANTS: dict[str, dict[str, Callable[..., Any]]] = {
    "split_heads": {"heads-reshape-without-transpose": _split_no_transpose},
    "merge_heads": {"merge-heads-without-transpose": _merge_no_transpose},
    "masked_softmax": {
        # the shared family (grader/suites/_attention.py), as a4's attention lifts it: the mask
        # read the wrong way round (a fully masked row zero, as this function must make it),
        # masked scores filled with 0, a softmax over any axis but the last
        "mask-inverted": _softmax_with(inverted_with("zero")),
        "mask-zero-fill": _softmax_with(WEIGHTS["mask-zero-fill"]),
        "softmax-wrong-axis": _softmax_with(any_form(*WRONG_AXIS_WEIGHTS)),
        # shows on the large-scores domain edge only
        "softmax-unstable": _softmax_unshifted,
    },
    "causal_lm_loss": {
        "lm-loss-not-shifted": _loss_not_shifted,
        "lm-loss-includes-padding": _loss_with_padding,
        # conventions of widely used code the handout excludes: Keras-style per-sample means,
        # torch's reduction="sum"
        "lm-loss-mean-per-sequence": _loss_per_sequence,
        "lm-loss-summed": _loss_summed,
    },
    "masked_mean_pool": {
        "pool-includes-padding": _pool_all_rows,
        "pool-divides-by-T": _pool_divides_by_T,
    },
    "block_shapes": {
        "shape-scores-missing-heads": _shapes_scores_missing_heads,
        "shape-ln-stats-per-feature": _shapes_ln_per_feature,
        "shape-bn-stats-per-token": _shapes_bn_per_token,
    },
    "task_mask": {
        "mask-inverted": lambda task, lengths, T: ~visibility.task_mask(task, _np(lengths), T),
        "task-mask-causal-for-bidirectional-task": _task_mask_with(causal_tasks=visibility.TASKS),
        "task-mask-not-causal": _task_mask_with(causal_tasks=()),
        "task-mask-padding-ignored": _task_mask_with(pad_keys=False),
        "task-mask-empty-padded-rows": _task_mask_with(pad_queries=True),
        "mask-not-boolean": mask_as_numbers(REFERENCES["task_mask"]),
    },
    "task_loss_positions": {
        "loss-positions-through-last-token": _positions_with(through_last=True),
        "loss-positions-include-padding": _positions_with(lengths_ignored=True),
        "loss-positions-classification-per-token": _positions_with(pooled_reads_tokens=True),
        "mask-not-boolean": mask_as_numbers(REFERENCES["task_loss_positions"]),
    },
}


# ---------------------------------------------------------------- cases


def _lengths(rng: np.random.Generator, B: int, T: int, *, low: int = 1) -> Array:
    """Different lengths in [low, T-1] (padding in every row) except one full row."""
    lengths = rng.integers(low, T, size=B)
    lengths[rng.integers(B)] = T
    if len(set(lengths.tolist())) == 1:  # B >= 2 rows that differ
        lengths[0] = low
    return lengths.astype(np.int64)


def split_heads_cases(seed: int) -> list[Case]:
    rng = _rng(51, seed)
    cases = shown(
        "notes walkthrough: arange, B=2, T=4, d=8, h=2", np.arange(64.0).reshape(2, 4, 8), 2
    )
    for i, (B, T, h, d_h) in enumerate(((3, 5, 3, 4), (2, 6, 4, 2), (2, 3, 2, 6))):
        cases.append(
            Case(
                f"hidden case {i + 1}: B={B}, T={T}, h={h}, d_h={d_h}, random features",
                (rng.normal(size=(B, T, h * d_h)), h),
            )
        )
    return cases


def merge_heads_cases(seed: int) -> list[Case]:
    rng = _rng(52, seed)
    cases = shown(
        "notes walkthrough: arange, B=2, h=2, T=4, d_h=4", np.arange(64.0).reshape(2, 2, 4, 4)
    )
    for i, (B, h, T, d_h) in enumerate(((3, 3, 5, 4), (2, 4, 6, 2), (2, 2, 3, 6))):
        cases.append(
            Case(
                f"hidden case {i + 1}: B={B}, h={h}, T={T}, d_h={d_h}, random features",
                (rng.normal(size=(B, h, T, d_h)),),
            )
        )
    return cases


def _row_mask(rng: np.random.Generator, Tq: int, Tk: int) -> Array:
    """A random (Tq, Tk) mask whose every row has at least one True and one False."""
    m = rng.random((Tq, Tk)) < 0.5
    for i in range(Tq):
        j, k = rng.choice(Tk, size=2, replace=False)
        m[i, j], m[i, k] = True, False
    return m


def masked_softmax_cases(seed: int) -> list[Case]:
    rng = _rng(53, seed)
    visible_scores = (
        (np.arange(32.0).reshape(2, 1, 4, 4) % 7 - 3)
        * 0.5
        * np.array([1.0, -1.0]).reshape(1, 2, 1, 1)
    )
    visible_mask = att.key_mask(att.padding_mask(np.array([2, 3]), 4))[:, None]  # (2, 1, 1, 4)
    cases = shown("key padding, lengths [2, 3] of T=4 (B=2, h=2)", visible_scores, visible_mask)
    # causal and key padding together, broadcast over heads: (B, 1, T, T)
    B, h, T = 2, 3, 5
    pad = att.key_mask(
        att.padding_mask(_lengths(rng, B, T - 1), T)
    )  # (B, 1, T), lengths in [1, T-1]
    causal_pad = att.combine_masks(att.causal_mask(T), pad)[:, None]  # (B, 1, T, T)
    cases.append(
        Case(
            "hidden case 1: causal and key padding masks, B=2, h=3, T=5",
            (rng.normal(size=(B, h, T, T)) * 3, causal_pad),
        )
    )
    # cross-attention shaped: T_q != T_k, one (T_q, T_k) mask for every batch row and head
    cases.append(
        Case(
            "hidden case 2: T_q=3, T_k=6, one (3, 6) mask for every batch row and head",
            (rng.normal(size=(2, 2, 3, 6)) * 3, _row_mask(rng, 3, 6)),
        )
    )
    # no head axis: scores (B, T, T), key padding mask (B, 1, T)
    lengths = rng.integers(2, 6, size=4)
    cases.append(
        Case(
            "hidden case 3: no head axis, B=4, T=6, key padding mask",
            (rng.normal(size=(4, 6, 6)) * 3, att.key_mask(att.padding_mask(lengths, 6))),
        )
    )
    # the domain's edge: scores of any size, hundreds apart, every row's largest allowed score
    # 1000 (an exp without the max shift overflows there, and one shifted by the row minimum
    # overflows where the row spans more than ≈ 709.78); every row padded (lengths 2 to 4 of 5):
    # no row is left without a key, read either way round
    edge = _edge_rng(53, seed)
    pad = att.key_mask(att.padding_mask(edge.integers(2, 5, size=2), 5))[:, None]  # (B, 1, 1, 5)
    big = 400.0 * edge.normal(size=(2, 2, 4, 5))  # (B, h, T, T_k)
    allowed = np.where(np.broadcast_to(pad, big.shape), big, -np.inf)
    big += 1000.0 - allowed.max(axis=-1, keepdims=True)
    keys = np.flatnonzero(pad[0, 0, 0])  # the allowed keys of the first row
    low = keys[int(np.argmin(big[0, 0, 0, keys]))]
    big[0, 0, 0, low] = min(big[0, 0, 0, low], -200.0)  # that row spans 1200 at least
    cases.append(Case("domain edge: scores hundreds apart, up to 1000, key padding", (big, pad)))
    return cases


def _lm_batch(rng: np.random.Generator, B: int, T: int, V: int, pad_id: int) -> tuple[Array, Array]:
    """Right-padded token ids (no real token equals pad_id) and logits."""
    lengths = _lengths(rng, B, T, low=2)
    real = np.array([v for v in range(V) if v != pad_id])
    tokens = rng.choice(real, size=(B, T)).astype(np.int64)
    tokens[np.arange(T)[None, :] >= lengths[:, None]] = pad_id
    return rng.normal(size=(B, T, V)) * 2, tokens


def causal_lm_loss_cases(seed: int) -> list[Case]:
    rng = _rng(54, seed)
    b, t, v = np.meshgrid(np.arange(2), np.arange(5), np.arange(6), indexing="ij")
    visible_logits = np.cos(1.0 + b + 2 * t + 3 * v)  # (2, 5, 6)
    visible_tokens = np.array([[3, 1, 4, 1, 5], [2, 5, 3, 0, 0]], dtype=np.int64)
    cases = shown("two sequences, lengths 5 and 3, pad_id 0", visible_logits, visible_tokens, 0)
    for i, (B, T, V, pad_id) in enumerate(((3, 7, 9, 0), (4, 6, 11, 10), (2, 8, 7, 2))):
        logits, tokens = _lm_batch(rng, B, T, V, pad_id)
        which = "the first" if pad_id == 0 else ("the last" if pad_id == V - 1 else "a middle")
        cases.append(
            Case(
                f"hidden case {i + 1}: B={B}, T={T}, V={V}, right-padded rows, pad_id {which} id",
                (logits, tokens, pad_id),
            )
        )
    # the domain's edge: logits of any size; spread over ±1000 (log(softmax) underflows to
    # log 0 where log_softmax does not)
    edge = _edge_rng(54, seed)
    logits, tokens = _lm_batch(edge, 3, 6, 8, 0)
    cases.append(
        Case(
            "domain edge: B=3, T=6, V=8, logits spread over ±1000, pad_id the first id",
            (logits * 400.0, tokens, 0),
        )
    )
    return cases


def masked_mean_pool_cases(seed: int) -> list[Case]:
    rng = _rng(55, seed)
    cases = shown(
        "arange, lengths [2, 4] of T=4", np.arange(24.0).reshape(2, 4, 3), np.array([2, 4])
    )
    for i, (B, T, d) in enumerate(((3, 6, 5), (4, 5, 7))):
        lengths = _lengths(rng, B, T)
        H = rng.normal(size=(B, T, d))
        H[np.arange(T)[None, :] >= lengths[:, None]] += (
            10.0  # padding rows hold stale, large values
        )
        cases.append(
            Case(
                f"hidden case {i + 1}: B={B}, T={T}, d={d}, padded rows hold large values",
                (H, lengths),
            )
        )
    return cases


def block_shapes_cases(seed: int) -> list[Case]:
    rng = _rng(56, seed)
    w = WALKTHROUGH
    cases = shown(
        "notes walkthrough (B=2, T=4, d=8, h=2, d_ff=32)",
        w["B"],
        w["T"],
        w["d"],
        w["n_heads"],
        w["d_ff"],
    )
    for i in range(3):
        B, h = int(rng.integers(2, 6)), int(rng.integers(2, 5))
        d_h = int(rng.choice([3, 5, 6, 7]))
        T = int(rng.choice([t for t in range(3, 10) if t not in (d_h, B, h)]))
        d = h * d_h
        d_ff = int(rng.choice([2, 3, 4])) * d
        cases.append(
            Case(f"hidden case {i + 1}: B, T, h and d_h all different sizes", (B, T, d, h, d_ff))
        )
    return cases


# ---------------------------------------------------------------- judging block_shapes


def _task_cases(salt: int) -> Callable[[int], list[Case]]:
    """A worked example, then every task on hidden padded batches (one full row, and rows of
    different lengths, at least 2 long so that a causal row differs from a bidirectional one)."""

    def cases(seed: int) -> list[Case]:
        rng = _rng(salt, seed)
        out = shown(
            "worked example: next-token prediction, lengths [3, 2], T = 4 (README)",
            "next_token",
            np.array([3, 2]),
            4,
        )
        tasks = ("tagging", "next_token", "classification", "next_token", "tagging")
        for i, task in enumerate(tasks):
            B, T = int(rng.integers(3, 5)), int(rng.integers(5, 8))
            lengths = _lengths(rng, B, T, low=2)
            out.append(
                Case(
                    f"hidden case {i + 1}: {task}, B = {B}, T = {T}, padded rows",
                    (task, lengths, T),
                )
            )
        return out

    return cases


FLOAT_SIZES = "head-dim-float-division"


@dataclass(frozen=True)
class ShapeReading:
    """One returned shape dict read against the expected one."""

    problems: list[str]
    """For the student (hidden cases: nothing taken from the expected shapes)."""
    values: dict[str, tuple]
    """Every readable shape, its entries as numbers."""
    wrong: set[str]
    """Keys whose numbers differ from the expected shape (missing keys too)."""
    floats: bool
    """Some entry is a float with a whole value (4.0): `d / n_heads`."""


def _entries(value: Any) -> tuple | None:
    """A returned shape as a tuple of numbers (None when it is not a flat sequence of numbers)."""
    if not isinstance(value, (tuple, list)):
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
        return None
    return tuple(value)


def read_shapes(got: Any, want: Mapping[str, tuple], visible: bool) -> ShapeReading:
    """Exact shapes: the right numbers, and ints (a float size fails `x.view(B, T, h, 4.0)`)."""
    if not isinstance(got, dict):
        kind = type(got).__name__
        return ShapeReading(
            [f"expected a dict of shapes keyed {', '.join(want)}, got a {kind}"],
            {},
            set(want),
            False,
        )
    problems, values, wrong, floats = [], {}, set(), False
    missing = [k for k in want if k not in got]
    if missing:
        problems.append(f"missing keys: {', '.join(map(repr, missing))}")
        wrong.update(missing)
    for key, w in want.items():
        if key not in got:
            continue
        entries = _entries(got[key])
        if entries is None:
            problems.append(
                f"`{key}`: expected a tuple of ints, got {type(got[key]).__name__} {got[key]!r:.60}"
            )
            wrong.add(key)
            continue
        values[key] = entries
        if any(isinstance(v, float) for v in entries):
            floats = True
            problems.append(f"`{key}` holds a float, {entries!r}: shape entries are ints")
        if entries != w:  # 4.0 == 4: the numbers are compared here, the types just above
            wrong.add(key)
            problems.append(
                f"`{key}`: differs (got {entries!r})" + (f", expected {w!r}" if visible else "")
            )
    return ShapeReading(problems, values, wrong, floats)


def _explaining(
    reading: ShapeReading, want: Mapping[str, tuple], args: tuple
) -> list[tuple[int, int, str]]:
    """(extra keys wrong, order, id) for each shape mutant that explains every wrong key."""
    found = []
    for order, (mid, mutant) in enumerate(MUTANTS["block_shapes"].items()):
        predicted = mutant(*args)
        if all(k in reading.values and reading.values[k] == predicted[k] for k in reading.wrong):
            extra = sum(1 for k in want if k not in reading.wrong and predicted[k] != want[k])
            found.append((extra, order, mid))
    return sorted(found)


def judge_block_shapes(cases: Sequence[Case], outputs: Sequence[Any]) -> Judgement:
    """Every shape exact and made of ints; the mistakes named as the engine names them (the one
    explaining the most wrong cases, at least half), and float sizes named on their own."""
    j = Judgement(how="every shape compared exactly, its entries as ints")
    tally: dict[str, list[int]] = {}  # id -> [cases explained, extra keys wrong, order]
    n_wrong, floats = 0, False
    for case, got in zip(cases, outputs):
        if got is None:
            continue  # the engine reports the failed call
        want = blocks.block_shapes(*case.args)
        reading = read_shapes(got, want, case.visible)
        j.checks.append((case.name, not reading.problems, "; ".join(reading.problems[:4])))
        floats |= reading.floats
        if reading.wrong:
            n_wrong += 1
            for extra, order, mid in _explaining(reading, want, case.args):
                t = tally.setdefault(mid, [0, 0, order])
                t[0], t[1] = t[0] + 1, t[1] + extra
    if tally:
        mid, (count, _, _) = min(tally.items(), key=lambda kv: (-kv[1][0], kv[1][1], kv[1][2]))
        if count * 2 >= n_wrong:
            j.misconceptions.append(mid)
    if floats:
        j.misconceptions.append(FLOAT_SIZES)
    return j


# ---------------------------------------------------------------- written: shapes


def _walk_numbers(numbers: Mapping[str, Any]) -> Mapping[str, Any]:
    return WALKTHROUGH


def _variant_numbers(numbers: Mapping[str, Any]) -> Mapping[str, Any]:
    return {k: int(numbers[k]) for k in ("B", "T", "d", "n_heads", "d_ff")}


def _shape_of(
    key: str, sizes: Callable[[Mapping[str, Any]], Mapping[str, Any]]
) -> Callable[[Mapping[str, Any]], tuple]:
    return lambda numbers: blocks.block_shapes(**sizes(numbers))[key]


def _shape_wrong_forms(key: str, sizes: Callable[[Mapping[str, Any]], Mapping[str, Any]]):
    def forms(numbers: Mapping[str, Any]) -> list[WrongForm]:
        s = blocks.block_shapes(**sizes(numbers))
        if key in ("q_heads", "context_heads"):
            B, h, T, d_h = s[key]
            return [
                WrongForm(
                    (B, T, h, d_h),
                    "heads-reshape-without-transpose",
                    "(B, T, h, d_h) is the view before the transpose; the heads axis must come "
                    "before the positions: (B, h, T, d_h) (notes §6, 'split heads').",
                )
            ]
        if key == "scores":
            return [
                WrongForm(
                    s[key][:1] + s[key][2:],
                    "shape-scores-missing-heads",
                    "every head has its own T × T scores, so the heads axis stays: (B, h, T, T).",
                )
            ]
        if key == "ln_stats":
            return [
                WrongForm(
                    s["bn_stats"],
                    "shape-ln-stats-per-feature",
                    "one mean per feature, (d,), is BatchNorm's set; LayerNorm has one per token.",
                )
            ]
        if key == "bn_stats":
            return [
                WrongForm(
                    s["ln_stats"],
                    "shape-bn-stats-per-token",
                    "one mean per token, (B, T), is LayerNorm's set; BatchNorm has one per feature.",
                )
            ]
        return []

    return forms


SHAPE_KEYS = {
    "q_heads": "Q split into heads",
    "scores": "scores Q K^T",
    "context_heads": "A V per head",
    "context": "heads merged",
    "ffn_hidden": "FFN hidden",
    "block_out": "block output",
    "ln_stats": "LayerNorm mean",
    "bn_stats": "BatchNorm mean",
}


def _shape_questions(
    prefix: str, label: str, points: float, sizes: Callable[[Mapping[str, Any]], Mapping[str, Any]]
) -> tuple[WrittenQuestion, ...]:
    return tuple(
        written(
            f"a5.{prefix}_{key}",
            f"{label} shape: {what}",
            points,
            f"{prefix}_{key}",
            "shape",
            _shape_of(key, sizes),
            _shape_wrong_forms(key, sizes),
        )
        for key, what in SHAPE_KEYS.items()
    )


# ---------------------------------------------------------------- written: axes and bugs

AXIS_CHOICES = ("A", "B", "C")  # A = batch B, B = positions T, C = features d


def _axis_question(
    key: str, title: str, answer: str, wrong: tuple[tuple[str, str, str], ...] = ()
) -> WrittenQuestion:
    return written(
        f"a5.{key}",
        title,
        1.5,
        key,
        "choice",
        lambda numbers: answer,
        lambda numbers: [WrongForm(a, mid, msg) for a, mid, msg in wrong],
        choices=AXIS_CHOICES,
    )


AXIS_QUESTIONS = (
    _axis_question("axis_ffn", "Which axis a position-wise FFN computes along", "C"),
    _axis_question(
        "axis_layer_norm",
        "Which axis LayerNorm's statistics are taken along",
        "C",
        (
            (
                "A,B",
                "shape-ln-stats-per-feature",
                "averaging over batch and positions is BatchNorm; "
                "LayerNorm averages one token's d features.",
            ),
            (
                "A",
                "shape-ln-stats-per-feature",
                "averaging down the batch is BatchNorm; LayerNorm averages one token's d features.",
            ),
        ),
    ),
    _axis_question("axis_attention", "Which axis the weighted sum A V combines", "B"),
    _axis_question(
        "axis_batch_norm",
        "Which axes BatchNorm's statistics are taken along",
        "A,B",
        (
            (
                "C",
                "shape-bn-stats-per-token",
                "averaging a token's features is LayerNorm; BatchNorm "
                "averages each feature over batch (and positions).",
            ),
        ),
    ),
)

# The README's list of bug kinds (letters shuffled on purpose) and the bug planted in each
# function of buggy.py.
BUG_KINDS = {
    "A": "softmax over the wrong axis",
    "B": "masked scores filled with 0 instead of -inf",
    "C": "padding rows averaged in",
    "D": "a view to (B, h, T, d_h) without the transpose",
    "E": "LayerNorm statistics taken per feature",
    "F": "the loss compares position t with token t (no shift)",
    "G": "heads merged without transposing back",
    "H": "the mask read the wrong way round",
    "I": "the heads axis left out of the attention scores",
    "J": "padded targets counted in the loss",
    "K": "missing 1/sqrt(d_h) scale",
    "L": "BatchNorm statistics taken per token",
}
PLANTED_BUGS = {
    "split_heads": "D",
    "merge_heads": "G",
    "masked_softmax": "B",
    "causal_lm_loss": "J",
    "masked_mean_pool": "C",
    "block_shapes": "I",
}

BUG_QUESTIONS = tuple(
    written(
        f"a5.bug_{fn}",
        f"Classify the bug in buggy.{fn}",
        1.5,
        f"bug_{fn}",
        "choice",
        lambda numbers, a=letter: a,
        choices=tuple(BUG_KINDS),
    )
    for fn, letter in PLANTED_BUGS.items()
)


# ---------------------------------------------------------------- written: visibility for a task

# The README's four masks and four loss-position sets, lettered in that order.
MASK_CHOICES = {"A": "bidirectional", "B": "causal", "C": "padding", "D": "causal and padding"}
LOSS_CHOICES = {
    "A": "every real token",
    "B": "positions 0 … length − 2",
    "C": "none (the pooled vector)",
    "D": "every position, padding included",
}
# task -> (the right mask, {a wrong letter: the mistake it shows})
MASK_ANSWERS: dict[str, tuple[str, dict[str, str]]] = {
    "tagging": ("A", {"B": "task-mask-causal-for-bidirectional-task"}),
    "next_token": ("D", {"B": "task-mask-padding-ignored", "C": "task-mask-not-causal"}),
    "classification": (
        "C",
        {"D": "task-mask-causal-for-bidirectional-task", "A": "task-mask-padding-ignored"},
    ),
    "decoder": ("B", {"A": "task-mask-not-causal"}),
}
LOSS_ANSWERS: dict[str, tuple[str, dict[str, str]]] = {
    "tagging": ("A", {"D": "loss-positions-include-padding"}),
    "next_token": (
        "B",
        {"A": "loss-positions-through-last-token", "D": "loss-positions-include-padding"},
    ),
    "classification": ("C", {"A": "loss-positions-classification-per-token"}),
}
_WHY = {
    "task-mask-causal-for-bidirectional-task": "the whole input is available for this target: "
    "no causal restriction.",
    "task-mask-padding-ignored": "this batch is padded: its padded keys must be hidden too.",
    "task-mask-not-causal": "a position must not see the token it predicts: add the causal "
    "restriction.",
    "loss-positions-include-padding": "padded positions are never read by the loss.",
    "loss-positions-through-last-token": "the last real token has no next token to predict.",
    "loss-positions-classification-per-token": "the loss reads the pooled vector, not the tokens.",
}


def _task_question(
    qid: str, title: str, key: str, table: Mapping[str, tuple[str, dict[str, str]]], pick
) -> WrittenQuestion:
    def wrong(numbers: Mapping[str, Any]) -> list[WrongForm]:
        _, forms = table[pick(numbers)]
        return [WrongForm(letter, mid, _WHY[mid]) for letter, mid in forms.items()]

    return written(
        qid,
        title,
        2,
        key,
        "choice",
        lambda numbers: table[pick(numbers)][0],
        wrong,
        choices=("A", "B", "C", "D"),
    )


VISIBILITY_QUESTIONS = (
    _task_question(
        "a5.mask_task_1",
        "Visibility for your first task",
        "mask_task_1",
        MASK_ANSWERS,
        lambda n: n["mask_tasks"][0],
    ),
    _task_question(
        "a5.mask_task_2",
        "Visibility for your second task",
        "mask_task_2",
        MASK_ANSWERS,
        lambda n: n["mask_tasks"][1],
    ),
    _task_question(
        "a5.loss_task",
        "The positions the loss reads for your task",
        "loss_task",
        LOSS_ANSWERS,
        lambda n: n["loss_task"],
    ),
)


# ---------------------------------------------------------------- the assignment


_question = builder(
    "a5", FILE, torch_inputs=True
)  # every code question of a5 (grader/suites/_kit.py)


def _code(
    fn: str, title: str, points: float, cases: Callable[[int], list[Case]], **kw: Any
) -> CodeQuestion:
    """A question on the fixed function `fn`: its reference and mistakes are looked up by name."""
    return _question(fn, title, points, fn, REFERENCES[fn], cases, MUTANTS[fn], **kw)


# The six functions of buggy.py, each with one planted bug to repair.
CODE_QUESTIONS = (
    _code("split_heads", "Split heads: (B, T, d) -> (B, h, T, d_h)", 8, split_heads_cases),
    _code("merge_heads", "Merge heads: (B, h, T, d_h) -> (B, T, d)", 8, merge_heads_cases),
    _code("masked_softmax", "Masked softmax (masked weights exactly 0)", 8, masked_softmax_cases),
    _code("causal_lm_loss", "Causal LM loss: shifted, padding excluded", 10, causal_lm_loss_cases),
    _code("masked_mean_pool", "Mean pooling over real tokens", 8, masked_mean_pool_cases),
    _code(
        "block_shapes",
        "Shapes through one pre-norm encoder block",
        9,
        block_shapes_cases,
        integer=True,
        custom=judge_block_shapes,
    ),
)

# The two functions written from their docstrings (not in buggy.py): visibility for a task.
TASK_QUESTIONS = (
    _code(
        "task_mask",
        "Visibility for a task: the attention mask",
        7,
        _task_cases(57),
        integer=True,
    ),
    _code(
        "task_loss_positions",
        "The positions a task's loss reads",
        5,
        _task_cases(58),
        integer=True,
    ),
)

ASSIGNMENT = Assignment(
    id="a5_shapes_debugging",
    title="Assignment 5 — Shapes and debugging",
    code_file=FILE,
    questions=(
        *CODE_QUESTIONS,
        *TASK_QUESTIONS,
        *_shape_questions("walk", "Walkthrough", 1, _walk_numbers),
        *_shape_questions("var", "Your block", 1, _variant_numbers),
        *AXIS_QUESTIONS,
        *BUG_QUESTIONS,
        *VISIBILITY_QUESTIONS,
    ),
    preload_torch=True,
)
