"""a4_transformer: the solution scores full, the stub zero, every catalog mistake is named.

Expected values come from the slides' microscopes (001) and from torch; the mistakes are written
as a student would write them (source edits of a plain numpy solution), never by calling mutants.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import itertools
import re
import textwrap
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from grader import catalog, sandbox
from grader.engine.checks import compare
from grader.engine.grade import grade_submission
from grader.engine.trusted import run_trusted
from grader.mutants import concrete
from grader.questions import CodeQuestion, WrittenQuestion
from grader.suites import a4_transformer as suite

ROOT = Path(__file__).resolve().parents[1]
SOLUTION = ROOT / "solutions" / "a4_transformer"
HANDOUT = ROOT / "assignments" / "a4_transformer"
A = suite.ASSIGNMENT
FAST = sandbox.Limits(call_seconds=10.0, submission_seconds=120.0)


def _a4_ids() -> list[str]:
    import grader.catalog.a4 as mod

    src = Path(mod.__file__).read_text()
    return re.findall(r'id="([a-z0-9-]+)"', src)


def _question(qid: str):
    return A.question(qid)


def _only(*qids: str):
    return dataclasses.replace(A, questions=tuple(_question(q) for q in qids))


def _submit(tmp_path: Path, source: str, answers: str | None = None, name: str = "sub") -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "transformer.py").write_text(source)
    if answers is not None:
        (folder / "answers.toml").write_text(answers)
    return folder


def _answer_key(student: str | None) -> str:
    spec = importlib.util.spec_from_file_location("_a4_key", SOLUTION / "answer_key.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.answers(student)


SOLUTION_SRC = (SOLUTION / "transformer.py").read_text()


def _replace_function(src: str, name: str, new: str) -> str:
    """Swap one top-level function of the solution for a student's version."""
    pattern = re.compile(rf"^def {name}\(.*?(?=^def |^# -----|\Z)", re.S | re.M)
    assert pattern.search(src), name
    return pattern.sub(lambda _: textwrap.dedent(new).lstrip() + "\n\n", src, count=1)


# ---------------------------------------------------------------- whole submissions


def test_a4_two_students_get_different_cases_and_full_marks(tmp_path):
    seeds = []
    for sid in ("ada.lovelace@uni.edu", "alan.turing@uni.edu"):
        folder = _submit(tmp_path, SOLUTION_SRC, _answer_key(sid), name=sid.split("@")[0])
        report = grade_submission(folder, A, student=sid, limits=FAST)
        assert report.score == 100, [
            (q.question_id, q.feedback) for q in report.questions if q.score < q.max_score
        ]
        seeds.append(report.seed)
    assert seeds[0] != seeds[1]
    for q in A.questions:
        if isinstance(q, CodeQuestion) and q.function not in ("causal_mask",):
            a, b = q.cases(seeds[0]), q.cases(seeds[1])
            hidden = [(x, y) for x, y in zip(a, b) if not x.visible]
            assert any(not _same_args(x.args, y.args) for x, y in hidden), q.id


