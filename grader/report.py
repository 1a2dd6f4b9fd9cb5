"""What grading one submission produces: a result per question and the report around them."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class QuestionResult:
    """One question's grade and feedback (one entry of results.json's `tests`)."""

    question_id: str
    title: str
    number: str
    kind: str  # "code" | "written"
    function: str | None
    score: float
    max_score: float
    feedback: str  # markdown
    visibility: str
    misconceptions: list[str] = field(default_factory=list)
    answer_text: str | None = None  # a written answer as given, for the class report
    not_attempted: bool = False
    error: str | None = (
        None  # a failure to run (missing file, import error, crash), for the class report
    )
    # Follow-through (contract §8): mistakes charged in an earlier question that explain this
    # one's wrong outputs, as {"from": question id, "misconception": id}, and the points they
    # returned (earned here although the outputs differ from the reference's).
    carried: list[dict[str, str]] = field(default_factory=list)
    carried_points: float = 0.0
    needs_review: list[str] = field(default_factory=list)  # constructs an instructor should look at

    @property
    def status(self) -> str:
        return "passed" if self.score >= self.max_score - 1e-9 else "failed"


@dataclass
class GradeReport:
    assignment_id: str
    student: str | None
    seed: int
    questions: list[QuestionResult]
    execution_time: float
    isolated: bool
    warnings: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)  # what the sandbox stopped, in plain words
    student_output: str = ""  # what the student's code printed (truncated)
    grader_error: str | None = None  # the grader itself failed midway
    answer_key: str | None = (
        None  # the expected written answers for this student's variant (markdown)
    )
    notebook: dict[str, object] | None = (
        None  # {"file": "transformer.ipynb", "failed_cells": [7, 9]}
    )

    @property
    def score(self) -> float:
        return round(sum(q.score for q in self.questions), 6)

    @property
    def max_score(self) -> float:
        return sum(q.max_score for q in self.questions)
