"""Validity of a2 and a5 (issue 17): every plausible slip docked, only the right mistake named.

- a2's softmax stability is exercised: an unshifted, min-shifted or globally shifted softmax
  fails the hidden case with logits in the hundreds, while every correct formulation
  (log-softmax, or a stable softmax and then its log, in float64 or float32) passes it;
- a loop that stops one step early is not named `bptt-last-use-only` (found by the mutation run);
- a5's block_shapes takes shapes as ints only (`d / n_heads` gives 4.0 and fails), names that
  float mistake, and names a second shape mistake in the same function too;
- benchmarks/mutation_testing.py: its mutation operators (its targets, on a sample of every
  assignment's mutants: tests/test_mutation_targets.py).
"""

from __future__ import annotations

import ast
import dataclasses
import sys

import numpy as np
import pytest
from conftest import ROOT

from grader.engine.checks import compare
from grader.engine.diagnosis import explain, verdict
from grader.engine.grade import grade_submission
from grader.engine.trusted import materialize, run_trusted, trusted_mutants
from grader.mutants import AnyOf
from grader.questions import CodeQuestion
from grader.suites import a2_rnn_bptt as a2
from grader.suites import a5_shapes_debugging as a5
from reference.attention import split_heads
from reference.blocks import block_shapes

sys.path.insert(0, str(ROOT / "benchmarks"))

import mutation_testing as mt  # noqa: E402

pytestmark = pytest.mark.usefixtures("trusted_outputs_kept")

SEEDS = range(12)
LN2 = np.log(2.0)


# ---------------------------------------------------------------- a2: softmax stability


def _rows_ce(logits: np.ndarray, targets: np.ndarray, softmax) -> np.ndarray:
    """-log softmax(a_t)[y_t] with a given softmax (a student's: stable or not)."""
    with np.errstate(all="ignore"):
        P = softmax(logits)
        return -np.log(P[np.arange(len(targets)), targets])


def _no_shift(a):
    e = np.exp(a)
    return e / e.sum(axis=-1, keepdims=True)


def _min_shift(a):
    return _no_shift(a - a.min(axis=-1, keepdims=True))


def _global_shift(a):
    return _no_shift(a - a.max())


def _stable(a):
    return _no_shift(a - a.max(axis=-1, keepdims=True))


def _stable32(a):
    return _stable(np.asarray(a, dtype=np.float32)).astype(np.float32)


def _perplexity_with(softmax):
    def student(logits, targets):
        ce = float(np.mean(_rows_ce(np.asarray(logits), np.asarray(targets), softmax)))
        with np.errstate(all="ignore"):
            return ce, float(np.exp(ce))

    return student


def _large_case(cases):
    (case,) = [c for c in cases if "softmax stability" in c.name]
    return case


@pytest.mark.parametrize("softmax", [_no_shift, _min_shift, _global_shift])
def test_a2_perplexity_large_logits_fail_an_unstable_softmax(softmax):
    q = a2.QUESTIONS[4]
    assert q.function == "sequence_perplexity"
    for seed in SEEDS:
        case = _large_case(q.cases(seed))
        got = _perplexity_with(softmax)(*materialize(case.args))
        assert compare(got, run_trusted(q.reference, case), q.tolerance), (seed, softmax.__name__)
        assert not np.isfinite(got[0])  # the overflow shows, not a small numerical drift


@pytest.mark.parametrize("softmax", [_stable, _stable32])
def test_a2_perplexity_large_logits_pass_a_stable_softmax_then_log(softmax):
    q = a2.QUESTIONS[4]
    for seed in SEEDS:
        case = _large_case(q.cases(seed))
        got = _perplexity_with(softmax)(*materialize(case.args))
        assert not compare(got, run_trusted(q.reference, case), q.tolerance), seed


