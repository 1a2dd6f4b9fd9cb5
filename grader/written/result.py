"""The outcome of one written question, as grading and the derivation checker both build it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Status = Literal["correct", "wrong", "not-attempted", "unreadable", "manual", "grader-error"]


@dataclass(frozen=True)
class WrittenResult:
    """The outcome of one written question."""

    question_id: str
    score: float
    """Points earned."""
    max_score: float
    """The question's points."""
    passed: bool
    """Full marks."""
    feedback: str
    """Markdown for the student."""
    misconceptions: list[str] = field(default_factory=list)
    """Catalog ids recognised."""
    answer_text: str | None = None
    """The answer normalised for class statistics; None if absent."""
    status: Status = "wrong"
    not_attempted: bool = False
    """No file, no key, or the template's blank left as is."""
    interpreted: str | None = None
    """How an expression answer was read."""
