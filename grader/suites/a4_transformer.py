"""a4_transformer — the hidden suite: attention, masks, heads, norms, FFNs, positions, blocks.

This module assembles the assignment; each topic's cases and mistakes live in its own module of
grader/suites/a4_transformer_parts/ (attention, norms, ffn, positions, blocks, forward,
written), and the names other code reads are re-exported here.

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

from collections.abc import Callable, Mapping
from typing import Any

from grader.questions import Assignment, CodeQuestion
from grader.suites._kit import builder
from grader.suites.a4_transformer_parts.attention import (
    CAUSAL_MUTANTS,
    HEAD_HOOKS,
    MHA_FORMS,
    MHA_VARIANTS,
    PADDING_MUTANTS,
    SDPA_MUTANTS,
    _causal_cases,
    _mha_cases,
    _padding_cases,
    _sdpa_cases,
)
from grader.suites.a4_transformer_parts.blocks import (
    BLOCK_MHA_IDS,
    CROSS_FORMS,
    DECODER_MUTANTS,
    ENCODER_MUTANTS,
    _decoder_cases,
    _encoder_cases,
)
from grader.suites.a4_transformer_parts.ffn import (
    FFN_MUTANTS,
    SWIGLU_MUTANTS,
    _ffn_cases,
    _swiglu_cases,
)
from grader.suites.a4_transformer_parts.forward import (
    GPT_MUTANTS,
    GPT_UPSTREAM_MHA,
    MOVIE_VOCAB,
    _gpt_cases,
)
from grader.suites.a4_transformer_parts.norms import (
    BN_STATS_MUTANTS,
    LN_MUTANTS,
    LN_STATS_MUTANTS,
    RMS_MUTANTS,
    _ln_cases,
    _rms_cases,
    _stats_cases,
)
from grader.suites.a4_transformer_parts.positions import (
    PE_MUTANTS,
    ROPE_MUTANTS,
    _pe_cases,
    _rope_cases,
)
from grader.suites.a4_transformer_parts.shared import BLOCK_H, BLOCK_PARAMS, MICRO_X
from grader.suites.a4_transformer_parts.written import (
    WRITTEN,
    WRITTEN_COVERAGE,
    _rope_attention_row,
)
from reference import attention as att
from reference import blocks, ffn, gpt, norms, positions

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
# ---------------------------------------------------------------- the assignment


_q = builder("a4", FILE, forbidden=SHORTCUTS)  # every code question of a4 (grader/suites/_kit.py)


def _stats_question(
    kind: str, salt: int, mutants: Mapping[str, Callable[..., Any]]
) -> CodeQuestion:
    """LayerNorm's (`kind` = "layer") or BatchNorm's ("batch") statistics: 3 points, (mean, var)."""
    function = f"{kind}_norm_stats"
    return _q(
        f"a4.{function}",
        f"{kind.capitalize()}Norm's statistics",
        3,
        function,
        getattr(norms, function),
        _stats_cases(salt),
        mutants,
        output_names=("mean", "var"),
    )


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
    _stats_question("layer", 406, LN_STATS_MUTANTS),
    _stats_question("batch", 407, BN_STATS_MUTANTS),
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

__all__ = [
    "ASSIGNMENT", "BLOCK_DEPENDS", "BLOCK_H", "BLOCK_MHA_IDS", "BLOCK_PARAMS", "BN_STATS_MUTANTS",
    "CAUSAL_MUTANTS", "CODE", "CODE_COVERAGE", "CROSS_FORMS", "DECODER_MUTANTS", "ENCODER_MUTANTS",
    "FFN_MUTANTS", "FILE", "GPT_MUTANTS", "GPT_UPSTREAM_MHA", "HEAD_HOOKS", "LN_MUTANTS",
    "LN_STATS_MUTANTS", "MHA_FORMS", "MHA_VARIANTS", "MICRO_X", "MOVIE_VOCAB", "PADDING_MUTANTS",
    "PE_MUTANTS", "RMS_MUTANTS", "ROPE_MUTANTS", "SDPA_MUTANTS", "SHORTCUTS", "SWIGLU_MUTANTS",
    "WRITTEN", "WRITTEN_COVERAGE", "_rope_attention_row",
]  # fmt: skip
