"""Validity of a4 (issue 17) and its follow-through declarations (issue 19).

- softmax stability is exercised in scaled_dot_product_attention: a deleted, min or global max
  shift fails the large-score case, every stable formulation (float64, float32, log-sum-exp,
  torch) passes it, and the reference agrees with torch's own attention there;
- rms_norm's default eps is exercised (a hidden case without eps, where it matters);
- each classic mistake the issue lists is named with its own id, on the hidden cases of many
  students, by student-style files (tests/heldout/a4_transformer/);
- every composite declares the earlier questions it builds on, and every mistake of a
  dependency that reaches the composite is a key of its mutants that explains the student's
  composite output (the engine's follow-through compares exactly that);
- (slow) the mutation benchmark's targets on a4, and every mutant form named as itself.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import heldout_harness
import numpy as np
import pytest
from conftest import ROOT

from grader.engine.checks import compare
from grader.engine.diagnosis import NOT_APPLICABLE, explain, verdict
from grader.engine.grade import grade_submission
from grader.engine.trusted import materialize, run_trusted, trusted_mutants
from grader.mutants import AnyOf
from grader.questions import Case, CodeQuestion
from grader.suites import a4_transformer as a4

# The torch-style held-out files run here in this process (the grader runs them in the sandbox,
# whose warnings are the student's output): numpy operators on their tensors raise NumPy 2.0's
# deprecation of torch's `__array_wrap__` signature, 130 times per run, burying any new warning.
# One held-out file copies its input with `torch.tensor(x)` as students do, which torch warns of.
pytestmark = [
    pytest.mark.usefixtures("trusted_outputs_kept"),
    pytest.mark.filterwarnings(
        "ignore:__array_wrap__ must accept context and return_scalar:DeprecationWarning"
    ),
    pytest.mark.filterwarnings("ignore:To copy construct from a tensor:UserWarning"),
]

HELDOUT = heldout_harness.folder("a4_transformer")  # the cases as files, edits generated
A = a4.ASSIGNMENT
SEEDS = range(6)
CODE = [q for q in A.questions if isinstance(q, CodeQuestion)]


def _q(qid: str) -> CodeQuestion:
    return A.question(qid)


# ---------------------------------------------------------------- softmax stability in attention


def _large_case(seed: int):
    (case,) = [c for c in _q("a4.sdpa").cases(seed) if "softmax stability" in c.name]
    return case


def _attention_with(softmax: Callable[[np.ndarray], np.ndarray], dtype=np.float64):
    """A student's attention: -inf at masked scores, then their softmax along the keys."""

    def student(Q, K, V, mask=None):
        Q, K, V = (np.asarray(a, dtype=dtype) for a in (Q, K, V))
        scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(dtype(Q.shape[-1]))
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        with np.errstate(all="ignore"):
            weights = softmax(scores)
        return weights @ V, weights

    return student


def _exp_normalise(s):
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


UNSTABLE = {
    "no shift": _exp_normalise,
    "min shift": lambda s: _exp_normalise(
        s - np.min(np.where(np.isfinite(s), s, np.inf), axis=-1, keepdims=True)
    ),
    "global max shift": lambda s: _exp_normalise(s - np.max(s)),
}


def _logsumexp_softmax(s):
    m = np.max(s, axis=-1, keepdims=True)
    return np.exp(s - (m + np.log(np.sum(np.exp(s - m), axis=-1, keepdims=True))))


def _torch_softmax(dtype):
    def softmax(s):
        import torch

        return torch.softmax(torch.as_tensor(s, dtype=dtype), dim=-1).numpy()

    return softmax


def _passes(student, case) -> bool:
    q = _q("a4.sdpa")
    want = run_trusted(q.reference, case)
    got = student(*materialize(case.args), **materialize(case.kwargs))
    return not compare(got, want, q.tolerance, names=q.output_names)


@pytest.mark.parametrize("name", sorted(UNSTABLE))
def test_sdpa_large_scores_fail_an_unstable_softmax(name):
    student = _attention_with(UNSTABLE[name])
    assert _passes(
        student, _q("a4.sdpa").cases(0)[0]
    )  # an ordinary case passes: only stability is wrong
    for seed in SEEDS:
        assert not _passes(student, _large_case(seed)), seed


