"""Follow-through credit: a mistake is charged once, where it is made.

A two-question assignment of the tests' own: `softmax`, and `attend(S, V) = softmax(S) @ V`
built on the student's own softmax. Expected values are by hand (numpy's own softmax and
matrix product), never the engine's.
"""

from __future__ import annotations

import dataclasses
from functools import partial

import numpy as np
import pytest
import toy_assignment  # noqa: F401 - registers the toy misconceptions (toy-grad-sign)
from conftest import FAST, ROOT

from grader.engine.grade import grade_submission
from grader.questions import Assignment, Case, CodeQuestion
from reference.functional import softmax

pytestmark = pytest.mark.usefixtures("trusted_outputs_kept")


def attend_ref(S, V, *, axis=-1, sign=1.0):
    """softmax(S) @ V, with hooks: the softmax axis, and a sign (a toy own mistake)."""
    return sign * (softmax(np.asarray(S), axis=axis) @ np.asarray(V))


def _softmax_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([1, seed])
    return [
        Case("a 3×3 score matrix", (rng.normal(size=(3, 3)),)),
        Case("a 4×4 score matrix", (rng.normal(size=(4, 4)) * 2,)),
    ]


def _attend_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([2, seed])
    return [
        Case(f"T={t}, d_v=2", (rng.normal(size=(t, t)), rng.normal(size=(t, 2)))) for t in (3, 4, 5)
    ]


SOFTMAX = CodeQuestion(
    id="ft.softmax",
    title="Softmax",
    points=4,
    file="ft.py",
    function="softmax",
    reference=lambda x: softmax(x),
    cases=_softmax_cases,
    mutants={"softmax-wrong-axis": lambda x: softmax(x, axis=0)},
)
ATTEND = CodeQuestion(
    id="ft.attend",
    title="Attention from scores",
    points=6,
    file="ft.py",
    function="attend",
    reference=attend_ref,
    cases=_attend_cases,
    depends_on=("ft.softmax",),
    mutants={
        "softmax-wrong-axis": partial(attend_ref, axis=0),  # the mistake lifted to attend
        "toy-grad-sign": partial(attend_ref, sign=-1.0),
    },
)
FT = Assignment(id="ft", title="Follow-through", code_file="ft.py", questions=(SOFTMAX, ATTEND))

RIGHT_SOFTMAX = """
import numpy as np
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
"""
WRONG_AXIS_SOFTMAX = """
import numpy as np
def softmax(x):
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)     # down the columns: the mistake
"""
OWN_ATTEND = """
def attend(S, V):
    return softmax(S) @ V
"""
NEGATED_ATTEND = """
def attend(S, V):
    return -(softmax(S) @ V)                     # a second, different mistake
"""
UNRELATED_ATTEND = """
def attend(S, V):
    return softmax(S) @ V + 1.0                  # wrong in a way no mistake explains
"""
WRONG_AXIS_ATTEND = """
import numpy as np
def attend(S, V):
    e = np.exp(S - S.max(axis=0, keepdims=True))
    return (e / e.sum(axis=0, keepdims=True)) @ V   # its own wrong axis, softmax itself right
"""


def _grade(tmp_path, *parts: str, assignment: Assignment = FT):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "ft.py").write_text("\n".join(parts))
    report = grade_submission(folder, assignment, limits=FAST)
    return {q.question_id: q for q in report.questions}


def test_a_correct_submission_is_unaffected(tmp_path):
    r = _grade(tmp_path, RIGHT_SOFTMAX, OWN_ATTEND)
    assert [r[q].score for q in ("ft.softmax", "ft.attend")] == [4, 6]
    assert r["ft.attend"].carried == [] and r["ft.attend"].misconceptions == []


def test_one_mistake_is_charged_once_where_it_is_made(tmp_path):
    r = _grade(tmp_path, WRONG_AXIS_SOFTMAX, OWN_ATTEND)
    assert r["ft.softmax"].score == 0 and r["ft.softmax"].misconceptions == ["softmax-wrong-axis"]
    attend = r["ft.attend"]
    assert attend.score == 6 and attend.carried_points == 6
    assert attend.misconceptions == []
    assert attend.carried == [{"from": "ft.softmax", "misconception": "softmax-wrong-axis"}]
    assert "right given your `softmax`" in attend.feedback and "question 1" in attend.feedback
    assert attend.feedback.startswith("**0/3 cases passed**, 3 more right given your earlier work")


