"""The late policy: how late a submission was (after its student's extension and the grace
period), how many late days it spends, and the share of the score it loses; the same function
serves the Gradescope container and a batch."""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from grader.course.settings import known_keys

Kind = Literal["none", "percent_per_day", "percent_per_hour"]
KINDS: tuple[str, ...] = ("none", "percent_per_day", "percent_per_hour")
_UNIT = {"percent_per_day": timedelta(days=1), "percent_per_hour": timedelta(hours=1)}
DAY = timedelta(days=1)


class LateError(ValueError):
    """A late policy or a date that cannot be used."""


@dataclass(frozen=True)
class Dates:
    """One assignment's deadlines (aware datetimes)."""

    due: datetime | None = None
    """None: the assignment has no due date, and no submission is late."""
    late_due: datetime | None = None
    """After this (extended), the submission scores 0."""


@dataclass(frozen=True)
class Policy:
    """What lateness costs."""

    kind: Kind = "none"
    """none, or a percentage of the score per started day / hour late."""
    percent: float = 0.0
    """Percent of the score lost per started unit."""
    cap: float = 100.0
    """At most this percent is lost, however late."""
    grace: timedelta = timedelta(0)
    """Lateness up to this counts as on time."""
    late_days: int = 0
    """Late days per student per term: each forgives one started day."""


@dataclass(frozen=True)
class Verdict:
    """What the policy decided for one submission."""

    late_by: timedelta
    """After the extended due date (0 when on time or within the grace period)."""
    late_days_used: int
    """Late days this submission spends."""
    late_days_left: int | None
    """After it (None when the policy has no late days)."""
    percent: float
    """Share of the score lost, 0-100."""
    after_late_due: bool
    """Submitted after the (extended) late due date: scores 0."""
    extension: timedelta
    """The student's extension for this assignment."""
    unit: timedelta = DAY
    """What the policy charges per started one (a day or an hour)."""

    def message(self, lost_points: float) -> str:
        """What the student reads: "Submitted 1 day 3 h late: −10% (−8.5 points)."."""
        if self.late_by <= timedelta(0):
            return ""
        when = f"Submitted {span(self.late_by, self.unit)} late"
        if self.after_late_due:
            return f"{when}, after the late due date: the score counts as 0 (−{_pts(lost_points)})."
        parts = []
        if self.late_days_used:
            parts.append(
                f"{self.late_days_used} late day{'s' if self.late_days_used != 1 else ''} used"
                + (f", {self.late_days_left} left" if self.late_days_left is not None else "")
            )
        cost = f"−{self.percent:g}% (−{_pts(lost_points)})" if self.percent else "no penalty"
        return f"{when}" + (f" ({'; '.join(parts)})" if parts else "") + f": {cost}."


def _pts(points: float) -> str:
    value = f"{points:.2f}".rstrip("0").rstrip(".")
    return f"{value} point{'' if value == '1' else 's'}"