def _sequence_ce_with(softmax, dtype=np.float64):
    """bptt_sequence_ce from the reference's forward and BPTT pieces, the loss and p_t from a
    student's softmax (the output-layer part of the computation)."""
    from reference.bptt import backward_through_time
    from reference.rnn import previous_states, rnn_forward

    def student(X, W_x, W_h, b_h, W_o, b_o, targets, h0=None):
        Z, Hs = rnn_forward(X, W_x, W_h, b_h, h0)
        logits = (Hs.astype(dtype) @ W_o.astype(dtype).T + b_o.astype(dtype)).astype(np.float64)
        T = len(targets)
        with np.errstate(all="ignore"):
            P = softmax(logits).astype(np.float64)
            loss = float(np.mean(_rows_ce(logits, targets, softmax)))
            g_a = P.copy()
            g_a[np.arange(T), targets] -= 1.0
            g_a /= T
            _, g_z = backward_through_time(Z, Hs, W_h, g_a @ W_o)
        H_prev = previous_states(Hs, h0)
        return loss, {
            "W_x": g_z.T @ X,
            "W_h": g_z.T @ H_prev,
            "b_h": g_z.sum(0),
            "W_o": g_a.T @ Hs,
            "b_o": g_a.sum(0),
        }

    return student


@pytest.mark.parametrize("softmax", [_no_shift, _min_shift, _global_shift])
def test_a2_sequence_ce_large_logits_fail_an_unstable_softmax(softmax):
    q = a2.QUESTIONS[2]
    assert q.function == "bptt_sequence_ce"
    for seed in SEEDS:
        case = _large_case(q.cases(seed))
        got = _sequence_ce_with(softmax)(*materialize(case.args), **materialize(dict(case.kwargs)))
        assert compare(got, run_trusted(q.reference, case), q.tolerance, names=q.output_names), seed


@pytest.mark.parametrize("softmax,dtype", [(_stable, np.float64), (_stable32, np.float32)])
def test_a2_sequence_ce_large_logits_pass_a_stable_softmax_then_log(softmax, dtype):
    q = a2.QUESTIONS[2]
    for seed in SEEDS:
        case = _large_case(q.cases(seed))
        got = _sequence_ce_with(softmax, dtype)(
            *materialize(case.args), **materialize(dict(case.kwargs))
        )
        assert not compare(
            got, run_trusted(q.reference, case), q.tolerance, names=q.output_names
        ), seed


def test_a2_large_logit_cases_keep_every_mutant_apart_from_the_reference_where_it_applies():
    """The large case is a real case of its question: the catalog mutants still run on it."""
    q = a2.QUESTIONS[2]
    case = _large_case(q.cases(0))
    want = run_trusted(q.reference, case)
    assert np.isfinite(want[0]) and all(np.all(np.isfinite(g)) for g in want[1].values())
    assert any(np.abs(g).max() > 1e-3 for g in want[1].values())  # the gradients are not all ~0


UNSHIFTED = (
    (ROOT / "solutions" / "a2_rnn_bptt" / "rnn.py")
    .read_text()
    .replace("    A = A - A.max(axis=1, keepdims=True)\n", "")
)


def test_a2_unshifted_softmax_loses_points_and_is_not_given_a_name(submit):
    assert UNSHIFTED.count("A.max") == 0
    only = dataclasses.replace(a2.ASSIGNMENT, questions=(a2.QUESTIONS[2], a2.QUESTIONS[4]))
    report = grade_submission(submit({"rnn.py": UNSHIFTED}), only)
    for r in report.questions:
        assert 0 < r.score < r.max_score, r.feedback
        assert r.misconceptions == [], r.feedback  # a NaN shared by several mistakes names none


EARLY_STOP = (
    (ROOT / "solutions" / "a2_rnn_bptt" / "rnn.py")
    .read_text()
    .replace(
        "for t in range(T - 1, -1, -1):\n        g_h = direct[t] + future",
        "for t in range(T - 1, 1, -1):\n        g_h = direct[t] + future",
    )
)


