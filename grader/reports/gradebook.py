"""Gradebook exports of a graded batch: seqgrade's own CSV, Canvas's import, Gradescope's upload.

- `seqgrade` (grades.csv): one row per submission with who it is (variant key, name, email,
  SID where known), the total rounded as the instructor sets, every question's score and the
  misconceptions recognised.
- `canvas`: Canvas's gradebook import columns `Student, ID, SIS User ID, SIS Login ID, Section`
  and one assignment column; Canvas matches a row by its ID (Canvas's own user id) or, when
  that is empty, by its SIS User ID or SIS Login ID (the email). `ID` and `Section` are filled
  from the term roster's `canvas_id` and `section` columns when it has them, else left empty.
- With overrides or a late policy declared, seqgrade's CSV also has `raw_total` (the grade
  before them), `late`, `late_penalty_percent` and `overrides`; `total` is the final score.
- `gradescope`: `Email, Score`, for an assignment's "upload scores" (rows matched by email).

Every cell that a spreadsheet would read as a formula (it begins with `=`, `+`, `-`, `@`, a tab or
a carriage return, after any spaces: OWASP's CSV injection rule) gets a leading `'`, in every
format; numbers stay numbers. Names, emails, SIDs and folder names come from students.
"""

from __future__ import annotations

import csv
import io
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.questions import Assignment

Format = str  # one of FORMATS
FORMATS: tuple[str, ...] = ("seqgrade", "canvas", "gradescope")
DEFAULT_DIGITS = 2

SEQGRADE_COLUMNS = ("submission", "variant_key", "student_name", "email", "sid", "total")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
GRADESCOPE_COLUMNS = ("Email", "Score")
ADJUSTMENT_COLUMNS = ("raw_total", "late", "late_penalty_percent", "overrides")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


@dataclass(frozen=True)
class Person:
    """Who a submission belongs to, as far as the batch knows."""

    name: str | None = None
    """The submitter's full name."""
    email: str | None = None
    """Their email (Gradescope's `:email`; Canvas's SIS login)."""
    sid: str | None = None
    """The roster's student id (Gradescope's `:sid`; Canvas's SIS user id)."""
    canvas_id: str | None = None
    """Canvas's own user id (its `ID` column), from the term's roster."""
    section: str | None = None
    """The roster's section (Canvas's `Section` column)."""


@dataclass(frozen=True)
class Row:
    """One graded submission as the exports see it."""

    submission: str
    """The folder or zip's name under ROOT."""
    key: str | None
    """The variant key its numbers were computed for."""
    person: Person
    total: float
    scores: Mapping[str, float]
    """Question id -> points earned."""
    misconceptions: tuple[str, ...]
    adjusted: Mapping[str, Any] | None = None
    """results.json's extra_data.adjustments, when any."""


def rounded(value: float, digits: int = DEFAULT_DIGITS) -> str:
    """`92.66666` -> `92.67`, `10.0` -> `10` (at most `digits` decimals, no trailing zeros)."""
    text = f"{round(float(value), digits):.{max(digits, 0)}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def neutralised(cell: str) -> str:
    """The cell as a spreadsheet shows it as text: a leading `'` when it would start a formula
    (`=HYPERLINK(…)`, `+1`, `@SUM(…)`, full-width `＝` too), unchanged when it is a number."""
    if cell.lstrip(" ").startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(cell):
        return "'" + cell
    return cell


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value).strip()


def _first_submitter(submission: Any) -> Person:
    """Gradescope export's first submitter (`:name`, `:email`, `:sid`), as the batch read it."""
    subs = getattr(submission, "submitters", ()) or ()
    first = subs[0] if subs and isinstance(subs[0], Mapping) else {}

    def pick(*keys: str) -> str | None:
        return next((_text(first[k]) for k in keys if _text(first.get(k))), None)

    return Person(pick(":name", "name"), pick(":email", "email"), pick(":sid", "sid"))


def person_of(submission: Any, data: Mapping[str, Any], people: Mapping[str, Person]) -> Person:
    """What is known of a submission's owner: a given roster's entry, else the export's metadata."""
    known = people.get(getattr(submission, "name", ""), Person())
    export = _first_submitter(submission)
    name = known.name or export.name or _text(getattr(submission, "student_name", None))
    email = known.email or export.email
    sid = known.sid or export.sid
    key = _text(data.get("extra_data", {}).get("student"))
    if email is None and key and "@" in key:  # the default variant key is the email
        email = key
    return Person(name, email, sid, known.canvas_id, known.section)


