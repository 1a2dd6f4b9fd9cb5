"""What a student may see: no expected written answer, no printed line.

For every assignment, a submission whose code prints (hidden inputs included) in every
graded function and whose written answers are all wrong (a known wrong form where the
suite has one, so the misconception texts are exercised) is graded; every field a
student can see is searched for the expected answers and the printed lines. The
answer-key test alone holds the answers, with the assignment's `reveal_answers`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader.course import registry, variants
from grader.course.content import solution_dir
from grader.engine.grade import grade_submission
from grader.questions import Assignment, CodeQuestion, WrittenQuestion
from grader.reports.results_json import to_gradescope

READY = [aid for aid in registry.available() if solution_dir(aid).is_dir()]
KEY = "grace.hopper@example.edu"
MARK = "PRINTED-BY-STUDENT"


def loud_code(assignment: Assignment) -> str:
    """The solution, each graded function wrapped to print its name and its (hidden) inputs."""
    names = sorted({q.function for q in assignment.questions if isinstance(q, CodeQuestion)})
    source = (solution_dir(assignment.id) / assignment.code_file).read_text()
    return (
        source
        + f'''

def _loud(f):
    def g(*args, **kwargs):
        print("{MARK}", f.__name__, repr(args)[:300])
        return f(*args, **kwargs)
    g.__name__ = f.__name__
    return g


for _name in {names!r}:
    globals()[_name] = _loud(globals()[_name])
'''
    )


def toml_value(value: Any) -> str:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, float, np.integer, np.floating)):
        return repr(float(value))
    return json.dumps(str(value))


def wrong_answer(q: WrittenQuestion, numbers: dict[str, Any]) -> Any:
    """A wrong answer: the suite's first known wrong form, else a plainly wrong value of the kind."""
    if q.wrong_forms is not None:
        forms = list(q.wrong_forms(numbers))
        if forms:
            return forms[0].answer
    expected = q.expected(numbers)
    if q.answer_kind == "number":
        return float(expected) * 1.37 + 1.0
    if q.answer_kind == "array":
        return np.asarray(expected, dtype=float) * 1.37 + 1.0
    if q.answer_kind == "expression":
        return f"({expected}) * 3 + 7"
    if q.answer_kind == "choice":
        right = set(re.findall(r"[A-Z]", str(expected).upper()))
        return next(c for c in q.choices if c not in right)
    if q.answer_kind == "shape":
        return [7, 7, 7]
    if q.answer_kind == "list":
        return ["zz wrong", "yy wrong"]
    return "an essay"


def wrong_answers(assignment: Assignment, key: str) -> str:
    numbers = variants.numbers(assignment.id, key)
    written = [q for q in assignment.questions if isinstance(q, WrittenQuestion)]
    return "\n".join(f"{q.key} = {toml_value(wrong_answer(q, numbers))}" for q in written) + "\n"


def squash(text: str) -> str:
    return re.sub(r"[\s*`$]", "", text.replace("**", "^")).lower()


def own_words(field: str) -> str:
    """The field without the echo of the student's own answer ("Your answer was read as `…`.")."""
    return re.sub(r"Your answer was read as `[^`]*`\.", "", field)


def shows(text: str, field: str) -> bool:
    """Does the field spell out `text`? A number counts with its sign: -1.724 does not show 1.724."""
    return re.search(r"(?<![\d.\-])" + re.escape(squash(text)), squash(field)) is not None


def expected_texts(q: WrittenQuestion, numbers: dict[str, Any]) -> list[str]:
    """How the expected answer could be written out in feedback (numbers at several precisions)."""
    expected = q.expected(numbers)
    if q.answer_kind == "expression":
        return [str(expected)]
    if q.answer_kind in ("number", "array"):
        values = np.asarray(expected, dtype=float).ravel()
        texts = []
        for x in values:
            if abs(x) > 1e-9:
                texts += [f"{x:.6g}", f"{x:.4g}", repr(float(x))]
                if float(x).is_integer():
                    texts.append(str(int(x)))
        return [t for t in texts if len(t.lstrip("-")) >= 4]  # shorter numbers occur in any prose
    if q.answer_kind == "shape":
        return (
            [str(tuple(int(d) for d in expected))] if not isinstance(expected, str) else [expected]
        )
    if q.answer_kind == "list":
        return [", ".join(str(x) for x in expected)] if len(expected) > 1 else []
    return []