def test_a2_a_loop_stopping_early_is_not_named_last_use_only(submit):
    assert "range(T - 1, 1, -1)" in EARLY_STOP
    only = dataclasses.replace(a2.ASSIGNMENT, questions=(a2.QUESTIONS[1],))
    (r,) = grade_submission(submit({"rnn.py": EARLY_STOP}), only).questions
    assert r.score < r.max_score
    assert "bptt-last-use-only" not in r.misconceptions, r.feedback


# ---------------------------------------------------------------- a5: shapes as ints


def _walk_args():
    w = a5.WALKTHROUGH
    return (w["B"], w["T"], w["d"], w["n_heads"], w["d_ff"])


def _floats(shapes: dict) -> dict:
    d_h = shapes["q_heads"][-1]
    return {
        k: tuple(
            float(v) if v == d_h and k.endswith("heads") and i == 3 else v for i, v in enumerate(s)
        )
        for k, s in shapes.items()
    }


def test_a5_float_head_size_fails_every_case_and_is_named():
    q = [x for x in a5.CODE_QUESTIONS if x.function == "block_shapes"][0]
    cases = q.cases(0)
    outputs = [_floats(block_shapes(*c.args)) for c in cases]
    assert any(isinstance(v, float) for v in outputs[0]["q_heads"])
    j = q.custom(cases, outputs)
    assert j.fraction == 0.0 and j.misconceptions == ["head-dim-float-division"]
    assert "holds a float" in j.checks[1][2]


def test_a5_int_shapes_pass_and_name_nothing():
    q = [x for x in a5.CODE_QUESTIONS if x.function == "block_shapes"][0]
    cases = q.cases(3)
    outputs = [
        {k: list(v) for k, v in block_shapes(*c.args).items()} for c in cases
    ]  # lists are fine
    j = q.custom(cases, outputs)
    assert j.fraction == 1.0 and j.misconceptions == []


def test_a5_two_shape_mistakes_in_one_function_are_both_named():
    q = [x for x in a5.CODE_QUESTIONS if x.function == "block_shapes"][0]
    cases = q.cases(1)
    outputs = []
    for c in cases:
        s = _floats(block_shapes(*c.args))
        s["scores"] = s["weights"] = s["scores"][:1] + s["scores"][2:]  # (B, T, T): heads dropped
        outputs.append(s)
    j = q.custom(cases, outputs)
    assert j.fraction == 0.0
    assert j.misconceptions == ["shape-scores-missing-heads", "head-dim-float-division"]


def test_a5_block_shapes_feedback_on_a_hidden_case_shows_only_the_students_own_shapes():
    q = [x for x in a5.CODE_QUESTIONS if x.function == "block_shapes"][0]
    cases = q.cases(2)
    hidden = [c for c in cases if not c.visible][0]
    want = block_shapes(*hidden.args)
    got = {**want, "ln_stats": want["bn_stats"]}  # BatchNorm's set for LayerNorm
    j = q.custom([hidden], [got])
    (what, ok, detail) = j.checks[0]
    assert not ok and j.misconceptions == ["shape-ln-stats-per-feature"]
    assert (
        repr(want["ln_stats"]) not in detail and repr(want["bn_stats"]) in detail
    )  # got, not expected


FLOAT_FIXED = (
    (ROOT / "solutions" / "a5_shapes_debugging" / "fixed.py")
    .read_text()
    .replace("    h, d_h = n_heads, d // n_heads\n", "    h, d_h = n_heads, d / n_heads\n")
)


def test_a5_d_over_n_heads_loses_the_block_shapes_points(submit):
    assert "d / n_heads" in FLOAT_FIXED
    only = dataclasses.replace(a5.ASSIGNMENT, questions=(a5.CODE_QUESTIONS[-1],))
    (r,) = grade_submission(submit({"fixed.py": FLOAT_FIXED}), only).questions
    assert r.score == 0 and r.misconceptions == ["head-dim-float-division"], r.feedback
    assert "`d // n_heads`" in r.feedback


