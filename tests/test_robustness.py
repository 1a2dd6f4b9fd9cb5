"""The grader always finishes, writes results and leaks nothing of a hidden case (issue 15, items 5, 7, 9, 10, 11).

Every attack is a student's doing: it must cost only what it touched, with a plain message, and
never read as "the grader itself failed".
"""

from __future__ import annotations

import dataclasses
import re
import time

import numpy as np
import pytest
import toy_assignment as toy
from conftest import ROOT

from grader import sandbox
from grader.course import registry
from grader.engine import code as engine_code
from grader.engine import grade as engine_grade
from grader.engine.checks import compare
from grader.engine.code import BUDGET_SPENT, CodeContext, syntax_problem
from grader.engine.diagnosis import explain
from grader.engine.grade import grade_submission
from grader.engine.locate import Located
from grader.engine.trusted import run_trusted
from grader.questions import Case, CodeQuestion, Judgement, Tolerance, WrittenQuestion
from grader.records import QuestionResult, case_lines, question_markdown
from grader.sandbox.session import CallOutcome, Failure
from grader.written.answers import parse_answers

FAST = sandbox.Limits(call_seconds=5.0, submission_seconds=60.0)
OURS = ("grader itself failed", "not your mistake")


def assert_students_fault(report) -> None:
    assert report.grader_error is None
    for q in report.questions:
        assert not any(words in q.feedback for words in OURS), (q.question_id, q.feedback)


# ---------------------------------------------------------------------------- item 5: hidden cases


def _leaves(x) -> list[float]:
    if isinstance(x, dict):
        return [v for item in x.values() for v in _leaves(item)]
    if isinstance(x, (tuple, list)):
        return [v for item in x for v in _leaves(item)]
    if isinstance(x, np.ndarray) and x.dtype.kind in "biuf":
        return [float(v) for v in x.reshape(-1)[:200]]
    if isinstance(x, (int, float)) and not isinstance(x, bool):
        return [float(x)]
    return []


def _garbage(want, shift: bool):
    """A wrong output of the right structure: zeros, or the expected values shifted by 0.1592."""
    if isinstance(want, dict):
        return {k: _garbage(v, shift) for k, v in want.items()}
    if isinstance(want, tuple) and not all(isinstance(v, (int, str)) for v in want):
        return tuple(_garbage(v, shift) for v in want)
    if isinstance(want, np.ndarray):
        if want.dtype == bool:
            return ~want
        return (
            want + (0.1592 if shift else 0) if want.dtype.kind == "f" else np.zeros_like(want) + 7
        )
    if isinstance(want, bool):
        return not want
    if isinstance(want, float):
        return want + 0.1592 if shift else 0.0
    if isinstance(want, int):
        return want + 7
    if isinstance(want, (list, tuple, str)):
        return ["zz"]
    return None


def _fmt(x: float) -> str:
    return f"{float(x):.4g}"


# What a student may see of a wrong hidden case: its label, then only fixed words.
_FIXED = r"(wrong type or structure|wrong shape|NaN or inf|values differ|differs)"
_SAFE_TAIL = re.compile(rf"^(: ((`[^`]+`: {_FIXED})(; `[^`]+`: {_FIXED})*|{_FIXED}))?$")


def _hidden_records(aid: str):
    assignment = registry.load(aid)
    for q in assignment.questions:
        if not isinstance(q, CodeQuestion) or q.custom is not None:
            continue
        for case in q.cases(12345):
            if case.visible:
                continue
            want = run_trusted(q.reference, case)
            for shift in (False, True):
                got = _garbage(want, shift)
                mismatches = compare(got, want, q.tolerance, exact=q.integer, names=q.output_names)
                if mismatches:
                    yield (
                        q,
                        case,
                        engine_code._mismatch_record(case, mismatches, got, want),
                    )


