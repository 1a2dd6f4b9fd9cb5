"""a2 (RNNs and BPTT): the solution scores full, the handout scores zero cleanly, every
misconception is named from a student-style mistake, mutants separate, and the written
expected answers agree with outside authorities (torch autograd, torch's clip_grad_norm_).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import subprocess
import sys

import numpy as np
import pytest
from conftest import FAST, ROOT, code_questions, only, write_submission
from conftest import load_module as _load

from grader import catalog
from grader.engine.checks import compare
from grader.engine.grade import grade_submission
from grader.engine.trusted import run_trusted
from grader.mutants import AnyOf, concrete
from grader.questions import CodeQuestion, WrittenQuestion
from grader.suites import a2_rnn_bptt as suite

HANDOUT = ROOT / "assignments" / "a2_rnn_bptt"
SOLUTION = ROOT / "solutions" / "a2_rnn_bptt"
A2 = suite.ASSIGNMENT
A2_IDS = (
    "rnn-weights-transposed",
    "bptt-last-use-only",
    "bptt-missing-tanh-derivative",
    "bptt-derivative-of-preactivation",
    "bptt-outer-product-transposed",
    "ce-sum-not-mean",
    "ce-double-mean",
    "bptt-missing-direct-term",
    "clip-per-tensor",
    "perplexity-base-2",
    "rnn-h0-ignored",
    "bptt-h0-missing-from-gradient",
    "bptt-uses-current-state",
    "bptt-backward-weights-transposed",
    "bptt-missing-future-term",
    "ce-in-bits",
    "clip-always-rescales",
    # issue 33: conventions of the implementations students copy (torch.nn.RNN, min-char-rnn)
    "rnn-bias-counted-twice",
    "clip-by-value",
    "ce-in-log10",  # KenLM's log10 scores
    "bptt-tanh-derivative-of-state",
)
# ids only the written derivation a2.w_bptt_factor names (its broken steps), no code mutant
A2_WRITTEN_IDS = (
    "bptt-tanh-prime-one-minus-tanh",
    "bptt-tanh-prime-sigmoid-form",
    "bptt-factor-missing-recurrent-weight",
)
SOLUTION_SOURCE = (SOLUTION / "rnn.py").read_text()


ANSWER_KEY = _load("_a2_answer_key", SOLUTION / "answer_key.py")
VARIANT = _load("_a2_variant", HANDOUT / "variant.py")


_submit = functools.partial(write_submission, "rnn.py")


_only = functools.partial(only, A2)


_code_questions = functools.partial(code_questions, A2)


# ------------------------------------------------------------------ whole submissions


def test_a2_has_100_points_and_every_graded_function():
    assert A2.total_points == 100
    assert {q.function for q in _code_questions()} == {
        "rnn_forward",
        "bptt_final_state",
        "bptt_sequence_ce",
        "clip_by_global_norm",
        "sequence_perplexity",
    }
    assert {q.function: q.forbidden for q in _code_questions() if q.forbidden} == {
        "bptt_final_state": suite.NO_AUTOGRAD,
        "bptt_sequence_ce": suite.NO_AUTOGRAD,
        "clip_by_global_norm": ("torch.nn.utils.clip_grad_norm_",),
    }


def test_a2_two_students_get_different_numbers_and_full_marks(tmp_path):
    ids = ("alice@example.edu", "s1234567")
    seeds = [VARIANT.seed_for(s) for s in ids]
    assert seeds[0] != seeds[1]
    for q in _code_questions():  # different hidden inputs, same visible microscope
        a, b = q.cases(seeds[0]), q.cases(seeds[1])
        assert repr(a[0].args) == repr(b[0].args)
        assert repr(a[1].args) != repr(b[1].args)
    assert VARIANT.numbers(ids[0]) != VARIANT.numbers(ids[1])
    for i, sid in enumerate(ids):
        folder = _submit(tmp_path, SOLUTION_SOURCE, ANSWER_KEY.to_toml(sid), name=f"s{i}")
        report = grade_submission(folder, A2, student=sid, limits=FAST)
        assert report.score == 100, [
            (q.question_id, q.feedback) for q in report.questions if q.score < q.max_score
        ]
    # one student's answers are not another's
    folder = _submit(tmp_path, SOLUTION_SOURCE, ANSWER_KEY.to_toml(ids[0]), name="swap")
    swapped = grade_submission(
        folder, _only("a2.w_g_matrix", "a2.w_perplexity"), student=ids[1], limits=FAST
    )
    assert swapped.score < swapped.max_score


TORCH_FLOAT32 = """
import torch

