"""Signals of copying, for a person to look at (never a penalty).

- Written numbers that are right for another student's variant and wrong for one's own: the
  numbers were almost certainly computed from someone else's handout (which answers, whose
  variant).
- Identical code files across submissions, after removing comments and whitespace (a copy of
  the untouched handout stub is not a signal).
"""

from __future__ import annotations

import ast
import hashlib
import io
import tokenize
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grader.course import variants
from grader.course.content import assignment_dir
from grader.questions import Assignment, WrittenQuestion

NUMERIC_KINDS = ("number", "array")
MAX_CODE_BYTES = 2_000_000


@dataclass(frozen=True)
class BorrowedAnswers:
    """A student whose written numbers are right for another student's variant, not their own."""

    student: str
    """The submission that holds the answers."""
    other: str
    """The submission whose variant they are right for."""
    questions: tuple[str, ...]
    """Question ids."""


def _key(sub: Any, data: Mapping[str, Any]) -> str | None:
    key = data.get("extra_data", {}).get("student")
    return key if key else getattr(sub, "student_id", None) or getattr(sub, "name", None)


def read_answer(kind: str, text: str) -> np.ndarray | None:
    """A number or array answer as recorded in results.json (`extra_data.answer`), or None."""
    try:
        value = float(text) if kind == "number" else ast.literal_eval(text.strip())
        out = np.asarray(value, dtype=np.float64)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return out if np.all(np.isfinite(out)) else None


def agrees(got: np.ndarray, want: Any, q: WrittenQuestion) -> bool:
    """The written question's own tolerance: |got - want| <= atol + rtol |want|."""
    try:
        w = np.asarray(want, dtype=np.float64)
    except (ValueError, TypeError):
        return False
    if w.shape != got.shape:
        return False
    return bool(np.all(np.abs(got - w) <= q.tolerance.atol + q.tolerance.rtol * np.abs(w)))


class Expected:
    """The expected written answers of each variant key, computed once per key."""

    def __init__(self, assignment: Assignment) -> None:
        self.assignment = assignment
        self._cache: dict[tuple[str, str | None], Any] = {}

    def __call__(self, q: WrittenQuestion, key: str | None) -> Any:
        if (q.id, key) not in self._cache:
            try:
                self._cache[(q.id, key)] = q.expected(variants.numbers(self.assignment.id, key))
            except Exception:  # noqa: BLE001 - an instructor's formula failing must not sink the report
                self._cache[(q.id, key)] = None
        return self._cache[(q.id, key)]


def wrong_numeric_answers(
    assignment: Assignment, graded: Iterable[tuple[Any, Mapping[str, Any]]]
) -> list[tuple[str, str | None, WrittenQuestion, np.ndarray]]:
    """(submission, its key, question, answer) for every wrong number or array answer."""
    questions = {
        q.id: q
        for q in assignment.questions
        if isinstance(q, WrittenQuestion) and q.answer_kind in NUMERIC_KINDS
    }
    out = []
    for sub, data in graded:
        for t in data.get("tests", []):
            extra = t.get("extra_data", {})
            q = questions.get(extra.get("question"))
            if q is None or t.get("status") != "failed" or not extra.get("answer"):
                continue
            got = read_answer(q.answer_kind, str(extra["answer"]))
            if got is not None:
                out.append((getattr(sub, "name", str(sub)), _key(sub, data), q, got))
    return out


def borrowed_answers(
    assignment: Assignment,
    graded: Sequence[tuple[Any, Mapping[str, Any]]],
    expected: Callable[[WrittenQuestion, str | None], Any] | None = None,
) -> list[BorrowedAnswers]:
    """Pairs (student, other) where the student's wrong numbers are right for the other's variant."""
    expected = expected or Expected(assignment)
    keys = {getattr(s, "name", str(s)): _key(s, d) for s, d in graded}
    found: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name, key, q, got in wrong_numeric_answers(assignment, graded):
        own = expected(q, key)
        for other, other_key in keys.items():
            if other == name or other_key == key:
                continue
            theirs = expected(q, other_key)
            if (
                theirs is not None
                and agrees(got, theirs, q)
                and not (own is not None and agrees(got, own, q))
            ):
                found[(name, other)].append(q.id)
    return [BorrowedAnswers(s, o, tuple(qs)) for (s, o), qs in sorted(found.items())]


# ------------------------------------------------------------------------- identical code


def normalised(source: str) -> str:
    """The source without comments and whitespace (token by token; raw text if it does not tokenize)."""
    try:
        tokens = tokenize.generate_tokens(io.StringIO(source).readline)
        kept = [
            t.string
            for t in tokens
            if t.type
            not in (
                tokenize.COMMENT,
                tokenize.NL,
                tokenize.NEWLINE,
                tokenize.INDENT,
                tokenize.DEDENT,
                tokenize.ENDMARKER,
            )
        ]
        return " ".join(kept)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return "".join(source.split())


def code_text(path: Path, file_name: str) -> str | None:
    """The submission's code file (a folder or a zip, at its top level or one folder down)."""
    path = Path(path)
    try:
        if path.is_dir():
            hits = sorted(
                (p for p in path.rglob(file_name) if p.is_file()), key=lambda p: len(p.parts)
            )
            return hits[0].read_text(encoding="utf-8", errors="replace") if hits else None
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as zf:
                names = sorted(
                    (n for n in zf.namelist() if n.rsplit("/", 1)[-1] == file_name), key=len
                )
                info = zf.getinfo(names[0]) if names else None
                if info is None or info.file_size > MAX_CODE_BYTES:
                    return None
                return zf.read(info).decode("utf-8", errors="replace")
    except (OSError, zipfile.BadZipFile, ValueError):
        return None
    return None


def identical_code(assignment: Assignment, submissions: Iterable[Any]) -> list[tuple[str, ...]]:
    """Groups of two or more submissions whose code files are the same once normalised."""
    if not assignment.code_file:
        return []
    stub = code_text(assignment_dir(assignment.id), assignment.code_file)
    stub_digest = _digest(stub) if stub is not None else None
    groups: dict[str, list[str]] = defaultdict(list)
    for sub in submissions:
        text = code_text(getattr(sub, "path", Path("")), assignment.code_file)
        if text is None or not text.strip():
            continue
        digest = _digest(text)
        if digest != stub_digest:
            groups[digest].append(getattr(sub, "name", str(sub)))
    return sorted(tuple(sorted(names)) for names in groups.values() if len(names) > 1)


def _digest(source: str) -> str:
    return hashlib.sha256(normalised(source).encode()).hexdigest()