def span(delta: timedelta, unit: timedelta | None = None) -> str:
    """A lateness as people say it: "1 day 3 h", "2 h 5 min", "40 s". `unit`: the policy's
    (a day or an hour), charged per started one: what is left out never hides one ("2 days
    1 min" is three started days, where "2 days" would read as two)."""
    seconds = max(int(delta.total_seconds()), 0)
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts: list[tuple[int, str]] = []
    if days:
        parts.append((days * 86400, f"{days} day{'s' if days != 1 else ''}"))
    if hours:
        parts.append((hours * 3600, f"{hours} h"))
    if minutes and not days:
        parts.append((minutes * 60, f"{minutes} min"))
    if not parts:
        parts.append((secs, f"{secs} s"))
    if unit is not None:
        step = max(int(unit.total_seconds()), 1)
        shown = sum(n for n, _ in parts)
        if -(-seconds // step) > -(-shown // step):  # a started unit the words leave out
            rest = seconds - shown
            more = (rest // 60, f"{rest // 60} min") if rest >= 60 else (rest, f"{rest} s")
            parts.append(more)
    return " ".join(words for _, words in parts)


def parse_date(value: Any, what: str) -> datetime | None:
    """An ISO 8601 date with its time zone (Gradescope's `2026-09-18T23:59:00.000000-04:00`, an
    export's `2026-09-18 23:59:00.000000000 -04:00`, or a TOML datetime)."""
    if value in (None, ""):
        return None
    if isinstance(value, datetime):
        stamp = value
    else:
        text = str(value).strip().replace("Z", "+00:00")
        head, _, zone = text.rpartition(" ")
        if head and zone[:1] in "+-" and ":" in zone:  # "… 23:59:00.5 -04:00"
            text = f"{head}{zone}"
        # at most 6 fraction digits for fromisoformat (an export gives 9)
        text = re.sub(r"\.(\d{1,6})\d*", lambda m: "." + m.group(1).ljust(6, "0"), text, count=1)
        try:
            stamp = datetime.fromisoformat(text.replace(" ", "T", 1))
        except ValueError:
            raise LateError(
                f"{what}: {value!r} is not a date; write it as 2026-09-18T23:59:00-04:00"
            ) from None
    if stamp.tzinfo is None:
        shown = value.isoformat() if isinstance(value, datetime) else value
        raise LateError(f"{what}: {shown!r} has no time zone; add one, e.g. -04:00 or Z")
    return stamp


def policy_from(table: Mapping[str, Any], where: str = "late policy") -> Policy:
    """A Policy from a `[late]` table (kind, percent, cap, grace, late_days)."""
    from grader.course.roster import RosterError, parse_duration

    known_keys(table, ("kind", "percent", "cap", "grace", "late_days"), where, LateError)
    kind = str(table.get("kind", "none"))
    if kind not in KINDS:
        raise LateError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    try:
        grace = parse_duration(table.get("grace", "0m"), f"{where}: grace ")
    except RosterError as err:
        raise LateError(str(err)) from None
    numbers = {}
    for name, default in (("percent", 0.0), ("cap", 100.0), ("late_days", 0)):
        value = table.get(name, default)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise LateError(f"{where}: {name} must be a number ≥ 0, got {value!r}")
        numbers[name] = value
    if kind != "none" and not numbers["percent"]:
        raise LateError(f"{where}: kind {kind} needs a percent (per day or hour)")
    if numbers["cap"] > 100 or int(numbers["late_days"]) != numbers["late_days"]:
        raise LateError(f"{where}: cap is at most 100 and late_days a whole number")
    return Policy(
        kind, float(numbers["percent"]), float(numbers["cap"]), grace, int(numbers["late_days"])
    )  # type: ignore[arg-type]


def assess(
    policy: Policy,
    dates: Dates,
    submitted: datetime | None,
    *,
    extension: timedelta = timedelta(0),
    late_days_available: int | None = None,
) -> Verdict | None:
    """The policy's decision for a submission at `submitted`; None when there is nothing to assess
    (no due date or no submission time). Late days forgive whole started days before any
    percentage is charged; the grace period applies to the extended due date."""
    if dates.due is None or submitted is None:
        return None
    due = dates.due + extension
    late_by = submitted - due
    if late_by <= policy.grace:
        late_by = timedelta(0)
    allowance = policy.late_days if late_days_available is None else late_days_available
    used = min(math.ceil(late_by / DAY), max(allowance, 0)) if late_by > timedelta(0) else 0
    charged = late_by - used * DAY
    after = dates.late_due is not None and submitted > dates.late_due + extension + used * DAY
    unit = _UNIT.get(policy.kind, DAY)
    if after:
        percent = 100.0
    elif policy.kind == "none" or charged <= timedelta(0):
        percent = 0.0
    else:
        percent = min(math.ceil(charged / unit) * policy.percent, policy.cap)
    left = allowance - used if allowance or policy.late_days else None
    return Verdict(late_by, used, left, percent, after, extension, unit)


# ------------------------------------------------------------------- late days across assignments


def read_ledger(path: Path) -> dict[tuple[str, str], int]:
    """Late days spent: (student, assignment id) -> days, from a CSV `student,assignment,days`."""
    if not Path(path).is_file():
        return {}
    out: dict[tuple[str, str], int] = {}
    for line, row in enumerate(
        csv.DictReader(Path(path).read_text(encoding="utf-8").splitlines()), 2
    ):
        try:
            out[(row["student"].strip().lower(), row["assignment"].strip())] = int(row["days"])
        except (KeyError, ValueError, AttributeError, TypeError):
            raise LateError(
                f"{Path(path).name}, line {line}: expected student,assignment,days (a whole number)"
            ) from None
    return out


def spent_before(ledger: Mapping[tuple[str, str], int], student: str, assignment_id: str) -> int:
    """Late days the student spent on the assignments before this one (in the course's order)."""
    from grader.course.registry import ASSIGNMENT_IDS

    order = {aid: i for i, aid in enumerate(ASSIGNMENT_IDS)}
    here = order.get(assignment_id, len(order))
    return sum(
        days
        for (who, aid), days in ledger.items()
        if who == student and order.get(aid, len(order)) < here
    )


def write_ledger(path: Path, ledger: Mapping[tuple[str, str], int]) -> None:
    rows = sorted((who, aid, days) for (who, aid), days in ledger.items() if days)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(["student", "assignment", "days"])
        out.writerows(rows)