def _t(a):
    return torch.as_tensor(a, dtype=torch.float32)

def rnn_forward(X, W_x, W_h, b_h, h0=None):
    X, W_x, W_h, b_h = _t(X), _t(W_x), _t(W_h), _t(b_h)
    h = torch.zeros(W_h.shape[0]) if h0 is None else _t(h0)
    zs, hs = [], []
    for x in X:
        z = W_x @ x + W_h @ h + b_h          # column form, same numbers as x W_x^T + h W_h^T
        h = torch.tanh(z)
        zs.append(z)
        hs.append(h)
    return torch.stack(zs), torch.stack(hs)

def _bptt(X, W_h, Hs, h0, direct):
    X, W_h = _t(X), _t(W_h)
    prev = torch.cat([(torch.zeros(1, Hs.shape[1]) if h0 is None else _t(h0)[None]), Hs[:-1]])
    gz_rows = [None] * len(Hs)
    carry = torch.zeros(Hs.shape[1])
    for t in reversed(range(len(Hs))):
        gz_rows[t] = (direct[t] + carry) * (1 - Hs[t] ** 2)
        carry = gz_rows[t] @ W_h
    gz = torch.stack(gz_rows)
    return {"W_x": torch.einsum("ti,tj->ij", gz, X), "W_h": torch.einsum("ti,tj->ij", gz, prev),
            "b_h": gz.sum(0)}

def bptt_final_state(X, W_x, W_h, b_h, y, h0=None):
    _, Hs = rnn_forward(X, W_x, W_h, b_h, h0)
    direct = torch.zeros_like(Hs)
    direct[-1] = Hs[-1] - _t(y)
    return _bptt(X, W_h, Hs, h0, direct)

def bptt_sequence_ce(X, W_x, W_h, b_h, W_o, b_o, targets, h0=None):
    _, Hs = rnn_forward(X, W_x, W_h, b_h, h0)
    logits = Hs @ _t(W_o).T + _t(b_o)
    targets = torch.as_tensor(targets, dtype=torch.long)
    T = len(targets)
    loss = torch.nn.functional.cross_entropy(logits, targets)
    g_a = (torch.softmax(logits, dim=-1) - torch.nn.functional.one_hot(targets, logits.shape[1])) / T
    grads = _bptt(X, W_h, Hs, h0, g_a @ _t(W_o))
    grads["W_o"] = g_a.T @ Hs
    grads["b_o"] = g_a.sum(0)
    return loss.item(), grads

def clip_by_global_norm(grads, max_norm):
    total = torch.sqrt(sum((_t(g) ** 2).sum() for g in grads.values()))
    factor = min(1.0, max_norm / total.item()) if total.item() > 0 else 1.0
    return {k: _t(g) * factor for k, g in grads.items()}

def sequence_perplexity(logits, targets):
    ce = torch.nn.functional.cross_entropy(_t(logits), torch.as_tensor(targets)).item()
    return ce, torch.exp(torch.tensor(ce)).item()
"""


def test_a2_torch_float32_column_style_gets_full_marks(tmp_path):
    code_only = dataclasses.replace(A2, questions=tuple(_code_questions()))
    report = grade_submission(_submit(tmp_path, TORCH_FLOAT32), code_only, limits=FAST)
    assert report.score == 70, [
        (q.question_id, q.feedback) for q in report.questions if q.score < q.max_score
    ]


# ------------------------------------------------------------------ student-style mistakes


def _edit(source: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    return source


_LAST_USE_ONLY = """
def bptt_final_state(X, W_x, W_h, b_h, y, h0=None):
    X = np.asarray(X, dtype=np.float64)
    Z, Hs = rnn_forward(X, W_x, W_h, b_h, h0)
    g_z = (Hs[-1] - y) * (1.0 - Hs[-1] ** 2)  # the loss is at the last step only
    return {"W_x": np.outer(g_z, X[-1]), "W_h": np.outer(g_z, Hs[-2]), "b_h": g_z}