@pytest.mark.parametrize(
    "softmax, dtype",
    [
        (lambda s: _exp_normalise(s - np.max(s, axis=-1, keepdims=True)), np.float64),
        (lambda s: _exp_normalise(s - np.max(s, axis=-1, keepdims=True)), np.float32),
        (_logsumexp_softmax, np.float64),
        ("torch64", np.float64),
        ("torch32", np.float32),
    ],
    ids=["max-shift", "max-shift-float32", "log-sum-exp", "torch-float64", "torch-float32"],
)
def test_sdpa_large_scores_pass_every_stable_formulation(softmax, dtype):
    if isinstance(softmax, str):
        import torch

        softmax = _torch_softmax(torch.float64 if softmax == "torch64" else torch.float32)
    student = _attention_with(softmax, dtype)
    for seed in SEEDS:
        assert _passes(student, _large_case(seed)), seed


def test_sdpa_large_case_reference_agrees_with_torch():
    import torch
    import torch.nn.functional as F

    q = _q("a4.sdpa")
    for seed in SEEDS:
        case = _large_case(seed)
        Q, K, V, mask = materialize(case.args)
        scores = np.abs(Q @ np.swapaxes(K, -1, -2)) / 2.0
        assert scores.max() > 800  # exp overflows float64 without a shift
        out = F.scaled_dot_product_attention(
            *(torch.as_tensor(a) for a in (Q, K, V)), attn_mask=torch.as_tensor(mask)
        )
        want_out, want_weights = run_trusted(q.reference, case)
        assert not compare(out.numpy(), want_out, q.tolerance)
        assert np.all(np.isfinite(want_weights)) and np.allclose(want_weights.sum(-1), 1.0)


def test_sdpa_without_max_shift_loses_points_and_is_not_named(submit):
    src = (ROOT / "solutions" / "a4_transformer" / "transformer.py").read_text()
    unshifted = src.replace("    x = x - np.max(x, axis=-1, keepdims=True)\n", "")
    assert unshifted != src
    only = dataclasses.replace(A, questions=(_q("a4.sdpa"),))
    (r,) = grade_submission(submit({"transformer.py": unshifted}), only).questions
    assert 0 < r.score < r.max_score, r.feedback
    assert r.misconceptions == [], r.feedback  # a NaN shared by several mistakes names none


# ---------------------------------------------------------------- rms_norm's default eps


def _rms(default: float, dtype=np.float64):
    """A student's RMSNorm with `default` as eps's default (0.0: no eps on the default case)."""

    def student(x, gamma, eps=default):
        x = np.asarray(x, dtype=dtype)
        return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * gamma

    return student


def test_rms_norm_hidden_case_without_eps_tells_the_default_apart():
    import torch
    import torch.nn.functional as F

    q = _q("a4.rms_norm")
    for seed in SEEDS:
        (case,) = [c for c in q.cases(seed) if "default eps" in c.name]
        assert "eps" not in case.kwargs and len(case.args) == 2
        x, gamma = materialize(case.args)
        want = run_trusted(q.reference, case)
        by_torch = F.rms_norm(
            torch.as_tensor(x), (x.shape[-1],), torch.as_tensor(gamma), eps=1e-6
        ).numpy()
        assert not compare(
            by_torch, want, q.tolerance
        )  # the reference is torch's RMSNorm, eps = 1e-6
        assert not compare(
            _rms(1e-6, np.float32)(*materialize(case.args)), want, q.tolerance
        )  # float32 passes
        for wrong in (_rms(0.0), _rms(1e-5), _rms(1e-8)):
            assert compare(wrong(*materialize(case.args)), want, q.tolerance), seed


# ---------------------------------------------------------------- the classic mistakes, named


