"""The outcome of one written question, as grading and the derivation checker both build it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Status = Literal["correct", "wrong", "not-attempted", "unreadable", "manual", "grader-error"]


@dataclass(frozen=True)
class WrittenResult:
    """The outcome of one written question."""

    question_id: str
    score: float  # points earned
    max_score: float  # the question's points
    passed: bool  # full marks
    feedback: str  # markdown for the student
    misconceptions: list[str] = field(default_factory=list)  # catalog ids recognised
    answer_text: str | None = None  # the answer normalised for class statistics; None if absent
    status: Status = "wrong"
    not_attempted: bool = False  # no file, no key, or the template's blank left as is
    interpreted: str | None = None  # how an expression answer was read
