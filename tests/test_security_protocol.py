"""Issue 15 items 8 and 11, end to end: a submission that forges the worker's replies.

Garbage written to every inherited file descriptor (the grader's channel among them), a
return value of 10**400, a blob referenced many times: each costs only the question it
touched, says plainly that it was the submission's doing, and never reads as "the grader
itself failed". The other questions keep their marks (the worker is restarted).
"""

from __future__ import annotations

import toy_assignment as toy

from grader import sandbox
from grader.engine.grade import grade_submission
from grader.records import question_markdown

FAST = sandbox.Limits(call_seconds=3.0, submission_seconds=60.0)

GARBAGE = """
import os as _os

def quad(x):
    for fd in range(3, 64):
        try:
            _os.write(fd, b"\\xff" * 64 + b"garbage, not a frame")
        except OSError:
            pass
    return float((x ** 2).sum()), 2 * x
"""

HUGE_INT = """
def linear(x, W, b):
    return 10 ** 400
"""

FORGED_FRAME = """
import json as _json, os as _os, struct as _struct

def quad(x):
    # a well-formed frame, written straight to the grader's channel, whose value references
    # one 8 MiB array 400 times (a 3 GB decode if the decoder trusted it)
    import io, numpy
    buf = io.BytesIO()
    numpy.save(buf, numpy.zeros(1 << 20))
    blob = buf.getvalue()
    body = _json.dumps({"ok": True, "value": {"__tuple__": [1.0, [{"__nd__": 0}] * 400]}}).encode()
    frame = _struct.pack(">II", len(body), 1) + body + _struct.pack(">Q", len(blob)) + blob
    for fd in range(3, 64):
        try:
            _os.write(fd, frame)
        except OSError:
            pass
    return float((x ** 2).sum()), 2 * x
"""


def grade(tmp_path, source: str):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "toy.py").write_text(source)
    return grade_submission(folder, toy.ASSIGNMENT, limits=FAST)


def by_id(report):
    return {q.question_id: q for q in report.questions}


def assert_students_fault(q) -> None:
    assert q.score == 0
    assert "grader itself failed" not in q.feedback and "not your mistake" not in q.feedback


def test_garbage_on_inherited_descriptors_costs_only_its_question(tmp_path):
    report = grade(tmp_path, toy.NUMPY_SOLUTION + GARBAGE)
    qs = by_id(report)
    assert not report.grader_error
    assert_students_fault(qs["toy.quad"])
    assert (
        "submission's doing" in qs["toy.quad"].feedback or "ended during" in qs["toy.quad"].feedback
    )
    assert (
        qs["toy.softmax"].score == 4 and qs["toy.linear"].score == 3 and qs["toy.norm"].score == 1
    )


def test_a_forged_frame_with_a_repeated_blob_is_refused(tmp_path):
    report = grade(tmp_path, toy.NUMPY_SOLUTION + FORGED_FRAME)
    qs = by_id(report)
    assert not report.grader_error
    assert_students_fault(qs["toy.quad"])
    assert (
        qs["toy.softmax"].score == 4 and qs["toy.linear"].score == 3 and qs["toy.norm"].score == 1
    )


def test_an_integer_of_400_digits_is_a_bad_output(tmp_path):
    report = grade(tmp_path, toy.NUMPY_SOLUTION + HUGE_INT)
    qs = by_id(report)
    assert not report.grader_error
    assert_students_fault(qs["toy.linear"])
    assert "returned a value the grader could not read" in qs["toy.linear"].feedback
    assert "integer too large" in question_markdown(qs["toy.linear"], instructor=True)
    assert qs["toy.softmax"].score == 4 and qs["toy.quad"].score == 2