"""

_CLIP_PER_TENSOR = """
def clip_by_global_norm(grads, max_norm):
    out = {}
    for k, g in grads.items():
        n = np.linalg.norm(g)
        out[k] = g * (max_norm / n) if n > max_norm else g
    return out
"""

MISTAKES = {
    "rnn-weights-transposed": (
        "a2.rnn_forward",
        _edit(
            SOLUTION_SOURCE,
            ("Z[t] = X[t] @ W_x.T + h @ W_h.T + b_h", "Z[t] = X[t] @ W_x.T + h @ W_h + b_h"),
        ),
    ),
    "bptt-last-use-only": ("a2.bptt_final_state", SOLUTION_SOURCE + _LAST_USE_ONLY),
    "bptt-missing-tanh-derivative": (
        "a2.bptt_final_state",
        _edit(SOLUTION_SOURCE, ("g_z[t] = g_h * (1.0 - Hs[t] ** 2)", "g_z[t] = g_h")),
    ),
    "bptt-derivative-of-preactivation": (
        "a2.bptt_sequence_ce",
        _edit(
            SOLUTION_SOURCE,
            ("def _backward(X, W_h, Hs, h0, direct):", "def _backward(X, W_h, Hs, h0, direct, Z):"),
            ("g_z[t] = g_h * (1.0 - Hs[t] ** 2)", "g_z[t] = g_h * (1.0 - Z[t] ** 2)"),
            (
                "return _backward(X, W_h, Hs, h0, direct)",
                "return _backward(X, W_h, Hs, h0, direct, Z)",
            ),
            ("_backward(X, W_h, Hs, h0, g_a @ W_o)", "_backward(X, W_h, Hs, h0, g_a @ W_o, Z)"),
        ),
    ),
    "bptt-tanh-derivative-of-state": (
        "a2.bptt_final_state",
        _edit(
            SOLUTION_SOURCE,
            ("g_z[t] = g_h * (1.0 - Hs[t] ** 2)", "g_z[t] = g_h * (1.0 - np.tanh(Hs[t]) ** 2)"),
        ),
    ),
    "bptt-outer-product-transposed": (
        "a2.bptt_final_state",
        _edit(
            SOLUTION_SOURCE,
            ('"W_x": g_z.T @ X, "W_h": g_z.T @ H_prev', '"W_x": X.T @ g_z, "W_h": H_prev.T @ g_z'),
        ),
    ),
    "ce-sum-not-mean": (
        "a2.bptt_sequence_ce",
        _edit(
            SOLUTION_SOURCE,
            (
                "loss = float(-logp[rows, targets].mean())",
                "loss = float(-logp[rows, targets].sum())",
            ),
            ("    g_a /= T  # divide by T once, at the loss derivative\n", ""),
        ),
    ),
    "ce-double-mean": (
        "a2.bptt_sequence_ce",
        _edit(
            SOLUTION_SOURCE,
            ("    return loss, grads\n", "    return loss, {k: v / T for k, v in grads.items()}\n"),
        ),
    ),
    "bptt-missing-direct-term": (
        "a2.bptt_sequence_ce",
        _edit(
            SOLUTION_SOURCE,
            (
                "grads = _backward(X, W_h, Hs, h0, g_a @ W_o)",
                "direct = np.zeros_like(Hs)\n    direct[-1] = g_a[-1] @ W_o\n"
                "    grads = _backward(X, W_h, Hs, h0, direct)",
            ),
        ),
    ),
    "clip-per-tensor": ("a2.clip_by_global_norm", SOLUTION_SOURCE + _CLIP_PER_TENSOR),
    "perplexity-base-2": (
        "a2.sequence_perplexity",
        _edit(SOLUTION_SOURCE, ("return ce, float(np.exp(ce))", "return ce, float(2.0 ** ce)")),
    ),
    "rnn-h0-ignored": (
        "a2.rnn_forward",
        _edit(
            SOLUTION_SOURCE,
            (
                "    h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)  # (H,)\n",
                "    h = np.zeros(H)  # h_{-1}\n",
            ),
        ),
    ),
    "bptt-h0-missing-from-gradient": (
        "a2.bptt_final_state",
        _edit(
            SOLUTION_SOURCE,
            (
                "H_prev = np.vstack([np.zeros((1, H)) if h0 is None else np.asarray(h0, dtype=np.float64)[None], Hs[:-1]])",
                "H_prev = np.vstack([np.zeros((1, H)), Hs[:-1]])",
            ),
        ),
    ),
    "bptt-uses-current-state": (
        "a2.bptt_sequence_ce",
        _edit(SOLUTION_SOURCE, ('"W_h": g_z.T @ H_prev', '"W_h": g_z.T @ Hs')),
    ),
    "bptt-backward-weights-transposed": (
        "a2.bptt_final_state",
        _edit(SOLUTION_SOURCE, ("future = g_z[t] @ W_h", "future = g_z[t] @ W_h.T")),
    ),
    "bptt-missing-future-term": (
        "a2.bptt_sequence_ce",
        _edit(
            SOLUTION_SOURCE,
            ("future = g_z[t] @ W_h", "future = np.zeros(H)  # each loss stays at its step"),
        ),
    ),
    "ce-in-bits": (
        "a2.sequence_perplexity",
        _edit(
            SOLUTION_SOURCE,
            (
                "ce = float(-logp[np.arange(len(targets)), targets].mean())",
                "ce = float(-logp[np.arange(len(targets)), targets].mean() / np.log(2))",
            ),
            ("return ce, float(np.exp(ce))", "return ce, float(2.0 ** ce)"),
        ),
    ),
    "clip-always-rescales": (
        "a2.clip_by_global_norm",
        _edit(
            SOLUTION_SOURCE,
            ("scale = 1.0 if norm <= max_norm else max_norm / norm", "scale = max_norm / norm"),
        ),
    ),
    "rnn-bias-counted-twice": (
        "a2.rnn_forward",
        _edit(
            SOLUTION_SOURCE,
            (
                "Z[t] = X[t] @ W_x.T + h @ W_h.T + b_h",
                "Z[t] = X[t] @ W_x.T + b_h + h @ W_h.T + b_h",
            ),
        ),
    ),
    "ce-in-log10": (
        "a2.sequence_perplexity",
        _edit(
            SOLUTION_SOURCE,
            (
                "ce = float(-logp[np.arange(len(targets)), targets].mean())",
                "ce = float(-logp[np.arange(len(targets)), targets].mean() / np.log(10))",
            ),
            ("return ce, float(np.exp(ce))", "return ce, float(10.0 ** ce)"),
        ),
    ),
    "clip-by-value": (
        "a2.clip_by_global_norm",
        _edit(
            SOLUTION_SOURCE,
            (
                "return {k: scale * g for k, g in arrays.items()}",
                "return {k: np.clip(g, -max_norm, max_norm) for k, g in arrays.items()}",
            ),
        ),
    ),
}
# the forward-pass bug inside the BPTT questions: named as the root cause
ROOT_CAUSE = {
    f"rnn-weights-transposed@{q}": (q, MISTAKES["rnn-weights-transposed"][1])
    for q in ("a2.bptt_final_state", "a2.bptt_sequence_ce")
}
SUMMED_PERPLEXITY = {
    "ce-sum-not-mean@a2.sequence_perplexity": (
        "a2.sequence_perplexity",
        _edit(
            SOLUTION_SOURCE,
            (
                "ce = float(-logp[np.arange(len(targets)), targets].mean())",
                "ce = float(-logp[np.arange(len(targets)), targets].sum())",
            ),
        ),
    )
}


def test_a2_every_catalog_id_has_a_student_style_mistake():
    assert set(MISTAKES) == set(A2_IDS)
    for mid in A2_IDS:
        entry = catalog.get(mid)
        assert entry.explanation and entry.section and entry.credit == 0


@pytest.mark.parametrize("label", [*MISTAKES, *ROOT_CAUSE, *SUMMED_PERPLEXITY])
def test_a2_mistake_is_named(tmp_path, label):
    qid, source = {**MISTAKES, **ROOT_CAUSE, **SUMMED_PERPLEXITY}[label]
    mid = label.split("@")[0]
    report = grade_submission(_submit(tmp_path, source), _only(qid), limits=FAST)
    (result,) = report.questions
    assert result.misconceptions == [mid], result.feedback
    assert result.score < result.max_score
    assert catalog.get(mid).title in result.feedback


# ------------------------------------------------------------------ mutants on the hidden cases


def _outputs(q: CodeQuestion, case, option: int = 0) -> dict[str, object]:
    """The reference's and every mutant's output; of a mutant with several natural forms (AnyOf),
    the form numbered `option` (the last one when it has fewer)."""
    out = {"reference": run_trusted(q.reference, case)}
    for mid, m in q.mutants.items():
        value = run_trusted(m, case)
        if isinstance(value, AnyOf):
            value = value.options[min(option, len(value.options) - 1)]
        out[mid] = concrete(value)
    return out


def test_a2_mutants_pairwise_separated_on_hidden_cases():
    for q in _code_questions():
        hidden = [c for c in q.cases(0) if not c.visible]
        assert len(hidden) >= 3
        for option in range(4):  # every natural form of a mutant separates from the others
            outs = [_outputs(q, c, option) for c in hidden]
            for a, b in itertools.combinations(["reference", *q.mutants], 2):
                assert any(compare(o[a], o[b], q.tolerance, names=q.output_names) for o in outs), (
                    q.id,
                    a,
                    b,
                )


def test_a2_every_catalog_id_reachable_from_a_hidden_case():
    reached = set()
    for q in _code_questions():
        for case in q.cases(0):
            if case.visible:
                continue
            outs = _outputs(q, case)
            reached |= {
                mid
                for mid in q.mutants
                if compare(outs[mid], outs["reference"], q.tolerance, names=q.output_names)
            }
    assert reached == set(A2_IDS)
    written = {
        wf.misconception
        for q in A2.questions
        if isinstance(q, WrittenQuestion) and q.wrong_forms
        for wf in q.wrong_forms(VARIANT.numbers(None))
    }
    assert written <= set(A2_IDS) | set(A2_WRITTEN_IDS)


def test_a2_hidden_cases_have_non_square_input_weights_and_large_preactivations():
    from reference.rnn import rnn_forward

    for q in _code_questions()[:3]:
        # the domain's edges (one step, one unit: tests/test_a2_domain_edges.py) aside
        for case in [c for c in q.cases(0)[1:] if "(one step)" not in c.name]:
            X, W_x, W_h = case.args[:3]
            assert W_x.shape[0] != W_x.shape[1] and W_h.shape[0] == W_h.shape[1] and len(X) >= 3
            Z, _ = rnn_forward(*case.args[:4], case.kwargs.get("h0"))
            assert np.max(np.abs(Z)) > 1.0


# ------------------------------------------------------------------ written questions


def test_a2_written_wrong_answers_are_named(tmp_path):
    v = VARIANT.numbers(None)
    g = suite.g_matrix(v)
    wrong = f"""