@pytest.mark.parametrize("aid", registry.ASSIGNMENT_IDS)
def test_a_wrong_hidden_case_shows_its_label_and_fixed_words_only(aid):
    checked = 0
    for q, case, record in _hidden_records(aid):
        checked += 1
        result = QuestionResult(
            question_id=q.id,
            title=q.title,
            number="1",
            kind="code",
            function=q.function,
            score=0.0,
            max_score=q.points,
            visibility="visible",
            cases=[record],
        )
        (line,) = case_lines(result)
        prefix = f"- ✘ {case.name}"
        assert line.startswith(prefix), line
        assert _SAFE_TAIL.match(line[len(prefix) :]), line
        names = {n for n, _ in record.summary.outputs}
        assert names <= set(q.output_names) | {n for n in names if n.startswith(("[", "'"))}
        full = "\n".join(case_lines(result, instructor=True))
        assert "got:" in full and "expected:" in full  # the instructor sees everything
    assert checked > 0


def test_a_visible_case_shows_where_and_how_much():
    w = np.arange(12.0).reshape(3, 4)
    (m,) = compare(w + 0.1592, w)
    assert m.message == "12 of 12 entries differ (largest error 0.1592 at index (0, 2))"


def test_hidden_cases_in_a_graded_submission_say_values_differ_and_nothing_of_the_output(
    submit,
):
    wrong = toy.NUMPY_SOLUTION.replace(
        "return x @ W.T + b", "return np.zeros((x.shape[0], W.shape[0])) + 0.1592"
    )
    report = grade_submission(submit({"toy.py": wrong}), toy.ASSIGNMENT, limits=FAST)
    linear = next(q for q in report.questions if q.question_id == "toy.linear")
    fb = linear.feedback
    assert fb.count("values differ") == 3 and "0.1592" not in fb and "got:" not in fb
    assert "largest error" not in fb and "entries differ" not in fb and "expected:" not in fb
    full = question_markdown(linear, instructor=True)
    assert "got: shape (2, 3): [0.1592" in full and "largest error" in full


# ---------------------------------------------------------------------------- item 9: bounded comparison


def test_an_output_far_larger_than_expected_is_rejected_as_a_wrong_shape_without_conversion():
    want = np.zeros((3, 4))
    huge = np.zeros(10_000_000, dtype=bool)
    started = time.perf_counter()
    (m,) = compare(huge, want)
    array_seconds = time.perf_counter() - started
    assert m.reason == "shape" and m.message == "expected shape (3, 4), got (10000000,)"
    long_list = [0.5] * 2_000_000
    started = time.perf_counter()
    (m,) = compare(long_list, want)
    list_seconds = time.perf_counter() - started
    assert m.reason == "shape" and "(2000000,)" in m.message
    ragged = [[0.5] * 4, [0.5] * 4, [0.5] * 2_000_000]
    (m,) = compare(ragged, want)
    assert m.reason == "type" and "ragged" in m.message
    # and the diagnosis: a NONFINITE mutant reads the array without a float64 copy
    from grader.mutants import NONFINITE

    started = time.perf_counter()
    found = explain(huge, want, (), {}, {"overflow": lambda: NONFINITE}, Tolerance())
    explain_seconds = time.perf_counter() - started
    assert found == []
    print(
        f"\n10M bool vs (3, 4): {1000 * array_seconds:.1f} ms; 2M list: {1000 * list_seconds:.1f} ms; "
        f"diagnosis: {1000 * explain_seconds:.1f} ms"
    )
    assert array_seconds < 0.5 and list_seconds < 0.5 and explain_seconds < 2.0


def test_36k_answer_keys_are_read_in_linear_time():
    text = "\n".join(f"k{i} = {i}" for i in range(36_000))
    started = time.perf_counter()
    sheet = parse_answers(text)
    seconds = time.perf_counter() - started
    print(f"\n36k keys: {seconds:.2f} s")  # 243 s before (one scan of the file per key)
    assert len(sheet.entries) == 36_000 and sheet.get("k35999").line == 36_000
    assert seconds < 30


# ---------------------------------------------------------------------------- item 7 and 11: written answers


def _written_only(aid: str):
    a = registry.load(aid)
    return dataclasses.replace(
        a, questions=tuple(q for q in a.questions if isinstance(q, WrittenQuestion))
    )


A1_ANSWERS = (ROOT / "solutions" / "a1_word_vectors" / "answers.toml").read_text()


