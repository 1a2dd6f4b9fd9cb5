"""The engine on the tests' own toy assignment: styles, failures, diagnosis, shortcuts, determinism."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import toy_assignment as toy

from grader import sandbox
from grader.engine.grade import grade_submission
from grader.records import question_markdown
from grader.reports.results_json import SCHEMA, to_gradescope

FAST = sandbox.Limits(call_seconds=3.0, submission_seconds=40.0)


def grade(path: Path, **kw):
    return grade_submission(path, toy.ASSIGNMENT, limits=kw.pop("limits", FAST), **kw)


def scores(report) -> dict[str, float]:
    return {q.question_id: q.score for q in report.questions}


@pytest.mark.parametrize(
    "source",
    [toy.NUMPY_SOLUTION, toy.TORCH_SOLUTION, toy.LISTS_SOLUTION],
    ids=["numpy", "torch-float32", "lists"],
)
def test_correct_submission_in_three_styles_gets_full_marks(submit, source):
    report = grade(submit({"toy.py": source}))
    assert report.score == report.max_score == 10, [q.feedback for q in report.questions]
    assert all(not q.misconceptions for q in report.questions)


def test_results_json_validates_and_has_gradescopes_fields(submit):
    data = to_gradescope(grade(submit({"toy.py": toy.NUMPY_SOLUTION})))
    jsonschema.validate(data, SCHEMA)
    json.dumps(data, allow_nan=False)
    assert data["extra_data"]["assignment"] == "toy"
    first = data["tests"][0]
    extra = dict(first["extra_data"])
    assert [c["category"] for c in extra.pop("cases")] == ["passed"] * 4  # for instructors
    assert extra == {
        "question": "toy.softmax",
        "kind": "code",
        "function": "softmax",
        "misconceptions": [],
    }
    assert first["output_format"] == "md" and first["status"] == "passed"


def test_stub_is_not_attempted_everywhere(submit):
    report = grade(submit({"toy.py": toy.STUB}))
    assert report.score == 0
    for q in report.questions:
        assert q.not_attempted and "Not attempted" in q.feedback


def test_missing_file_costs_code_questions_with_a_message_naming_it(submit):
    # two files, neither named for toy.py: no stand-in is guessed (grader/engine/renamed.py)
    report = grade(submit({"mine.py": toy.NUMPY_SOLUTION, "other.py": toy.NUMPY_SOLUTION}))
    assert report.score == 0
    assert all(
        "`toy.py` was not found" in q.feedback and "mine.py" in q.feedback for q in report.questions
    )


def test_a_file_named_for_the_code_file_stands_in_for_it_with_a_note(submit):
    report = grade(submit({"toy_v2.py": toy.NUMPY_SOLUTION}))
    assert report.score == report.max_score
    assert any("`toy_v2.py` was graded as `toy.py`" in w for w in report.warnings)


def test_syntax_error_names_the_students_line(submit):
    """The statement with the error is left out and named at the student's line; the rest of
    the file is graded (tests/test_syntax_left_out.py)."""
    source = toy.NUMPY_SOLUTION + "\ndef broken(:\n    pass\n"
    report = grade(submit({"toy.py": source}))
    assert report.score == report.max_score
    (note,) = [w for w in report.warnings if "syntax error" in w]
    line = source.splitlines().index("def broken(:") + 1
    assert f"lines {line}–{line + 2}, for the syntax error at line {line}: `def broken(:`" in note
    assert "Traceback" not in note and "grader/" not in note


def test_import_error_is_the_students_own_line(submit):
    """A top-level line that raises is named at the student's own line and skipped: the rest of
    the file runs and its functions are graded (docs/conventions.md, "Code")."""
    report = grade(submit({"toy.py": "import numpy as np\nx = 1 / 0\n" + toy.NUMPY_SOLUTION}))
    (note,) = [w for w in report.warnings if "was imported" in w]
    assert report.score == report.max_score
    assert "line 2 (`x = 1 / 0`) raised `ZeroDivisionError" in note, note
    assert "grader" not in note.replace("grading", "")


def test_exception_in_one_function_leaves_others_graded(submit):
    src = toy.NUMPY_SOLUTION.replace("return x @ W.T + b", "return undefined_name")
    report = grade(submit({"toy.py": src}))
    s = scores(report)
    assert s["toy.linear"] == 0 and s["toy.softmax"] == 4 and s["toy.quad"] == 2
    assert "NameError" in report.questions[1].feedback


def test_wrong_shape_reported_as_expected_vs_got(submit):
    src = toy.NUMPY_SOLUTION.replace("return x @ W.T + b", "return (x @ W.T + b).T")
    report = grade(submit({"toy.py": src}))
    assert scores(report)["toy.linear"] == 0
    linear = report.questions[1]  # every case hidden: the student sees the category only
    assert "- ✘ hidden case 1: wrong shape" in linear.feedback
    assert "(3, 2)" not in linear.feedback
    assert "expected shape (2, 3), got (3, 2)" in question_markdown(linear, instructor=True)


def test_nan_is_reported(submit):
    src = toy.NUMPY_SOLUTION.replace("return x @ W.T + b", "return (x @ W.T + b) * float('nan')")
    report = grade(submit({"toy.py": src}))
    assert scores(report)["toy.linear"] == 0 and "NaN" in report.questions[1].feedback


def test_timeout_is_stopped_and_others_graded(submit):
    src = toy.NUMPY_SOLUTION.replace("return x @ W.T + b", "while True:\n        pass")
    report = grade(
        submit({"toy.py": src}), limits=sandbox.Limits(call_seconds=1.0, submission_seconds=30.0)
    )
    s = scores(report)
    assert s["toy.linear"] == 0 and s["toy.softmax"] == 4 and s["toy.quad"] == 2
    assert "did not return within 1 s" in report.questions[1].feedback
    assert "stopped after 1 s" in question_markdown(report.questions[1], instructor=True)


def test_wrong_axis_is_named(submit):
    src = toy.NUMPY_SOLUTION.replace(
        "z = x - x.max(axis=axis, keepdims=True)", "z = x - x.max(axis=0, keepdims=True)"
    )
    src = src.replace(
        "return e / e.sum(axis=axis, keepdims=True)", "return e / e.sum(axis=0, keepdims=True)"
    )
    report = grade(submit({"toy.py": src}))
    q = report.questions[0]
    assert q.misconceptions == ["softmax-wrong-axis"] and q.score < 4
    assert "softmax over the wrong axis" in q.feedback


def test_unstable_softmax_is_named_with_partial_credit(submit):
    src = toy.NUMPY_SOLUTION.replace("z = x - x.max(axis=axis, keepdims=True)", "z = x")
    report = grade(submit({"toy.py": src}))
    q = report.questions[0]
    assert q.misconceptions == ["toy-softmax-unstable"]
    assert q.score == pytest.approx(4 * (3 + 0.5) / 4)


def test_tuple_outputs_are_diagnosed_element_by_element(submit):
    src = toy.NUMPY_SOLUTION.replace(
        "return float((x ** 2).sum()), 2 * x", "return float((x ** 2).sum()), -2 * x"
    )
    report = grade(submit({"toy.py": src}))
    q = report.questions[2]
    assert q.misconceptions == ["toy-grad-sign"] and q.score == 0
    assert "`grad`" in q.feedback and "`loss`" not in q.feedback


def test_transposed_weights_named(submit):
    report = grade(submit({"toy.py": toy.NUMPY_SOLUTION.replace("x @ W.T + b", "x @ W + b")}))
    assert report.questions[1].misconceptions == ["toy-weights-transposed"]


def test_forbidden_call_caught_in_source(submit):
    src = toy.NUMPY_SOLUTION.replace(
        "return float(np.sqrt((x ** 2).sum()))", "return float(np.linalg.norm(x))"
    )
    report = grade(submit({"toy.py": src}))
    q = report.questions[3]
    assert (
        q.score == 0
        and q.misconceptions == ["uses-library-shortcut"]
        and "numpy.linalg.norm" in q.feedback
    )


def test_forbidden_call_caught_at_run_time(submit):
    hidden = "return float(getattr(getattr(np, 'lin' + 'alg'), 'no' + 'rm')(x))"
    src = toy.NUMPY_SOLUTION.replace("return float(np.sqrt((x ** 2).sum()))", hidden)
    report = grade(submit({"toy.py": src}))
    q = report.questions[3]
    assert q.score == 0 and q.misconceptions == ["uses-library-shortcut"]


def test_zip_with_nested_folder(tmp_path):
    z = tmp_path / "sub.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("my_work/toy.py", toy.NUMPY_SOLUTION)
        zf.writestr("__MACOSX/my_work/._toy.py", "junk")
    assert grade(z).score == 10


def test_grading_is_deterministic_and_never_writes_into_the_submission(submit):
    folder = submit({"toy.py": toy.NUMPY_SOLUTION.replace("x @ W.T + b", "x @ W + b")})
    before = sorted(p.name for p in folder.rglob("*"))
    a = to_gradescope(grade(folder, student="ada"))
    b = to_gradescope(grade(folder, student="ada"))
    a.pop("execution_time"), b.pop("execution_time")
    assert a == b
    assert sorted(p.name for p in folder.rglob("*")) == before


def test_student_output_is_captured_and_truncated(submit):
    src = "print('x' * 5_000_000)\n" + toy.NUMPY_SOLUTION
    report = grade(submit({"toy.py": src}))
    assert report.score == 10
    assert len(report.student_output) < 200_000


def test_a_bug_in_a_suite_costs_one_question_visibly(submit):
    import dataclasses

    def broken_reference(*args):
        raise RuntimeError("boom")

    q = dataclasses.replace(toy.ASSIGNMENT.questions[1], reference=broken_reference)
    assignment = dataclasses.replace(toy.ASSIGNMENT, questions=(toy.ASSIGNMENT.questions[0], q))
    report = grade_submission(submit({"toy.py": toy.NUMPY_SOLUTION}), assignment, limits=FAST)
    assert report.questions[0].score == 4
    assert report.questions[1].score == 0 and "grader itself failed" in report.questions[1].feedback
    data = to_gradescope(report)
    jsonschema.validate(data, SCHEMA)
    assert data["tests"][-1]["extra_data"]["kind"] == "error"


def test_prints_at_import_and_after_a_restart_are_kept(submit):
    src = "print('hello from import')\n" + toy.NUMPY_SOLUTION.replace(
        "return x @ W.T + b", "while True:\n        pass"
    )
    report = grade(
        submit({"toy.py": src}), limits=sandbox.Limits(call_seconds=1.0, submission_seconds=30.0)
    )
    assert "hello from import" in report.student_output
    assert report.isolated == sandbox.can_isolate()


def test_a_mutant_with_several_natural_outputs_matches_any(submit):
    import dataclasses

    from grader.mutants import AnyOf

    q = dataclasses.replace(
        toy.ASSIGNMENT.questions[2],
        mutants={
            "toy-grad-sign": lambda x: AnyOf(
                (float(np.sum(x**2)), 3 * x), (float(np.sum(x**2)), -2 * x)
            )
        },
    )
    assignment = dataclasses.replace(toy.ASSIGNMENT, questions=(q,))
    src = toy.NUMPY_SOLUTION.replace(
        "return float((x ** 2).sum()), 2 * x", "return float((x ** 2).sum()), -2 * x"
    )
    report = grade_submission(submit({"toy.py": src}), assignment, limits=FAST)
    assert report.questions[0].misconceptions == ["toy-grad-sign"]


def test_after_a_timeout_the_remaining_cases_are_not_run(submit):
    src = toy.NUMPY_SOLUTION.replace(
        "z = x - x.max(axis=axis, keepdims=True)", "import time; time.sleep(60)"
    )
    report = grade(
        submit({"toy.py": src}), limits=sandbox.Limits(call_seconds=1.0, submission_seconds=30.0)
    )
    assert report.execution_time < 10
    assert "not run (an earlier case of `softmax` timed out)" in report.questions[0].feedback
    assert report.questions[1].score == 3


INSTRUCTOR_TESTS = '''
import unittest
import numpy as np
from gradescope_utils.autograder_utils.decorators import weight, number, visibility, partial_credit
import toy


class ExtraChecks(unittest.TestCase):
    @weight(2)
    @number("9.1")
    def test_linear_bias_only(self):
        """linear with zero weights returns the bias"""
        out = np.asarray(toy.linear(np.ones((1, 2)), np.zeros((3, 2)), np.arange(3.0)))
        np.testing.assert_allclose(out, [[0.0, 1.0, 2.0]])

    @weight(1)
    @visibility("after_due_date")
    def test_softmax_sums_to_one(self):
        """softmax rows sum to one"""
        self.assertAlmostEqual(float(np.sum(toy.softmax(np.array([[1.0, 2.0]])))), 1.0)

    @partial_credit(4)
    def test_partial(self, set_score=None):
        """half credit by design"""
        set_score(2)
'''


def test_instructor_unittests_are_merged_with_gradescope_utils_semantics(submit):
    report = grade_submission(
        submit({"toy.py": toy.NUMPY_SOLUTION}),
        toy.ASSIGNMENT,
        limits=FAST,
        instructor_tests=[("test_extra.py", INSTRUCTOR_TESTS)],
    )
    extra = {q.title: q for q in report.questions if q.kind == "instructor"}
    assert extra["linear with zero weights returns the bias"].score == 2
    assert extra["linear with zero weights returns the bias"].number == "9.1"
    assert extra["softmax rows sum to one"].visibility == "after_due_date"
    assert (
        extra["half credit by design"].score == 2 and extra["half credit by design"].max_score == 4
    )
    assert report.score == 10 + 2 + 1 + 2
    jsonschema.validate(to_gradescope(report), SCHEMA)


def test_instructor_unittests_fail_cleanly_and_cannot_inflate_scores(submit):
    src = toy.NUMPY_SOLUTION.replace("return x @ W.T + b", "return x @ W.T")
    report = grade_submission(
        submit({"toy.py": src}),
        toy.ASSIGNMENT,
        limits=FAST,
        instructor_tests=[("test_extra.py", INSTRUCTOR_TESTS)],
    )
    extra = {q.title: q for q in report.questions if q.kind == "instructor"}
    assert extra["linear with zero weights returns the bias"].score == 0
    assert "Test Failed" in extra["linear with zero weights returns the bias"].feedback
    forged = (
        "import unittest\\nfrom gradescope_utils.autograder_utils.json_test_runner import JSONTestResult\\n"
        "_orig = JSONTestResult.buildResult\\n"
        "JSONTestResult.buildResult = lambda self, t, err=None: {**_orig(self, t, None), 'score': 1000, 'max_score': 1000}\\n"
    )
    hostile = forged.encode().decode("unicode_escape") + toy.NUMPY_SOLUTION
    report = grade_submission(
        submit({"toy.py": hostile}),
        toy.ASSIGNMENT,
        limits=FAST,
        instructor_tests=[("test_extra.py", INSTRUCTOR_TESTS)],
    )
    extra = [q for q in report.questions if q.kind == "instructor"]
    # the tests run on the trusted side (issue 15 item 3): the forgery changes nothing, the score is honest
    assert sum(q.score for q in extra) == 2 + 1 + 2 and sum(q.max_score for q in extra) == 2 + 1 + 4


def test_visibility_defaults_to_the_assignments_and_a_question_may_override(submit):
    import dataclasses

    qs = (
        dataclasses.replace(toy.ASSIGNMENT.questions[0], visibility="after_due_date"),
        *toy.ASSIGNMENT.questions[1:],
    )
    assignment = dataclasses.replace(toy.ASSIGNMENT, questions=qs, visibility="after_published")
    data = to_gradescope(
        grade_submission(submit({"toy.py": toy.NUMPY_SOLUTION}), assignment, limits=FAST)
    )
    assert [t["visibility"] for t in data["tests"]] == ["after_due_date"] + ["after_published"] * 3
    default = to_gradescope(
        grade_submission(submit({"toy.py": toy.NUMPY_SOLUTION}), toy.ASSIGNMENT, limits=FAST)
    )
    assert {t["visibility"] for t in default["tests"]} == {"visible"}


def test_math_overflow_raised_in_pure_python_is_read_as_the_overflow_misconception(submit):
    import dataclasses

    from grader.mutants import NONFINITE

    def unstable(x, axis=-1):
        return NONFINITE if np.max(np.abs(x)) > 700 else toy.softmax(x, axis)

    q = dataclasses.replace(toy.ASSIGNMENT.questions[0], mutants={"toy-softmax-unstable": unstable})
    assignment = dataclasses.replace(toy.ASSIGNMENT, questions=(q,))
    src = toy.LISTS_SOLUTION.replace(
        "e = [math.exp(v - m) for v in r]", "e = [math.exp(v) for v in r]"
    )
    report = grade_submission(submit({"toy.py": src}), assignment, limits=FAST)
    assert "OverflowError" in report.questions[0].feedback
    assert report.questions[0].misconceptions == ["toy-softmax-unstable"]


@pytest.mark.parametrize("drift, named", [(3e-4, True), (1e-2, False)])
def test_a_wrong_case_that_is_the_mistake_up_to_float_noise_does_not_rule_it_out(
    submit, drift, named
):
    """`x @ W + b` (toy-weights-transposed) on every case, the last one off by `drift` relative
    (float32 noise past the tolerance, or a real difference): the mistake explains two of three
    failed cases. At 3e-4 the third is still what it computes (within 10x the tolerance), so it
    is named; at 1e-2 the third is something else, and a half-explained mistake is not named."""
    source = toy.NUMPY_SOLUTION.replace(
        "def linear(x, W, b):\n    return x @ W.T + b",
        f"_calls = [0]\n\ndef linear(x, W, b):\n    _calls[0] += 1\n"
        f"    return (x @ W + b) * (1 + {drift} * (_calls[0] == 3))",
    )
    assert source != toy.NUMPY_SOLUTION
    (q,) = [r for r in grade(submit({"toy.py": source})).questions if r.question_id == "toy.linear"]
    assert q.score < q.max_score
    assert q.misconceptions == (["toy-weights-transposed"] if named else []), q.feedback
