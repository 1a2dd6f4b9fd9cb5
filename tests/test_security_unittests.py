"""Issue 15 item 3: instructors' unittest modules cannot be forged from the submission.

The modules run on the trusted side with gradescope-utils' JSONTestRunner; the student's
module they import is a proxy whose functions call into the sandboxed worker (plain data in,
plain data out). Patching the runner's result builder, `unittest` or numpy's comparisons in
the student's module changes nothing: the verdict is the honest one.
"""

from __future__ import annotations

import subprocess
import sys

import toy_assignment as toy

from grader import sandbox
from grader.engine import instructor_tests
from grader.engine.grade import grade_submission

FAST = sandbox.Limits(call_seconds=3.0, submission_seconds=60.0)

TESTS = '''
import unittest
import numpy as np
from gradescope_utils.autograder_utils.decorators import weight, number, partial_credit
import toy


class Extra(unittest.TestCase):
    @weight(2)
    @number("9.1")
    def test_bias_only(self):
        """linear with zero weights returns the bias"""
        out = np.asarray(toy.linear(np.ones((1, 2)), np.zeros((3, 2)), np.arange(3.0)))
        np.testing.assert_allclose(out, [[0.0, 1.0, 2.0]])

    @weight(3)
    def test_quad_gradient(self):
        """quad's gradient is 2x"""
        loss, grad = toy.quad(np.array([1.0, -2.0]))
        self.assertAlmostEqual(loss, 5.0)
        np.testing.assert_allclose(grad, [2.0, -4.0])

    @partial_credit(4)
    def test_partial(self, set_score=None):
        """half credit by design"""
        set_score(2)
'''

FORGE = """
import unittest as _unittest
import numpy as _np
try:
    from gradescope_utils.autograder_utils.json_test_runner import JSONTestResult as _R
    _orig = _R.buildResult
    _R.buildResult = lambda self, test, err=None: {**_orig(self, test, None), "score": 1000, "max_score": 1000}
except Exception:
    pass
_unittest.TestCase.assertAlmostEqual = lambda *a, **k: None
_np.testing.assert_allclose = lambda *a, **k: None
"""

WRONG_LINEAR = toy.NUMPY_SOLUTION.replace("return x @ W.T + b", "return x @ W.T")
WRONG_QUAD = WRONG_LINEAR.replace("return float((x ** 2).sum()), 2 * x", "return 0.0, x")


def extra_scores(tmp_path, source: str) -> dict[str, float]:
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "toy.py").write_text(source)
    report = grade_submission(
        folder, toy.ASSIGNMENT, limits=FAST, instructor_tests=[("test_extra.py", TESTS)]
    )
    assert not report.grader_error
    return {q.title: q.score for q in report.questions if q.kind == "instructor"}


def test_honest_code_gets_the_runners_verdict(tmp_path):
    assert extra_scores(tmp_path, toy.NUMPY_SOLUTION) == {
        "linear with zero weights returns the bias": 2,
        "quad's gradient is 2x": 3,
        "half credit by design": 2,
    }


def test_a_forging_submission_gets_the_honest_score(tmp_path):
    honest = {
        "linear with zero weights returns the bias": 0,
        "quad's gradient is 2x": 0,
        "half credit by design": 2,
    }
    assert extra_scores(tmp_path, FORGE + WRONG_QUAD) == honest
    # and a right answer keeps its marks whatever the forger does
    (tmp_path / "again").mkdir()
    assert (
        extra_scores(tmp_path / "again", FORGE + toy.NUMPY_SOLUTION)["quad's gradient is 2x"] == 3
    )


def test_control_the_forgery_works_where_tests_share_the_students_process(tmp_path):
    """The attack is real: run in the student's own process (as gradescope-utils would), the
    patched result builder gives every test 1000 points."""
    (tmp_path / "toy.py").write_text(FORGE + WRONG_QUAD)
    (tmp_path / "test_extra.py").write_text(TESTS)
    code = (
        "import io, unittest, test_extra\n"
        "from gradescope_utils.autograder_utils.json_test_runner import JSONTestRunner\n"
        "runner = JSONTestRunner(stream=io.StringIO(), buffer=True)\n"
        "runner.run(unittest.defaultTestLoader.loadTestsFromModule(test_extra))\n"
        "print(sum(t['score'] for t in runner.json_data['tests']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert float(done.stdout.split()[-1]) >= 1000, done.stderr[-2000:]


def test_a_failing_student_call_fails_only_its_test(tmp_path):
    crash = toy.NUMPY_SOLUTION + "\ndef quad(x):\n    import os\n    os._exit(3)\n"
    scores = extra_scores(tmp_path, crash)
    assert scores == {
        "linear with zero weights returns the bias": 2,
        "quad's gradient is 2x": 0,
        "half credit by design": 2,
    }


def test_a_banned_call_fails_the_instructor_test_too(tmp_path):
    """toy bans numpy.linalg.norm in `norm`; an instructor test calling `norm` sees the refusal."""
    tests = TESTS.replace(
        "    @partial_credit(4)",
        "    @weight(1)\n    def test_norm(self):\n"
        '        """norm of (3, 4)"""\n        self.assertAlmostEqual(toy.norm(np.array([3.0, 4.0])), 5.0)\n\n'
        "    @partial_credit(4)",
    )
    source = (
        toy.NUMPY_SOLUTION + "\nimport importlib\ndef norm(x):\n"
        "    return float(getattr(importlib.import_module('numpy').linalg, 'no' + 'rm')(x))\n"
    )
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "toy.py").write_text(source)
    report = grade_submission(
        folder, toy.ASSIGNMENT, limits=FAST, instructor_tests=[("test_extra.py", tests)]
    )
    extra = {q.title: q for q in report.questions if q.kind == "instructor"}
    assert (
        extra["norm of (3, 4)"].score == 0
        and "forbidden library function" in extra["norm of (3, 4)"].feedback
    )
    assert extra["quad's gradient is 2x"].score == 3


def test_the_proxy_leaves_no_trace_in_the_graders_modules(tmp_path):
    before = sys.modules.get("toy")
    extra_scores(tmp_path, toy.NUMPY_SOLUTION)
    assert sys.modules.get("toy") is before
    assert instructor_tests.declared_weights(TESTS) == [2.0, 3.0, 4.0]