def test_a5_split_heads_reference_shape_entries_are_ints():
    out = split_heads(np.zeros((2, 4, 8)), 2)
    assert out.shape == (2, 2, 4, 4) and all(
        type(v) is int for v in block_shapes(*_walk_args())["q_heads"]
    )


# ---------------------------------------------------------------- the mutation benchmark itself

SAMPLE = """
import numpy as np

def f(x, w, eps=1e-5, axis=-1):
    y = x @ w.T
    y = y - y.max(axis=axis, keepdims=True)
    s = np.exp(y).sum(axis=-1)
    out = 0.0
    for t in range(len(s) - 1):
        out += s[t] / (s[:t + 1].mean() + eps)
    m = ~(x > 0)
    return out, m
"""


def test_mutation_operators_cover_the_families_the_issue_lists(tmp_path):
    path = tmp_path / "sample.py"
    path.write_text(SAMPLE)
    mutants = mt.generate(path)
    families = {m.operator for m in mutants}
    assert {
        "binop",
        "operand",
        "constant",
        "name",
        "transpose",
        "delete",
        "swap-args",
        "keyword",
        "slice",
        "mask",
        "sign",
        "compare",
        "accumulate",
    } <= families
    sources = {m.source for m in mutants}
    assert len(sources) == len(mutants) and ast.unparse(ast.parse(SAMPLE)) not in sources
    changes = {m.change.split(": ", 1)[1] for m in mutants}
    assert {
        "max -> min",
        "sum -> mean",
        "drop .T",
        "right operand transposed",
        "left only",
        "drop keepdims=",
        "drop upper bound",
        "drop Invert",
        "`+=` as `=`",
    } <= changes
    assert any("eps=2e-05" in m.source for m in mutants)  # a default argument mutated
    for m in mutants:
        compile(m.source, "mutant", "exec")


def test_mutation_reach_follows_helpers():
    reach = mt.reach(ROOT / "solutions" / "a2_rnn_bptt" / "rnn.py")
    assert "_backward" in reach["bptt_final_state"] and "_backward" in reach["bptt_sequence_ce"]
    assert reach["rnn_forward"] == {"rnn_forward"}


def test_mutation_diff_test_tells_float_shapes_from_int_shapes():
    q = [x for x in a5.CODE_QUESTIONS if x.function == "block_shapes"][0]
    want = block_shapes(*_walk_args())
    assert mt.same(want, want, q)
    assert not mt.same(_floats(want), want, q)


# ---------------------------------------------------------------- every mutant named as itself


def _named_as(q, mid: str, mutants: dict, worked: list) -> list[list[str]]:
    """What the engine's diagnosis names for a student whose outputs are each form of `mid` (its
    first three: a form past a case's last is that case's last), on the cases in `worked` (each
    with the reference's output)."""
    outs = [mutants[mid](*case.args, **dict(case.kwargs)) for case, _ in worked]
    forms = max((len(o.options) for o in outs if isinstance(o, AnyOf)), default=1)
    named = []
    for option in range(min(3, forms)):  # a higher option is the last form on every case
        per_case, failed = [], 0
        for (case, want), out in zip(worked, outs):
            got = out.options[min(option, len(out.options) - 1)] if isinstance(out, AnyOf) else out
            if not compare(got, want, q.tolerance, exact=q.integer):
                continue
            failed += 1
            per_case.append(
                explain(
                    got, want, case.args, dict(case.kwargs), mutants, q.tolerance, exact=q.integer
                )
            )
        named.append(verdict(per_case, failed) if failed else [mid])
    return named


@pytest.mark.slow
@pytest.mark.parametrize("aid", ["a2", "a5"])
def test_every_mutant_form_is_named_as_itself_for_many_students(aid):
    """Each natural form of each mistake, on the hidden cases of 8 students, is named with
    exactly its own id: no other plausible mistake explains it better."""
    suite = a2 if aid == "a2" else a5
    questions = [
        q for q in suite.ASSIGNMENT.questions if isinstance(q, CodeQuestion) and q.custom is None
    ]
    wrong = []
    for q in questions:
        mutants = trusted_mutants(q.mutants)
        for seed in range(8):
            worked = [(case, run_trusted(q.reference, case)) for case in q.cases(seed)]
            for mid in q.mutants:
                for option, named in enumerate(_named_as(q, mid, mutants, worked)):
                    if named != [mid]:
                        wrong.append((q.function, mid, option, seed, named))
    assert wrong == []


