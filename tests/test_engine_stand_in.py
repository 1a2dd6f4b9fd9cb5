"""Follow-through past a helper that raises, at the sandbox's level: a call may have some of the
submission's functions answered by the grader's trusted ones, and the grader answers nothing
else.

The trusted stand-ins here are the tests' own lambdas (2·x), so the expected values are by hand.
"""

from __future__ import annotations

import numpy as np
import pytest

from grader import sandbox
from grader.sandbox.session import WorkerSession

FAST = sandbox.Limits(call_seconds=10.0, submission_seconds=120.0)

SOURCE = '''
import numpy as np

def helper(x):
    raise ValueError("my helper gives up")

def top(x):
    return helper(x) + 1.0

def keep(x):
    global SAVED
    SAVED = helper          # the stand-in itself, kept for later
    return helper(x)

def later(x):
    return SAVED(x)

def forge(x):
    # the stand-in's closure reaches the worker's own callback: ask for a function the
    # grader did not replace (an oracle for another question, if the grader answered it)
    tools = next(c.cell_contents for c in helper.__closure__ if isinstance(c.cell_contents, dict))
    return tools["ask"]("top", (x,), {}, False)
'''


@pytest.fixture
def session():
    s = WorkerSession({"mod.py": SOURCE.encode()}, "mod", limits=FAST)
    yield s
    s.close()


def _double(x):
    return 2.0 * np.asarray(x)


X = np.array([1.0, -2.0, 3.0])


def test_a_replaced_helper_is_answered_by_the_trusted_one_for_that_call_only(session):
    plain = session.call("top", (X,), {})
    assert plain.failure is not None and plain.failure.exception_type == "ValueError"
    replaced = session.call("top", (X,), {}, replace={"helper": _double})
    assert replaced.failure is None, replaced.failure
    np.testing.assert_allclose(replaced.value, 2.0 * X + 1.0)
    again = session.call("top", (X,), {})  # the student's own helper is back
    assert again.failure is not None and again.failure.exception_type == "ValueError"


def test_a_trusted_function_that_refuses_its_arguments_raises_in_the_submission(session):
    out = session.call("top", (X,), {}, replace={"helper": lambda x, y: x})
    assert out.failure is not None and out.failure.exception_type == "RuntimeError"
    assert session.call("top", (X,), {}, replace={"helper": _double}).failure is None


def test_a_forged_callback_for_a_name_not_replaced_gets_nothing(session):
    out = session.call("forge", (X,), {}, replace={"helper": _double})
    assert out.failure is not None and out.failure.kind == "protocol", out.failure
    assert out.value is None
    ok = session.call("top", (X,), {}, replace={"helper": _double})  # restarted, still works
    assert ok.failure is None and np.allclose(ok.value, 2.0 * X + 1.0)


def test_a_kept_stand_in_answers_nothing_outside_its_call(session):
    first = session.call("keep", (X,), {}, replace={"helper": _double})
    assert first.failure is None and np.allclose(first.value, 2.0 * X)
    out = session.call("later", (X,), {})
    assert out.failure is not None and out.failure.kind == "protocol", out.failure
    assert out.value is None
