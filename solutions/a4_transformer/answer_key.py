"""Print a complete answers.toml for one student's variant of a4.

    python answer_key.py [STUDENT_ID]

Standalone (standard library and numpy): the student's numbers come from the handout's own
variant.py (../../assignments/a4_transformer/variant.py), the answers are worked here.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def _variant_module():
    for path in (HERE / "variant.py", HERE.parents[1] / "assignments" / "a4_transformer" / "variant.py"):
        if path.is_file():
            spec = importlib.util.spec_from_file_location("_a4_variant", path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            return module
    raise FileNotFoundError("variant.py of a4_transformer not found next to this file or in assignments/")


def _causal_attention(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    T, d_k = Q.shape
    S = Q @ K.T / math.sqrt(d_k)
    S = np.where(np.tril(np.ones((T, T), dtype=bool)), S, -np.inf)
    A = np.exp(S - S.max(axis=1, keepdims=True))
    A /= A.sum(axis=1, keepdims=True)
    return A, A @ V


def _rotate(x, t):
    """RoPE for d = 2 (θ = 1): the pair turned by t radians."""
    c, s = math.cos(t), math.sin(t)
    return np.array([c * x[0] - s * x[1], s * x[0] + c * x[1]])


def _rope_attention(v):
    """Causal attention with RoPE on q and k (not v) at position 1, d = 2: the output (2,)."""
    q1 = _rotate(np.asarray(v["rope_q1"], dtype=float), 1)
    keys = [_rotate(np.asarray(v["rope_k0"], dtype=float), 0), _rotate(np.asarray(v["rope_k1"], dtype=float), 1)]
    scores = np.array([q1 @ k for k in keys]) / math.sqrt(2)
    w = np.exp(scores - scores.max())
    w /= w.sum()
    return w[0] * np.asarray(v["rope_v0"], dtype=float) + w[1] * np.asarray(v["rope_v1"], dtype=float)


def _vector(a) -> str:
    return "[" + ", ".join(f"{x:.6f}" for x in np.asarray(a)) + "]"


def _array(a) -> str:
    rows = ", ".join("[" + ", ".join(f"{x:.6f}" for x in row) + "]" for row in np.asarray(a))
    return f"[{rows}]"


def answers(student: str | None) -> str:
    v = _variant_module().numbers(student)
    p = np.asarray(v["softmax_p"], dtype=float)
    A, O = _causal_attention(v["attn_Q"], v["attn_K"], v["attn_V"])
    vd, td = v["emb_vocab"] * v["emb_d"], v["emb_positions"] * v["emb_d"]  # W_E and P
    return "\n".join([
        f"# a4 answer key for {student!r}" if student else "# a4 answer key, default variant",
        'score_variance = "d_k"',
        'score_scale = "1/sqrt(d_k)"',
        f"softmax_jacobian = {_array(np.diag(p) - np.outer(p, p))}",
        'saturation = "B"',
        'prenorm_jacobian = "A"',
        "cost_doubling = 4",
        f"attention_weights = {_array(A)}",
        f"attention_output = {_array(O)}",
        'rope_depends_on = "B"',
        f"rope_attention = {_vector(_rope_attention(v))}",
        f"embedding_params = [{vd + td}, {2 * vd + td}]",
        'softmax_derivation = ["d/ds_b p_a", "-p_a p_b"]',
        "",
    ])


if __name__ == "__main__":
    sys.stdout.write(answers(sys.argv[1] if len(sys.argv) > 1 else None))


def to_toml(student: str | None) -> str:
    """The answers.toml text for a student's variant (the same name in every answer key)."""
    return answers(student)
