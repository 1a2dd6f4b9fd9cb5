"""The course roster: who is enrolled (email, name, SID, Canvas id, section) and each student's
deadline extensions and late-day allowance, read from one CSV file the staff keep."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from grader.course.settings import csv_rows

EXTENSION_PREFIX = "extension:"  # a column `extension:a1` holds a1's extension ("2d", "36h")
_DURATION = re.compile(
    r"^\s*(\d+(?:[.,]\d+)?)\s*(d|day|days|h|hour|hours|m|min|minutes)?\s*$", re.I
)


class RosterError(ValueError):
    """The roster file cannot be used: a missing column, a bad duration, a duplicate student."""


def parse_duration(text: str, where: str = "") -> timedelta:
    """`"2d"`, `"36h"`, `"90m"` or a plain number of days as a duration (`"1.5d"`, or `"1,5d"`
    as a spreadsheet with a decimal comma writes it)."""
    m = _DURATION.match(str(text))
    if not m:
        raise RosterError(
            f"{where}{text!r} is not a duration: write a number of days, or 2d, 36h, 90m"
        )
    value, unit = float(m.group(1).replace(",", ".")), (m.group(2) or "d").lower()
    if unit.startswith("d"):
        return timedelta(days=value)
    if unit.startswith("h"):
        return timedelta(hours=value)
    return timedelta(minutes=value)


@dataclass(frozen=True)
class Student:
    """One roster row."""

    email: str
    """Lower-cased: the default variant key and Gradescope's login."""
    name: str = ""
    sid: str = ""
    """The institution's student id (Canvas's SIS User ID)."""
    canvas_id: str = ""
    """Canvas's own user id (its gradebook's `ID` column)."""
    section: str = ""
    late_days: int | None = None
    """This student's late-day allowance, when it differs from the term's."""
    extensions: Mapping[str, timedelta] = field(default_factory=dict)
    """Short id (a1) -> extension."""

    def keys(self) -> set[str]:
        """Every string this student may be named by in an overrides file or an export."""
        return {k.strip().lower() for k in (self.email, self.sid) if k.strip()}


@dataclass(frozen=True)
class Roster:
    """Students by every key they may be named by."""

    students: tuple[Student, ...] = ()

    def find(self, keys: Iterable[str | None]) -> Student | None:
        """The student any of `keys` (an email, a SID) names, if the roster holds one."""
        wanted = {k.strip().lower() for k in keys if k and k.strip()}
        return next((s for s in self.students if s.keys() & wanted), None)


def load(path: Path) -> Roster:
    """Read a roster CSV: an `email` column, optional `name`, `sid`, `canvas_id`, `section`,
    `late_days` and one `extension:<a1 … a7>` column per assignment with extensions."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as err:
        raise RosterError(f"roster {path}: cannot be read ({err})") from None
    reader = csv_rows(text)
    columns = [c.strip().lower() for c in reader.fieldnames or []]
    if "email" not in columns:
        raise RosterError(
            f"roster {path}: no `email` column (found: {', '.join(columns) or 'none'})"
        )
    students: list[Student] = []
    seen: dict[str, int] = {}
    for line, raw in enumerate(reader, start=2):
        row = {str(k).strip().lower(): (v or "").strip() for k, v in raw.items() if k is not None}
        where = f"roster {Path(path).name}, line {line}: "
        email = row.get("email", "").lower()
        if not email:
            raise RosterError(f"{where}the email is empty")
        if email in seen:
            raise RosterError(f"{where}{email} is listed twice (also line {seen[email]})")
        seen[email] = line
        late = row.get("late_days", "")
        if late and not late.isdigit():
            raise RosterError(f"{where}late_days must be a whole number, got {late!r}")
        extensions = {
            col[len(EXTENSION_PREFIX) :].strip(): parse_duration(value, where)
            for col, value in row.items()
            if col.startswith(EXTENSION_PREFIX) and value
        }
        students.append(
            Student(
                email,
                row.get("name", ""),
                row.get("sid", ""),
                row.get("canvas_id", ""),
                row.get("section", ""),
                int(late) if late else None,
                extensions,
            )
        )
    return Roster(tuple(students))