def rows_of(
    graded: Iterable[tuple[Any, Mapping[str, Any]]], people: Mapping[str, Person] | None = None
) -> list[Row]:
    """The exports' rows for graded (submission, results.json) pairs."""
    out = []
    for sub, data in graded:
        tests = [t for t in data.get("tests", []) if t.get("extra_data", {}).get("kind") != "error"]
        scores = {t["extra_data"]["question"]: float(t["score"]) for t in tests}
        found = sorted({m for t in tests for m in t["extra_data"].get("misconceptions", [])})
        key = _text(data.get("extra_data", {}).get("student"))
        out.append(
            Row(
                getattr(sub, "name", str(sub)),
                key,
                person_of(sub, data, people or {}),
                float(data.get("score", 0.0)),
                scores,
                tuple(found),
                data.get("extra_data", {}).get("adjustments"),
            )
        )
    return out


def table(
    fmt: Format, assignment: Assignment, rows: Sequence[Row], digits: int = DEFAULT_DIGITS
) -> list[list[str]]:
    """The export as rows of cells, header first, each cell safe to open in a spreadsheet."""
    return [[neutralised(cell) for cell in row] for row in _cells(fmt, assignment, rows, digits)]


def _cells(
    fmt: Format, assignment: Assignment, rows: Sequence[Row], digits: int = DEFAULT_DIGITS
) -> list[list[str]]:
    if fmt == "seqgrade":
        qids = [q.id for q in assignment.questions]
        extra = any(r.adjusted for r in rows)  # the adjustment columns only when some were declared
        body = [
            [
                r.submission,
                r.key or "",
                r.person.name or "",
                r.person.email or "",
                r.person.sid or "",
                rounded(r.total, digits),
                *(_adjustment_cells(r, digits) if extra else ()),
                *(rounded(r.scores[q], digits) if q in r.scores else "" for q in qids),
                ";".join(r.misconceptions),
            ]
            for r in rows
        ]
        head = [*SEQGRADE_COLUMNS, *(ADJUSTMENT_COLUMNS if extra else ()), *qids, "misconceptions"]
        return [head, *body]
    if fmt == "canvas":
        column = assignment.title
        points = ["    Points Possible", "", "", "", "", rounded(assignment.total_points, digits)]
        body = [
            [
                r.person.name or r.submission,
                r.person.canvas_id or "",
                r.person.sid or "",
                r.person.email or "",
                r.person.section or "",
                rounded(r.total, digits),
            ]
            for r in rows
        ]
        return [[*CANVAS_COLUMNS, column], points, *body]
    if fmt == "gradescope":
        return [
            [*GRADESCOPE_COLUMNS],
            *([r.person.email or "", rounded(r.total, digits)] for r in rows),
        ]
    raise ValueError(f"unknown gradebook format {fmt!r}; choose one of {', '.join(FORMATS)}")


def _adjustment_cells(row: Row, digits: int) -> list[str]:
    """raw_total, late (how late), late_penalty_percent, overrides ("a1.softmax 4→6; …")."""
    adj = row.adjusted or {}
    late = adj.get("late") or {}
    moved = "; ".join(
        f"{o['question']} {rounded(o['before'], digits)}→{rounded(o['after'], digits)}"
        for o in adj.get("overrides", [])
    )
    return [
        rounded(adj.get("raw_score", row.total), digits),
        late.get("late", "") or ("on time" if late else ""),
        rounded(late["percent"], digits) if late else "",
        moved,
    ]


def unmatched(fmt: Format, rows: Sequence[Row]) -> list[str]:
    """Submissions the target gradebook cannot match to a student (no email or SIS id)."""
    if fmt == "canvas":
        return [r.submission for r in rows if not (r.person.email or r.person.sid)]
    if fmt == "gradescope":
        return [r.submission for r in rows if not r.person.email]
    return []


def write(
    path: Path | str,
    fmt: Format,
    assignment: Assignment,
    rows: Sequence[Row],
    digits: int = DEFAULT_DIGITS,
) -> None:
    """Write the export to `path` (`-`: standard output)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(table(fmt, assignment, rows, digits))
    if str(path) == "-":
        sys.stdout.write(buf.getvalue())
        sys.stdout.flush()
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(buf.getvalue(), encoding="utf-8")
