"""String arguments reach the student's function as their own call would pass them.

CPython interns a string literal made of name characters, so a student's `activation is "gelu"`
(a slip Python warns about, but one that works in every run of their own) holds when they call
`feed_forward(..., activation="gelu")`. The grader's arguments arrive decoded from JSON, new
string objects: the same code failed only when graded, with nothing in its own runs to show
why. The arguments' decoder interns such strings (grader/sandbox/wire.py), as the compiler
does; other strings, and what the student's process sends back, are left as they are.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from grader import sandbox
from grader.course import registry
from grader.course.content import solution_dir
from grader.engine.grade import grade_submission
from grader.sandbox import wire

LIMITS = sandbox.Limits(call_seconds=20.0, submission_seconds=180.0)


def _over_the_wire(value: object, specials: bool) -> object:
    blobs: list[bytes] = []
    data = json.loads(json.dumps(wire.encode(value, blobs)))  # as it travels: new objects
    return wire.decode(data, blobs, specials=specials)


def test_argument_strings_of_name_characters_are_the_literals_objects():
    got = _over_the_wire(["gelu", ("post",), {"ffn": "swiglu"}, "two words", "é"], True)
    assert got[0] is "gelu"  # noqa: F632 - identity is what is tested
    assert got[1][0] is "post"  # noqa: F632
    assert got[2]["ffn"] is "swiglu"  # noqa: F632
    # the compiler does not intern these, so neither does the decoder (equal, not identical)
    assert got[3] == "two words" and got[4] == "é"


def test_what_the_students_process_sends_back_is_not_interned():
    got = _over_the_wire(["gelu"], False)
    assert got == ["gelu"] and got[0] is not "gelu"  # noqa: F632


@pytest.mark.slow
def test_a_flag_compared_by_identity_grades_as_it_runs_for_the_student(tmp_path):
    a = registry.load("a4")
    q = a.question("a4.feed_forward")
    solution = (solution_dir(a.id) / a.code_file).read_text()
    slipped = solution.replace('elif activation == "gelu":', 'elif activation is "gelu":')
    assert slipped != solution
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / a.code_file).write_text(slipped)
    report = grade_submission(folder, dataclasses.replace(a, questions=(q,)), limits=LIMITS)
    (r,) = report.questions
    assert r.score == r.max_score and not r.misconceptions, r.feedback
