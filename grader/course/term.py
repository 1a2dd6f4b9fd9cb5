"""The term file (`term.toml`): the course's late policy, each assignment's due dates, the
sandbox's limits, and where the roster, the late-day ledger and the overrides files live; read
once, checked whole."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.course import late, roster
from grader.course.registry import UnknownAssignment, resolve_id
from grader.course.settings import known_keys

TERM_FILE = "term.toml"
SECTIONS = (  # the top-level keys a term file may have
    "late",
    "assignments",
    "roster",
    "late_days_ledger",
    "overrides",
    "limits",
)
BUNDLE_DIR = "seqgrade_term"  # where `seqgrade autograder --term` puts these files in the bundle


class TermError(ValueError):
    """A term file that cannot be used."""


@dataclass(frozen=True)
class Term:
    """Everything the course staff declare for a term."""

    policy: late.Policy = late.Policy()
    dates: Mapping[str, late.Dates] = field(default_factory=dict)
    """Full assignment id -> deadlines."""
    roster: roster.Roster = roster.Roster()
    roster_path: Path | None = None
    ledger_path: Path | None = None
    """Late days spent, across assignments (read and written by batch)."""
    overrides_dir: Path | None = None
    """Holds <a1 … a7>.toml or .csv."""
    limits: Mapping[str, float] = field(default_factory=dict)
    """`[limits]`, by the names of grader.sandbox.Limits' fields (call_seconds,
    submission_seconds, memory_bytes); what is not given keeps its default."""

    def overrides_file(self, assignment_id: str) -> Path | None:
        """This assignment's overrides file in the term's overrides folder, if there is one."""
        if self.overrides_dir is None:
            return None
        short = assignment_id.split("_", 1)[0]
        for name in (
            f"{short}.toml",
            f"{short}.csv",
            f"{assignment_id}.toml",
            f"{assignment_id}.csv",
        ):
            if (self.overrides_dir / name).is_file():
                return self.overrides_dir / name
        return None


def _toml(path: Path) -> dict[str, Any]:
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as err:
        raise TermError(f"{path}: cannot be read ({err})") from None
    except tomllib.TOMLDecodeError as err:
        raise TermError(f"{path}: not valid TOML ({err})") from None


def load(path: Path) -> Term:
    """Read `term.toml`; relative paths in it are relative to its folder."""
    path = Path(path)
    data = _toml(path)
    base = path.parent
    known_keys(data, SECTIONS, path.name, TermError)
    try:
        policy = late.policy_from(data.get("late", {}), f"{path.name} [late]")
        dates = {}
        for name, table in (data.get("assignments") or {}).items():
            try:
                aid = resolve_id(name)
            except UnknownAssignment as err:
                raise TermError(f"{path.name} [assignments.{name}]: {err}") from None
            if not isinstance(table, dict) or set(table) - {"due", "late_due"}:
                raise TermError(
                    f"{path.name} [assignments.{name}]: give `due` and optionally `late_due`"
                )
            where = f"{path.name} [assignments.{name}]"
            dates[aid] = late.Dates(
                late.parse_date(table.get("due"), f"{where} due"),
                late.parse_date(table.get("late_due"), f"{where} late_due"),
            )
        roster_path = base / data["roster"] if data.get("roster") else None
        people = roster.load(roster_path) if roster_path else roster.Roster()
    except (late.LateError, roster.RosterError) as err:
        raise TermError(str(err)) from None
    return Term(
        policy,
        dates,
        people,
        roster_path,
        base / data["late_days_ledger"] if data.get("late_days_ledger") else None,
        base / data["overrides"] if data.get("overrides") else None,
        limits_from(data.get("limits", {}), f"{path.name} [limits]"),
    )


# [limits] settings: (the sandbox.Limits field, the unit's size, the smallest and largest value)
LIMIT_SETTINGS = {
    "call_seconds": ("call_seconds", 1, 0.1, 600.0),
    "submission_seconds": ("submission_seconds", 1, 1.0, 3600.0),
    "memory_mib": ("memory_bytes", 1 << 20, 256, 65536),
}


def limits_from(table: Any, where: str) -> dict[str, float]:
    """The `[limits]` table as sandbox.Limits keyword arguments, each value checked."""
    known_keys(table, LIMIT_SETTINGS, where, TermError)
    out: dict[str, float] = {}
    for name, value in table.items():
        field_name, unit, low, high = LIMIT_SETTINGS[name]
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not low <= value <= high:
            raise TermError(f"{where} {name}: a number from {low:g} to {high:g}, not {value!r}")
        if name == "memory_mib" and not float(value).is_integer():
            raise TermError(f"{where} {name}: a whole number of MiB, not {value!r}")
        out[field_name] = int(value) * unit if unit != 1 else float(value)
    call, whole = out.get("call_seconds"), out.get("submission_seconds")
    if call is not None and whole is not None and whole < call:
        raise TermError(
            f"{where}: submission_seconds ({whole:g}) is shorter than call_seconds ({call:g})"
        )
    return out


def bundle_files(term_path: Path, assignment_id: str) -> dict[str, Path]:
    """The files `seqgrade autograder --term` copies into the bundle (under BUNDLE_DIR), by the
    names the container reads: the term file, its roster, ledger, and this assignment's overrides."""
    from grader.course import overrides
    from grader.course.registry import load as load_assignment

    term = load(term_path)
    base = Path(term_path).parent
    found = term.overrides_file(assignment_id)
    if found is not None:
        try:  # a bad entry is refused now, not in every student's grading
            overrides.load(found, load_assignment(assignment_id))
        except overrides.OverrideError as err:
            raise TermError(str(err)) from None
    files = [p for p in (term.roster_path, term.ledger_path, found) if p and p.is_file()]
    out = {f"{BUNDLE_DIR}/{TERM_FILE}": Path(term_path)}
    for p in files:
        rel = os.path.relpath(p, base)
        if rel.startswith(".."):
            raise TermError(
                f"{p} is outside {base}: keep the roster, ledger and overrides in the term file's "
                "folder (or below it) so that the bundle can carry them"
            )
        out[f"{BUNDLE_DIR}/{Path(rel).as_posix()}"] = p
    return out