def visible_fields(data: dict[str, Any]) -> list[tuple[str, str]]:
    fields = [("output", data["output"])]
    for t in data["tests"]:
        if t["visibility"] != "hidden" and t["extra_data"]["kind"] != "answer-key":
            fields += [(t["name"], t["name"]), (t["name"], t["output"])]
    return fields


@pytest.fixture(scope="module", params=[pytest.param(a, marks=pytest.mark.slow) for a in READY])
def graded(request, tmp_path_factory) -> tuple[Assignment, dict[str, Any], Any]:
    assignment = registry.load(request.param)
    folder = tmp_path_factory.mktemp(request.param)
    if assignment.code_file:
        (folder / assignment.code_file).write_text(loud_code(assignment))
    (folder / "answers.toml").write_text(wrong_answers(assignment, KEY))
    report = grade_submission(folder, assignment, student=KEY)
    return assignment, to_gradescope(report, assignment=assignment), report


def test_no_expected_written_answer_is_visible(graded) -> None:
    assignment, data, _ = graded
    numbers = variants.numbers(assignment.id, KEY)
    fields = visible_fields(data)
    by_id = {t["extra_data"]["question"]: t for t in data["tests"]}
    for q in assignment.questions:
        if not isinstance(q, WrittenQuestion) or q.answer_kind == "text":
            continue
        test = by_id[q.id]
        assert test["score"] == 0, f"{q.id}: the wrong answer was graded right"
        assert "Expected" not in test["output"], q.id
        for text in expected_texts(q, numbers):
            if (
                q.answer_kind == "expression" and len(squash(text)) < 6
            ):  # d_k, f_t occur in any prose
                stated = re.search(
                    r"(=|is|equals|:)" + re.escape(squash(text)) + r"($|[.;,)])",
                    squash(own_words(test["output"])),
                )
                assert not stated, f"{q.id}: the feedback states {text!r}"
                continue
            leaks = [name for name, field in fields if shows(text, own_words(field))]
            assert not leaks, f"{q.id}: the expected {text!r} is visible in {leaks}"
        if q.answer_kind == "choice":
            right = sorted(set(re.findall(r"[A-Z]", str(q.expected(numbers)).upper())))
            assert f"`{', '.join(right)}`" not in test["output"], q.id


def test_no_printed_line_is_visible(graded) -> None:
    assignment, data, report = graded
    if assignment.code_file:
        assert MARK in report.student_output, "the submission did print"
        assert MARK in data["extra_data"]["student_output"]  # the instructor finds it there
    assert data["stdout_visibility"] == "hidden"
    for name, field in visible_fields(data):
        assert MARK not in field, f"printed output visible in {name}"


def test_the_answer_key_test_holds_the_answers(graded) -> None:
    assignment, data, report = graded
    numbers = variants.numbers(assignment.id, KEY)
    [key_test] = [t for t in data["tests"] if t["extra_data"]["kind"] == "answer-key"]
    assert key_test["max_score"] == 0 and key_test["score"] == 0
    assert key_test["visibility"] == "after_due_date" and KEY in key_test["output"]
    for q in assignment.questions:
        if isinstance(q, WrittenQuestion) and q.answer_kind == "expression":
            assert squash(str(q.expected(numbers))) in squash(key_test["output"]), q.id
        if isinstance(q, WrittenQuestion) and q.answer_kind != "text":
            assert f"`{q.key}`" in key_test["output"], q.id


