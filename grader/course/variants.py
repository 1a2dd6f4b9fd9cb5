"""Per-student variants: a seed from the student's id, and the student's own numbers.

Each assignment's handout ships a standalone `variant.py` (stdlib and numpy only) with
`seed_for(student_id)` and `numbers(student_id) -> dict`; the grader loads that same file,
so the student's printed numbers and the grader's recomputed ones cannot drift apart.
"""

from __future__ import annotations

import hashlib
import importlib.util
from functools import cache
from types import ModuleType
from typing import Any

from grader.course.content import assignment_dir


def default_seed(student: str | None) -> int:
    """0 without an id; otherwise the first 8 hex digits of sha256 of the normalised id."""
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
