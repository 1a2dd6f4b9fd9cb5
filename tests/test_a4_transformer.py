"""a4_transformer: the solution scores full, the stub zero, every catalog mistake is named.

Expected values come from the slides' microscopes (001) and from torch; the mistakes are written
as a student would write them (source edits of a plain numpy solution, tests/a4_mistakes.py),
never by calling mutants.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from a4_mistakes import GROUPS, MISTAKES, SOLUTION_SRC, WRITTEN_ONLY, sdpa, student_source
from conftest import FAST, ROOT, answer_key, write_submission

from grader import catalog
from grader.engine.checks import compare
from grader.engine.grade import grade_submission
from grader.engine.trusted import run_trusted
from grader.mutants import concrete
from grader.questions import CodeQuestion, WrittenQuestion
from grader.suites import a4_transformer as suite

SOLUTION = ROOT / "solutions" / "a4_transformer"
HANDOUT = ROOT / "assignments" / "a4_transformer"
A = suite.ASSIGNMENT


def _a4_ids() -> list[str]:
    import grader.catalog.a4 as mod

    src = Path(mod.__file__).read_text()
    return re.findall(r'id="([a-z0-9-]+)"', src)


def _question(qid: str):
    return A.question(qid)


def _only(*qids: str):
    return dataclasses.replace(A, questions=tuple(_question(q) for q in qids))


# ---------------------------------------------------------------- whole submissions


def test_a4_two_students_get_different_cases_and_full_marks(tmp_path):
    seeds = []
    for sid in ("ada.lovelace@uni.edu", "alan.turing@uni.edu"):
        folder = write_submission(
            A.code_file,
            tmp_path,
            SOLUTION_SRC,
            answer_key("a4_transformer").answers(sid),
            name=sid.split("@")[0],
        )
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
    folder = write_submission(A.code_file, tmp_path, TORCH_SOLUTION)
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
        write_submission(A.code_file, tmp_path, src),
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


# ---------------------------------------------------------------- every mistake, written as a student would (a4_mistakes.py)


def test_a4_template_sdpa_is_itself_correct(tmp_path):
    report = grade_submission(
        write_submission(A.code_file, tmp_path, sdpa()(SOLUTION_SRC)), _only("a4.sdpa"), limits=FAST
    )
    assert report.score == report.max_score, report.questions[0].feedback


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
            write_submission(A.code_file, tmp_path, student_source(*group), name=f"g{i}"),
            _only(*qids),
            limits=FAST,
        )
        for mid, q in zip(group, report.questions):
            if q.misconceptions != [mid] or not q.score < q.max_score:
                wrong.append((mid, q.question_id, q.misconceptions, q.score, q.feedback[:600]))
    assert not wrong, wrong


def test_a4_convention_mistakes_keep_partial_credit(tmp_path):
    src = student_source("layernorm-eps-outside-sqrt", "gelu-tanh-approximation")
    report = grade_submission(
        write_submission(A.code_file, tmp_path, src),
        _only("a4.layer_norm", "a4.feed_forward"),
        limits=FAST,
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