@pytest.mark.parametrize(
    ("reveal", "visibility"),
    [("never", "hidden"), ("visible", "visible"), ("after_published", "after_published")],
)
def test_reveal_answers_sets_the_key_tests_visibility(graded, reveal: str, visibility: str) -> None:
    assignment, _, report = graded
    data = to_gradescope(report, assignment=dataclasses.replace(assignment, reveal_answers=reveal))
    [key_test] = [t for t in data["tests"] if t["extra_data"]["kind"] == "answer-key"]
    assert key_test["visibility"] == visibility


def test_show_student_output_lets_the_student_see_their_prints(graded) -> None:
    assignment, _, report = graded
    if not assignment.code_file:
        pytest.skip("no code")
    data = to_gradescope(
        report, assignment=dataclasses.replace(assignment, show_student_output=True)
    )
    assert MARK in data["output"] and data["stdout_visibility"] == "visible"


def test_the_isolation_note_is_for_the_instructor(graded) -> None:
    _, data, report = graded
    assert "not isolated" not in data["output"]
    assert ("not isolated" in (data["extra_data"]["isolation"] or "")) == (not report.isolated)


def test_per_student_questions_name_the_key(graded) -> None:
    assignment, data, _ = graded
    per_student = variants.per_student_questions(assignment)
    for t in data["tests"]:
        if t["extra_data"]["question"] in per_student:
            assert f"`{KEY}`" in t["output"], t["name"]


@pytest.mark.slow
def test_without_a_key_the_default_variant_is_said(tmp_path: Path) -> None:
    aid = READY[0]
    assignment = registry.load(aid)
    report = grade_submission(solution_dir(aid), assignment)
    data = to_gradescope(report, assignment=assignment)
    assert data["score"] == 100 and "the default variant was used" in data["output"]


# ------------------------------------------------------------- the one variant key


def test_the_key_is_the_trimmed_lower_cased_email_never_the_internal_id() -> None:
    users = [{"id": 98765, "email": "  Ada@Example.EDU ", "sid": "S1815", "name": "Ada"}]
    key = variants.variant_key(users=users)
    assert (key.value, key.source, key.group_size) == ("ada@example.edu", "metadata", 1)
    assert "`ada@example.edu`" in key.feedback() and "email" in key.feedback()
    no_email = variants.variant_key(users=[{"id": 98765, "sid": "S1815"}])
    assert no_email.value is None and "default variant" in no_email.feedback()


def test_an_assignment_may_choose_the_sid() -> None:
    users = [{"id": 1, "email": "ada@example.edu", "sid": " S1815 "}]
    assert variants.variant_key("sid", users=users).value == "S1815"
    export = [
        {":name": "Ada", ":sid": "S1815", ":email": "Ada@example.edu"}
    ]  # a Gradescope export's YAML
    assert variants.variant_key("sid", users=export).value == "S1815"
    assert variants.variant_key(users=export).value == "ada@example.edu"


def test_option_folder_and_zip_names() -> None:
    assert variants.variant_key(explicit=" Bo@X.org ", path=Path("alice")).value == "bo@x.org"
    assert variants.variant_key(path=Path("/tmp/export/alice.zip")).value == "alice"
    assert variants.variant_key(path=Path("/tmp/export/alice")).source == "folder"
    assert variants.variant_key().value is None


def test_a_group_uses_its_first_members_key_and_says_so() -> None:
    users = [{"email": "bo@x.org"}, {"email": "ada@x.org"}, {"email": "cy@x.org"}]
    key = variants.variant_key(users=users)
    assert key.value == "bo@x.org" and key.group_size == 3
    assert "group submission of 3" in key.feedback()


def test_the_same_key_gives_the_same_numbers_as_variant_py() -> None:
    import subprocess
    import sys

    from grader.course.content import assignment_dir

    key = variants.variant_key(users=[{"email": " Ada@Example.EDU"}]).value
    for aid in READY:
        printed = subprocess.run(
            [sys.executable, "variant.py", " Ada@Example.EDU"],
            cwd=assignment_dir(aid),
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
        assert str(variants.seed_for(aid, key)) in printed and str(key) in printed, aid