NEW_IDS = (
    "merge-heads-without-transpose",
    "output-projection-not-transposed",
    "attention-missing-output-projection",
    "head-width-from-d-model",
    "masks-combined-with-or",
    "cross-attention-normalizes-memory",
    "rmsnorm-missing-eps",
    "swiglu-sigmoid-gate",
    "swiglu-gate-up-swapped",
)


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location("heldout_" + re.sub(r"\W", "_", path.stem), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _plain(out: Any) -> Any:
    if isinstance(out, tuple):
        return tuple(_plain(o) for o in out)
    if hasattr(out, "detach"):
        return out.detach().numpy()
    return out


def _question_line(path: Path) -> str:
    return path.read_text().split("\n", 1)[0].split(":", 1)[1].strip()


def _diagnose(q: CodeQuestion, function: Callable[..., Any], seed: int) -> tuple[list[str], int]:
    """What the engine's diagnosis names for this student on one seed's cases, and cases failed."""
    mutants = trusted_mutants(q.mutants)
    per_case, failed = [], 0
    for case in q.cases(seed):
        want = run_trusted(q.reference, case)
        with np.errstate(all="ignore"):
            got = _plain(function(*materialize(case.args), **materialize(case.kwargs)))
        if not compare(got, want, q.tolerance, names=q.output_names):
            continue
        failed += 1
        per_case.append(
            explain(
                got, want, materialize(case.args), materialize(case.kwargs), mutants, q.tolerance
            )
        )
    return verdict(per_case, failed), failed


@pytest.mark.parametrize("mid", NEW_IDS)
def test_each_classic_mistake_is_named_as_itself_for_many_students(mid):
    files = sorted(HELDOUT.glob(f"{mid}__*.py"))
    assert len(files) >= 2
    for path in files:
        q = _q(_question_line(path))
        assert mid in q.mutants
        function = getattr(_load(path), q.function)
        for seed in SEEDS:
            named, failed = _diagnose(q, function, seed)
            assert failed > 0 and named == [mid], (path.name, seed, named)


def test_merge_heads_without_transpose_is_its_own_mistake_in_mha():
    """The split right and only the merge a bare reshape: named, not heads-reshape-without-transpose."""
    q = _q("a4.mha")
    forms = q.mutants["heads-reshape-without-transpose"]
    path = HELDOUT / "merge-heads-without-transpose__numpy.py"
    function = getattr(_load(path), q.function)
    for seed in SEEDS:
        case = q.cases(seed)[1]
        got = function(*materialize(case.args), **materialize(case.kwargs))
        options = forms(*materialize(case.args), **materialize(case.kwargs)).options
        assert all(
            compare(got, o, q.tolerance) for o in options
        )  # no form of the other id explains it


def test_correct_files_in_other_styles_name_nothing_on_the_new_cases():
    files = [p for p in sorted(HELDOUT.glob("correct__*.py")) if _question_line(p) == "all"]
    assert len(files) >= 3
    for path in files:
        module = _load(path)
        for qid in ("a4.sdpa", "a4.rms_norm", "a4.swiglu", "a4.mha"):
            q = _q(qid)
            if not hasattr(module, q.function):
                continue
            for seed in (0, 1):
                named, failed = _diagnose(q, getattr(module, q.function), seed)
                assert failed == 0, (path.name, qid, seed, named)


# ---------------------------------------------------------------- follow-through (issue 19)


def test_composites_declare_the_questions_they_build_on():
    deps = {q.id: set(q.depends_on) for q in CODE}
    assert deps["a4.mha"] == {"a4.sdpa", "a4.causal_mask"}
    assert deps["a4.encoder_block"] == {"a4.sdpa", "a4.mha", "a4.layer_norm", "a4.feed_forward"}
    assert deps["a4.decoder_block"] >= deps["a4.encoder_block"] | {"a4.causal_mask"}
    assert deps["a4.gpt_forward"] >= {"a4.mha", "a4.layer_norm", "a4.feed_forward"}
    order = [q.id for q in CODE]
    for q in CODE:
        for d in q.depends_on:
            assert order.index(d) < order.index(q.id), (q.id, d)


# A float32 file whose decoder output differs from the lifted mutant by 6e-6 at an entry near 0
# (outside atol = 1e-6 there): the diagnosis' tolerance, not a missing mutant.
FLOAT32_NEAR_ZERO = {("merge-heads-without-transpose__torch_view.py", "a4.decoder_block")}


def _carried(path: Path, mid: str, q: CodeQuestion) -> list[tuple[str, list[str]]]:
    """The cases on which the file's composite is wrong and q's mutant for mid does not explain it."""
    function = getattr(_load(path), q.function, None)
    if function is None:
        return []
    mutants = trusted_mutants(q.mutants)
    unexplained = []
    for case in q.cases(0):
        want = run_trusted(q.reference, case)
        try:
            with np.errstate(all="ignore"):
                got = _plain(function(*materialize(case.args), **materialize(case.kwargs)))
        except Exception:  # the student's composite fails on its own here: nothing to carry
            continue
        if not compare(got, want, q.tolerance):
            continue
        found = [
            e.misconception
            for e in explain(
                got, want, materialize(case.args), materialize(case.kwargs), mutants, q.tolerance
            )
        ]
        if mid not in found:
            unexplained.append((case.name, found[:3]))
    return unexplained


def test_every_dependency_mistake_that_reaches_a_composite_is_lifted_into_it():
    """For each single-mistake held-out file of a dependency, the file's own composites (which
    call its mistaken function) are explained, case by case, by the composite's mutant of the
    same id: what the engine compares for follow-through credit."""
    composites = [q for q in CODE if q.depends_on]
    problems, checked = [], 0
    for path in sorted(HELDOUT.glob("*.py")):
        mid = path.stem.split("__")[0]
        if mid in ("correct", "uses-library-shortcut"):
            continue
        qid = _question_line(path)
        for q in composites:
            if qid in q.depends_on and (path.name, q.id) not in FLOAT32_NEAR_ZERO:
                checked += 1
                bad = _carried(path, mid, q)
                if bad:
                    problems.append((path.name, q.id, mid in q.mutants, bad))
    assert checked > 60 and problems == [], problems


SOLUTION_SRC = (ROOT / "solutions" / "a4_transformer" / "transformer.py").read_text()
COMPOSITES = ("a4.mha", "a4.encoder_block", "a4.decoder_block", "a4.gpt_forward")
# One mistake in an earlier function (an edit of the instructor's solution, whose composites call
# the student's own functions): its question, its id, and the composites it reaches.
ROOT_MISTAKES = {
    "attention-scale-by-dk": (
        "a4.sdpa",
        (
            "    scores = Q @ np.swapaxes(K, -1, -2) / math.sqrt(d_k)  # (..., Tq, Tk)",
            "    scores = Q @ np.swapaxes(K, -1, -2) / d_k",
        ),
        COMPOSITES,
    ),
    "softmax-wrong-axis": (
        "a4.sdpa",
        (  # in the softmax helper, which gpt_forward's last step uses too
            "    x = x - np.max(x, axis=-1, keepdims=True)\n    e = np.exp(x)\n    return e / np.sum(e, axis=-1, keepdims=True)",
            "    x = x - np.max(x, axis=-2, keepdims=True)\n    e = np.exp(x)\n    return e / np.sum(e, axis=-2, keepdims=True)",
        ),
        COMPOSITES,
    ),
    "causal-mask-transposed": (
        "a4.causal_mask",
        (
            "    return np.tril(np.ones((T, T), dtype=bool))",
            "    return np.triu(np.ones((T, T), dtype=bool))",
        ),
        ("a4.mha", "a4.decoder_block", "a4.gpt_forward"),
    ),
    "layernorm-unbiased-variance": (
        "a4.layer_norm",
        (
            "    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)",
            "    var = ((x - mu) ** 2).sum(axis=-1, keepdims=True) / (x.shape[-1] - 1)",
        ),
        COMPOSITES[1:],
    ),
    "ffn-missing-activation": (
        "a4.feed_forward",
        ("        hidden = np.maximum(hidden, 0.0)", "        pass"),
        COMPOSITES[1:],
    ),
    "merge-heads-without-transpose": (
        "a4.mha",
        (
            "    x = np.swapaxes(x, -3, -2)  # (..., T, h, d_h)\n    *lead, T, h, d_h = x.shape",
            "    *lead, h, T, d_h = x.shape",
        ),
        COMPOSITES[1:],
    ),
}


def _graded(submit, mid: str, share: float | None = None) -> dict[str, Any]:
    root, (old, new), reached = ROOT_MISTAKES[mid]
    assert SOLUTION_SRC.count(old) == 1
    qids = (root, *reached)
    only = dataclasses.replace(A, questions=tuple(_q(q) for q in qids))
    if share is not None:
        only = dataclasses.replace(only, follow_through=share)
    report = grade_submission(submit({"transformer.py": SOLUTION_SRC.replace(old, new)}), only)
    return {r.question_id: r for r in report.questions}


@pytest.mark.parametrize("mid", sorted(ROOT_MISTAKES))
def test_one_earlier_mistake_is_charged_only_where_it_is_made(submit, mid):
    root, _, reached = ROOT_MISTAKES[mid]
    results = _graded(submit, mid)
    assert results[root].score < results[root].max_score and results[root].misconceptions == [mid]
    for qid in reached:
        r = results[qid]
        assert r.score == r.max_score and r.misconceptions == [], (qid, r.feedback)
        assert r.carried == [{"from": root, "misconception": mid}], (qid, r.carried)


def test_without_follow_through_the_earlier_mistake_costs_every_composite(submit):
    root, _, reached = ROOT_MISTAKES["attention-scale-by-dk"]
    results = _graded(submit, "attention-scale-by-dk", share=0.0)
    for qid in (root, *reached):
        assert results[qid].score < results[qid].max_score, qid
        assert results[qid].carried == [], qid


def test_an_earlier_mistake_and_a_composite_mistake_are_both_charged_and_named(submit):
    """Scores divided by d_k in scaled_dot_product_attention, and heads merged without the transpose
    in multi_head_attention: each question is docked for its own mistake and names it (the MHA's
    mutants are hooks of the reference, so the engine combines the carried one with its own)."""
    sdpa_old, sdpa_new = ROOT_MISTAKES["attention-scale-by-dk"][1]
    mha_old, mha_new = ROOT_MISTAKES["merge-heads-without-transpose"][1]
    src = SOLUTION_SRC.replace(sdpa_old, sdpa_new).replace(mha_old, mha_new)
    only = dataclasses.replace(A, questions=(_q("a4.sdpa"), _q("a4.mha")))
    sdpa, mha = grade_submission(submit({"transformer.py": src}), only).questions
    assert sdpa.score < sdpa.max_score and sdpa.misconceptions == ["attention-scale-by-dk"]
    assert mha.score < mha.max_score and mha.misconceptions == ["merge-heads-without-transpose"], (
        mha.feedback
    )
    assert mha.carried == []  # wrong in a way of its own: no follow-through credit


# ---------------------------------------------------------------- slow: the benchmark's targets


# Identical by construction (see tests/test_a4_transformer.py): the first is named.
SAME_BY_CONSTRUCTION = {
    ("a4.gpt_forward", "mask-ignored"): "decoder-self-attention-not-causal",
    ("a4.encoder_block", "padding-mask-dropped"): "mask-ignored",
    ("a4.decoder_block", "causal-mask-dropped"): "decoder-self-attention-not-causal",
    ("a4.gpt_forward", "causal-mask-dropped"): "decoder-self-attention-not-causal",
}


@functools.cache
def _outputs_by_case(qid: str, seed: int) -> list[tuple[Case, Any, dict[str, Any]]]:
    """Per case of a question: the reference's output and every mutant's (or what it raised),
    computed once and shared by every (mistake, form) judged on that question and seed."""
    q = A.question(qid)
    rows = []
    for case in q.cases(seed):
        outs: dict[str, Any] = {}
        for mid, mutant in trusted_mutants(q.mutants).items():
            try:
                with np.errstate(all="ignore"):
                    outs[mid] = mutant(*case.args, **dict(case.kwargs))
            except NOT_APPLICABLE as exc:
                outs[mid] = exc
        rows.append((case, run_trusted(q.reference, case), outs))
    return rows


def _replay(value: Any) -> Callable[..., Any]:
    """A mutant that returns (or raises) what the real one did on this case."""

    def mutant(*args: Any, **kwargs: Any) -> Any:
        if isinstance(value, BaseException):
            raise value
        return value

    return mutant


def _named_as(q: CodeQuestion, mid: str, option: int, seed: int) -> list[str] | None:
    """What the engine's diagnosis names for a student whose outputs are form `option` of mid."""
    per_case, failed = [], 0
    for case, want, outs in _outputs_by_case(q.id, seed):
        out = outs[mid]
        if isinstance(out, BaseException):
            return None  # this form cannot run on every case: such a student gets an error there
        got = out.options[min(option, len(out.options) - 1)] if isinstance(out, AnyOf) else out
        if not compare(got, want, q.tolerance, exact=q.integer):
            continue
        failed += 1
        replayed = {m: _replay(v) for m, v in outs.items()}
        per_case.append(
            explain(got, want, case.args, dict(case.kwargs), replayed, q.tolerance, exact=q.integer)
        )
    return verdict(per_case, failed) if failed else [mid]


@pytest.mark.slow
def test_every_a4_mutant_form_is_named_as_itself_for_several_students():
    wrong = []
    for q in CODE:
        for mid in q.mutants:
            expected = [SAME_BY_CONSTRUCTION.get((q.id, mid), mid)]
            for seed in range(3):
                rows = _outputs_by_case(q.id, seed)
                forms = max(
                    (len(o.options) for _, _, outs in rows if isinstance(o := outs[mid], AnyOf)),
                    default=1,
                )
                for option in range(min(4, forms)):  # a form past the last is the last again
                    named = _named_as(q, mid, option, seed)
                    if named is not None and named != expected:
                        wrong.append((q.function, mid, option, seed, named))
    assert wrong == []
