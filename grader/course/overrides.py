"""Score overrides the course staff declare per assignment (a regrade request upheld, an
accommodation, a written answer judged by hand), read from a TOML or CSV file and checked
against the assignment's questions and the class before anything is applied."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.course.settings import csv_rows, known_keys, number_text
from grader.questions import Assignment

FIELDS = ("student", "question", "score", "delta", "comment", "who", "when")


class OverrideError(ValueError):
    """An overrides file that cannot be applied: malformed, or naming an unknown student or question."""


@dataclass(frozen=True)
class Override:
    """One staff decision on one student's question."""

    student: str
    """Their email, SID, or submission folder name (lower-cased)."""
    question: str
    """The question's full id (a1.softmax), resolved from what the file wrote."""
    score: float | None
    """The points the question gets; or."""
    delta: float | None
    """Points added (negative: taken away); exactly one of the two is set."""
    comment: str
    """Shown to the student under the question."""
    who: str
    """Who decided (for the staff: never shown to the student)."""
    when: str
    """When it was decided (as written)."""
    where: str
    """The file and entry, for messages."""

    def applied_to(self, earned: float, max_score: float) -> float:
        """The question's points after this override (a delta stays within 0 … max_score)."""
        if self.score is not None:
            return self.score
        return min(max(earned + (self.delta or 0.0), 0.0), max_score)


def _resolve_question(assignment: Assignment, name: str, where: str) -> str:
    ids = [q.id for q in assignment.questions]
    text = name.strip()
    if text.isdigit() and 1 <= int(text) <= len(ids):
        return ids[int(text) - 1]
    match = [i for i in ids if text in (i, i.split(".", 1)[-1])]
    if not match:
        raise OverrideError(
            f"{where}: question {name!r} is not a question of {assignment.id}; give an id "
            f"({ids[0]} or {ids[0].split('.', 1)[-1]}) or a number 1–{len(ids)} (seqgrade list shows them)"
        )
    return match[0]


def _number(value: Any, what: str, where: str) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    try:
        number = float(number_text(value) if isinstance(value, str) else value)
    except (TypeError, ValueError):
        raise OverrideError(f"{where}: {what} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise OverrideError(f"{where}: {what} must be a finite number, got {value!r}")
    return number


def _entry(raw: Any, assignment: Assignment, where: str) -> Override:
    known_keys(raw, FIELDS, where, OverrideError, noun="field")
    student = str(raw.get("student") or "").strip().lower()
    if not student:
        raise OverrideError(f"{where}: `student` is missing (an email, SID or submission folder)")
    if not str(raw.get("question") or "").strip():
        raise OverrideError(f"{where}: `question` is missing (a question id or number)")
    qid = _resolve_question(assignment, str(raw["question"]), where)
    score, delta = (
        _number(raw.get("score"), "score", where),
        _number(raw.get("delta"), "delta", where),
    )
    if (score is None) == (delta is None):
        raise OverrideError(
            f"{where}: give exactly one of `score` (the points) and `delta` (points added)"
        )
    top = next(q.points for q in assignment.questions if q.id == qid)
    if score is not None and not 0 <= score <= top:
        raise OverrideError(f"{where}: score {score:g} is outside 0–{top:g}, the points of {qid}")
    return Override(
        student,
        qid,
        score,
        delta,
        str(raw.get("comment") or "").strip(),
        str(raw.get("who") or "").strip(),
        str(raw.get("when") or "").strip(),
        where,
    )


def _read_toml(path: Path) -> list[Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise OverrideError(f"{path}: not valid TOML ({err})") from None
    entries = data.get("override", [])
    extra = sorted(set(data) - {"override"})
    if extra or not isinstance(entries, list):
        raise OverrideError(
            f"{path}: expected [[override]] tables only (found {', '.join(extra) or 'override = …'})"
        )
    return entries


def _read_csv(path: Path) -> list[Any]:
    rows = list(csv_rows(path.read_text(encoding="utf-8-sig")))
    return [
        {str(k).strip().lower(): v for k, v in r.items() if k is not None and v not in (None, "")}
        for r in rows
    ]


def load(path: Path, assignment: Assignment) -> tuple[Override, ...]:
    """The overrides of `path` (`.toml`: [[override]] tables; `.csv`: a header of FIELDS), each
    checked against the assignment's questions."""
    path = Path(path)
    try:
        entries = _read_csv(path) if path.suffix.lower() == ".csv" else _read_toml(path)
    except (OSError, UnicodeDecodeError) as err:
        raise OverrideError(f"{path}: cannot be read ({err})") from None
    label = "row" if path.suffix.lower() == ".csv" else "override"
    first = 2 if label == "row" else 1  # a CSV's first row is its header
    return tuple(
        _entry(raw, assignment, f"{path.name}, {label} {i}") for i, raw in enumerate(entries, first)
    )


def check_students(overrides: Sequence[Override], known: Iterable[Collection[str]]) -> None:
    """Every override names a student of the class: `known` holds each submission's keys."""
    everyone = {k for keys in known for k in keys}
    unknown = [o for o in overrides if o.student not in everyone]
    if unknown:
        o = unknown[0]
        more = f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""
        raise OverrideError(
            f"{o.where}: student {o.student!r} has no submission in this batch{more}; name them by "
            "email, SID or submission folder as the export lists them"
        )


def for_student(overrides: Sequence[Override], keys: Collection[str]) -> list[Override]:
    """The overrides naming a student known by any of `keys`, in file order."""
    wanted = {k.strip().lower() for k in keys if k}
    return [o for o in overrides if o.student in wanted]