def test_follow_through_zero_charges_it_everywhere(tmp_path):
    r = _grade(
        tmp_path,
        WRONG_AXIS_SOFTMAX,
        OWN_ATTEND,
        assignment=dataclasses.replace(FT, follow_through=0.0),
    )
    assert r["ft.attend"].score == 0
    assert r["ft.attend"].misconceptions == ["softmax-wrong-axis"] and r["ft.attend"].carried == []


def test_a_question_may_set_its_own_share(tmp_path):
    half = dataclasses.replace(
        FT, questions=(SOFTMAX, dataclasses.replace(ATTEND, follow_through=0.5))
    )
    r = _grade(tmp_path, WRONG_AXIS_SOFTMAX, OWN_ATTEND, assignment=half)
    assert r["ft.attend"].score == pytest.approx(3)


def test_a_second_mistake_in_the_composite_is_docked_and_named_on_top(tmp_path):
    r = _grade(tmp_path, WRONG_AXIS_SOFTMAX, NEGATED_ATTEND)
    assert r["ft.softmax"].misconceptions == ["softmax-wrong-axis"]
    assert r["ft.attend"].score == 0
    assert r["ft.attend"].misconceptions == ["toy-grad-sign"]


def test_an_unrelated_wrong_composite_earns_no_follow_through(tmp_path):
    r = _grade(tmp_path, WRONG_AXIS_SOFTMAX, UNRELATED_ATTEND)
    assert r["ft.attend"].score == 0 and r["ft.attend"].carried == []
    assert r["ft.attend"].misconceptions == []


def test_a_composite_with_its_own_copy_of_the_mistake_is_charged(tmp_path):
    """The dependency was right: the composite's own wrong axis is its own mistake."""
    r = _grade(tmp_path, RIGHT_SOFTMAX, WRONG_AXIS_ATTEND)
    assert r["ft.softmax"].score == 4
    assert r["ft.attend"].score == 0 and r["ft.attend"].misconceptions == ["softmax-wrong-axis"]
    assert r["ft.attend"].carried == []


def test_results_and_the_class_report_count_the_mistake_once_at_its_root(tmp_path):
    from grader.reports.class_report import rank_mistakes
    from grader.reports.results_json import to_gradescope

    graded = []
    for name, parts in (
        ("ann", (WRONG_AXIS_SOFTMAX, OWN_ATTEND)),
        ("bob", (RIGHT_SOFTMAX, OWN_ATTEND)),
    ):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "ft.py").write_text("\n".join(parts))
        graded.append(
            (name, to_gradescope(grade_submission(folder, FT, limits=FAST), assignment=FT))
        )
    attend = next(t for t in graded[0][1]["tests"] if t["extra_data"]["question"] == "ft.attend")
    assert attend["extra_data"]["carried"] == [
        {"from": "ft.softmax", "misconception": "softmax-wrong-axis"}
    ]
    assert attend["extra_data"]["misconceptions"] == []
    (m,) = rank_mistakes(FT, graded)
    assert (m.id, m.students, m.root, m.dragged) == (
        "softmax-wrong-axis",
        ("ann",),
        "ft.softmax",
        (),
    )
    assert m.points_lost == pytest.approx(4) and m.returned == pytest.approx(6)


# ---------------------------------------------------------------- a2: BPTT built on the forward pass

A2_SOLUTION = (ROOT / "solutions" / "a2_rnn_bptt" / "rnn.py").read_text()
TRANSPOSED_FORWARD = A2_SOLUTION.replace(
    "h @ W_h.T + b_h  # (H,)", "h @ W_h + b_h  # (H,) the mistake"
)


def _a2(tmp_path, source: str, assignment=None):
    from grader.course import registry

    a2 = assignment or registry.load("a2")
    code = tuple(
        q
        for q in a2.questions
        if isinstance(q, CodeQuestion)
        and q.id in ("a2.rnn_forward", "a2.bptt_final_state", "a2.bptt_sequence_ce")
    )
    folder = tmp_path / "a2"
    folder.mkdir()
    (folder / "rnn.py").write_text(source)
    report = grade_submission(folder, dataclasses.replace(a2, questions=code), limits=FAST)
    return {q.question_id: q for q in report.questions}


