"""The a4 mistakes as a student writes them: each catalog id's slip as a source edit of the plain
numpy solution (a passage replaced, or the student's own version of one function), and the
groups of mistakes graded together in one file.

tests/test_a4_transformer.py grades them; the edits never call the catalog's mutants, so a
mistake is recognised from code a student could have written, not from the grader's own model.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from pathlib import Path

SOLUTION = Path(__file__).resolve().parents[1] / "solutions" / "a4_transformer"
SOLUTION_SRC = (SOLUTION / "transformer.py").read_text()


def _replace_function(src: str, name: str, new: str) -> str:
    """Swap one top-level function of the solution for a student's version."""
    pattern = re.compile(rf"^def {name}\(.*?(?=^def |^# -----|\Z)", re.S | re.M)
    assert pattern.search(src), name
    return pattern.sub(lambda _: textwrap.dedent(new).lstrip() + "\n\n", src, count=1)


SDPA_TEMPLATE = """
def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=np.float64) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) {SCALE}
    if mask is not None:
        {MASK}
    weights = {SOFTMAX}
    {AFTER}
    return weights @ V, weights
"""


Edit = Callable[[str], str]


def R(old: str, new: str) -> Edit:
    """A student's edit: replace one passage of the solution (it must be there)."""

    def edit(src: str) -> str:
        assert old in src, old
        return src.replace(old, new)

    return edit


def F(name: str, code: str) -> Edit:
    """A student's edit: their own version of one function."""
    return lambda src: _replace_function(src, name, code)


def student_source(*mids: str) -> str:
    src = SOLUTION_SRC
    for mid in mids:
        edits = MISTAKES[mid][1]
        for e in edits if isinstance(edits, tuple) else (edits,):
            src = e(src)
    return src


def sdpa(
    SCALE="/ math.sqrt(Q.shape[-1])",
    MASK="scores = np.where(mask, scores, -np.inf)",
    SOFTMAX="_softmax(scores)",
    AFTER="",
) -> Edit:
    code = SDPA_TEMPLATE.format(SCALE=SCALE, MASK=MASK, SOFTMAX=SOFTMAX, AFTER=AFTER)
    return lambda src: _replace_function(src, "scaled_dot_product_attention", code)


ATTEND_D_MODEL = """
def _attend(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads, mask):
    q = _split(X_q @ W_Q.T, n_heads)
    k = _split(X_kv @ W_K.T, n_heads)
    v = _split(X_kv @ W_V.T, n_heads)
    scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(X_q.shape[-1])  # scale by the model width
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    return _merge(_softmax(scores) @ v) @ W_O.T
"""

