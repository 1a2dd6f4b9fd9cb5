"""Assignment 1 (word vectors): the solution scores full, the stub zero, every mistake is named.

Expected values come from the notes (§1's numeric anchor, P = (0.67, 0.09, 0.24)) and from
torch autograd, never from the code under test.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools

import numpy as np
import pytest
from conftest import ROOT, answer_key, write_submission

from grader import catalog, sandbox
from grader.course import variants
from grader.engine.checks import compare
from grader.engine.grade import grade_submission
from grader.mutants import concrete
from grader.questions import CodeQuestion, WrittenQuestion
from grader.suites.a1_word_vectors import ASSIGNMENT

HANDOUT = ROOT / "assignments" / "a1_word_vectors"
SOLUTION = ROOT / "solutions" / "a1_word_vectors"
SOLUTION_SRC = (SOLUTION / "word_vectors.py").read_text()
FAST = sandbox.Limits(call_seconds=5.0, submission_seconds=60.0)
CODE_QS = tuple(q for q in ASSIGNMENT.questions if isinstance(q, CodeQuestion))
WRITTEN_QS = tuple(q for q in ASSIGNMENT.questions if isinstance(q, WrittenQuestion))
A1_IDS = {
    "softmax-unstable",
    "sigmoid-unstable",
    "softmax-wrong-axis",
    "skipgram-grad-sign",
    "skipgram-grad-no-expectation",
    "skipgram-gradU-no-onehot",
    "sgns-negatives-wrong-sign",
    "sgns-negatives-deduplicated",
    "noise-no-power",
    "glove-weight-uncapped",
    "glove-zero-counts-included",
    "analogy-inputs-not-excluded",
    # count-based vectors
    "cooccurrence-counts-self",
    "cooccurrence-one-sided-window",
    "svd-missing-singular-values",
    "svd-uses-V",
    "svd-not-truncated",
    # issue 17: row o of grad_U overwritten when o is drawn as a negative too
    "sgns-outside-row-overwritten",
    # issue 33: conventions of the implementations students copy (scipy, word2vec.c, glove.c,
    # PyTorch GloVe code, gensim, GloVe's cooccur.c)
    "softmax-over-all-entries",
    "sgns-true-word-skipped",
    "glove-loss-halved",
    "glove-loss-averaged",
    "analogy-inputs-normalized",
    "cooccurrence-distance-weighted",
    "svd-sqrt-singular-values",
}


_submit = functools.partial(write_submission, "word_vectors.py")


def _only(*questions):
    return dataclasses.replace(ASSIGNMENT, questions=tuple(questions))


def _feedback(report) -> list[str]:
    return [
        f"{q.question_id}: {q.score}/{q.max_score} {q.feedback}"
        for q in report.questions
        if q.score < q.max_score
    ]


# ---------------------------------------------------------------- the assignment as data


def test_a1_points_and_catalog():
    assert ASSIGNMENT.total_points == 100
    assert sum(q.points for q in CODE_QS) == 70
    named = {mid for q in CODE_QS for mid in q.mutants}
    assert named == A1_IDS
    for mid in A1_IDS:
        m = catalog.get(mid)
        assert m.explanation and m.section and m.credit == 0.0


def _finite_difference_anchor(n) -> np.ndarray:
    """d/dv_c of -log P(a|c) by central differences (P computed directly from its definition)."""
    U = np.array([n["u_a"], n["u_b"], n["u_c"]], dtype=np.float64)

    def loss(v):
        s = U @ v
        return -np.log(np.exp(s[0]) / np.exp(s).sum())

    v0, eps = np.array(n["v_c"], dtype=np.float64), 1e-6
    return np.array([(loss(v0 + eps * e) - loss(v0 - eps * e)) / (2 * eps) for e in np.eye(2)])


def test_a1_notes_anchor_and_finite_differences_agree_with_the_written_keys():
    q_anchor = next(q for q in WRITTEN_QS if q.key == "skipgram_anchor_grad")
    q_noise = next(q for q in WRITTEN_QS if q.key == "noise_probability")
    default = variants.numbers(ASSIGNMENT.id, None)
    # notes §1: d log P(a|c)/d v_c = (0.42, -0.09), so the loss gradient is (-0.42, 0.09)
    np.testing.assert_allclose(q_anchor.expected(default), [-0.42, 0.09], atol=5e-3)
    assert q_noise.expected(default) == pytest.approx(1 / 36)  # 1 / (27 + 8 + 1)
    for sid in ("ada", "grace"):
        n = variants.numbers(ASSIGNMENT.id, sid)
        np.testing.assert_allclose(q_anchor.expected(n), _finite_difference_anchor(n), atol=1e-6)


# ---------------------------------------------------------------- whole submissions


def test_a1_two_students_get_their_own_cases_and_full_marks(tmp_path):
    key = answer_key("a1_word_vectors")
    for q in CODE_QS:
        a = [c for c in q.cases(variants.seed_for(ASSIGNMENT.id, "ada")) if not c.visible]
        b = [c for c in q.cases(variants.seed_for(ASSIGNMENT.id, "grace")) if not c.visible]
        assert any(
            compare(
                q.reference(*x.args, **x.kwargs),
                q.reference(*y.args, **y.kwargs),
                names=q.output_names,
            )
            for x, y in zip(a, b)
        ), q.id
    for sid in ("ada", "grace"):
        folder = _submit(tmp_path, SOLUTION_SRC, key.answers(sid), name=sid)
        report = grade_submission(folder, ASSIGNMENT, student=sid, limits=FAST)
        assert report.score == 100, _feedback(report)
    assert variants.numbers(ASSIGNMENT.id, "ada") != variants.numbers(ASSIGNMENT.id, "grace")


TORCH_FLOAT32 = """
import torch

