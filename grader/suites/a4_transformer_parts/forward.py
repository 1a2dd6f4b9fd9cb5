"""a4's forward-pass question: a decoder-only model from token ids to next-token probabilities,
its cases and mistakes (those of the student's own attention, LayerNorm and FFN named at
their root).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from grader.questions import Case
from grader.suites.a4_transformer_parts.attention import HEAD_MACHINERY_IDS, MHA_FORMS
from grader.suites.a4_transformer_parts.blocks import _encoder_params
from grader.suites.a4_transformer_parts.ffn import _ffn_no_activation
from grader.suites.a4_transformer_parts.norms import LN_WRONG_AXES, _ln_variant, _unbiased
from grader.suites.a4_transformer_parts.shared import _any, _rng
from reference import gpt

Array = np.ndarray

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
    # the domain's edge: a single token (a length-1 sequence)
    cases.append(
        Case(
            "hidden case 5: 1 token, V = d = 6, one block, tied",
            ([int(r.integers(0, 6))], _gpt_params(r, 6, 6, 1, False), 2),
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
    *HEAD_MACHINERY_IDS,
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
    # the same as decoder-self-attention-not-causal here (no padding), named after it; kept for
    # follow-through from the student's attention (every mask ignored, or the causal one dropped)
    "mask-ignored": _gpt(causal=False),
    "causal-mask-dropped": _gpt(causal=False),
}