def _same_args(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.shape(a) == np.shape(b) and np.array_equal(a, b)
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(_same_args(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_args(a[k], b[k]) for k in a)
    return a == b


TORCH_SOLUTION = """
import math
import torch
import torch.nn.functional as F

def _t(x):
    return torch.as_tensor(x, dtype=torch.float32) if not isinstance(x, torch.Tensor) else x.float()

def scaled_dot_product_attention(Q, K, V, mask=None):
    Q, K, V = _t(Q), _t(K), _t(V)
    s = Q @ K.transpose(-1, -2) / math.sqrt(Q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~torch.as_tensor(mask, dtype=torch.bool), float("-inf"))
    w = torch.softmax(s, dim=-1)
    return w @ V, w

def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).tril()

def padding_mask(lengths, T):
    return torch.arange(T)[None, :] < torch.as_tensor(lengths)[:, None]

def _heads(x, h):
    *lead, T, w = x.shape
    return x.view(*lead, T, h, w // h).transpose(-3, -2)

def _attend(xq, xkv, WQ, WK, WV, WO, h, mask):
    q, k, v = _heads(xq @ _t(WQ).T, h), _heads(xkv @ _t(WK).T, h), _heads(xkv @ _t(WV).T, h)
    ctx, _ = scaled_dot_product_attention(q, k, v, mask)
    ctx = ctx.transpose(-3, -2)
    return ctx.reshape(*ctx.shape[:-2], -1) @ _t(WO).T

def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None):
    X = _t(X)
    T = X.shape[-2]
    mask = causal_mask(T) if causal else torch.ones(T, T, dtype=torch.bool)
    if key_padding_mask is not None:
        mask = mask & torch.as_tensor(key_padding_mask, dtype=torch.bool)[..., None, None, :]
    return _attend(X, X, W_Q, W_K, W_V, W_O, n_heads, mask)

def layer_norm(x, gamma, beta, eps=1e-5):
    x = _t(x)
    mu = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    return (x - mu) / torch.sqrt(var + eps) * _t(gamma) + _t(beta)

def layer_norm_stats(X):
    X = _t(X)
    return X.mean(-1), X.var(-1, unbiased=False)

def batch_norm_stats(X):
    X = _t(X)
    return X.mean((0, 1)), X.var((0, 1), unbiased=False)

def rms_norm(x, gamma, eps=1e-6):
    x = _t(x)
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * _t(gamma)

def feed_forward(X, W1, b1, W2, b2, activation="relu"):
    z = _t(X) @ _t(W1).T + _t(b1)
    z = torch.relu(z) if activation == "relu" else F.gelu(z)
    return z @ _t(W2).T + _t(b2)

def swiglu_ffn(X, W_gate, W_up, W_down):
    X = _t(X)
    return (F.silu(X @ _t(W_gate).T) * (X @ _t(W_up).T)) @ _t(W_down).T

def sinusoidal_positions(T, d):
    t = torch.arange(T, dtype=torch.float64)[:, None]
    ang = t / 10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    return torch.stack([ang.sin(), ang.cos()], dim=-1).reshape(T, d)

def encoder_block(X, params, n_heads, norm="pre", key_padding_mask=None):
    p = {k: _t(v) for k, v in params.items()}
    mha = lambda x: multi_head_attention(x, p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads,
                                         key_padding_mask=key_padding_mask)
    ffn = lambda x: feed_forward(x, p["W1"], p["b1"], p["W2"], p["b2"])
    ln = lambda x, i: layer_norm(x, p[f"ln{i}_gamma"], p[f"ln{i}_beta"])
    X = _t(X)
    if norm == "pre":
        U = X + mha(ln(X, 1))
        return U + ffn(ln(U, 2))
    U = ln(X + mha(X), 1)
    return ln(U + ffn(U), 2)

def decoder_block(Y, memory, params, n_heads, memory_padding_mask=None):
    p = {k: _t(v) for k, v in params.items()}
    ln = lambda x, i: layer_norm(x, p[f"ln{i}_gamma"], p[f"ln{i}_beta"])
    Y, M = _t(Y), _t(memory)
    U1 = Y + multi_head_attention(ln(Y, 1), p["W_Q"], p["W_K"], p["W_V"], p["W_O"], n_heads, causal=True)
    mask = None
    if memory_padding_mask is not None:
        mask = torch.as_tensor(memory_padding_mask, dtype=torch.bool)[..., None, None, :]
    U2 = U1 + _attend(ln(U1, 2), M, p["C_Q"], p["C_K"], p["C_V"], p["C_O"], n_heads, mask)
    return U2 + feed_forward(ln(U2, 3), p["W1"], p["b1"], p["W2"], p["b2"])

def apply_rope(X, base=10000.0):
    X = _t(X)
    T, d = X.shape[-2], X.shape[-1]
    ang = torch.arange(T)[:, None] * base ** (-torch.arange(0, d, 2) / d)
    z = torch.view_as_complex(X.reshape(*X.shape[:-1], d // 2, 2).contiguous()) * torch.polar(torch.ones_like(ang), ang)
    return torch.view_as_real(z).reshape(X.shape)

def gpt_forward(token_ids, params, n_heads):
    ids = torch.as_tensor(token_ids, dtype=torch.long)
    x = _t(params["W_E"])[ids] + _t(params["P"])[: len(ids)]
    for b in params["blocks"]:
        x = x + multi_head_attention(layer_norm(x, b["ln1_gamma"], b["ln1_beta"]), b["W_Q"], b["W_K"], b["W_V"],
                                     b["W_O"], n_heads, causal=True)
        x = x + feed_forward(layer_norm(x, b["ln2_gamma"], b["ln2_beta"]), b["W1"], b["b1"], b["W2"], b["b2"])
    x = layer_norm(x, params["lnf_gamma"], params["lnf_beta"])
    return torch.softmax(F.linear(x, _t(params.get("W_U", params["W_E"]))), dim=-1)
"""


def test_a4_torch_float32_submission_gets_full_marks(tmp_path):
    folder = _submit(tmp_path, TORCH_SOLUTION)
    report = grade_submission(
        folder,
        dataclasses.replace(
            A, questions=tuple(q for q in A.questions if isinstance(q, CodeQuestion))
        ),
        limits=FAST,
    )
    assert report.score == 80, [
        (q.question_id, q.feedback) for q in report.questions if q.score < q.max_score
    ]


LIBRARY_HELPER = """

def _library_attention(q, k, v, mask):
    import torch
    t = [torch.as_tensor(np.asarray(a)) for a in (q, k, v)]
    m = None if mask is None else torch.as_tensor(np.asarray(mask, dtype=bool))
    out = torch.nn.functional.scaled_dot_product_attention(*t, attn_mask=m)
    return out.numpy(), None


def _unused(q, k, v):
    import torch
    return torch.nn.functional.layer_norm(q, q.shape[-1:])
"""


def test_a4_library_shortcut_costs_only_the_questions_whose_function_reaches_it(tmp_path):
    """a forbidden call costs the questions whose function can reach it, directly or
    through the student's helpers; a helper no question reaches costs nothing."""
    src = (
        SOLUTION_SRC.replace(
            "    context, _ = scaled_dot_product_attention(q, k, v, mask)\n",
            "    context, _ = _library_attention(q, k, v, mask)\n",
        )
        + LIBRARY_HELPER
    )
    assert "_library_attention(q, k, v, mask)" in src
    report = grade_submission(
        _submit(tmp_path, src),
        _only("a4.sdpa", "a4.mha", "a4.layer_norm", "a4.encoder_block"),
        limits=FAST,
    )
    by_id = {q.question_id: q for q in report.questions}
    for qid in (
        "a4.mha",
        "a4.encoder_block",
    ):  # multi_head_attention -> _attend -> _library_attention
        q = by_id[qid]
        assert q.score == 0 and q.misconceptions == ["uses-library-shortcut"], q.feedback
        assert (
            "scaled_dot_product_attention" in q.feedback and "_library_attention" in q.feedback
        ), q.feedback
    for qid in ("a4.sdpa", "a4.layer_norm"):  # neither reaches the helper; `_unused` costs nothing
        q = by_id[qid]
        assert q.score == q.max_score and q.misconceptions == [], q.feedback


# ---------------------------------------------------------------- the microscopes, against torch and the slides


def test_a4_visible_cases_match_the_slides_and_torch():
    import torch

    sdpa_case = suite._sdpa_cases(0)[1]
    out, w = run_trusted(_question("a4.sdpa").reference, sdpa_case)
    np.testing.assert_allclose(w[1], [0.3302, 0.6698, 0.0], atol=5e-5)  # slides: causal row 1
    np.testing.assert_allclose(out[1], [0.6605, 2.0093], atol=5e-5)
    mha_case = suite._mha_cases(0)[0]
    got = run_trusted(_question("a4.mha").reference, mha_case)
    np.testing.assert_allclose(
        got[1], [1.2448, 1.8576, 1.3724, 1.0771], atol=5e-5
    )  # slides: MHA(X)_{t=1}
    enc = run_trusted(_question("a4.encoder_block").reference, suite._encoder_cases(0)[0])
    np.testing.assert_allclose(
        enc,
        [
            [2.3595, -1.0547, -0.1974, 1.4428],
            [0.5963, 0.8824, 1.3481, -1.4556],
            [3.4916, 0.3136, 0.9027, 0.5284],
        ],
        atol=5e-5,
    )  # slides: block output
    ln = run_trusted(_question("a4.layer_norm").reference, suite._ln_cases(0)[0])
    want = torch.nn.functional.layer_norm(torch.tensor(suite.BLOCK_H), (4,), eps=1e-5).numpy()
    np.testing.assert_allclose(ln, want, rtol=1e-10)


# ---------------------------------------------------------------- every mistake, written as a student would

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


def test_a4_template_sdpa_is_itself_correct(tmp_path):
    report = grade_submission(
        _submit(tmp_path, sdpa()(SOLUTION_SRC)), _only("a4.sdpa"), limits=FAST
    )
    assert report.score == report.max_score, report.questions[0].feedback


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


def test_a4_every_catalog_id_has_a_student_style_mistake():
    shared = {
        "softmax-wrong-axis",
        "heads-reshape-without-transpose",
        "mask-zero-fill",
        "mask-inverted",
        "merge-heads-without-transpose",
    }  # the last one lives in a5's catalog
    assert set(_a4_ids()) | shared == set(MISTAKES) | WRITTEN_ONLY
    grouped = [m for g in GROUPS for m in g]
    assert sorted(grouped) == sorted(MISTAKES)
    for g in GROUPS:
        assert len({MISTAKES[m][0] for m in g}) == len(g)
        student_source(*g)  # every edit applies


@pytest.mark.slow  # 12 s: every catalogued a4 mistake graded in the sandbox
def test_a4_each_mistake_is_named_and_loses_points(tmp_path):
    """Each planted mistake is named with exactly its id on its question, which loses points."""
    wrong = []
    for i, group in enumerate(GROUPS):
        qids = [MISTAKES[m][0] for m in group]
        report = grade_submission(
            _submit(tmp_path, student_source(*group), name=f"g{i}"), _only(*qids), limits=FAST
        )
        for mid, q in zip(group, report.questions):
            if q.misconceptions != [mid] or not q.score < q.max_score:
                wrong.append((mid, q.question_id, q.misconceptions, q.score, q.feedback[:600]))
    assert not wrong, wrong


def test_a4_convention_mistakes_keep_partial_credit(tmp_path):
    src = student_source("layernorm-eps-outside-sqrt", "gelu-tanh-approximation")
    report = grade_submission(
        _submit(tmp_path, src), _only("a4.layer_norm", "a4.feed_forward"), limits=FAST
    )
    for q in report.questions:
        assert 0 < q.score < q.max_score and "convention the notes use elsewhere" in q.feedback, (
            q.feedback
        )


def test_a4_written_wrong_answers_name_their_mistakes(tmp_path):
    from grader.course import variants

    v = variants.numbers(A.id, None)
    p = np.asarray(v["softmax_p"])
    jac = np.diag(p) - np.outer(p, p)
    rows = lambda a: "[" + ", ".join("[" + ", ".join(f"{x:.6f}" for x in r) + "]" for r in a) + "]"  # noqa: E731
    answers = "\n".join(
        [
            'score_variance = "sqrt(d_k)"',
            'score_scale = "1/d_k"',
            f"softmax_jacobian = {rows(-jac)}",
            'saturation = "A"',
            'prenorm_jacobian = "B"',
            "cost_doubling = 2",
            "",
        ]
    )
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / "answers.toml").write_text(answers)
    written = dataclasses.replace(
        A, questions=tuple(q for q in A.questions if isinstance(q, WrittenQuestion)), code_file=None
    )
    got = {q.question_id: q.misconceptions for q in grade_submission(folder, written).questions}
    assert got["a4.w_score_variance"] == ["score-std-for-variance"]
    assert got["a4.w_scale"] == ["attention-scale-by-dk"]
    assert got["a4.w_softmax_jacobian"] == ["softmax-jacobian-sign"]
    assert got["a4.w_cost_doubling"] == ["attention-cost-linear"]
    (folder / "answers.toml").write_text(f"softmax_jacobian = {rows(np.diag(p))}\n")
    got = {q.question_id: q.misconceptions for q in grade_submission(folder, written).questions}
    assert got["a4.w_softmax_jacobian"] == ["softmax-jacobian-diagonal-only"]


def test_a4_attention_by_hand_expected_matches_torch():
    import torch

    from grader.course import variants

    for sid in (None, "ada"):
        v = variants.numbers(A.id, sid)
        Q, K, V = (torch.tensor(v[k], dtype=torch.float64) for k in ("attn_Q", "attn_K", "attn_V"))
        out = torch.nn.functional.scaled_dot_product_attention(Q, K, V, is_causal=True)
        np.testing.assert_allclose(
            _question("a4.w_attention_output").expected(v), out.numpy(), atol=1e-12
        )
        p = torch.tensor(v["softmax_p"], dtype=torch.float64)
        s = torch.log(p).requires_grad_(True)
        jac = torch.autograd.functional.jacobian(lambda z: torch.softmax(z, -1), s)
        np.testing.assert_allclose(
            _question("a4.w_softmax_jacobian").expected(v), jac.numpy(), atol=1e-12
        )


def _rotated(x, t: float):
    """A 2-D vector turned by t radians, as a complex number times e^{it} (RoFormer §3.2.2)."""
    z = complex(*x) * complex(np.cos(t), np.sin(t))
    return np.array([z.real, z.imag])


def test_a4_rope_written_answers_match_torch_and_the_parameter_count():
    import torch

    from grader.course import variants

    for sid in (None, "ada", "grace@example.edu"):
        v = variants.numbers(A.id, sid)
        q = torch.tensor(_rotated(v["rope_q1"], 1.0))[None, None, :]  # the query at position 1
        k = torch.tensor(np.stack([_rotated(v["rope_k0"], 0.0), _rotated(v["rope_k1"], 1.0)]))[None]
        values = torch.tensor([v["rope_v0"], v["rope_v1"]], dtype=torch.float64)[None]
        out = torch.nn.functional.scaled_dot_product_attention(q, k, values)[
            0, 0
        ]  # position 1 sees 0 and 1
        np.testing.assert_allclose(
            _question("a4.w_rope_attention").expected(v), out.numpy(), atol=1e-12
        )
        V, d, T = v["emb_vocab"], v["emb_d"], v["emb_positions"]
        emb = torch.nn.Embedding(V, d), torch.nn.Embedding(T, d), torch.nn.Linear(d, V, bias=False)
        tied, untied = (sum(m.weight.numel() for m in emb[:2]), sum(m.weight.numel() for m in emb))
        assert _question("a4.w_embedding_params").expected(v) == [tied, untied]
    assert _question("a4.w_rope_offset").expected(v) == "B"


def test_a4_rope_written_wrong_forms_are_named(tmp_path):
    from grader.course import variants
    from reference import positions

    v = variants.numbers(A.id, "ada")
    rotated_v = _question("a4.w_rope_attention").expected(
        v
    )  # the right answer, then two wrong ones
    wrong = suite._rope_attention_row(v, rotate_values=True)
    V, d, T = v["emb_vocab"], v["emb_d"], v["emb_positions"]
    folder = tmp_path / "w"
    folder.mkdir()
    written = dataclasses.replace(
        A,
        questions=(_question("a4.w_rope_attention"), _question("a4.w_embedding_params")),
        code_file=None,
    )
    for answer, counts, want in (
        (
            wrong,
            [2 * V * d + T * d] * 2,
            ["rope-rotates-values", "params-lm-head-counted-when-tied"],
        ),
        (
            suite._rope_attention_row(
                v, rope=lambda X, base: positions.apply_rope(X, base, sign=-1.0)
            ),
            [V * d, 2 * V * d],
            ["rope-angle-sign", "params-missing-position-embedding"],
        ),
    ):
        (folder / "answers.toml").write_text(
            f"rope_attention = [{answer[0]:.6f}, {answer[1]:.6f}]\n"
            f"embedding_params = [{counts[0]}, {counts[1]}]\n"
        )
        got = [q.misconceptions for q in grade_submission(folder, written, student="ada").questions]
        assert got == [[want[0]], [want[1]]], got
    assert not np.allclose(wrong, rotated_v)


def test_a4_embedding_counts_are_exact(tmp_path):
    """A parameter count is right only to the parameter (torch's numel the authority); the same
    count in another notation is right."""
    import torch

    from grader.course import variants

    v = variants.numbers(A.id, "ada")
    V, d, T = v["emb_vocab"], v["emb_d"], v["emb_positions"]
    tied = torch.nn.Embedding(V, d).weight.numel() + torch.nn.Embedding(T, d).weight.numel()
    untied = tied + torch.nn.Linear(d, V, bias=False).weight.numel()
    written = dataclasses.replace(
        A, questions=(_question("a4.w_embedding_params"),), code_file=None
    )
    folder = tmp_path / "w"
    folder.mkdir()
    for counts, right in (
        (f"[{tied}, {untied}]", True),
        (f'["{tied:,}", {float(untied):.8e}]', True),
        (f"[{tied}, {untied + 1}]", False),  # one parameter off
        (f"[{tied - d}, {untied}]", False),  # one position row short
        (f"[{tied}, {round(untied, -2)}]", False),  # rounded to hundreds
    ):
        (folder / "answers.toml").write_text(f"embedding_params = {counts}\n")
        (q,) = grade_submission(folder, written, student="ada").questions
        assert (q.score == q.max_score) is right and (q.score == 0) is not right, (counts, q)


# ---------------------------------------------------------------- the hidden cases separate the mutants


def _outputs(q: CodeQuestion, seed: int) -> dict[str, list]:
    out = {}
    for name, f in {"reference": q.reference, **q.mutants}.items():
        row = []
        for c in q.cases(seed):
            if c.visible:
                continue
            try:
                with np.errstate(all="ignore"):
                    row.append(concrete(run_trusted(f, c)))
            except Exception:  # noqa: BLE001 - a mutant that does not apply to this case
                row.append(None)
        out[name] = row
    return out


# One mistake under two names by construction: in a model with no padding, an attention that
# ignores every mask, or drops its causal mask, is exactly a decoder whose self-attention is not
# causal; in the encoder, whose only mask is the padding mask, dropping it is ignoring every mask
# (the keys are there for follow-through from the student's attention; the question names the
# first, the block's own id).
SAME_BY_CONSTRUCTION = {
    ("a4.gpt_forward", frozenset({"decoder-self-attention-not-causal", "mask-ignored"})),
    ("a4.gpt_forward", frozenset({"decoder-self-attention-not-causal", "causal-mask-dropped"})),
    ("a4.gpt_forward", frozenset({"mask-ignored", "causal-mask-dropped"})),
    ("a4.decoder_block", frozenset({"decoder-self-attention-not-causal", "causal-mask-dropped"})),
    ("a4.encoder_block", frozenset({"mask-ignored", "padding-mask-dropped"})),
}


@pytest.mark.parametrize("seed", [0, 12345])
def test_a4_mutants_pairwise_separated_on_hidden_cases(seed):
    for q in A.questions:
        if not isinstance(q, CodeQuestion):
            continue
        outs = _outputs(q, seed)
        for a, b in itertools.combinations(outs, 2):
            if (q.id, frozenset({a, b})) in SAME_BY_CONSTRUCTION:
                continue
            # both ways: a boolean expected output also asks for booleans (mask-not-boolean)
            assert any(
                x is not None
                and y is not None
                and (
                    compare(x, y, q.tolerance, names=q.output_names)
                    or compare(y, x, q.tolerance, names=q.output_names)
                )
                for x, y in zip(outs[a], outs[b])
            ), (q.id, a, b)


def test_a4_every_code_catalog_id_is_reachable_from_a_hidden_case():
    reached = set()
    for q in A.questions:
        if isinstance(q, CodeQuestion):
            outs = _outputs(q, 0)
            for mid in q.mutants:
                catalog.get(mid)
                if any(
                    x is not None and compare(x, r, q.tolerance, names=q.output_names)
                    for x, r in zip(outs[mid], outs["reference"])
                ):
                    reached.add(mid)
    assert set(MISTAKES) <= reached


# ---------------------------------------------------------------- the public tests
