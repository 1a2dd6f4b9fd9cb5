"""a4_transformer — the hidden suite: attention, masks, heads, norms, FFNs, positions, blocks.

Every question compares the student's function with `reference/` on a few visible cases (the
slides' microscopes) and hidden cases drawn from `default_rng([salt, seed])`. The mutants are
reference functions with one hook swapped, so each misconception is derived, never retyped.

Shapes chosen so that mistakes separate: T_q != T_k, h >= 2 with d_k != d_model and
d != d_k² (so 1/sqrt(d_k), 1/d_k, 1/sqrt(d) and 1 all differ), h·d_k != d, S != T in the
decoder, a tiny-variance LayerNorm case (features of scale 1e-3, where sqrt(var + eps) and
sqrt(var) + eps differ), GELU inputs of size 1–3 with large weights (erf vs tanh GELU), and
masks in which no query row is fully masked under the correct reading.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import numpy as np

from grader.mutants import any_form
from grader.questions import Assignment, Case, WrittenQuestion, WrongForm
from grader.suites._attention import (
    PADDED_ROW_FILLS,
    WEIGHTS,
    WRONG_AXIS_WEIGHTS,
    after_softmax,
    ignore_mask,
    inverted_with,
    merge_heads_no_transpose,
    padded_query_rows,
    split_heads_mixed,
)
from grader.suites._kit import builder
from reference import attention as att
from reference import blocks, ffn, gpt, norms, positions
from reference.functional import sigmoid

FILE = "transformer.py"
SHORTCUTS = (
    "torch.nn.functional.scaled_dot_product_attention",
    "torch.nn.MultiheadAttention",
    "torch.nn.functional.multi_head_attention_forward",
    "torch.nn.functional.layer_norm",
    "torch.nn.LayerNorm",
    "torch.nn.functional.rms_norm",
    "torch.nn.RMSNorm",
    "torch.nn.Transformer*",
)
Array = np.ndarray

# ---------------------------------------------------------------- the slides' microscopes (001)

# Part 3, "A three-token microscope": the, cat, sleeps (T=3, D=4, d_k=d_v=2)
MICRO_X = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]])
MICRO_WQ1 = np.array([[1.0, 0, 0, 0], [0, 1, 0, 0]])
MICRO_WK1 = np.array([[0.0, 0, 1, 0], [0, 0, 0, 1]])
MICRO_WV1 = np.array([[1.0, 0, 1, 0], [0, 1, 0, 2]])
# "Multiple heads": head 2 uses W_Q2 = W_K1, W_K2 = W_Q1, W_V2 = [[0,1,1,0],[1,0,0,-1]]
MICRO_WV2 = np.array([[0.0, 1, 1, 0], [1, 0, 0, -1]])
MICRO_WO = np.array([[1.0, 0, 0.5, 0], [0, 1, 0, 0.5], [0.5, 0, 1, 0], [0, 0.5, 0, 1]])

# Part 4, "A complete block microscope" (pre-norm, one head, ReLU MLP with F=3)
BLOCK_H = np.array([[1.0, 0, -1, 2], [0, 2, 1, -1], [2, 1, 0, 1]])
BLOCK_PARAMS = {
    "W_Q": np.array([[1, 0, 0.5, 0], [0, 1, 0, 0.5]]),
    "W_K": np.array([[0.5, 0, 1, 0], [0, 0.5, 0, 1]]),
    "W_V": np.array([[1.0, 0, 0, 0], [0, 0, 1, 0]]),
    "W_O": np.array([[1.0, 0], [0, 1], [0.5, 0], [0, 0.5]]),
    "ln1_gamma": np.ones(4),
    "ln1_beta": np.zeros(4),
    "ln2_gamma": np.ones(4),
    "ln2_beta": np.zeros(4),
    "W1": np.array([[1, 0, -0.5, 0], [0, 1, 0, 0.5], [0.5, -0.5, 0.5, 0]]),
    "b1": np.array([0, 0.1, -0.1]),
    "W2": np.array([[0.5, 0, 0.2], [0, 0.5, -0.2], [0.3, -0.1, 0.1], [-0.2, 0.2, 0.4]]),
    "b2": np.array([0, -0.05, 0.05, 0]),
}


def _rng(salt: int, seed: int) -> np.random.Generator:
    return np.random.default_rng([salt, seed])


def _lengths(rng: np.random.Generator, B: int, T: int) -> Array:
    """Lengths in [1, T-1]: every sequence has padding and none is empty."""
    return rng.integers(1, T, size=B).astype(np.int64)


# ---------------------------------------------------------------- mutant pieces (hooks only)


_any = any_form  # one mistake, several natural forms (grader.engine.diagnosis)

# layernorm-wrong-axis: down the tokens (-2) or the batch (0)
LN_WRONG_AXES = (-2, 0)


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


def _head_forms(make: Callable[..., Callable[..., Array]], mid: str) -> tuple[Callable, ...]:
    """A mistake of HEAD_HOOKS as forms of one reference (`make(**hooks)`)."""
    return tuple(make(**hooks) for hooks in HEAD_HOOKS[mid])


# Each MHA mistake as its natural forms (one function per form; the blocks reuse them).
# attention-scale-by-d-model: the width of the model read from X (d) or from W_Q's rows (h·d_k);
# heads-reshape-without-transpose: the split without its transpose, the merge with or without.
MHA_FORMS: dict[str, tuple[Callable[..., Array], ...]] = {
    **{
        mid: _head_forms(_mha_with, mid)
        for mid in (
            "heads-reshape-without-transpose",
            "merge-heads-without-transpose",
            "output-projection-not-transposed",
            "attention-missing-output-projection",
            "attention-missing-scale",
            "attention-scale-by-dk",
        )
    },
    "attention-scale-by-d-model": (
        _scaled(lambda d, dk, h: 1.0 / math.sqrt(d)),
        _scaled(lambda d, dk, h: 1.0 / math.sqrt(h * dk)),
    ),
    # d_k = d/h read from X's width, where the projections' head width d_k differs
    "head-width-from-d-model": (_scaled(lambda d, dk, h: 1.0 / math.sqrt(d / h)),),
    "softmax-wrong-axis": _head_forms(_mha_with, "softmax-wrong-axis"),
    # every mask, or one of the two (the padding mask never applied, or `causal` never read)
    "mask-ignored": (_mha_ignores_masks, _mha_ignores_padding, _mha_ignores_causal),
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
    # a student's MHA building its own causal mask: transposed (the future, not the past), or
    # without the diagonal (query 0 then sees no key: NaN, zero or uniform as its fill makes it)
    "causal-mask-transposed": (_mha_with(causal_mask_fn=lambda T: att.causal_mask(T).T),),
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


def _identity(z: Array) -> Array:
    return np.asarray(z, dtype=np.float64)


def _ffn_gelu_tanh(X, W1, b1, W2, b2, activation="relu"):
    return ffn.feed_forward(
        X, W1, b1, W2, b2, ffn.gelu_tanh if activation == "gelu" else activation
    )


def _ffn_no_activation(X, W1, b1, W2, b2, activation="relu"):
    return ffn.feed_forward(X, W1, b1, W2, b2, activation=_identity)


# ---------------------------------------------------------------- blocks' mutants


def _encoder(**hooks: Any) -> Callable[..., Array]:
    return partial(blocks.encoder_block, **hooks)


def _wrap_adding_normalized(which: frozenset[int]) -> Callable[[], Callable[..., Array]]:
    """A fresh pre-norm `wrap` whose sublayers number `which` (0 = the first) add LN(x), not x."""

    def make() -> Callable[..., Array]:
        calls = iter(range(10))

        def wrap(x, n, f):
            return n(x) + f(n(x)) if next(calls) in which else x + f(n(x))

        return wrap

    return make


def _subsets(n: int) -> list[frozenset[int]]:
    """Every nonempty set of sublayers, all of them first."""
    out = [frozenset(i for i in range(n) if mask >> i & 1) for mask in range(1, 2**n)]
    return sorted(out, key=lambda s: (-len(s), sorted(s)))


def _encoder_adds_normalized(which: frozenset[int]) -> Callable[..., Array]:
    make = _wrap_adding_normalized(which)

    def block(X, params, n_heads, norm="pre", key_padding_mask=None):
        if norm != "pre":
            return blocks.encoder_block(X, params, n_heads, norm, key_padding_mask)
        return blocks.encoder_block(X, params, n_heads, norm, key_padding_mask, wrap=make())

    return block


def _decoder_adds_normalized(which: frozenset[int]) -> Callable[..., Array]:
    make = _wrap_adding_normalized(which)

    def block(Y, memory, params, n_heads, memory_padding_mask=None):
        return blocks.decoder_block(Y, memory, params, n_heads, memory_padding_mask, wrap=make())

    return block


# prenorm-adds-normalized-input: in every sublayer (x = LN(x); x = x + f(x)) or in some of them
_encoder_prenorm_adds_normalized = _any(*(_encoder_adds_normalized(s) for s in _subsets(2)))
_decoder_prenorm_adds_normalized = _any(*(_decoder_adds_normalized(s) for s in _subsets(3)))


def _decoder(**hooks: Any) -> Callable[..., Array]:
    return partial(blocks.decoder_block, **hooks)


def _cross_on_queries(q, mem, W_Q, W_K, W_V, W_O, n_heads, memory_padding_mask=None, **kw):
    """cross-attention-uses-decoder-keys: keys and values from the decoder stream, not memory."""
    return att.cross_attention(q, q, W_Q, W_K, W_V, W_O, n_heads)


def _decoder_cross_on_stream(Y, memory, params, n_heads, memory_padding_mask=None):
    """cross-attention-uses-decoder-keys, keys and values from the residual stream U1 itself
    (not its LN2): the decoder stream, unnormalised."""
    stream: list[Array] = []

    def wrap(x, n, f):
        stream.append(x)
        return x + f(n(x))

    def cross(q, mem, W_Q, W_K, W_V, W_O, n_heads, memory_padding_mask=None, **kw):
        return att.cross_attention(q, stream[-1], W_Q, W_K, W_V, W_O, n_heads)

    return blocks.decoder_block(
        Y, memory, params, n_heads, memory_padding_mask, wrap=wrap, cross_attention=cross
    )


def _cross_ignores_mask(Y, memory, W_Q, W_K, W_V, W_O, n_heads, memory_padding_mask=None, **kw):
    return att.cross_attention(Y, memory, W_Q, W_K, W_V, W_O, n_heads, None, **kw)


def _decoder_normalizes_memory(affine: bool) -> Callable[..., Array]:
    """cross-attention-normalizes-memory: keys and values from LN2(memory) (with LN2's γ and β)
    or from a plain normalisation of memory (γ = 1, β = 0)."""

    def block(Y, memory, params, n_heads, memory_padding_mask=None):
        d = np.shape(memory)[-1]
        g, b = (params["ln2_gamma"], params["ln2_beta"]) if affine else (np.ones(d), np.zeros(d))
        normed = norms.layer_norm(memory, g, b, blocks.LN_EPS)

        def cross(q, mem, *args, **kw):
            return att.cross_attention(q, normed, *args, **kw)

        return blocks.decoder_block(
            Y, memory, params, n_heads, memory_padding_mask, cross_attention=cross
        )

    return block


def _block_mutants(
    make: Callable[..., Callable[..., Array]], ids: tuple[str, ...], cross: bool = False
) -> dict[str, Callable]:
    """Blocks whose attention (self-, and cross- when `cross`) holds one MHA mistake, in each of
    its forms: the same form in both attentions (one student, one way of writing attention), or,
    when `cross`, in the self-attention only (a student whose MHA has its own code)."""
    out = {}
    for mid in ids:
        forms = []
        for i, self_form in enumerate(MHA_FORMS[mid]):
            hooks: dict[str, Any] = {"self_attention": self_form}
            if cross:
                forms.append(make(**hooks, cross_attention=CROSS_FORMS[mid][i]))
            forms.append(make(**hooks))
        out[mid] = _any(*forms)
    return out


def _cross_with(hooks_of: Callable[[int, int, int], dict[str, Any]]) -> Callable[..., Array]:
    """A cross-attention whose attend_heads hooks depend on (d_model, d_k, h)."""

    def cross(Y, memory, W_Q, W_K, W_V, W_O, n_heads, memory_padding_mask=None, **kw):
        hooks = hooks_of(np.shape(Y)[-1], np.shape(W_Q)[0] // n_heads, n_heads)
        return att.cross_attention(
            Y, memory, W_Q, W_K, W_V, W_O, n_heads, memory_padding_mask, **hooks, **kw
        )

    return cross


def _scale_hooks(
    scale_of: Callable[[int, int, int], float],
) -> Callable[[int, int, int], dict[str, Any]]:
    return lambda d, dk, h: {
        "attention": partial(att.scaled_dot_product_attention, scale=scale_of(d, dk, h))
    }


def _cross(**hooks: Any) -> Callable[..., Array]:
    """The reference cross-attention with hooks, as a partial (it combines with another mistake
    by merging hooks, as `_mha_with` does)."""
    return partial(att.cross_attention, **hooks)


def _cross_weights(weights_fn: Callable[..., Array]) -> Callable[..., Array]:
    return _cross(attention=partial(att.scaled_dot_product_attention, weights_fn=weights_fn))


# The cross-attention forms, index by index the same forms as MHA_FORMS.
CROSS_FORMS: dict[str, tuple[Callable[..., Array], ...]] = {
    # the shared attention parts: the same heads, softmax axis and mask reading in both attentions
    **{mid: _head_forms(_cross, mid) for mid in HEAD_HOOKS},
    "head-width-from-d-model": (
        _cross_with(_scale_hooks(lambda d, dk, h: 1.0 / math.sqrt(d / h))),
    ),
    "attention-scale-by-d-model": (
        _cross_with(_scale_hooks(lambda d, dk, h: 1.0 / math.sqrt(d))),
        _cross_with(_scale_hooks(lambda d, dk, h: 1.0 / math.sqrt(h * dk))),
    ),
    # the memory mask read the wrong way round too, or (only the causal mask inverted) a right cross
    "mask-inverted": (
        *(_cross_weights(inverted_with(f)) for f in PADDED_ROW_FILLS),
        *(att.cross_attention,) * len(PADDED_ROW_FILLS),
    ),
}

# The MHA mistakes that do not reach both blocks through their attention (the encoder is not
# causal: the causal-mask ones do not; the decoder's memory mask does not broadcast along its
# queries: the encoder takes the padding-mask ones back). Every other MHA mistake does.
_NOT_THROUGH_BLOCKS = (
    "causal-mask-transposed",
    "causal-mask-excludes-self",
    "masks-combined-with-or",
    "mask-ignored",
    "padding-masks-queries",
)
BLOCK_MHA_IDS = tuple(mid for mid in MHA_FORMS if mid not in _NOT_THROUGH_BLOCKS)


ENCODER_MUTANTS: dict[str, Callable[..., Array]] = {
    "prenorm-adds-normalized-input": _encoder_prenorm_adds_normalized,
    "ffn-missing-activation": _encoder(activation=_identity),
    **_block_mutants(_encoder, (*BLOCK_MHA_IDS, "mask-ignored", "padding-masks-queries")),
    "layernorm-unbiased-variance": _encoder(layer_norm=_ln_variant(variance=_unbiased)),
    "layernorm-eps-outside-sqrt": _encoder(layer_norm=_ln_variant(denominator=_eps_outside)),
    "layernorm-wrong-axis": _any(
        *(_encoder(layer_norm=_ln_variant(axis=a)) for a in LN_WRONG_AXES)
    ),
}

DECODER_MUTANTS: dict[str, Callable[..., Array]] = {
    "decoder-self-attention-not-causal": _decoder(causal=False),
    # keys and values from LN2(U1) (the queries' input) or from U1 itself
    "cross-attention-uses-decoder-keys": _any(
        _decoder(cross_attention=_cross_on_queries), _decoder_cross_on_stream
    ),
    "prenorm-adds-normalized-input": _decoder_prenorm_adds_normalized,
    "ffn-missing-activation": _decoder(activation=_identity),
    # the parts the decoder shares with the encoder block (issue 18, issue 19): its attention's
    # mistakes in both attentions, a mask read the wrong way round, LayerNorm over the wrong axis
    **_block_mutants(_decoder, BLOCK_MHA_IDS, cross=True),
    **_block_mutants(_decoder, ("causal-mask-transposed", "causal-mask-excludes-self")),
    # every mask ignored: self-attention not causal and the memory mask unused (after
    # decoder-self-attention-not-causal, which keeps the memory mask)
    "mask-ignored": _any(
        _decoder(self_attention=_mha_ignores_masks, cross_attention=_cross_ignores_mask),
        _decoder(cross_attention=_cross_ignores_mask),
    ),
    "cross-attention-normalizes-memory": _any(
        _decoder_normalizes_memory(True), _decoder_normalizes_memory(False)
    ),
    "layernorm-unbiased-variance": _decoder(layer_norm=_ln_variant(variance=_unbiased)),
    "layernorm-eps-outside-sqrt": _decoder(layer_norm=_ln_variant(denominator=_eps_outside)),
    "layernorm-wrong-axis": _any(
        *(_decoder(layer_norm=_ln_variant(axis=a)) for a in LN_WRONG_AXES)
    ),
}

# ---------------------------------------------------------------- cases


def _micro_qkv() -> tuple[Array, Array, Array]:
    return MICRO_X @ MICRO_WQ1.T, MICRO_X @ MICRO_WK1.T, MICRO_X @ MICRO_WV1.T


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
            (
                1.5 * r.normal(size=(2, 3, 5, 4)),
                1.5 * r.normal(size=(2, 3, 6, 4)),
                r.normal(size=(2, 3, 6, 3)),
            ),
        )
    )
    T = 5
    cases.append(
        Case(
            "hidden case 2: batch with a causal mask",
            (
                1.5 * r.normal(size=(2, T, 4)),
                1.5 * r.normal(size=(2, T, 4)),
                r.normal(size=(2, T, 3)),
                att.causal_mask(T),
            ),
        )
    )
    lengths = _lengths(r, 3, 6)
    pad = att.key_mask(att.padding_mask(lengths, 6))  # (3, 1, 6)
    cases.append(
        Case(
            "hidden case 3: key padding mask (B, 1, T_k)",
            (
                1.5 * r.normal(size=(3, 4, 4)),
                1.5 * r.normal(size=(3, 6, 4)),
                r.normal(size=(3, 6, 2)),
                pad,
            ),
        )
    )
    lengths = _lengths(r, 2, T)
    both = att.combine_masks(
        att.causal_mask(T), att.key_mask(att.padding_mask(lengths, T))
    )  # (2, T, T)
    cases.append(
        Case(
            "hidden case 4: causal and padding masks together",
            (
                1.5 * r.normal(size=(2, T, 4)),
                1.5 * r.normal(size=(2, T, 4)),
                r.normal(size=(2, T, 3)),
                both,
            ),
        )
    )
    lengths = _lengths(r, 2, 5)
    cases.append(
        Case(
            "hidden case 5: key padding mask, one query per sequence",
            (
                1.5 * r.normal(size=(2, 1, 4)),
                1.5 * r.normal(size=(2, 5, 4)),
                r.normal(size=(2, 5, 3)),
                att.key_mask(att.padding_mask(lengths, 5)),
            ),
        )
    )
    cases.append(
        Case(
            "hidden case 6: one unbatched sequence, causal",
            (
                1.5 * r.normal(size=(4, 4)),
                1.5 * r.normal(size=(4, 4)),
                r.normal(size=(4, 5)),
                att.causal_mask(4),
            ),
        )
    )
    # softmax stability: scores in the thousands, each query row's maximum far from the others'
    # (exp without the row's max shift overflows; a min or global shift overflows or underflows)
    cases.append(
        Case(
            "hidden case 7: large scores (softmax stability), causal",
            (
                40.0 * r.normal(size=(2, 4, 4)),
                40.0 * r.normal(size=(2, 4, 4)),
                r.normal(size=(2, 4, 3)),
                att.causal_mask(4),
            ),
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


PADDING_MUTANTS = {"mask-inverted": lambda lengths, T: ~att.padding_mask(lengths, T)}


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
    return cases


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
}


def _ffn_cases(seed: int) -> list[Case]:
    r = _rng(409, seed)
    p = BLOCK_PARAMS
    d, dff = 6, 10
    cases = [
        Case(
            "slides microscope MLP on h (ReLU)",
            (BLOCK_H, p["W1"], p["b1"], p["W2"], p["b2"]),
            visible=True,
        )
    ]

    def weights(scale: float) -> tuple[Array, ...]:
        return (
            scale * r.normal(size=(dff, d)),
            0.5 * r.normal(size=dff),
            r.normal(size=(d, dff)),
            r.normal(size=d),
        )

    cases.append(Case("hidden case 1: ReLU, (2, 4, 6)", (r.normal(size=(2, 4, 6)), *weights(0.8))))
    cases.append(
        Case(
            "hidden case 2: ReLU, one token (d,)",
            (r.normal(size=d), *weights(0.8)),
            {"activation": "relu"},
        )
    )
    cases.append(
        Case(
            "hidden case 3: GELU, (5, 6)",
            (r.normal(size=(5, d)), *weights(1.0)),
            {"activation": "gelu"},
        )
    )
    cases.append(
        Case(
            "hidden case 4: GELU, (2, 3, 6)",
            (r.normal(size=(2, 3, d)), *weights(1.0)),
            {"activation": "gelu"},
        )
    )
    return cases


FFN_MUTANTS = {
    "ffn-missing-activation": _ffn_no_activation,
    "gelu-tanh-approximation": _ffn_gelu_tanh,
}


def _swiglu_cases(seed: int) -> list[Case]:
    r = _rng(410, seed)
    d, dff = 6, 8

    def weights() -> tuple[Array, ...]:
        return r.normal(size=(dff, d)), r.normal(size=(dff, d)), r.normal(size=(d, dff)) / 2

    return [
        Case(
            "small case: d = 2, d_ff = 2",
            (
                np.array([[1.0, -1.0], [0.5, 2.0]]),
                np.array([[1.0, 0], [0, 1]]),
                np.array([[1.0, 1], [0, -1]]),
                np.array([[1.0, 0], [0.5, 1]]),
            ),
            visible=True,
        ),
        Case(
            "hidden case 1: batched (B, T, d) = (2, 4, 6)", (r.normal(size=(2, 4, d)), *weights())
        ),
        Case("hidden case 2: one sequence (T, d) = (5, 6)", (r.normal(size=(5, d)), *weights())),
        Case("hidden case 3: one token (d,)", (r.normal(size=d), *weights())),
    ]


SWIGLU_MUTANTS = {
    "ffn-missing-activation": lambda X, W_gate, W_up, W_down: ffn.swiglu_ffn(
        X, W_gate, W_up, W_down, gate=_identity
    ),
    "swiglu-sigmoid-gate": lambda X, W_gate, W_up, W_down: ffn.swiglu_ffn(
        X, W_gate, W_up, W_down, gate=sigmoid
    ),
    "swiglu-gate-up-swapped": lambda X, W_gate, W_up, W_down: ffn.swiglu_ffn(
        X, W_up, W_gate, W_down
    ),
}


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


def _encoder_params(
    r: np.random.Generator, d: int = 6, h: int = 2, dk: int = 4, dv: int = 3, dff: int = 12
):
    W_Q, W_K, W_V, W_O = _mha_weights_set(r, d, h, dk, dv)
    return {
        "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": W_O,
        "ln1_gamma": 1.0 + 0.2 * r.normal(size=d), "ln1_beta": 0.2 * r.normal(size=d),
        "ln2_gamma": 1.0 + 0.2 * r.normal(size=d), "ln2_beta": 0.2 * r.normal(size=d),
        "W1": r.normal(size=(dff, d)), "b1": 0.3 * r.normal(size=dff),
        "W2": r.normal(size=(d, dff)) / math.sqrt(dff), "b2": 0.2 * r.normal(size=d),
    }  # fmt: skip


def _encoder_cases(seed: int) -> list[Case]:
    r = _rng(412, seed)
    T = 5
    cases = [
        Case(
            "slides block microscope (pre-norm, one head)", (BLOCK_H, BLOCK_PARAMS, 1), visible=True
        )
    ]
    cases.append(
        Case(
            "hidden case 1: pre-norm, batched",
            (2.0 * r.normal(size=(2, T, 6)), _encoder_params(r), 2),
        )
    )
    cases.append(
        Case(
            "hidden case 2: post-norm, batched",
            (2.0 * r.normal(size=(2, T, 6)), _encoder_params(r), 2),
            {"norm": "post"},
        )
    )
    lengths = np.array([T, int(r.integers(2, T))])
    cases.append(
        Case(
            "hidden case 3: pre-norm with key padding",
            (2.0 * r.normal(size=(2, T, 6)), _encoder_params(r), 2),
            {"norm": "pre", "key_padding_mask": att.padding_mask(lengths, T)},
        )
    )
    cases.append(
        Case(
            "hidden case 4: post-norm, unbatched",
            (2.0 * r.normal(size=(4, 6)), _encoder_params(r), 2),
            {"norm": "post"},
        )
    )
    return cases


def _decoder_params(
    r: np.random.Generator, d: int = 6, h: int = 2, dk: int = 4, dv: int = 3, dff: int = 12
):
    p = _encoder_params(r, d, h, dk, dv, dff)
    C_Q, C_K, C_V, C_O = _mha_weights_set(r, d, h, dk, dv)
    p.update(
        {
            "C_Q": C_Q,
            "C_K": C_K,
            "C_V": C_V,
            "C_O": C_O,
            "ln3_gamma": 1.0 + 0.2 * r.normal(size=d),
            "ln3_beta": 0.2 * r.normal(size=d),
        }
    )
    return p


def _decoder_cases(seed: int) -> list[Case]:
    fixed = _rng(413, 0)
    cases = [
        Case(
            "small decoder: T = 3, S = 4, unbatched",
            (
                2.0 * fixed.normal(size=(3, 6)),
                2.0 * fixed.normal(size=(4, 6)),
                _decoder_params(fixed),
                2,
            ),
            visible=True,
        )
    ]
    r = _rng(414, seed)
    cases.append(
        Case(
            "hidden case 1: batched, T = 4, S = 6",
            (2.0 * r.normal(size=(2, 4, 6)), 2.0 * r.normal(size=(2, 6, 6)), _decoder_params(r), 2),
        )
    )
    lengths = np.array([6, int(r.integers(2, 6))])
    cases.append(
        Case(
            "hidden case 2: batched, memory padding mask",
            (2.0 * r.normal(size=(2, 5, 6)), 2.0 * r.normal(size=(2, 6, 6)), _decoder_params(r), 2),
            {"memory_padding_mask": att.padding_mask(lengths, 6)},
        )
    )
    cases.append(
        Case(
            "hidden case 3: unbatched, T = 5, S = 3",
            (2.0 * r.normal(size=(5, 6)), 2.0 * r.normal(size=(3, 6)), _decoder_params(r), 2),
        )
    )
    return cases


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


# ---------------------------------------------------------------- the complete forward pass (Lecture 7)

MOVIE_VOCAB = ("The", "movie", "ended", "was")  # "The movie ended": ids 0, 1, 2


def _gpt_params(
    r: np.random.Generator,
    V: int,
    d: int,
    n_layers: int,
    untied: bool,
    h: int = 2,
    dff: int | None = None,
    T_max: int = 8,
) -> dict[str, Any]:
    """A decoder-only model: blocks with the encoder-block keys (d_k = d/h), learned positions."""

    def block() -> dict[str, Array]:
        p = _encoder_params(r, d, h, d // h, d // h, dff or 2 * d)
        return {k: v for k, v in p.items()}

    params: dict[str, Any] = {
        "W_E": r.normal(size=(V, d)), "P": 0.5 * r.normal(size=(T_max, d)),
        "blocks": [block() for _ in range(n_layers)],
        "lnf_gamma": 1.0 + 0.3 * r.normal(size=d), "lnf_beta": 0.3 * r.normal(size=d),
    }  # fmt: skip
    if untied:
        params["W_U"] = r.normal(size=(V, d))
    return params


def _gpt_cases(seed: int) -> list[Case]:
    movie = _gpt_params(_rng(416, 0), V=4, d=4, n_layers=1, untied=False, dff=8, T_max=4)
    r = _rng(417, seed)
    cases = [
        Case(
            "'The movie ended' (ids 0, 1, 2): V = d = 4, one block, 2 heads, tied",
            ([0, 1, 2], movie, 2),
            visible=True,
        )
    ]
    # square W_E (V = d) in half the cases: there x W_E without the transpose runs and is wrong
    specs = [
        (6, 6, 2, False, 5, "V = d = 6, two blocks, tied"),
        (6, 6, 1, True, 6, "V = d = 6, one block, untied W_U"),
        (11, 8, 2, False, 7, "V = 11, d = 8, two blocks, tied"),
        (11, 8, 1, True, 4, "V = 11, d = 8, one block, untied W_U"),
    ]
    for i, (V, d, L, untied, T, what) in enumerate(specs):
        ids = [int(t) for t in r.integers(0, V, size=T)]
        cases.append(
            Case(
                f"hidden case {i + 1}: {T} tokens, {what}",
                (ids, _gpt_params(r, V, d, L, untied), 2),
            )
        )
    return cases


def _gpt(**hooks: Any) -> Callable[..., Array]:
    return partial(gpt.gpt_forward, **hooks)


# A mistake in the student's own attention, LayerNorm or FFN, carried into the forward pass that
# uses them, is named at its root (as in the blocks): the same forms as in their own questions.
# (LayerNorm's σ + ε is left out: on these activations it stays within the tolerance.)
# (head-width-from-d-model cannot reach it: its blocks have d_k = d/h.)
GPT_UPSTREAM_MHA = (
    "heads-reshape-without-transpose",
    "merge-heads-without-transpose",
    "output-projection-not-transposed",
    "attention-missing-output-projection",
    "attention-missing-scale",
    "attention-scale-by-dk",
    "attention-scale-by-d-model",
    "mask-inverted",
    "mask-after-softmax",
    "mask-zero-fill",
    "causal-mask-transposed",
    "causal-mask-excludes-self",
)

GPT_MUTANTS: dict[str, Callable[..., Any]] = {
    "gpt-no-final-layernorm": _gpt(final_norm=False),
    "gpt-post-norm-blocks": _gpt(norm="post"),
    "gpt-positions-after-blocks": _gpt(positions="after"),
    "gpt-unembedding-not-transposed": _gpt(unembed=gpt.transposed_embedding),
    "gpt-unembedding-always-tied": _gpt(unembed=gpt.always_tied),
    "decoder-self-attention-not-causal": _gpt(causal=False),
    "gpt-softmax-over-positions": _gpt(softmax_axis=-2),
    **{
        mid: _any(*(_gpt(self_attention=form) for form in MHA_FORMS[mid]))
        for mid in GPT_UPSTREAM_MHA
    },
    # one softmax helper with the wrong axis, used by the attention and by the last step too
    "softmax-wrong-axis": _any(
        *(_gpt(self_attention=form) for form in MHA_FORMS["softmax-wrong-axis"]),
        *(_gpt(self_attention=form, softmax_axis=-2) for form in MHA_FORMS["softmax-wrong-axis"]),
    ),
    "layernorm-unbiased-variance": _gpt(layer_norm=_ln_variant(variance=_unbiased)),
    "layernorm-wrong-axis": _any(*(_gpt(layer_norm=_ln_variant(axis=a)) for a in LN_WRONG_AXES)),
    "ffn-missing-activation": _gpt(ffn=_ffn_no_activation),
    # the same as decoder-self-attention-not-causal here (no padding), named after it
    "mask-ignored": _gpt(causal=False),
}


# ---------------------------------------------------------------- written: RoPE and the embeddings' parameters


def _rope_attention_row(v: Mapping[str, Any], **hooks: Any) -> Array:
    """Causal attention with RoPE (d = 2, θ = 1) at position 1: the output vector (2,)."""
    Q = np.array(
        [[0.0, 0.0], v["rope_q1"]], dtype=np.float64
    )  # only position 1's query is asked for
    K = np.asarray([v["rope_k0"], v["rope_k1"]], dtype=np.float64)
    V = np.asarray([v["rope_v0"], v["rope_v1"]], dtype=np.float64)
    return positions.rope_attention(Q, K, V, att.causal_mask(2), **hooks)[0][1]


def _rope_attention_wrong(v: Mapping[str, Any]) -> list[WrongForm]:
    return [
        WrongForm(
            _rope_attention_row(v, rotate_values=True),
            "rope-rotates-values",
            "the values were rotated too: RoPE turns only the queries and keys, whose dot product "
            "then carries the offset m − n; the values are mixed as they are.",
        ),
        WrongForm(
            _rope_attention_row(v, rope=partial(positions.apply_rope, sign=-1.0)),
            "rope-angle-sign",
            "the rotation went the other way (x sin φ + y cos φ is the second coordinate).",
        ),
    ]


def _embedding_counts(
    v: Mapping[str, Any], tied_head: int = 0, positions_counted: bool = True
) -> list[int]:
    V, d, T = int(v["emb_vocab"]), int(v["emb_d"]), int(v["emb_positions"])
    base = V * d + (T * d if positions_counted else 0)
    return [base + tied_head * V * d, base + V * d]


# three scores s_a, s_b, s_c and their softmax, as defined names: a derivation may write p_a,
# exp(s_a)/S or exp(s_a)/(exp(s_a) + exp(s_b) + exp(s_c)) interchangeably
SOFTMAX_SYMBOLS = ("s_a", "s_b", "s_c", "S", "p_a", "p_b", "p_c")
SOFTMAX_DEFINED = (
    "S = exp(s_a) + exp(s_b) + exp(s_c)",
    *(f"p_{k} = exp(s_{k})/S" for k in "abc"),
)


WRITTEN_COVERAGE = (
    WrittenQuestion(
        id="a4.w_rope_offset",
        title="What RoPE makes attention depend on",
        points=1,
        key="rope_depends_on",
        answer_kind="choice",
        choices=("A", "B", "C", "D"),
        expected=lambda v: "B",
    ),
    WrittenQuestion(
        id="a4.w_rope_attention",
        title="Causal attention with RoPE by hand",
        points=2,
        key="rope_attention",
        answer_kind="array",
        expected=_rope_attention_row,
        wrong_forms=_rope_attention_wrong,
    ),
    WrittenQuestion(
        id="a4.w_embedding_params",
        title="Embedding parameters, tied and untied",
        points=2,
        key="embedding_params",
        answer_kind="array",
        expected=_embedding_counts,
        wrong_forms=lambda v: [
            WrongForm(
                _embedding_counts(v, tied_head=1),
                "params-lm-head-counted-when-tied",
                "tied weights mean the unembedding IS W_E: its V·d parameters are counted once.",
            ),
            WrongForm(
                _embedding_counts(v, positions_counted=False),
                "params-missing-position-embedding",
                "the learned position embeddings P (T_max × d) are parameters too.",
            ),
        ],
    ),
    WrittenQuestion(
        id="a4.w_softmax_derivation",
        title="Derive an off-diagonal entry of the softmax Jacobian",
        points=2,
        key="softmax_derivation",
        answer_kind="expression",
        symbols=SOFTMAX_SYMBOLS,
        relations=SOFTMAX_DEFINED,
        steps=True,
        expected=lambda v: "-p_a p_b",
        wrong_forms=lambda v: [
            WrongForm("p_a p_b", "softmax-jacobian-sign", "the sign is flipped."),
            WrongForm(
                "0",
                "softmax-jacobian-diagonal-only",
                "p_a depends on s_b through the normaliser S, so the entry is not zero.",
            ),
            WrongForm(
                "p_a (1 - p_b)",
                "softmax-jacobian-delta-misplaced",
                "off the diagonal the Kronecker delta is 0: the diagonal's formula does not apply.",
            ),
            WrongForm(
                "-exp(s_a) exp(s_b)/S",
                "softmax-jacobian-quotient-denominator",
                "the quotient rule divides by the square of the normaliser.",
            ),
        ],
    ),
)


# ---------------------------------------------------------------- written questions


def _attention_by_hand(v: Mapping[str, Any]) -> tuple[Array, Array]:
    Q, K, V = (np.asarray(v["attn_" + n], dtype=np.float64) for n in ("Q", "K", "V"))
    return att.scaled_dot_product_attention(Q, K, V, att.causal_mask(Q.shape[0]))


def _by_hand_wrong(which: int) -> Callable[[Mapping[str, Any]], list[WrongForm]]:
    def forms(v: Mapping[str, Any]) -> list[WrongForm]:
        Q, K, V = (np.asarray(v["attn_" + n], dtype=np.float64) for n in ("Q", "K", "V"))
        T = Q.shape[0]
        out = [
            WrongForm(
                att.scaled_dot_product_attention(Q, K, V)[which],
                "mask-ignored",
                "this is attention without the causal mask: query t must not see keys j > t.",
            ),
            WrongForm(
                att.scaled_dot_product_attention(Q, K, V, att.causal_mask(T), scale=1.0)[which],
                "attention-missing-scale",
                "the scores were not divided by sqrt(d_k) = sqrt(2).",
            ),
            WrongForm(
                att.scaled_dot_product_attention(Q, K, V, att.causal_mask(T).T)[which],
                "causal-mask-transposed",
                "the mask lets each query see the future and hides the past.",
            ),
        ]
        return out

    return forms


def _jacobian(v: Mapping[str, Any]) -> Array:
    p = np.asarray(v["softmax_p"], dtype=np.float64)
    return np.diag(p) - np.outer(p, p)


WRITTEN = (
    WrittenQuestion(
        id="a4.w_score_variance",
        title="Variance of a dot-product score",
        points=2,
        key="score_variance",
        answer_kind="expression",
        symbols=("d_k",),
        expected=lambda v: "d_k",
        wrong_forms=lambda v: [
            WrongForm(
                "sqrt(d_k)",
                "score-std-for-variance",
                "sqrt(d_k) is the standard deviation of q·k; the variances of the d_k products add up.",
            ),
            WrongForm(
                "1",
                "attention-missing-scale",
                "1 is the variance after dividing by sqrt(d_k), not before.",
            ),
        ],
    ),
    WrittenQuestion(
        id="a4.w_scale",
        title="The attention scale factor",
        points=2,
        key="score_scale",
        answer_kind="expression",
        symbols=("d_k", "d_model", "h"),
        expected=lambda v: "1/sqrt(d_k)",
        wrong_forms=lambda v: [
            WrongForm(
                "1/d_k",
                "attention-scale-by-dk",
                "dividing by d_k over-corrects: Var(q·k / d_k) = 1/d_k.",
            ),
            WrongForm(
                "1/sqrt(d_model)",
                "attention-scale-by-d-model",
                "the dot product runs over one head's d_k features, not the model width.",
            ),
        ],
    ),
    WrittenQuestion(
        id="a4.w_softmax_jacobian",
        title="The softmax Jacobian at your p",
        points=2,
        key="softmax_jacobian",
        answer_kind="array",
        expected=_jacobian,
        wrong_forms=lambda v: [
            WrongForm(
                -_jacobian(v), "softmax-jacobian-sign", "the sign is flipped: it is diag(p) − p pᵀ."
            ),
            WrongForm(
                np.diag(np.asarray(v["softmax_p"], dtype=float)),
                "softmax-jacobian-diagonal-only",
                "the − p pᵀ term is missing: every output depends on every score through the sum.",
            ),
            WrongForm(
                np.diag(
                    np.asarray(v["softmax_p"], dtype=float)
                    * (1 - np.asarray(v["softmax_p"], dtype=float))
                ),
                "softmax-jacobian-diagonal-only",
                "only the diagonal p_i (1 − p_i) is there: the off-diagonal entries −p_i p_j are missing, "
                "but every output depends on every score through the sum.",
            ),
        ],
    ),
    WrittenQuestion(
        id="a4.w_saturation",
        title="Why saturation kills the gradient",
        points=1,
        key="saturation",
        answer_kind="choice",
        choices=("A", "B", "C", "D"),
        expected=lambda v: "B",
    ),
    WrittenQuestion(
        id="a4.w_prenorm_jacobian",
        title="Pre-norm's Jacobian",
        points=1,
        key="prenorm_jacobian",
        answer_kind="choice",
        choices=("A", "B", "C", "D"),
        expected=lambda v: "A",
    ),
    WrittenQuestion(
        id="a4.w_cost_doubling",
        title="Doubling the sequence length",
        points=1,
        key="cost_doubling",
        answer_kind="number",
        expected=lambda v: (
            att.attention_cost(2 * 64, 64)["score_macs"] / att.attention_cost(64, 64)["score_macs"]
        ),
        wrong_forms=lambda v: [
            WrongForm(
                2.0,
                "attention-cost-linear",
                "the T × T score matrix grows with T²: twice the tokens, four times the pairs.",
            )
        ],
    ),
    WrittenQuestion(
        id="a4.w_attention_weights",
        title="Causal attention by hand: the weights",
        points=2,
        key="attention_weights",
        answer_kind="array",
        expected=lambda v: _attention_by_hand(v)[1],
        wrong_forms=_by_hand_wrong(1),
    ),
    WrittenQuestion(
        id="a4.w_attention_output",
        title="Causal attention by hand: the output",
        points=2,
        key="attention_output",
        answer_kind="array",
        expected=lambda v: _attention_by_hand(v)[0],
        wrong_forms=_by_hand_wrong(0),
    ),
)

# ---------------------------------------------------------------- the assignment


_q = builder("a4", FILE, forbidden=SHORTCUTS)  # every code question of a4 (grader/suites/_kit.py)


# Follow-through: the earlier questions whose student functions a composite builds
# on. Every mistake of a dependency that can reach the composite is a key of its mutants.
BLOCK_DEPENDS = ("a4.sdpa", "a4.causal_mask", "a4.mha", "a4.layer_norm", "a4.feed_forward")

CODE = (
    _q(
        "a4.sdpa",
        "Scaled dot-product attention with a mask",
        10,
        "scaled_dot_product_attention",
        att.scaled_dot_product_attention,
        _sdpa_cases,
        SDPA_MUTANTS,
        output_names=("out", "weights"),
    ),
    _q(
        "a4.causal_mask",
        "Causal mask",
        2,
        "causal_mask",
        att.causal_mask,
        _causal_cases,
        CAUSAL_MUTANTS,
    ),
    _q(
        "a4.padding_mask",
        "Padding mask",
        2,
        "padding_mask",
        att.padding_mask,
        _padding_cases,
        PADDING_MUTANTS,
    ),
    _q(
        "a4.mha",
        "Multi-head attention",
        10,
        "multi_head_attention",
        att.multi_head_attention,
        _mha_cases,
        MHA_VARIANTS,
        depends_on=("a4.sdpa", "a4.causal_mask"),
    ),
    _q("a4.layer_norm", "LayerNorm", 7, "layer_norm", norms.layer_norm, _ln_cases, LN_MUTANTS),
    _q(
        "a4.layer_norm_stats",
        "LayerNorm's statistics",
        3,
        "layer_norm_stats",
        norms.layer_norm_stats,
        _stats_cases(406),
        LN_STATS_MUTANTS,
        output_names=("mean", "var"),
    ),
    _q(
        "a4.batch_norm_stats",
        "BatchNorm's statistics",
        3,
        "batch_norm_stats",
        norms.batch_norm_stats,
        _stats_cases(407),
        BN_STATS_MUTANTS,
        output_names=("mean", "var"),
    ),
    _q("a4.rms_norm", "RMSNorm", 4, "rms_norm", norms.rms_norm, _rms_cases, RMS_MUTANTS),
    _q(
        "a4.feed_forward",
        "Position-wise FFN (ReLU, GELU)",
        4,
        "feed_forward",
        ffn.feed_forward,
        _ffn_cases,
        FFN_MUTANTS,
    ),
    _q("a4.swiglu", "SwiGLU FFN", 3, "swiglu_ffn", ffn.swiglu_ffn, _swiglu_cases, SWIGLU_MUTANTS),
    _q(
        "a4.positions",
        "Sinusoidal positions",
        4,
        "sinusoidal_positions",
        positions.sinusoidal_positions,
        _pe_cases,
        PE_MUTANTS,
    ),
    _q(
        "a4.encoder_block",
        "Encoder block (pre- and post-norm)",
        8,
        "encoder_block",
        blocks.encoder_block,
        _encoder_cases,
        ENCODER_MUTANTS,
        depends_on=("a4.sdpa", "a4.mha", "a4.layer_norm", "a4.feed_forward"),
    ),
    _q(
        "a4.decoder_block",
        "Decoder block (causal self-attention, cross-attention)",
        7,
        "decoder_block",
        blocks.decoder_block,
        _decoder_cases,
        DECODER_MUTANTS,
        depends_on=BLOCK_DEPENDS,
    ),
)

# Added after the original questions so that their numbers stay as they were.
CODE_COVERAGE = (
    _q(
        "a4.rope",
        "Rotary position embeddings (RoPE)",
        4,
        "apply_rope",
        positions.apply_rope,
        _rope_cases,
        ROPE_MUTANTS,
    ),
    _q(
        "a4.gpt_forward",
        "The complete forward pass (decoder-only)",
        9,
        "gpt_forward",
        gpt.gpt_forward,
        _gpt_cases,
        GPT_MUTANTS,
        depends_on=BLOCK_DEPENDS,
    ),
)

ASSIGNMENT = Assignment(
    id="a4_transformer",
    title="A4 · The Transformer: attention, masks, heads, norms, positions, blocks",
    code_file=FILE,
    questions=CODE + WRITTEN + CODE_COVERAGE + WRITTEN_COVERAGE,
)