MISTAKES: dict[str, tuple[str, Edit | tuple[Edit, ...]]] = {
    "softmax-wrong-axis": (
        "a4.sdpa",
        sdpa(
            SOFTMAX="np.exp(scores - scores.max(axis=-2, keepdims=True)); "
            "weights = weights / weights.sum(axis=-2, keepdims=True)"
        ),
    ),
    "attention-missing-scale": ("a4.sdpa", sdpa(SCALE="")),
    "attention-scale-by-dk": ("a4.sdpa", sdpa(SCALE="/ Q.shape[-1]")),
    "attention-scale-by-d-model": ("a4.mha", F("_attend", ATTEND_D_MODEL)),
    "mask-ignored": ("a4.sdpa", sdpa(MASK="np.where(mask, scores, -np.inf)  # result dropped")),
    "mask-inverted": ("a4.sdpa", sdpa(MASK="scores = np.where(mask, -np.inf, scores)")),
    "mask-after-softmax": (
        "a4.sdpa",
        sdpa(MASK="pass", AFTER="weights = weights * mask if mask is not None else weights"),
    ),
    "mask-zero-fill": ("a4.sdpa", sdpa(MASK="scores = np.where(mask, scores, 0.0)")),
    "causal-mask-transposed": (
        "a4.causal_mask",
        R(
            "return np.tril(np.ones((T, T), dtype=bool))",
            "return np.triu(np.ones((T, T), dtype=bool))",
        ),
    ),
    "causal-mask-excludes-self": (
        "a4.causal_mask",
        R(
            "return np.tril(np.ones((T, T), dtype=bool))",
            "return np.tril(np.ones((T, T), dtype=bool), k=-1)",
        ),
    ),
    "heads-reshape-without-transpose": (
        "a4.mha",
        (
            R(
                "return np.swapaxes(x.reshape(*lead, T, h, width // h), -3, -2)",
                "return x.reshape(*lead, h, T, width // h)",
            ),
            R(
                "x = np.swapaxes(x, -3, -2)  # (..., T, h, d_h)\n    *lead, T, h, d_h = x.shape",
                "*lead, h, T, d_h = x.shape",
            ),
        ),
    ),
    # with attention that fills -inf and has no guard for a fully masked row (NaN there)
    "padding-masks-queries": (
        "a4.mha",
        (
            sdpa(),
            R(
                "pad = np.asarray(key_padding_mask, dtype=bool)[..., None, None, :]",
                "pad = np.asarray(key_padding_mask, dtype=bool)[..., None, :, None]",
            ),
        ),
    ),
    "layernorm-wrong-axis": (
        "a4.layer_norm",
        R(
            "mu = x.mean(axis=-1, keepdims=True)\n    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)",
            "mu = x.mean(axis=-2, keepdims=True)\n    var = ((x - mu) ** 2).mean(axis=-2, keepdims=True)",
        ),
    ),
    "layernorm-unbiased-variance": (
        "a4.layer_norm",
        R(
            "var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)",
            "var = x.var(axis=-1, ddof=1, keepdims=True)",
        ),
    ),
    "layernorm-eps-outside-sqrt": (
        "a4.layer_norm",
        R("np.sqrt(var + eps)", "(np.sqrt(var) + eps)"),
    ),
    "gelu-tanh-approximation": (
        "a4.feed_forward",
        F(
            "_gelu",
            """
        def _gelu(z):
            return 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3)))
        """,
        ),
    ),
    "pe-sin-cos-swapped": (
        "a4.positions",
        R(
            "P[:, 0::2] = np.sin(t * omega)\n    P[:, 1::2] = np.cos(t * omega)",
            "P[:, 0::2] = np.cos(t * omega)\n    P[:, 1::2] = np.sin(t * omega)",
        ),
    ),
    "pe-frequency-exponent": (
        "a4.positions",
        R(
            "omega = 1.0 / 10000 ** (np.arange(0, d, 2) / d)",
            "omega = 1.0 / 10000 ** (np.arange(d // 2) / d)",
        ),
    ),
    "pe-halves-not-interleaved": (
        "a4.positions",
        R(
            "P[:, 0::2] = np.sin(t * omega)\n    P[:, 1::2] = np.cos(t * omega)",
            "P[:, : d // 2] = np.sin(t * omega)\n    P[:, d // 2 :] = np.cos(t * omega)",
        ),
    ),
    "prenorm-adds-normalized-input": (
        "a4.encoder_block",
        R(
            "U = X + mha(ln(X, 1))\n        return U + ffn(ln(U, 2))",
            "X = ln(X, 1)\n        U = X + mha(X)\n        U = ln(U, 2)\n        return U + ffn(U)",
        ),
    ),
    "ffn-missing-activation": (
        "a4.feed_forward",
        F(
            "feed_forward",
            """
        def feed_forward(X, W1, b1, W2, b2, activation="relu"):
            hidden = np.asarray(X) @ W1.T + b1
            return hidden @ W2.T + b2
        """,
        ),
    ),
    "cross-attention-uses-decoder-keys": (
        "a4.decoder_block",
        (
            R("U2 = U1 + _attend(ln(U1, 2), memory,", "U2 = U1 + _attend(ln(U1, 2), ln(U1, 2),"),
            R(
                "mask = np.asarray(memory_padding_mask, dtype=bool)[..., None, None, :]  # (..., 1, 1, S)",
                "pass",
            ),
        ),
    ),
    "decoder-self-attention-not-causal": (
        "a4.decoder_block",
        R('p["W_O"], n_heads, causal=True)', 'p["W_O"], n_heads)'),
    ),
    "batchnorm-over-batch-only": (
        "a4.batch_norm_stats",
        R("return X.mean(axis=(0, 1)), X.var(axis=(0, 1))", "return X.mean(axis=0), X.var(axis=0)"),
    ),
    "rmsnorm-subtracts-mean": (
        "a4.rms_norm",
        R(
            "return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps) * gamma",
            "x = x - x.mean(axis=-1, keepdims=True)\n    "
            "return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps) * gamma",
        ),
    ),
    # RoPE and the complete forward pass
    "rope-halves-not-interleaved": (
        "a4.rope",
        R(
            "x, y = X[..., 0::2], X[..., 1::2]\n    out = np.empty_like(X)\n"
            "    out[..., 0::2] = x * cos - y * sin\n    out[..., 1::2] = x * sin + y * cos",
            "x, y = X[..., : d // 2], X[..., d // 2 :]\n    out = np.empty_like(X)\n"
            "    out[..., : d // 2] = x * cos - y * sin\n    out[..., d // 2 :] = x * sin + y * cos",
        ),
    ),
    "rope-angle-sign": (
        "a4.rope",
        R("angle = np.arange(T)[:, None] * theta", "angle = -np.arange(T)[:, None] * theta"),
    ),
    "rope-frequency-exponent": (
        "a4.rope",
        R("theta = base ** (-np.arange(0, d, 2) / d)", "theta = base ** (-np.arange(d // 2) / d)"),
    ),
    "gpt-no-final-layernorm": (
        "a4.gpt_forward",
        R('    x = layer_norm(x, params["lnf_gamma"], params["lnf_beta"], LN_EPS)\n', ""),
    ),
    "gpt-post-norm-blocks": (
        "a4.gpt_forward",
        R(
            '        h = layer_norm(x, p["ln1_gamma"], p["ln1_beta"], LN_EPS)\n'
            '        x = x + multi_head_attention(h, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=True)\n'
            '        h = layer_norm(x, p["ln2_gamma"], p["ln2_beta"], LN_EPS)\n'
            '        x = x + feed_forward(h, p["W1"], p["b1"], p["W2"], p["b2"])',
            '        x = x + multi_head_attention(x, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=True)\n'
            '        x = layer_norm(x, p["ln1_gamma"], p["ln1_beta"], LN_EPS)\n'
            '        x = layer_norm(x + feed_forward(x, p["W1"], p["b1"], p["W2"], p["b2"]), p["ln2_gamma"], '
            'p["ln2_beta"], LN_EPS)',
        ),
    ),
    "gpt-positions-after-blocks": (
        "a4.gpt_forward",
        (
            R(
                'x = W_E[ids] + np.asarray(params["P"], dtype=np.float64)[: len(ids)]  # (T, d)',
                "x = W_E[ids]",
            ),
            R(
                '    x = layer_norm(x, params["lnf_gamma"], params["lnf_beta"], LN_EPS)',
                '    x = x + np.asarray(params["P"])[: len(ids)]\n'
                '    x = layer_norm(x, params["lnf_gamma"], params["lnf_beta"], LN_EPS)',
            ),
        ),
    ),
    "gpt-unembedding-not-transposed": (
        "a4.gpt_forward",
        R("return _softmax(x @ W_U.T)", "return _softmax(x @ W_U)"),
    ),
    "gpt-unembedding-always-tied": (
        "a4.gpt_forward",
        R('W_U = np.asarray(params.get("W_U", W_E), dtype=np.float64)', "W_U = W_E"),
    ),
    "gpt-softmax-over-positions": (
        "a4.gpt_forward",
        R(
            "return _softmax(x @ W_U.T)",
            "z = x @ W_U.T\n    e = np.exp(z - z.max(axis=0))\n    return e / e.sum(axis=0)",
        ),
    ),
    # issue 17: the classic mistakes, one at a time
    "merge-heads-without-transpose": (
        "a4.mha",
        R(
            "x = np.swapaxes(x, -3, -2)  # (..., T, h, d_h)\n    *lead, T, h, d_h = x.shape",
            "*lead, h, T, d_h = x.shape",
        ),
    ),
    "output-projection-not-transposed": (
        "a4.mha",
        R("return _merge(context) @ W_O.T", "return _merge(context) @ W_O"),
    ),
    "attention-missing-output-projection": (
        "a4.mha",
        R("return _merge(context) @ W_O.T", "return _merge(context)"),
    ),
    "head-width-from-d-model": (
        "a4.mha",
        F(
            "_attend",
            ATTEND_D_MODEL.replace(
                "math.sqrt(X_q.shape[-1])  # scale by the model width",
                "math.sqrt(X_q.shape[-1] / n_heads)  # d_k = d/h",
            ),
        ),
    ),
    "masks-combined-with-or": (
        "a4.mha",
        R(
            "mask = pad if mask is None else (mask & pad)",
            "mask = pad if mask is None else (mask | pad)",
        ),
    ),
    "cross-attention-normalizes-memory": (
        "a4.decoder_block",
        R("U2 = U1 + _attend(ln(U1, 2), memory,", "U2 = U1 + _attend(ln(U1, 2), ln(memory, 2),"),
    ),
    "rmsnorm-missing-eps": (
        "a4.rms_norm",
        R(
            "return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps) * gamma",
            "return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True)) * gamma",
        ),
    ),
    "swiglu-sigmoid-gate": (
        "a4.swiglu",
        R("swish = g / (1.0 + np.exp(-g))", "swish = 1.0 / (1.0 + np.exp(-g))"),
    ),
    "swiglu-gate-up-swapped": (
        "a4.swiglu",
        (
            R("g = X @ W_gate.T", "g = X @ W_up.T"),
            R("(swish * (X @ W_up.T))", "(swish * (X @ W_gate.T))"),
        ),
    ),
    # issue 33: one mask dropped while the other is applied, and RMSNorm's ε outside the root
    "causal-mask-dropped": (
        "a4.mha",
        R("mask = causal_mask(T) if causal else None", "mask = None  # `causal` never read"),
    ),
    "padding-mask-dropped": (
        "a4.mha",
        R("mask = pad if mask is None else (mask & pad)", "pass  # the padding mask never joins"),
    ),
    "rmsnorm-eps-outside-sqrt": (
        "a4.rms_norm",
        R(
            "return x / np.sqrt(np.mean(x**2, axis=-1, keepdims=True) + eps) * gamma",
            "return x / (np.sqrt(np.mean(x**2, axis=-1, keepdims=True)) + eps) * gamma",
        ),
    ),
}
WRITTEN_ONLY = {
    "score-std-for-variance",
    "softmax-jacobian-sign",
    "softmax-jacobian-diagonal-only",
    "attention-cost-linear",
    "rope-rotates-values",
    "softmax-jacobian-delta-misplaced",  # broken steps of the derivation a4.w_softmax_derivation
    "softmax-jacobian-quotient-denominator",
}


