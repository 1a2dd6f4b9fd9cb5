"""a4's written questions: attention by hand, the scale, the softmax Jacobian, costs, RoPE and
the embeddings' parameters, with the wrong answers each one recognises.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

import numpy as np

from grader.questions import Tolerance, WrittenQuestion, WrongForm
from reference import attention as att
from reference import positions

Array = np.ndarray

# ---------------------------------------------------------------- written: RoPE and the embeddings' parameters


def _choice(qid: str, title: str, key: str, answer: str) -> WrittenQuestion:
    """A one-point multiple-choice question (choices A–D) whose answer is `answer`."""
    return WrittenQuestion(
        id=qid,
        title=title,
        points=1,
        key=key,
        answer_kind="choice",
        choices=("A", "B", "C", "D"),
        expected=lambda v: answer,
    )


def _array_question(
    qid: str,
    title: str,
    key: str,
    expected: Callable[[Mapping[str, Any]], Any],
    wrong_forms: Callable[[Mapping[str, Any]], list[WrongForm]],
    **options: Any,
) -> WrittenQuestion:
    """A two-point question whose answer is an array computed from the student's numbers
    (`options`: more WrittenQuestion fields, such as the tolerance)."""
    return WrittenQuestion(
        id=qid,
        title=title,
        points=2,
        key=key,
        answer_kind="array",
        expected=expected,
        wrong_forms=wrong_forms,
        **options,
    )


# Parameter counts are whole numbers: exact, not within the numeric answers' 1e-3.
EXACT_COUNT = Tolerance(rtol=0.0, atol=0.5)


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
    _choice("a4.w_rope_offset", "What RoPE makes attention depend on", "rope_depends_on", "B"),
    _array_question(
        "a4.w_rope_attention",
        "Causal attention with RoPE by hand",
        "rope_attention",
        _rope_attention_row,
        _rope_attention_wrong,
    ),
    _array_question(
        "a4.w_embedding_params",
        "Embedding parameters, tied and untied",
        "embedding_params",
        _embedding_counts,
        lambda v: [
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
        tolerance=EXACT_COUNT,
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


def _by_hand(qid: str, title: str, key: str, which: int) -> WrittenQuestion:
    """Causal attention by hand at the student's Q, K, V: output `which` (0 the output, 1 the
    weights) of scaled_dot_product_attention."""
    return _array_question(
        qid, title, key, lambda v: _attention_by_hand(v)[which], _by_hand_wrong(which)
    )


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
    _array_question(
        "a4.w_softmax_jacobian",
        "The softmax Jacobian at your p",
        "softmax_jacobian",
        _jacobian,
        lambda v: [
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
    _choice("a4.w_saturation", "Why saturation kills the gradient", "saturation", "B"),
    _choice("a4.w_prenorm_jacobian", "Pre-norm's Jacobian", "prenorm_jacobian", "A"),
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
    _by_hand(
        "a4.w_attention_weights", "Causal attention by hand: the weights", "attention_weights", 1
    ),
    _by_hand(
        "a4.w_attention_output", "Causal attention by hand: the output", "attention_output", 0
    ),
)