@pytest.mark.parametrize(
    "value, words",
    [
        ('"1/1e999999999"', "exponent out of range"),
        ('"1e10000000"', "exponent out of range"),
        ('"1/1e10000000"', "exponent out of range"),
        ('"1/' + "7" * 5000 + '"', "5000 digits"),
        ('"' + "3" * 5000 + "/" + "7" * 5000 + '"', "5000 digits"),
        ("7" * 5000, "could not be read"),
    ],
    ids=[
        "1e999999999",
        "1e7-exponent",
        "fraction-1e7",
        "5000-digit-denominator",
        "5000-digit-fraction",
        "5000-digit-int",
    ],
)
def test_huge_numbers_cost_only_their_key_within_seconds(submit, value, words):
    answers = re.sub(r"(?m)^noise_probability = .*$", f"noise_probability = {value}", A1_ANSWERS)
    started = time.monotonic()
    report = grade_submission(submit({"answers.toml": answers}), _written_only("a1"))
    seconds = time.monotonic() - started
    assert seconds < 30, seconds
    assert_students_fault(report)
    by_key = {q.question_id: q for q in report.questions}
    noise = by_key.pop("a1.w_noise_probability")
    assert noise.score == 0 and words in noise.feedback, noise.feedback
    assert all(q.score == q.max_score for q in by_key.values()), [
        q.feedback for q in by_key.values()
    ]


@pytest.mark.parametrize(
    "line",
    [
        "deep = " + "[" * 50_000 + "]" * 50_000,
        "deep = " + "{a=" * 50_000 + "1" + "}" * 50_000,
        "deep" + ".a" * 50_000 + " = 1",
        "[" + "a." * 50_000 + "a]\nx = 1",
    ],
    ids=["arrays", "inline-tables", "dotted-key", "table-header"],
)
def test_answers_nested_50k_deep_cost_only_their_line(submit, line):
    answers = (
        line + "\n" + A1_ANSWERS if line.startswith("[") is False else A1_ANSWERS + "\n" + line
    )
    started = time.monotonic()
    report = grade_submission(submit({"answers.toml": answers}), _written_only("a1"))
    assert time.monotonic() - started < 30
    assert_students_fault(report)
    assert report.score == report.max_score, [q.feedback for q in report.questions]


def test_written_grading_has_its_own_wall_clock_limit(submit, monkeypatch):
    monkeypatch.setattr(engine_grade, "WRITTEN_SECONDS", 0.0)
    report = grade_submission(submit({"answers.toml": A1_ANSWERS}), _written_only("a1"))
    assert_students_fault(report)
    assert len(report.questions) == 7 and report.score == 0
    assert all("took longer than 0 s" in q.feedback for q in report.questions)


# ---------------------------------------------------------------------------- item 10: the submission's budget


class _ClosedSession:
    """A worker whose pipes the sandbox closed at its own deadline (the budget is spent)."""

    import_failure = None

    def remaining(self) -> float:
        return 0.2

    def call(self, *a, **k):
        raise ValueError("write to closed file")


def test_a_call_on_pipes_closed_by_the_budget_reads_not_run():
    q = toy.ASSIGNMENT.question("toy.linear")
    outcome = engine_code._call(q, _ClosedSession(), Case("c", ()))
    assert outcome.failure.kind == "budget" and outcome.failure.message == BUDGET_SPENT


def test_running_past_the_budget_keeps_what_was_graded(submit, monkeypatch):
    slow = (
        toy.NUMPY_SOLUTION
        + "\nimport time\n_fast = linear\ndef linear(x, W, b):\n    time.sleep(1.2)\n"
        "    return _fast(x, W, b)\n"
    )
    from grader.sandbox.session import WorkerSession

    real_close = WorkerSession.close

    def close(self):  # the sandbox's own deadline closed the pipes first
        real_close(self)
        raise ValueError("write to closed file")

    monkeypatch.setattr(WorkerSession, "close", close)
    report = grade_submission(
        submit({"toy.py": slow}),
        toy.ASSIGNMENT,
        limits=sandbox.Limits(call_seconds=3.0, submission_seconds=3.0),
    )
    assert_students_fault(report)
    by = {q.question_id: q for q in report.questions}
    assert by["toy.softmax"].score == 4  # graded before the budget ran out: kept
    assert 0 < by["toy.linear"].score < 3
    for qid in ("toy.quad", "toy.norm"):
        assert by[qid].score == 0 and BUDGET_SPENT in by[qid].feedback, by[qid].feedback
    assert "restarted too many times" not in str([q.feedback for q in report.questions])