tanh_derivative = "1 - z^2"
bptt_factor = "dh_t/dh_prev = d/dh_prev h_t = 1 - h_t^2"
bptt_recurrence = "B"
g_matrix = {np.array(g).T.tolist()}
g0_zero = "D"
perplexity = {2.0 ** v["ce_nats"]!r}
teacher_forcing = "A"
clipped_b_h = {v["clip"]["g_b_h"]}
path_factors = [0.5, 0.5]
"""
    written = dataclasses.replace(
        A2, questions=tuple(q for q in A2.questions if isinstance(q, WrittenQuestion))
    )
    report = grade_submission(_submit(tmp_path, SOLUTION_SOURCE, wrong), written, limits=FAST)
    named = {q.question_id: q.misconceptions for q in report.questions}
    assert report.score == 0
    assert named == {
        "a2.w_tanh_derivative": ["bptt-derivative-of-preactivation"],
        "a2.w_bptt_factor": ["bptt-factor-missing-recurrent-weight"],
        "a2.w_bptt_recurrence": ["bptt-derivative-of-preactivation"],
        "a2.w_g_matrix": ["bptt-outer-product-transposed"],
        "a2.w_g0_zero": ["bptt-last-use-only"],
        "a2.w_perplexity": ["perplexity-base-2"],
        "a2.w_teacher_forcing": [],
        "a2.w_clipped_b_h": ["clip-per-tensor"],
        "a2.w_path_factors": [],
    }


def test_a2_written_expected_values_agree_with_torch():
    import torch

    v = VARIANT.numbers("alice@example.edu")
    r = v["rnn"]
    X, W_x, W_h, b_h, y = (
        torch.tensor(r[k], dtype=torch.float64) for k in ("X", "W_x", "W_h", "b_h", "y")
    )
    # G_1 by autograd: give the use of W_h at t = 1 its own copy of the matrix
    copies = [W_h.clone().requires_grad_(True) for _ in range(3)]
    h = torch.zeros(2, dtype=torch.float64)
    for t in range(3):
        h = torch.tanh(X[t] @ W_x.T + h @ copies[t].T + b_h)
    (0.5 * ((h - y) ** 2).sum()).backward()
    np.testing.assert_allclose(
        suite.g_matrix(v), copies[r["t"]].grad.numpy(), rtol=1e-10, atol=1e-12
    )
    # clipping: torch's own clip_grad_norm_ on the same two arrays
    params = [torch.zeros(2, 2, requires_grad=True), torch.zeros(2, requires_grad=True)]
    params[0].grad = torch.tensor(v["clip"]["g_W_h"], dtype=torch.float64).float()
    params[1].grad = torch.tensor(v["clip"]["g_b_h"], dtype=torch.float64).float()
    torch.nn.utils.clip_grad_norm_(params, v["clip"]["max_norm"])
    np.testing.assert_allclose(suite.clipped_bias(v), params[1].grad.numpy(), rtol=1e-5)
    assert suite.perplexity_of(v) == pytest.approx(math.exp(v["ce_nats"]), rel=1e-12)
    n = v["n"]
    assert suite.path_factors(v) == pytest.approx([v["r_small"] ** n, v["r_large"] ** n], rel=1e-10)


def test_a2_every_variant_separates_the_written_wrong_forms():
    """Each pooled microscope (and its unit swap), and many ids for the other numbers."""

    def far(a, b, tol) -> bool:
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        return a.shape != b.shape or bool(
            np.max(np.abs(a - b) / (tol.atol + tol.rtol * np.abs(b))) > 10
        )

    gq, cq, pq = (A2.question(q) for q in ("a2.w_g_matrix", "a2.w_clipped_b_h", "a2.w_perplexity"))
    for seed in range(2 * len(VARIANT._POOL)):
        X, W_x, W_h, b_h, y = VARIANT._rnn_numbers(seed)
        v = {
            "rnn": {
                "X": X.tolist(),
                "W_x": W_x.tolist(),
                "W_h": W_h.tolist(),
                "b_h": b_h.tolist(),
                "y": y.tolist(),
                "t": 1,
            }
        }
        want = gq.expected(v)
        for wf in gq.wrong_forms(v):
            assert far(wf.answer, want, gq.tolerance), (seed, wf.misconception)
    for i in range(300):
        v = VARIANT.numbers(f"student-{i}")
        for q in (cq, pq):
            for wf in q.wrong_forms(v):
                assert far(wf.answer, q.expected(v), q.tolerance), (i, q.id)


def test_a2_variant_tool_prints_the_students_numbers():
    out = subprocess.run(
        [sys.executable, str(HANDOUT / "variant.py"), "alice@example.edu"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    v = VARIANT.numbers("alice@example.edu")
    assert (
        str(v["rnn"]["W_h"]) in out
        and str(v["ce_nats"]) in out
        and str(v["clip"]["max_norm"]) in out
    )
    assert VARIANT.seed_for(None) == VARIANT.seed_for("  ") == 0
    assert VARIANT.seed_for(" Alice@Example.edu ") == VARIANT.seed_for("alice@example.edu")


# ------------------------------------------------------------------ the public tests