def _result(source: str, named: dict[str, list[str]]) -> mt.Result:
    mutant = mt.Mutant(0, "_backward", 0, "test", "by hand", source)
    return mt.Result(mutant, list(named), named=named)


def test_mutation_naming_check_flags_a_name_that_does_not_explain_the_outputs():
    """The early-stopping loop named bptt-last-use-only (what the old hidden T = 3 case did) is
    a wrong naming; the real last-use-only mistake named so is not."""
    assignment = a2.ASSIGNMENT
    early = _result(EARLY_STOP, {"a2.bptt_final_state": ["bptt-last-use-only"]})
    (wrong,) = mt.check_names(early, mt.load_module(EARLY_STOP, "early"), assignment)
    assert wrong.startswith("bptt_final_state: bptt-last-use-only (")
    last_only = (
        (ROOT / "solutions" / "a2_rnn_bptt" / "rnn.py")
        .read_text()
        .replace(
            "for t in range(T - 1, -1, -1):\n        g_h = direct[t] + future",
            "for t in range(T - 1, T - 2, -1):\n        g_h = direct[t] + future",
        )
    )
    right = _result(last_only, {"a2.bptt_final_state": ["bptt-last-use-only"]})
    assert mt.check_names(right, mt.load_module(last_only, "last_only"), assignment) == []


def test_mutation_diff_test_separates_an_escape_from_an_equivalent_mutant():
    assignment = a2.ASSIGNMENT
    solution_source = (ROOT / "solutions" / "a2_rnn_bptt" / "rnn.py").read_text()
    solution = mt.load_module(solution_source, "solution")
    escape = _result(UNSHIFTED, {})
    escape.questions = ["a2.sequence_perplexity"]
    assert "sequence_perplexity" in mt.diff_test(
        escape, solution, mt.load_module(UNSHIFTED, "unshifted"), assignment
    )
    same = solution_source.replace(
        "scale = 1.0 if norm <= max_norm", "scale = 1.0 if norm < max_norm"
    )
    equivalent = _result(same, {})
    equivalent.questions = ["a2.clip_by_global_norm"]
    assert mt.diff_test(equivalent, solution, mt.load_module(same, "same"), assignment) is None


def test_a_mutant_graded_after_its_packs_worker_ran_out_of_restarts_is_graded_alone(
    monkeypatch,
):
    """Mutants that loop restart the pack's worker, and a submission has only so many restarts:
    a mutant whose questions came after they ran out was docked for its neighbours' loops (the
    runner's a6 figures counted four such mutants as killed). It is graded again on its own."""
    from grader.sandbox import session

    monkeypatch.setattr(session, "MAX_RESTARTS", 1)
    monkeypatch.setattr(mt, "LIMITS", dataclasses.replace(mt.LIMITS, call_seconds=0.5))
    path = ROOT / "solutions" / "a6_pretraining_scale" / "pretraining.py"
    source = path.read_text()
    loops = source.replace("            i += 2\n", "            pass\n", 1)
    assert loops != source

    def mutant(index: int, text: str) -> mt.Mutant:
        return mt.Mutant(index, "_merge", 0, "test", "by hand", text)

    pack = [mutant(1, loops), mutant(2, loops), mutant(3, source)]
    results = {
        r.mutant.index: r for r in mt.grade_pack("a6_pretraining_scale", pack, mt.reach(path))
    }
    assert results[1].score < results[1].max_score  # a loop is killed
    assert results[3].max_score > 0 and results[3].score == results[3].max_score  # as alone