def test_a2_a_forward_pass_mistake_is_charged_once_not_in_bptt(tmp_path):
    assert TRANSPOSED_FORWARD != A2_SOLUTION
    r = _a2(tmp_path, TRANSPOSED_FORWARD)
    assert r["a2.rnn_forward"].misconceptions == ["rnn-weights-transposed"]
    assert r["a2.rnn_forward"].score < r["a2.rnn_forward"].max_score
    for qid in ("a2.bptt_final_state", "a2.bptt_sequence_ce"):
        assert r[qid].score == pytest.approx(r[qid].max_score), r[qid].feedback
        assert r[qid].carried == [
            {"from": "a2.rnn_forward", "misconception": "rnn-weights-transposed"}
        ]
        assert r[qid].misconceptions == []


def test_a2_with_follow_through_off_the_forward_mistake_costs_bptt_too(tmp_path):
    from grader.course import registry

    r = _a2(
        tmp_path, TRANSPOSED_FORWARD, dataclasses.replace(registry.load("a2"), follow_through=0.0)
    )
    for qid in ("a2.bptt_final_state", "a2.bptt_sequence_ce"):
        assert r[qid].score < r[qid].max_score and r[qid].carried == []
        assert r[qid].misconceptions == ["rnn-weights-transposed"]


def test_a2_a_forward_mistake_and_a_bptt_mistake_are_both_named(tmp_path):
    both = TRANSPOSED_FORWARD.replace("g_h * (1.0 - Hs[t] ** 2)", "g_h * 1.0")
    assert both != TRANSPOSED_FORWARD, "the solution's tanh derivative is written differently"
    r = _a2(tmp_path, both)
    assert r["a2.rnn_forward"].misconceptions == ["rnn-weights-transposed"]
    assert r["a2.bptt_final_state"].score < r["a2.bptt_final_state"].max_score
    assert r["a2.bptt_final_state"].misconceptions == ["bptt-missing-tanh-derivative"]


# ---------------------------------------------------------------- two mistakes in one function

NEGATED_WRONG_AXIS_ATTEND = """
import numpy as np
def attend(S, V):
    e = np.exp(S - S.max(axis=0, keepdims=True))
    return -((e / e.sum(axis=0, keepdims=True)) @ V)   # two mistakes: the axis and the sign
"""


def test_two_mistakes_in_one_function_are_both_named(tmp_path):
    r = _grade(tmp_path, RIGHT_SOFTMAX, NEGATED_WRONG_AXIS_ATTEND)
    assert r["ft.softmax"].score == 4
    assert r["ft.attend"].score == 0
    assert sorted(r["ft.attend"].misconceptions) == ["softmax-wrong-axis", "toy-grad-sign"]
    assert (
        "(`softmax-wrong-axis`)" in r["ft.attend"].feedback
        and "(`toy-grad-sign`)" in r["ft.attend"].feedback
    )


def test_a2_two_bptt_mistakes_in_one_function_are_both_named(tmp_path):
    both = A2_SOLUTION.replace("g_h * (1.0 - Hs[t] ** 2)", "g_h * 1.0")
    both = both.replace("g_z[t] @ W_h", "g_z[t] @ W_h.T")
    assert both.count("g_h * 1.0") == 1 and "g_z[t] @ W_h.T" in both, (
        "the solution is written differently"
    )
    r = _a2(tmp_path, both)
    assert r["a2.rnn_forward"].score == r["a2.rnn_forward"].max_score
    assert sorted(r["a2.bptt_final_state"].misconceptions) == [
        "bptt-backward-weights-transposed",
        "bptt-missing-tanh-derivative",
    ]


# ---------------------------------------------------------------- several carried mistakes at once

A4_SOLUTION = (ROOT / "solutions" / "a4_transformer" / "transformer.py").read_text()
A4_FT = ("a4.sdpa", "a4.causal_mask", "a4.mha", "a4.layer_norm", "a4.feed_forward")
A4_BLOCKS = ("a4.encoder_block", "a4.decoder_block")