def _t(x):
    return torch.as_tensor(x, dtype=torch.float32)

def softmax(x, axis=-1):
    return torch.softmax(_t(x), dim=axis)

def naive_softmax_loss_and_gradient(v_c, o, U):
    v = _t(v_c).requires_grad_(True)
    u = _t(U).requires_grad_(True)
    loss = -torch.log_softmax(u @ v, dim=0)[o]
    loss.backward()
    return loss.item(), v.grad, u.grad

def neg_sampling_loss_and_gradient(v_c, o, U, neg_indices):
    v = _t(v_c).requires_grad_(True)
    u = _t(U).requires_grad_(True)
    neg = torch.as_tensor(neg_indices, dtype=torch.long)
    loss = -torch.nn.functional.logsigmoid(u[o] @ v) - torch.nn.functional.logsigmoid(-(u[neg] @ v)).sum()
    loss.backward()
    return loss.item(), v.grad, u.grad

def noise_distribution(counts, power=0.75):
    c = _t(counts) ** power
    return c / c.sum()

def glove_weight(X, x_max=100.0, alpha=0.75):
    return torch.clamp((_t(X) / x_max) ** alpha, max=1.0)

def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    X = _t(X)
    mask = X > 0
    pred = _t(W) @ _t(W_tilde).T + _t(b)[:, None] + _t(b_tilde)[None, :]
    r = pred[mask] - torch.log(X[mask])
    return (glove_weight(X[mask], x_max, alpha) * r ** 2).sum()

def analogy(E, vocab, a, b, c):
    E = _t(E)
    i = {w: k for k, w in enumerate(vocab)}
    target = E[i[b]] - E[i[a]] + E[i[c]]
    sims = torch.nn.functional.cosine_similarity(E, target[None, :], dim=1)
    best, best_sim = None, -2.0
    for k, w in enumerate(vocab):
        if w not in (a, b, c) and sims[k] > best_sim:
            best, best_sim = w, float(sims[k])
    return best

def cooccurrence_matrix(corpus, vocab, window=1):
    i = {w: k for k, w in enumerate(vocab)}
    X = torch.zeros(len(vocab), len(vocab), dtype=torch.float32)
    for sentence in corpus:
        ids = torch.tensor([i[w] for w in sentence], dtype=torch.long)
        for k in range(1, window + 1):
            X.index_put_((ids[:-k], ids[k:]), torch.ones(max(len(ids) - k, 0)), accumulate=True)
            X.index_put_((ids[k:], ids[:-k]), torch.ones(max(len(ids) - k, 0)), accumulate=True)
    return X

