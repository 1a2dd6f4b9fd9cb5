"""Per-student variants: the one variant key of a submission, its seed, the student's numbers.

The variant key is one string the student knows and Gradescope records:
by default the submitter's email, trimmed and lower-cased; `sid` (the roster's student id)
when the assignment chooses it; never Gradescope's internal user id. `variant_key` is the
only place that decides it, for the container, `seqgrade batch`, `seqgrade grade
--student` alike. Each handout ships a standalone `variant.py` (stdlib and numpy only)
with `seed_for(key)` and `numbers(key) -> dict`; the grader loads that same file, so the
numbers a student prints and the ones the grader recomputes cannot drift apart.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from grader.course.content import assignment_dir
from grader.questions import Assignment, Question, WrittenQuestion

KeyField = Literal["email", "sid"]
KeySource = Literal["metadata", "option", "folder", "zip", "none"]

_FIELD_WORDS = {"email": "email address", "sid": "student id (SID)"}


@dataclass(frozen=True)
class VariantKey:
    """Whose numbers a submission is graded with."""

    value: str | None
    """The normalised key; None = the default variant."""
    field: KeyField
    """What kind of key the assignment uses."""
    source: KeySource
    """Where it came from."""
    group_size: int = 1
    """Members of a Gradescope group submission (the first one's key is used)."""
    missing_reason: str | None = None
    """Why no key was found, when value is None."""

    def feedback(self) -> str:
        """One line for the student: which key their numbers were computed for."""
        if self.value is None:
            why = f" ({self.missing_reason})" if self.missing_reason else ""
            return (
                f"No variant key was given{why}: the default variant was used, not your own numbers. "
                "Tell your instructor."
            )
        line = f"Your numbers are those of the variant key `{self.value}` (your {_FIELD_WORDS[self.field]})"
        if self.group_size > 1:
            line += f"; this group submission of {self.group_size} uses its first member's key"
        return line + "."

    def question_line(self) -> str:
        """The line under each per-student question's feedback."""
        if self.value is None:
            return "These numbers are the default variant's (no variant key was given)."
        return f"Your numbers are those of the variant key `{self.value}`."


def _normalise(value: Any, field: KeyField) -> str | None:
    text = "" if value is None else str(value).strip()
    if not text:
        return None
    return text.lower() if field == "email" else text


def _member_value(member: Mapping[str, Any], field: KeyField) -> Any:
    """A member's email or sid, in Gradescope's JSON (`email`) or an export's YAML (`:email`)."""
    for name in (field, f":{field}"):
        if member.get(name) not in (None, ""):
            return member[name]
    return None


def variant_key(
    field: KeyField = "email",
    *,
    explicit: str | None = None,
    users: Sequence[Mapping[str, Any]] | None = None,
    path: Path | None = None,
) -> VariantKey:
    """THE variant key: `--student KEY`, else the first submitter's email/sid, else the folder/zip name.

    `users`: Gradescope's `submission_metadata.json` `users` (or an export's `:submitters`);
    its internal `id` is never used. `path`: a submission folder (its name) or zip (its stem).
    """
    if explicit is not None and _normalise(explicit, field):
        return VariantKey(_normalise(explicit, field), field, "option")
    if users:
        members = [u for u in users if isinstance(u, Mapping)]
        value = _normalise(_member_value(members[0], field), field) if members else None
        if value is None:
            return VariantKey(
                None,
                field,
                "metadata",
                len(members),
                f"Gradescope's record of this submission has no {_FIELD_WORDS[field]}",
            )
        return VariantKey(value, field, "metadata", len(members))
    if path is not None:
        path = Path(path)
        is_zip = path.suffix.lower() == ".zip"
        value = _normalise(path.stem if is_zip else path.name, field)
        if value is not None:
            return VariantKey(value, field, "zip" if is_zip else "folder")
    return VariantKey(None, field, "none")


def default_seed(student: str | None) -> int:
    """0 without a key; otherwise the first 8 hex digits of sha256 of the normalised key."""
    if not student or not student.strip():
        return 0
    return int(hashlib.sha256(student.strip().lower().encode()).hexdigest()[:8], 16)


@cache
def _tool(assignment_id: str) -> ModuleType | None:
    path = assignment_dir(assignment_id) / "variant.py"
    if not path.is_file():
        return None
    spec = importlib.util.spec_from_file_location(f"_seqgrade_variant_{assignment_id}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def seed_for(assignment_id: str, student: str | None) -> int:
    tool = _tool(assignment_id)
    return int(tool.seed_for(student)) if tool is not None else default_seed(student)


def numbers(assignment_id: str, student: str | None) -> dict[str, Any]:
    """The student's own numbers for the written questions (empty when the handout has none)."""
    tool = _tool(assignment_id)
    return dict(tool.numbers(student)) if tool is not None else {}


# Keys that only probe whether a question's numbers depend on the student.
_PROBES = ("probe-a@example.org", "probe-b@example.org", "probe-c@example.org")


def depends_on_key(build: Callable[[str | None], Any]) -> bool:
    """Does `build(key)` (cases or an expected answer) differ between keys? A question whose
    material cannot be built is a suite error and is raised, not read as "per-student"."""
    first = build(None)
    return any(not _same(first, build(k)) for k in _PROBES)


def _same(a: Any, b: Any) -> bool:
    """Deep equality over cases and answers: arrays, containers, dataclasses."""
    import numpy as np

    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.shape == b.shape
            and bool(np.array_equal(a, b))
        )
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if hasattr(a, "__dataclass_fields__") and type(a) is type(b):
        return all(_same(getattr(a, f), getattr(b, f)) for f in a.__dataclass_fields__)
    try:
        return bool(a == b)
    except (TypeError, ValueError):  # no single truth value (an array inside), or incomparable
        return False


def _question_material(assignment_id: str, q: Question, key: str | None) -> Any:
    """What a key changes in a question: its expected written answer, or its hidden cases."""
    if isinstance(q, WrittenQuestion):
        return q.expected(numbers(assignment_id, key))
    return [c for c in q.cases(seed_for(assignment_id, key)) if not c.visible]


def per_student_questions(assignment: Assignment) -> frozenset[str]:
    """The ids of the questions whose hidden cases or expected answer depend on the variant key,
    found by building every question's material for a few probe keys (slow: the registry ships
    the answer as data, `grader/course/per_student.json`, and a test keeps it true)."""
    aid = assignment.id
    return frozenset(
        q.id
        for q in assignment.questions
        if depends_on_key(lambda key, q=q: _question_material(aid, q, key))
    )