# Mistakes graded together in one file: no graded question calls a function another mistake
# of its group edits (the blocks call MHA, LN and the FFN; MHA calls attention).
GROUPS = (
    ("softmax-wrong-axis", "causal-mask-transposed", "layernorm-wrong-axis", "pe-sin-cos-swapped"),
    (
        "attention-missing-scale",
        "causal-mask-excludes-self",
        "layernorm-unbiased-variance",
        "pe-frequency-exponent",
    ),
    (
        "attention-scale-by-dk",
        "layernorm-eps-outside-sqrt",
        "pe-halves-not-interleaved",
        "gelu-tanh-approximation",
    ),
    ("mask-ignored", "ffn-missing-activation"),
    ("mask-inverted", "rmsnorm-subtracts-mean"),
    ("mask-after-softmax", "batchnorm-over-batch-only"),
    ("mask-zero-fill", "prenorm-adds-normalized-input"),
    ("attention-scale-by-d-model",),
    ("heads-reshape-without-transpose",),
    ("padding-masks-queries", "cross-attention-uses-decoder-keys"),
    ("decoder-self-attention-not-causal",),
    ("rope-halves-not-interleaved", "gpt-no-final-layernorm"),
    ("rope-angle-sign", "gpt-post-norm-blocks"),
    ("rope-frequency-exponent", "gpt-positions-after-blocks"),
    ("gpt-unembedding-not-transposed",),
    ("gpt-unembedding-always-tied",),
    ("gpt-softmax-over-positions",),
    ("merge-heads-without-transpose", "rmsnorm-missing-eps", "swiglu-sigmoid-gate"),
    ("output-projection-not-transposed", "swiglu-gate-up-swapped"),
    ("attention-missing-output-projection",),
    ("head-width-from-d-model",),
    ("cross-attention-normalizes-memory",),
    ("masks-combined-with-or",),
    ("causal-mask-dropped", "rmsnorm-eps-outside-sqrt"),
    ("padding-mask-dropped",),
)