@pytest.mark.slow
def test_written_answers_are_graded_whatever_the_code_budget(submit):
    source = (ROOT / "solutions" / "a1_word_vectors" / "word_vectors.py").read_text()
    source = re.sub(r"(?m)^(def \w+\(.*\):\n)", r"\1    __import__('time').sleep(1.5)\n", source)
    report = grade_submission(
        submit({"word_vectors.py": source, "answers.toml": A1_ANSWERS}),
        registry.load("a1"),
        limits=sandbox.Limits(call_seconds=3.0, submission_seconds=4.0),
    )
    assert_students_fault(report)
    written = [q for q in report.questions if q.kind == "written"]
    assert written and all(q.score == q.max_score for q in written)
    assert any(BUDGET_SPENT in q.feedback for q in report.questions if q.kind == "code")


# ---------------------------------------------------------------------------- item 11: forged frames and such

_FORGE = """
import os, struct
def _forge(frame):
    for fd in range(3, 256):
        try:
            os.write(fd, frame)
        except OSError:
            pass
def _frame(body):
    return struct.pack(">II", len(body), 0) + body
"""

ATTACKS = {
    "bad-json": _FORGE
    + "def linear(x, W, b):\n    _forge(_frame(b'{not json'))\n    return x @ W.T + b\n",
    "deep-nesting": _FORGE
    + "def linear(x, W, b):\n    _forge(_frame(b'{\"ok\": true, \"value\": ' + b'[' * 200000 "
    "+ b']' * 200000 + b'}'))\n    return x @ W.T + b\n",
    "huge-header": _FORGE
    + "def linear(x, W, b):\n    _forge(struct.pack('>II', 0xFFFFFFF0, 0xFFFFFFF0))\n"
    "    return x @ W.T + b\n",
    "10**400": "def linear(x, W, b):\n    return 10**400\n",
    "garbage-to-every-fd": "import os\ndef linear(x, W, b):\n    for fd in range(0, 256):\n        try:\n"
    "            os.write(fd, b'\\xff' * 70000)\n        except OSError:\n            pass\n"
    "    return x @ W.T + b\n",
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_a_forged_or_hostile_reply_costs_only_its_question(submit, attack):
    report = grade_submission(
        submit({"toy.py": toy.NUMPY_SOLUTION + ATTACKS[attack]}),
        toy.ASSIGNMENT,
        limits=FAST,
    )
    assert_students_fault(report)
    by = {q.question_id: q for q in report.questions}
    assert by["toy.linear"].score == 0, by["toy.linear"].feedback
    assert all(by[q].score == by[q].max_score for q in ("toy.softmax", "toy.quad", "toy.norm")), [
        q.feedback for q in report.questions
    ]


def test_a_100k_term_expression_in_the_source_is_the_students_file_problem(submit):
    source = toy.NUMPY_SOLUTION + "\nX = " + "+".join(["1"] * 100_000) + "\n"
    assert "too deeply nested" in syntax_problem("toy.py", source)
    report = grade_submission(submit({"toy.py": source}), toy.ASSIGNMENT, limits=FAST)
    assert_students_fault(report)
    assert report.score == 0 and all("too deeply nested" in q.feedback for q in report.questions)


# ---------------------------------------------------------------------------- the engine's own failures stay visible


def test_a_mutant_that_does_not_apply_is_skipped_but_a_bug_in_one_is_not_hidden():
    want, got = np.ones(3), np.zeros(3)

    def not_applicable(*a):
        return np.ones((2, 2)) @ np.ones((3, 3))  # shapes that do not fit: ValueError

    def buggy(*a):
        raise KeyError("a typo in the suite")

    assert explain(got, want, (), {}, {"x": not_applicable}, Tolerance()) == []
    with pytest.raises(KeyError):
        explain(got, want, (), {}, {"x": buggy}, Tolerance())


def test_a_non_finite_score_counts_as_zero(submit, monkeypatch):
    from grader.engine import instructor_tests

    nan_test = QuestionResult(
        question_id="unittest:t",
        title="t",
        number="5",
        kind="instructor",
        function=None,
        score=float("nan"),
        max_score=1.0,
        visibility="visible",
    )
    monkeypatch.setattr(instructor_tests, "run", lambda *a, **k: [nan_test])
    report = grade_submission(
        submit({"toy.py": toy.NUMPY_SOLUTION}),
        toy.ASSIGNMENT,
        limits=FAST,
        instructor_tests=[("test_x.py", "")],
    )
    assert report.score == 10 and np.isfinite(report.score)


# ---------------------------------------------------------------------------- the custom judge hook


def _count_judge(cases, outputs) -> Judgement:
    ran = [o for o in outputs if o is not None]
    return Judgement(
        checks=[("every call returned", len(ran) == len(outputs), f"{len(ran)} of {len(outputs)}")],
        how="a test judge",
    )


def test_the_engine_calls_a_custom_questions_cases_and_handles_their_failures(submit):
    q = CodeQuestion(
        id="toy.custom",
        title="custom",
        points=4,
        file="toy.py",
        function="quad",
        reference=lambda x: None,
        cases=lambda seed: [Case("ok", (np.ones(2),)), Case("bad", ("x",))],
        custom=_count_judge,
    )
    assignment = dataclasses.replace(toy.ASSIGNMENT, questions=(q,))
    report = grade_submission(submit({"toy.py": toy.NUMPY_SOLUTION}), assignment, limits=FAST)
    (r,) = report.questions
    assert r.score == 0 and "**0/1 checks passed** (a test judge)." in r.feedback
    # every case hidden: the failed call by its built-in exception, the check without its detail
    assert "- ✘ bad: raised `TypeError` in `quad`" in r.feedback
    assert "- ✘ every call returned\n" in r.feedback + "\n" and "1 of 2" not in r.feedback
    full = question_markdown(r, instructor=True)
    assert "- ✘ bad (hidden): `TypeError" in full and "every call returned (hidden): 1 of 2" in full
    stub = "def quad(x):\n    raise NotImplementedError\n"
    (r,) = grade_submission(submit({"toy.py": stub}, "stub"), assignment, limits=FAST).questions
    assert r.not_attempted and r.score == 0


def test_a_call_failure_is_not_a_grader_failure():
    outcome = CallOutcome(failure=Failure("bad-output", "`f` returned data that could not be read"))
    q = toy.ASSIGNMENT.question("toy.linear")
    result = QuestionResult(
        question_id=q.id,
        title=q.title,
        number="1",
        kind="code",
        function=q.function,
        score=0.0,
        max_score=q.points,
        visibility="visible",
    )
    ctx = CodeContext(Located(), "", None, None, 0)
    engine_code._judge_compared(q, [Case("c", ())], [outcome], result, ctx)
    assert result.score == 0 and "could not read" in result.feedback and result.error is None


def test_exact_comparisons_of_odd_returns_are_mismatches_not_errors():
    assert compare(np.array(3), [1, 2])[0].message == "differs (got 3)"
    assert (
        compare(np.arange(10_000_000), [1, 2])[0].reason == "structure"
    )  # far longer than expected: not converted
    assert compare(10**400, 3.0)[0].message == "value differs (got an integer of 401 digits)"
    assert compare(np.array([1, 2]), [1, 2]) == []


def test_a_whole_number_is_shown_in_full_and_a_negative_zero_as_zero():
    """GPT-2 small's block has 7,087,872 parameters: a count 1,536 short must not read as
    7.086e+06, nor the reference's -0.0 as "-0" beside a student's 0."""
    (wrong,) = compare({"per_block": 7086336}, {"per_block": 7087872})
    assert wrong.message == "`'per_block'`: value differs (got 7086336)"
    assert compare(-0.0, 1.0)[0].message == "value differs (got 0)"
    assert compare(2.5e20, 1.0)[0].message == "value differs (got 2.5e+20)"
    assert compare(0.1234567, 1.0)[0].message == "value differs (got 0.1235)"


def test_a_hidden_case_with_nan_says_nan_and_shows_the_output_to_instructors_only():
    want = np.array([0.2, 0.3, 0.5])
    got = np.array([np.nan, 0.3, np.inf])
    q = toy.ASSIGNMENT.question("toy.softmax")
    case = Case("hidden case 1", (want,))
    record = engine_code._mismatch_record(case, compare(got, want), got, want)
    result = QuestionResult(
        question_id=q.id,
        title=q.title,
        number="1",
        kind="code",
        function=q.function,
        score=0.0,
        max_score=q.points,
        visibility="visible",
        cases=[record],
    )
    assert case_lines(result) == ["- ✘ hidden case 1: NaN or inf"]
    (full,) = case_lines(result, instructor=True)
    assert "2 entries are NaN or inf" in full and "got: shape (3,): [nan, 0.3, inf]" in full


# ---------------------------------------------------------------------------- threads left behind

MEMORY_HOG = """

def naive_softmax_loss_and_gradient(v_c, o, U):
    import threading, time
    full = threading.Event()
    def hog():  # every byte of address space it can get, held by a thread that outlives the call
        held, size = [], 8 << 20
        while size >= 4096:
            try:
                held.append(np.zeros(size // 8))
            except MemoryError:
                size //= 2
        full.set()
        time.sleep(120)
    threading.Thread(target=hog, daemon=True).start()
    full.wait(10)
    raise RuntimeError("gave up")
"""


def _grade_memory_hog_report(submit):
    a1 = registry.load("a1")
    code_only = dataclasses.replace(
        a1, questions=tuple(q for q in a1.questions if q.kind == "code")
    )
    source = (ROOT / "solutions" / "a1_word_vectors" / "word_vectors.py").read_text() + MEMORY_HOG
    report = grade_submission(submit({"word_vectors.py": source}), code_only, limits=FAST)
    assert_students_fault(report)
    return report


def _grade_memory_hog(submit) -> dict[str, float]:
    report = _grade_memory_hog_report(submit)
    return {q.question_id: q.score / q.max_score for q in report.questions}


def test_threads_a_failed_function_leaves_running_cost_only_that_function(submit):
    """A function that fails with a thread still holding the worker's memory: the worker is
    replaced before the next question, which is graded as if nothing happened."""
    shares = _grade_memory_hog(submit)
    assert shares.pop("a1.naive_softmax") == 0.0
    assert set(shares.values()) == {1.0}, shares


def test_control_without_the_restart_the_threads_memory_costs_the_next_questions(
    submit, monkeypatch
):
    from grader.sandbox import session

    monkeypatch.setattr(session, "_threads_of", lambda reply: 0)  # the worker's count unread
    report = _grade_memory_hog_report(submit)
    lost = {
        q.question_id: q.feedback
        for q in report.questions
        if q.question_id != "a1.naive_softmax" and q.score < q.max_score
    }
    assert len(lost) >= 2, lost
    # ... and what they lost was memory (a call's MemoryError, or the process ended at its limit)
    assert all("MemoryError" in f or "memory limit" in f for f in lost.values()), lost


def test_a_request_that_does_not_fit_beside_the_threads_memory_is_a_memory_error(
    submit, monkeypatch
):
    """With no restart for threads left, the thread stays and holds the memory: a later call's
    arrays that no longer fit are that call's MemoryError; the worker keeps serving (it used to
    end reading them, and its replacement cost the crash budget)."""
    from grader.sandbox import session

    monkeypatch.setattr(session, "MAX_THREAD_RESTARTS", 0)
    report = _grade_memory_hog_report(submit)
    by = {q.question_id: q for q in report.questions}
    neg = by["a1.neg_sampling"]
    assert "raised `MemoryError` in `neg_sampling_loss_and_gradient`" in neg.feedback, neg.feedback
    assert "ended during `neg_sampling" not in neg.feedback
    assert not any("restarted the submission's process" in e for e in report.event_details)


def test_an_allocation_numpy_refuses_is_a_memory_error(submit):
    """numpy says it is out of memory with its own subclass of MemoryError (`_ArrayMemoryError`,
    not one of Python's built-in exceptions): the student reads `MemoryError` and the limit."""
    a1 = registry.load("a1")
    question = next(q for q in a1.questions if q.kind == "code" and q.function == "softmax")
    only = dataclasses.replace(a1, questions=(question,))
    source = (ROOT / "solutions" / "a1_word_vectors" / "word_vectors.py").read_text() + (
        "\n\ndef softmax(*args, **kwargs):\n    return np.empty((1 << 22, 1 << 22))\n"
    )
    report = grade_submission(submit({"word_vectors.py": source}), only, limits=FAST)
    assert_students_fault(report)
    (q,) = report.questions
    assert q.score == 0.0
    assert "`MemoryError`" in q.feedback and "memory limit" in q.feedback, q.feedback
    assert "not one of Python's built-in exceptions" not in q.feedback


def test_with_no_restart_left_threads_never_turn_later_questions_into_not_run(submit, monkeypatch):
    from grader.sandbox import session

    monkeypatch.setattr(session, "MAX_RESTARTS", 0)
    a1 = registry.load("a1")
    code_only = dataclasses.replace(
        a1, questions=tuple(q for q in a1.questions if q.kind == "code")
    )
    source = (ROOT / "solutions" / "a1_word_vectors" / "word_vectors.py").read_text() + MEMORY_HOG
    report = grade_submission(submit({"word_vectors.py": source}), code_only, limits=FAST)
    assert not any("restarted too many times" in q.feedback for q in report.questions)
    # the threads' restart has a budget of its own: with no crash restart left, it still happens
    shares = {q.question_id: q.score / q.max_score for q in report.questions}
    assert shares.pop("a1.naive_softmax") == 0.0
    assert set(shares.values()) == {1.0}, shares


# ---------------------------------------------------------------------------- outputs far too large


class _Untouchable(np.ndarray):
    """An array that fails if anything converts, copies or iterates over it."""

    def tolist(self):  # noqa: D102
        raise AssertionError("converted")

    def __iter__(self):
        raise AssertionError("iterated")


def test_an_output_far_larger_than_expected_is_rejected_before_anything_reads_it():
    huge = np.zeros(10_000_000, dtype=bool).view(_Untouchable)
    for want in ("king", ["king", "queen"], (np.zeros(3), 1.0), {"a": np.zeros(2)}, 3.5):
        (m,) = compare(huge, want)
        assert m.reason == "structure" and "10000000 values" in m.message
    (m,) = compare(huge, np.zeros((3, 4)))
    assert m.reason == "shape" and m.message == "expected shape (3, 4), got (10000000,)"
    assert compare([0.0] * 200_000, [1.0, 2.0])[0].reason == "structure"
    assert compare(np.zeros(5), np.zeros(5)) == []  # an output of the right size is compared


def test_a_huge_legal_return_costs_only_its_question(submit):
    assignment = registry.load("a1_word_vectors")
    only = dataclasses.replace(
        assignment, questions=tuple(q for q in assignment.questions if q.id == "a1.analogy")
    )
    source = (ROOT / "solutions" / assignment.id / assignment.code_file).read_text()
    source += (
        "\n\ndef analogy(*args, **kwargs):\n"
        "    import numpy\n    return numpy.zeros(10_000_000, dtype=bool)\n"
    )
    report = grade_submission(submit({assignment.code_file: source}), only)
    (q,) = report.questions
    assert q.score == 0 and not report.grader_error and q.misconceptions == []
    assert "returned 10000000 values where" in q.feedback  # the visible case says so
    assert ": wrong type or structure" in q.feedback


def test_questions_left_when_the_restarts_are_spent_say_so_not_an_import_failure(
    submit, monkeypatch
):
    """A function that crashes its process, with no restart left: the later questions are not
    run, and their feedback says the restarts ran out, not that importing the file failed (it
    never did)."""
    from grader.sandbox import session

    monkeypatch.setattr(session, "MAX_RESTARTS", 0)
    a1 = registry.load("a1")
    code_only = dataclasses.replace(
        a1, questions=tuple(q for q in a1.questions if q.kind == "code")
    )
    source = (ROOT / "solutions" / "a1_word_vectors" / "word_vectors.py").read_text()
    source += "\n\ndef softmax(x, axis=-1):\n    import os\n    os._exit(3)\n"
    report = grade_submission(submit({"word_vectors.py": source}), code_only, limits=FAST)
    later = [q for q in report.questions if q.question_id != "a1.softmax"]
    assert later and all(q.score == 0 for q in later)
    spent = [q for q in later if "restarted too many times after earlier calls" in q.feedback]
    assert spent, [q.feedback[:200] for q in later]
    assert not any("ended while importing" in q.feedback for q in report.questions)
