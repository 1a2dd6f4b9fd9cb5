"""`seqgrade batch --only`: regrade some questions of a stored result and keep the rest of it.

The named questions are graded again (with the questions before them, so that their numbers
and follow-through credit, which name earlier questions, come out as in a whole grading); the
other questions of the stored result are kept as they were, and the total follows.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from grader.questions import Assignment, CodeQuestion
from grader.records import GradeReport
from grader.reports.render import points
from grader.reports.results_json import detail_test

_SCORE_LINE = re.compile(r"^\*\*Score: [^*\n]* / [^*\n]*\*\*")


class UnknownQuestion(ValueError):
    """A `--only` entry that is neither a question id nor a question number of the assignment."""


def resolve_questions(assignment: Assignment, names: Sequence[str]) -> tuple[str, ...]:
    """`--only` entries as question ids, in the assignment's order: a full id (`a4.encoder_block`),
    the id after the assignment's prefix (`encoder_block`) or the question's number (`12`)."""
    ids = [q.id for q in assignment.questions]
    found: set[str] = set()
    unknown: list[str] = []
    for raw in names:
        name = raw.strip()
        if name.isdigit() and 1 <= int(name) <= len(ids):
            found.add(ids[int(name) - 1])
            continue
        match = [i for i in ids if name in (i, i.split(".", 1)[-1])]
        if match:
            found.update(match)
        elif name:
            unknown.append(raw)
    if unknown or not found:
        what = ", ".join(repr(u) for u in unknown) or "nothing"
        raise UnknownQuestion(
            f"--only names {what}, not a question of {assignment.id}; give question ids "
            f"({', '.join(ids[:3])}, …) or numbers 1–{len(ids)} (seqgrade list shows them)"
        )
    return tuple(i for i in ids if i in found)


def stored_question_ids(data: dict[str, Any]) -> set[str]:
    """The ids of the question tests in a results.json."""
    return {_qid(t) for t in data.get("tests", []) if _qid(t)}


def _qid(test: Any) -> str | None:
    extra = test.get("extra_data") if isinstance(test, dict) else None
    if not isinstance(extra, dict) or extra.get("kind") not in ("code", "written"):
        return None
    return extra.get("question") if isinstance(extra.get("question"), str) else None


def _kind(test: Any) -> Any:
    extra = test.get("extra_data") if isinstance(test, dict) else None
    return extra.get("kind") if isinstance(extra, dict) else None


def partial_assignment(assignment: Assignment, qids: Collection[str]) -> Assignment:
    """The questions to grade for `qids`: every question up to the last named code question (their
    numbers stay those of the whole assignment), then the named written questions after it."""
    positions = [
        i
        for i, q in enumerate(assignment.questions)
        if q.id in qids and isinstance(q, CodeQuestion)
    ]
    prefix = max(positions) + 1 if positions else 0
    later = [q for q in assignment.questions[prefix:] if q.id in qids]
    return dataclasses.replace(assignment, questions=(*assignment.questions[:prefix], *later))


def regrade_report(
    submission: Path,
    assignment: Assignment,
    qids: Collection[str],
    grade: Callable[..., GradeReport],
    **kw: Any,
) -> GradeReport:
    """Grade the questions `qids` need with `grade` (grade_submission's signature); the report holds
    the named questions only, numbered as in the whole assignment, without instructor tests or
    answer key (the stored result keeps its own)."""
    report = grade(submission, partial_assignment(assignment, qids), instructor_tests=[], **kw)
    number = {q.id: str(i + 1) for i, q in enumerate(assignment.questions)}
    report.questions = [
        dataclasses.replace(r, number=number[r.question_id])
        for r in report.questions
        if r.question_id in qids
    ]
    report.answer_key = None
    return report


def merge(
    stored: dict[str, Any], fresh: dict[str, Any], assignment: Assignment, qids: Collection[str]
) -> dict[str, Any]:
    """The stored result with the questions `qids` taken from `fresh`, in the assignment's order;
    its other tests (instructor tests, the answer key) kept; the total and the summary's score
    line recomputed. Questions no longer in the assignment are dropped."""
    new = {_qid(t): t for t in fresh.get("tests", []) if _qid(t) in qids}
    old = {_qid(t): t for t in stored.get("tests", []) if _qid(t)}
    questions = [new.get(q.id) or old.get(q.id) for q in assignment.questions]
    others = [
        t
        for t in stored.get("tests", [])
        if isinstance(t, dict) and _qid(t) is None and _kind(t) != "detail"
    ]
    others += [t for t in fresh.get("tests", []) if _kind(t) == "error"]
    tests = [t for t in questions if t is not None] + others
    events = (
        stored.get("extra_data", {}).get("events")
        if isinstance(stored.get("extra_data"), dict)
        else None
    )
    tests += detail_test(tests, events if isinstance(events, list) else None)
    data = dict(stored, tests=tests)
    data["score"] = round(sum(float(t.get("score", 0.0)) for t in tests), 6)
    top = sum(float(t.get("max_score", 0.0)) for t in tests)
    data["output"] = _SCORE_LINE.sub(
        f"**Score: {points(data['score'])} / {points(top)}**",
        str(stored.get("output", "")),
        count=1,
    )
    return data