def svd_embeddings(X, k):
    U, S, Vh = torch.linalg.svd(_t(X), full_matrices=False)
    return -U[:, :k] * S[:k]  # the opposite signs of numpy's: either is right
"""


def test_a1_torch_float32_style_gets_full_marks(tmp_path):
    report = grade_submission(_submit(tmp_path, TORCH_FLOAT32), _only(*CODE_QS), limits=FAST)
    assert report.score == 70, _feedback(report)


# ---------------------------------------------------------------- every mistake, as a student writes it


# Each mistake as a student writes it: edits of the solution's source, and the question that must name it.
UNSTABLE_SOFTMAX = ("z = x - np.max(x, axis=axis, keepdims=True)", "z = x")
UNCAPPED = ("return np.minimum((X / x_max) ** alpha, 1.0)", "return (X / x_max) ** alpha")
MISTAKES: dict[str, tuple[str, list[tuple[str, str]]]] = {
    "softmax-unstable": ("a1.softmax", [UNSTABLE_SOFTMAX]),
    "softmax-wrong-axis": (
        "a1.softmax",
        [
            ("np.max(x, axis=axis, keepdims=True)", "np.max(x, axis=0, keepdims=True)"),
            ("np.sum(e, axis=axis, keepdims=True)", "np.sum(e, axis=0, keepdims=True)"),
        ],
    ),
    "softmax-unstable/skipgram": (
        "a1.naive_softmax",
        [
            UNSTABLE_SOFTMAX,
            (
                "loss = float(-(scores[o] - m - np.log(np.sum(np.exp(scores - m)))))",
                "loss = float(-np.log(y_hat[o]))",
            ),
        ],
    ),
    "skipgram-grad-sign": (
        "a1.naive_softmax",
        [("delta[o] -= 1.0", "delta[o] -= 1.0\n    delta = -delta")],
    ),
    "skipgram-grad-no-expectation": (
        "a1.naive_softmax",
        [("delta = y_hat.copy()  # (V,) ŷ - y", "delta = np.zeros_like(y_hat)")],
    ),
    "skipgram-gradU-no-onehot": (
        "a1.naive_softmax",
        [("grad_U = np.outer(delta, v_c)  # (V, d)", "grad_U = np.outer(y_hat, v_c)")],
    ),
    "sigmoid-unstable": (
        "a1.neg_sampling",
        [
            (
                "    e = np.exp(-np.abs(x))\n    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))",
                "    return np.exp(x) / (1.0 + np.exp(x))",
            ),
            (
                "loss = float(-_log_sigmoid(s_o) - np.sum(_log_sigmoid(-s_k)))",
                "loss = float(-np.log(_sigmoid(s_o)) - np.sum(np.log(_sigmoid(-s_k))))",
            ),
        ],
    ),
    "sgns-negatives-wrong-sign": (
        "a1.neg_sampling",
        [
            ("np.sum(_log_sigmoid(-s_k))", "np.sum(_log_sigmoid(s_k))"),
            ("d_k = _sigmoid(s_k)  # (K,)", "d_k = _sigmoid(s_k) - 1.0"),
        ],
    ),
    "sgns-negatives-deduplicated": (
        "a1.neg_sampling",
        [("np.add.at(grad_U, neg, np.outer(d_k, v_c))", "grad_U[neg] += np.outer(d_k, v_c)")],
    ),
    "sgns-outside-row-overwritten": (
        "a1.neg_sampling",
        [
            (
                "    grad_U[o] += d_o * v_c\n    np.add.at(grad_U, neg, np.outer(d_k, v_c))  # unbuffered: repeated k accumulate",
                "    np.add.at(grad_U, neg, np.outer(d_k, v_c))\n    grad_U[o] = d_o * v_c",
            )
        ],
    ),
    "noise-no-power": (
        "a1.noise",
        [
            (
                "c = np.asarray(counts, dtype=np.float64) ** power",
                "c = np.asarray(counts, dtype=np.float64)",
            )
        ],
    ),
    "glove-weight-uncapped": ("a1.glove_weight", [UNCAPPED]),
    "glove-weight-uncapped/loss": ("a1.glove_loss", [UNCAPPED]),
    "glove-zero-counts-included": (
        "a1.glove_loss",
        [
            (
                "    r = pred[pos] - np.log(X[pos])\n    return float(np.sum(glove_weight(X[pos], x_max, alpha) * r**2))",
                "    r = pred - np.log(X)\n    return float(np.sum(glove_weight(X, x_max, alpha) * r**2))",
            )
        ],
    ),
    "analogy-inputs-not-excluded": (
        "a1.analogy",
        [("    for w in (a, b, c):\n        sims[idx[w]] = -np.inf\n", "")],
    ),
    "cooccurrence-counts-self": (
        "a1.cooccurrence",
        [
            (
                "                if s != t:\n                    X[i, ids[s]] += 1",
                "                X[i, ids[s]] += 1",
            )
        ],
    ),
    "cooccurrence-one-sided-window": (
        "a1.cooccurrence",
        [
            (
                "lo, hi = max(0, t - window), min(len(ids), t + window + 1)",
                "lo, hi = t + 1, min(len(ids), t + window + 1)",
            )
        ],
    ),
    "svd-missing-singular-values": (
        "a1.svd_embeddings",
        [("return U[:, :k] * S[:k]  # (V, k)", "return U[:, :k]")],
    ),
    "svd-uses-V": (
        "a1.svd_embeddings",
        [
            ("U, S, _ = np.linalg.svd(", "_, S, Vt = np.linalg.svd("),
            ("return U[:, :k] * S[:k]  # (V, k)", "return Vt[:k].T * S[:k]"),
        ],
    ),
    "svd-not-truncated": (
        "a1.svd_embeddings",
        [("return U[:, :k] * S[:k]  # (V, k)", "return U * S")],
    ),
    "softmax-over-all-entries": (
        "a1.softmax",
        [
            ("np.max(x, axis=axis, keepdims=True)", "np.max(x)"),
            ("np.sum(e, axis=axis, keepdims=True)", "np.sum(e)"),
        ],
    ),
    "sgns-true-word-skipped": (
        "a1.neg_sampling",
        [
            (
                "neg = np.asarray(neg_indices, dtype=np.int64)  # (K,)",
                "neg = np.asarray(neg_indices, dtype=np.int64)  # (K,)\n    neg = neg[neg != o]",
            )
        ],
    ),
    "glove-loss-halved": (
        "a1.glove_loss",
        [("return float(np.sum(glove_weight(", "return float(0.5 * np.sum(glove_weight(")],
    ),
    "glove-loss-averaged": (
        "a1.glove_loss",
        [("return float(np.sum(glove_weight(", "return float(np.mean(glove_weight(")],
    ),
    "analogy-inputs-normalized": (
        "a1.analogy",
        [
            (
                "target = E[idx[b]] - E[idx[a]] + E[idx[c]]  # (d,)",
                "unit = E / np.linalg.norm(E, axis=1, keepdims=True)\n"
                "    target = unit[idx[b]] - unit[idx[a]] + unit[idx[c]]  # (d,)",
            )
        ],
    ),
    "svd-sqrt-singular-values": (
        "a1.svd_embeddings",
        [("return U[:, :k] * S[:k]  # (V, k)", "return U[:, :k] * np.sqrt(S[:k])")],
    ),
    "cooccurrence-distance-weighted": (
        "a1.cooccurrence",
        [("X[i, ids[s]] += 1\n", "X[i, ids[s]] += 1 / abs(s - t)\n")],
    ),
}
# To keep CI fast, mistakes in functions that do not call each other share one submission;
# each question is still diagnosed on its own.
GROUPS = (
    (
        "softmax-unstable",
        "sgns-negatives-wrong-sign",
        "noise-no-power",
        "glove-weight-uncapped",
        "analogy-inputs-not-excluded",
    ),
    ("softmax-wrong-axis", "skipgram-grad-sign", "sigmoid-unstable", "glove-zero-counts-included"),
    ("softmax-unstable/skipgram", "sgns-negatives-deduplicated", "glove-weight-uncapped/loss"),
    ("skipgram-grad-no-expectation", "svd-not-truncated", "sgns-outside-row-overwritten"),
    ("skipgram-gradU-no-onehot", "cooccurrence-counts-self", "svd-missing-singular-values"),
    ("cooccurrence-one-sided-window", "svd-uses-V"),
    (
        "softmax-over-all-entries",
        "sgns-true-word-skipped",
        "glove-loss-halved",
        "svd-sqrt-singular-values",
    ),
    ("analogy-inputs-normalized", "cooccurrence-distance-weighted", "glove-loss-averaged"),
)


def _student_module(labels) -> str:
    src = SOLUTION_SRC
    for label in labels:
        for old, new in MISTAKES[label][1]:
            assert old in src, (label, old)
            src = src.replace(old, new)
    return src


@pytest.mark.parametrize("labels", GROUPS, ids=lambda g: "+".join(g))
def test_a1_each_mistake_is_named(tmp_path, labels):
    questions = [ASSIGNMENT.question(MISTAKES[label][0]) for label in labels]
    assert len({q.id for q in questions}) == len(questions)
    report = grade_submission(
        _submit(tmp_path, _student_module(labels)), _only(*questions), limits=FAST
    )
    for label, q, result in zip(labels, questions, report.questions):
        mid = label.split("/")[0]
        assert result.question_id == q.id
        assert result.misconceptions == [mid], (label, result.feedback)
        assert result.score < q.points
        assert catalog.get(mid).title in result.feedback


def test_a1_every_catalog_id_has_a_student_module():
    assert {label.split("/")[0] for label in MISTAKES} == A1_IDS
    assert sorted(label for group in GROUPS for label in group) == sorted(MISTAKES)


# ---------------------------------------------------------------- the hidden cases separate the mistakes


def _differ(f, g, q, case) -> bool:
    with np.errstate(all="ignore"):
        return bool(
            compare(
                concrete(f(*case.args, **case.kwargs)),
                concrete(g(*case.args, **case.kwargs)),
                q.tolerance,
                names=q.output_names,
            )
        )


@pytest.mark.parametrize("q", CODE_QS, ids=lambda q: q.id)
def test_a1_mutants_pairwise_separated_on_hidden_cases(q):
    hidden = [c for c in q.cases(0) if not c.visible]
    assert len(hidden) >= 2
    fns = {"reference": q.reference, **q.mutants}
    for (n1, f1), (n2, f2) in itertools.combinations(fns.items(), 2):
        assert any(_differ(f1, f2, q, c) for c in hidden), (q.id, n1, n2)


@pytest.mark.parametrize("seed", [0, 1, 987654321])
def test_a1_every_catalog_id_is_reachable_from_a_hidden_case(seed):
    reached = set()
    for q in CODE_QS:
        hidden = [c for c in q.cases(seed) if not c.visible]
        for mid, f in q.mutants.items():
            if any(_differ(f, q.reference, q, c) for c in hidden):
                reached.add(mid)
    assert reached == A1_IDS


# ---------------------------------------------------------------- written answers


def test_a1_written_wrong_forms_are_named(tmp_path):
    wrong = "\n".join(
        [
            'skipgram_grad_symbolic = "u_a - p_a u_a - p_b u_b - p_c u_c"',
            'observed_minus_expected = "B"',
            "skipgram_anchor_grad = [0.4248, -0.0900]",
            'sgns_grad_symbolic = "(sigmoid(u_o v_c) - 1) u_o - sigmoid(-u_1 v_c) u_1 - sigmoid(-u_2 v_c) u_2"',
            'why_three_quarters = "A"',
            "noise_probability = 0.0102",
            'why_exclude_inputs = "C"',
        ]
    )
    report = grade_submission(
        _submit(tmp_path, SOLUTION_SRC, wrong), _only(*WRITTEN_QS), limits=FAST
    )
    got = {q.question_id: q.misconceptions for q in report.questions}
    assert report.score == 0
    assert got == {
        "a1.w_skipgram_grad": ["skipgram-grad-sign"],
        "a1.w_observed_expected": ["skipgram-grad-sign"],
        "a1.w_anchor": ["skipgram-grad-sign"],
        "a1.w_sgns_grad": ["sgns-negatives-wrong-sign"],
        "a1.w_why_three_quarters": [],
        "a1.w_noise_probability": ["noise-no-power"],
        "a1.w_exclude_inputs": [],
    }


# ---------------------------------------------------------------- the handout's public tests
