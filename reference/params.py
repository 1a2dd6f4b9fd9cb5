"""Parameter counts of a GPT-style decoder, built from per-component helpers (Lecture 7 slides).

GPT-2 small (V = 50257, 1024 positions, d = 768, 12 layers, d_ff = 3072): attention 4d² + 4d =
2,362,368, FFN 2 d d_ff + d_ff + d = 4,722,432, two LayerNorms 2 × 2d = 3,072, per block
7,087,872 = 12d² + 13d when d_ff = 4d; total 124,439,808 with the LM head tied.

The helpers are plain arithmetic, so they also accept sympy symbols (`per_block_expression`).
Hooks for mutants: `transformer_parameter_count(..., norms_in_block=..., final_norm=...,
biased=...)`: `norms_in_block=1` leaves out one of a block's two norms, `final_norm=False` the
last, both with `norms_in_block=0` every norm ("params-missing-norms"); `biased=("attention",)`
leaves the FFN's biases out ("params-missing-biases"). The other catalogued mistakes are
ordinary arguments (tied_embeddings=False, biases=False, max_positions=0).
"""

from __future__ import annotations

FFN_MATRICES = {"gelu": 2, "swiglu": 3}


def linear_count(n_in, n_out, bias: bool):
    """A Linear(n_in, n_out): n_in·n_out weights plus n_out biases when bias."""
    return n_in * n_out + (n_out if bias else 0)


def norm_count(d, norm: str):
    """LayerNorm has γ and β (2d); RMSNorm has γ only (d)."""
    if norm == "layernorm":
        return 2 * d
    if norm == "rmsnorm":
        return d
    raise ValueError(f"expected norm 'layernorm' or 'rmsnorm', got {norm!r}")


def attention_count(d, biases: bool):
    """Q, K, V and output projections, each d -> d: 4d² (+ 4d with biases); independent of h."""
    return 4 * linear_count(d, d, biases)


def ffn_count(d, d_ff, ffn: str, biases: bool):
    """FFN weights: 'gelu' W1 (d -> d_ff), W2 (d_ff -> d); 'swiglu' W_gate, W_up (d -> d_ff), W_down."""
    if ffn not in FFN_MATRICES:
        raise ValueError(f"expected ffn 'gelu' or 'swiglu', got {ffn!r}")
    n_up = FFN_MATRICES[ffn] - 1
    return n_up * linear_count(d, d_ff, biases) + linear_count(d_ff, d, biases)


def transformer_parameter_count(
    vocab_size: int,
    max_positions: int,
    d_model: int,
    n_layers: int,
    d_ff: int,
    tied_embeddings: bool = True,
    biases: bool = True,
    ffn: str = "gelu",
    norm: str = "layernorm",
    *,
    norms_in_block: int = 2,
    final_norm: bool = True,
    biased: tuple[str, ...] = ("attention", "ffn"),
) -> dict[str, int]:
    """Counts per component and the total: embeddings + n_layers × (attn + FFN + 2 norms) + final norm + head."""
    d = d_model
    attention = attention_count(d, biases and "attention" in biased)
    feed_forward = ffn_count(d, d_ff, ffn, biases and "ffn" in biased)
    norms = norms_in_block * norm_count(d, norm)  # before attention, before the FFN
    per_block = attention + feed_forward + norms
    counts = {
        "token_embedding": vocab_size * d,
        "position_embedding": max_positions * d,  # 0 positions: rotary / none, no table
        "attention_per_block": attention,
        "ffn_per_block": feed_forward,
        "norms_per_block": norms,
        "per_block": per_block,
        "blocks": n_layers * per_block,
        "final_norm": norm_count(d, norm) if final_norm else 0,
        "lm_head": 0 if tied_embeddings else vocab_size * d,  # no bias on the head
    }
    counts["total"] = (
        counts["token_embedding"]
        + counts["position_embedding"]
        + counts["blocks"]
        + counts["final_norm"]
        + counts["lm_head"]
    )
    return counts


def per_block_expression(
    ffn: str = "gelu", norm: str = "layernorm", biases: bool = True, ff_ratio: int = 4
):
    """The per-block count as a sympy polynomial in d with d_ff = ff_ratio·d; defaults give 12d² + 13d."""
    import sympy  # only here: the counts themselves are plain integer arithmetic

    d = sympy.Symbol("d", positive=True)
    per_block = (
        attention_count(d, biases)
        + ffn_count(d, ff_ratio * d, ffn, biases)
        + 2 * norm_count(d, norm)
    )
    return sympy.expand(per_block)


def quadratic_text(count, variable: str = "d") -> str:
    """A count that is a quadratic polynomial in d, as text ("12*d**2 + 13*d"), without sympy.

    The coefficients come from the count itself at d = 0, 1, 2 (finite differences).
    """
    f0, f1, f2 = (count(d) for d in (0, 1, 2))
    a = (f2 - 2 * f1 + f0) // 2
    b = f1 - f0 - a
    terms = [
        f"{a}*{variable}**2" if a else "",
        f"{b}*{variable}" if b else "",
        str(f0) if f0 else "",
    ]
    return " + ".join(t for t in terms if t).replace("+ -", "- ") or "0"


def per_block_text(
    ffn: str = "gelu", norm: str = "layernorm", biases: bool = True, ff_ratio: int = 4
) -> str:
    """per_block_expression as text, computed without sympy (for the grader's hot path)."""
    return quadratic_text(
        lambda d: (
            attention_count(d, biases)
            + ffn_count(d, ff_ratio * d, ffn, biases)
            + 2 * norm_count(d, norm)
        )
    )


def per_block_formula(d: int) -> int:
    """12d² + 13d: a pre-norm GPT-2 block with biases, LayerNorm, GELU FFN and d_ff = 4d."""
    return 12 * d * d + 13 * d