def _plant(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"the a4 solution no longer reads {old!r}"
    return source.replace(old, new)


UNBIASED_LN = (
    "var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)",
    "var = ((x - mu) ** 2).sum(axis=-1, keepdims=True) / (x.shape[-1] - 1)",
)
NO_RELU = ("hidden = np.maximum(hidden, 0.0)", "hidden = hidden")
SCALE_BY_DK = ("/ math.sqrt(d_k)  # (..., Tq, Tk)", "/ d_k  # (..., Tq, Tk)")
MERGE_NO_TRANSPOSE = (
    "    x = np.swapaxes(x, -3, -2)  # (..., T, h, d_h)\n",
    "    *lead, h, T, d_h = x.shape\n    return x.reshape(*lead, T, h * d_h)  # no transpose\n",
)


def _a4(tmp_path, source: str, follow_through: float = 1.0):
    from grader.course import registry

    a4 = registry.load("a4")
    questions = tuple(a4.question(q) for q in (*A4_FT, *A4_BLOCKS))
    folder = tmp_path / "a4"
    folder.mkdir(parents=True)
    (folder / "transformer.py").write_text(source)
    report = grade_submission(
        folder,
        dataclasses.replace(a4, questions=questions, follow_through=follow_through),
        limits=FAST,
    )
    return {q.question_id: q for q in report.questions}


@pytest.mark.parametrize(
    "plants, roots",
    [
        (
            (UNBIASED_LN, NO_RELU),
            {
                "a4.layer_norm": "layernorm-unbiased-variance",
                "a4.feed_forward": "ffn-missing-activation",
            },
        ),
        (
            (SCALE_BY_DK, UNBIASED_LN),
            {"a4.sdpa": "attention-scale-by-dk", "a4.layer_norm": "layernorm-unbiased-variance"},
        ),
        (  # multi-head attention is docked for its own mistake, on top of the carried scale
            (SCALE_BY_DK, MERGE_NO_TRANSPOSE),
            {"a4.sdpa": "attention-scale-by-dk", "a4.mha": "merge-heads-without-transpose"},
        ),
    ],
    ids=["layernorm-and-ffn", "attention-and-layernorm", "attention-and-its-heads"],
)
def test_a4_blocks_carry_two_mistakes_of_two_functions_at_once(tmp_path, plants, roots):
    """Each block builds on both docked functions: right given both, charged in neither block;
    with follow-through off, the blocks are docked."""
    source = A4_SOLUTION
    for old, new in plants:
        source = _plant(source, old, new)
    r = _a4(tmp_path, source)
    for qid, mid in roots.items():
        assert r[qid].misconceptions == [mid], r[qid].feedback
        assert r[qid].score < r[qid].max_score
    for qid in A4_BLOCKS:
        assert r[qid].score == pytest.approx(r[qid].max_score), r[qid].feedback
        assert r[qid].misconceptions == []
        got = {(c["from"], c["misconception"]) for c in r[qid].carried}
        assert set(roots.items()) <= got, r[qid].carried
    off = _a4(tmp_path / "off", source, follow_through=0.0)
    for qid in A4_BLOCKS:
        assert off[qid].score < off[qid].max_score and off[qid].carried == []


# ---------------------------------------------------------------- a1: skip-gram built on softmax

A1_SOLUTION = (ROOT / "solutions" / "a1_word_vectors" / "word_vectors.py").read_text()


@pytest.mark.parametrize(
    "loss_line",
    [None, "    loss = float(-np.log(y_hat[o]))\n"],
    ids=["loss-by-log-sum-exp", "loss-read-off-the-softmax"],
)
def test_a1_an_unstable_softmax_is_charged_once_not_in_skipgram(tmp_path, loss_line):
    """Skip-gram calls the student's softmax: without its max shift, the gradients (and a loss
    read off P) overflow on the extreme case, right given that softmax."""
    from grader.course import registry

    source = _plant_once(
        A1_SOLUTION, "    z = x - np.max(x, axis=axis, keepdims=True)\n", "    z = x\n"
    )
    if loss_line is not None:
        start = source.index("    loss = float(-(scores[o] - m")
        end = source.index("\n", start) + 1
        source = source[:start] + loss_line + source[end:]
    a1 = registry.load("a1")
    only = dataclasses.replace(
        a1, questions=(a1.question("a1.softmax"), a1.question("a1.naive_softmax"))
    )
    folder = tmp_path / "a1"
    folder.mkdir()
    (folder / "word_vectors.py").write_text(source)
    r = {q.question_id: q for q in grade_submission(folder, only, limits=FAST).questions}
    assert r["a1.softmax"].misconceptions == ["softmax-unstable"]
    assert r["a1.softmax"].score < r["a1.softmax"].max_score
    skipgram = r["a1.naive_softmax"]
    assert skipgram.score == pytest.approx(skipgram.max_score), skipgram.feedback
    assert skipgram.carried == [{"from": "a1.softmax", "misconception": "softmax-unstable"}]
    off = dataclasses.replace(only, follow_through=0.0)
    (r_off,) = [
        q
        for q in grade_submission(folder, off, limits=FAST).questions
        if q.question_id == "a1.naive_softmax"
    ]
    assert r_off.score < r_off.max_score and r_off.misconceptions == ["softmax-unstable"]


def _plant_once(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, f"the solution no longer reads {old!r}"
    return source.replace(old, new)


# ---------------------------------------------------------------- the carried mistakes run first


def _counted(calls: list[str], mid: str, f):
    def run(*args, **kwargs):
        calls.append(mid)
        return f(*args, **kwargs)

    return run


def _counting_attend(calls: list[str]) -> Assignment:
    mutants = {mid: _counted(calls, mid, f) for mid, f in ATTEND.mutants.items()}
    attend = dataclasses.replace(ATTEND, mutants=mutants)
    return dataclasses.replace(FT, questions=(SOFTMAX, attend))


def test_a_case_the_carried_mistake_reproduces_runs_none_of_the_questions_own(tmp_path):
    """Follow-through takes such a case as it is, so the composite's own mistakes (which could
    not change that) are not run on it."""
    calls: list[str] = []
    r = _grade(tmp_path, WRONG_AXIS_SOFTMAX, OWN_ATTEND, assignment=_counting_attend(calls))
    assert r["ft.attend"].carried == [{"from": "ft.softmax", "misconception": "softmax-wrong-axis"}]
    assert r["ft.attend"].misconceptions == []
    assert calls and set(calls) == {"softmax-wrong-axis"}, calls


def test_a_case_the_carried_mistake_does_not_reproduce_is_diagnosed_by_them_all(tmp_path):
    calls: list[str] = []
    r = _grade(tmp_path, RIGHT_SOFTMAX, NEGATED_ATTEND, assignment=_counting_attend(calls))
    assert r["ft.attend"].misconceptions == ["toy-grad-sign"]
    assert "toy-grad-sign" in calls
    calls.clear()
    (tmp_path / "2").mkdir()
    r = _grade(
        tmp_path / "2", WRONG_AXIS_SOFTMAX, NEGATED_ATTEND, assignment=_counting_attend(calls)
    )
    assert {"softmax-wrong-axis", "toy-grad-sign"} <= set(calls), calls
    assert r["ft.attend"].misconceptions == ["toy-grad-sign"]


def _every_mistake_at_once(q, case, got, want, carried):
    """The search before the carried mistakes went first: every mistake, in the catalog order."""
    from grader.engine.judged import explain_case

    return explain_case(q, case, got, want, q.mutants)


@pytest.mark.parametrize(
    "plants",
    [(SCALE_BY_DK,), (SCALE_BY_DK, MERGE_NO_TRANSPOSE), (UNBIASED_LN, NO_RELU)],
    ids=["attention", "attention-and-its-heads", "layernorm-and-ffn"],
)
def test_a4_running_the_carried_mistakes_first_changes_no_result(tmp_path, monkeypatch, plants):
    """The same scores, names, notes and case records as running every mistake on every case."""
    from grader.engine import code

    first, every = _a4_with_and_without(
        tmp_path, plants, lambda: monkeypatch.setattr(code, "_explanations", _every_mistake_at_once)
    )
    assert any(r.carried for r in every.values())
    for qid, r in every.items():
        assert first[qid] == r, qid


def _a4_with_and_without(tmp_path, plants, undo):
    """The a4 solution with `plants`, graded as it is and again after `undo()` (a patch that puts
    back the earlier way of judging)."""
    source = A4_SOLUTION
    for old, new in plants:
        source = _plant(source, old, new)
    now = _a4(tmp_path / "now", source)
    undo()
    return now, _a4(tmp_path / "before", source)


def test_a_carried_mistake_matching_only_nan_outputs_leaves_the_full_search():
    """A match on outputs NaN everywhere may be dropped later (no finite output anywhere), so it
    cannot settle the case: every mistake is run, as before."""
    from grader.engine import code
    from grader.engine.judged import explain_case

    def nan(S, V):
        return np.full((len(S), 2), np.nan)

    q = dataclasses.replace(ATTEND, mutants={"softmax-wrong-axis": nan, "toy-grad-sign": nan})
    case = _attend_cases(0)[0]
    want = attend_ref(*case.args)
    got = np.full_like(want, np.nan)
    full = explain_case(q, case, got, want, q.mutants)
    assert [e.misconception for e in full] == ["softmax-wrong-axis", "toy-grad-sign"]
    assert all(e.blank for e in full)
    assert code._explanations(q, case, got, want, {"softmax-wrong-axis"}) == full


# ------------------------------------------- a re-run with the reference's functions goes first

SHIFTED_SOFTMAX = """
import numpy as np
def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True) + 0.01   # a mistake no catalog entry describes
"""


def test_a_case_a_stand_in_rerun_makes_right_runs_none_of_the_questions_mistakes(tmp_path):
    """No mistake was named in softmax, so none is carried: attend's wrong cases are re-run with
    the reference's softmax, and right there, attend's own mistakes are never looked for."""
    calls: list[str] = []
    r = _grade(tmp_path, SHIFTED_SOFTMAX, OWN_ATTEND, assignment=_counting_attend(calls))
    assert r["ft.softmax"].score < r["ft.softmax"].max_score
    assert r["ft.softmax"].misconceptions == []
    assert r["ft.attend"].score == pytest.approx(r["ft.attend"].max_score)
    assert calls == []


def test_a_case_the_stand_in_rerun_leaves_wrong_is_diagnosed_as_before(tmp_path):
    calls: list[str] = []
    r = _grade(tmp_path, SHIFTED_SOFTMAX, NEGATED_ATTEND, assignment=_counting_attend(calls))
    assert r["ft.attend"].misconceptions == ["toy-grad-sign"]
    assert "toy-grad-sign" in calls


SDPA_SHIFTED = ("    return weights @ V, weights\n", "    return weights @ V + 0.01, weights\n")


@pytest.mark.parametrize(
    "plants",
    [(SDPA_SHIFTED,), (SDPA_SHIFTED, MERGE_NO_TRANSPOSE), (SDPA_SHIFTED, NO_RELU)],
    ids=["attention-shifted", "shifted-and-its-heads", "shifted-and-ffn"],
)
def test_a4_diagnosing_after_the_stand_in_reruns_changes_no_result(tmp_path, monkeypatch, plants):
    """The same scores, names, notes and case records as diagnosing every wrong case first."""
    from grader.engine import follow

    later, first = _a4_with_and_without(
        tmp_path, plants, lambda: monkeypatch.setattr(follow, "may_stand_in", lambda *a: False)
    )
    assert any("replaced by the reference" in str(c) for r in first.values() for c in r.cases)
    for qid, r in first.items():
        assert later[qid] == r, qid


def test_a_case_no_mistake_explains_is_searched_for_combinations_once(tmp_path, monkeypatch):
    """The search of two or three mistakes at once, the costliest part of a diagnosis, runs
    once per wrong case, and finds nothing here: no mistake is named."""
    from grader.engine import code

    searches: list[str] = []
    search = code._together_search

    def counted(q, case, *rest):
        searches.append(case.name)
        return search(q, case, *rest)

    monkeypatch.setattr(code, "_together_search", counted)
    r = _grade(tmp_path, RIGHT_SOFTMAX, UNRELATED_ATTEND)
    wrong = [c for c in r["ft.attend"].cases if c.summary.category.name != "PASSED"]
    assert len(wrong) == 3 and r["ft.attend"].misconceptions == []
    assert sorted(searches) == sorted(c.name for c in _attend_cases(0)), searches
