"""a4's block questions: the encoder block (pre- and post-norm) and the decoder block (causal
self-attention, cross-attention), their cases, and their mistakes, an attention or LayerNorm
mistake carried in from the student's own functions among them.
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
    inverted_with,
)
from grader.suites.a4_transformer_parts.attention import (
    HEAD_HOOKS,
    MHA_FORMS,
    _head_forms,
    _mha_ignores_masks,
    _mha_weights_set,
)
from grader.suites.a4_transformer_parts.ffn import _identity
from grader.suites.a4_transformer_parts.norms import (
    LN_WRONG_AXES,
    _eps_outside,
    _ln_variant,
    _unbiased,
)
from grader.suites.a4_transformer_parts.shared import BLOCK_H, BLOCK_PARAMS, _any, _rng
from reference import attention as att
from reference import blocks, norms

Array = np.ndarray

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
    "causal-mask-dropped",
    "padding-mask-dropped",
    "padding-masks-queries",
)
BLOCK_MHA_IDS = tuple(mid for mid in MHA_FORMS if mid not in _NOT_THROUGH_BLOCKS)


ENCODER_MUTANTS: dict[str, Callable[..., Array]] = {
    "prenorm-adds-normalized-input": _encoder_prenorm_adds_normalized,
    "ffn-missing-activation": _encoder(activation=_identity),
    **_block_mutants(_encoder, (*BLOCK_MHA_IDS, "mask-ignored", "padding-masks-queries")),
    # the student's MHA dropping its key padding mask: here, where the encoder has no other mask,
    # the same as mask-ignored (named after it), kept for follow-through from multi_head_attention
    **_block_mutants(_encoder, ("padding-mask-dropped",)),
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
    "mask-ignored": _decoder(
        self_attention=_mha_ignores_masks, cross_attention=_cross_ignores_mask
    ),
    # the memory padding mask dropped, the self-attention still causal
    "padding-mask-dropped": _decoder(cross_attention=_cross_ignores_mask),
    # the student's MHA dropping its causal mask: the same as decoder-self-attention-not-causal
    # (named after it), kept for follow-through from multi_head_attention
    "causal-mask-dropped": _decoder(causal=False),
    "cross-attention-normalizes-memory": _any(
        _decoder_normalizes_memory(True), _decoder_normalizes_memory(False)
    ),
    "layernorm-unbiased-variance": _decoder(layer_norm=_ln_variant(variance=_unbiased)),
    "layernorm-eps-outside-sqrt": _decoder(layer_norm=_ln_variant(denominator=_eps_outside)),
    "layernorm-wrong-axis": _any(
        *(_decoder(layer_norm=_ln_variant(axis=a)) for a in LN_WRONG_AXES)
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
