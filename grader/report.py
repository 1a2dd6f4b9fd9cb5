"""What grading one submission produces: typed records per question and per case.

Grading never writes feedback text for a case: it records what happened (the case's category,
which output, a built-in exception's name) and, apart, everything else it knows (messages,
values, the student's line). Every view (terminal, markdown, results.json, the class report,
notebooks) renders these records (grader/reports/feedback.py). What a student sees of a hidden
case is a `CaseSummary`, whose fields hold only trusted values from a fixed vocabulary: the
student's process chooses everything it produces (values, messages, class names, shapes, line
numbers, how long it takes) and could make any of it spell the hidden inputs. The rules are
written out in docs/feedback.md.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

QuestionKind = Literal["code", "written", "instructor"]
HiddenFeedback = Literal["category", "pass-fail", "summary"]
HIDDEN_FEEDBACK: tuple[str, ...] = ("category", "pass-fail", "summary")

# Python's built-in exception classes: the only exception names a hidden case may show.
BUILTIN_EXCEPTIONS: frozenset[str] = frozenset(
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
)


class Category(str, Enum):
    """What became of one case (or one check of a custom-judged question)."""

    PASSED = "passed"
    CARRIED = "carried"  # right given a mistake charged in an earlier question
    STRUCTURE = "structure"  # the wrong kind of value: a tuple of 3 for 2, a dict for an array
    SHAPE = "shape"
    NONFINITE = "nonfinite"
    VALUES = "values"
    RAISED = "raised"
    TIMEOUT = "timeout"
    CRASHED = "crashed"  # the process ended, or was stopped by a limit
    UNREADABLE = "unreadable"  # a value that is not plain data (or wrote to the grader's channel)
    NOT_RUN = "not-run"  # after an earlier case timed out, or past the submission's budget
    MISSING = "missing"  # the file has no such function
    IMPORT = "import"  # the file could not be imported (or its process not restarted)
    FAILED = "failed"  # a custom judge's check that did not hold

    @property
    def passed(self) -> bool:
        return self in (Category.PASSED, Category.CARRIED)


@dataclass(frozen=True, kw_only=True)
class CaseSummary:
    """What anyone may see of a case: trusted values only, from a fixed vocabulary."""

    label: str
    """The case's authored name ("notes example", "hidden case 3")."""
    category: Category
    outputs: tuple[tuple[str, Category], ...] = ()
    """Which outputs differ and how, by the names the question declares (or the reference's
    keys and positions)."""
    exception: str | None = None
    """The exception's class name when it is one of Python's built-in exceptions."""
    own_exception: bool = False
    """The exception's class is not a built-in one (defined in the student's code or a library)."""
    limit_seconds: float | None = None
    """For a timeout: the call limit it ran into (the grader's number, never a measured time)."""
    given: tuple[str, ...] = ()
    """For a carried case: the earlier questions it is right given, as "`attention` (question 1)"."""
    not_run_because: Literal["timeout", "budget", ""] = ""
    """For a case not run: an earlier case timed out, or the submission's time budget ran out."""

    def __post_init__(self) -> None:
        if self.exception is not None and self.exception not in BUILTIN_EXCEPTIONS:
            raise ValueError(f"{self.exception!r} is not one of Python's built-in exceptions")

    @property
    def passed(self) -> bool:
        return self.category.passed


@dataclass(frozen=True, kw_only=True)
class SourceSpot:
    """A line of the student's code, in the terms the student sees it (a file or a cell)."""

    file: str
    line: int
    text: str = ""
    cell: int | None = None
    """The notebook's code cell holding the line (counted as Jupyter shows them)."""
    cell_head: str = ""
    """That cell's first line, quoted so the student finds it."""

    def words(self, with_file: bool = False) -> str:
        """"line 12", "`word_vectors.py` line 12", "code cell 4 (`def f(…)`), line 3"."""
        if self.cell is not None:
            head = f" (`{self.cell_head}`)" if self.cell_head else ""
            return f"code cell {self.cell}{head}, line {self.line}"
        return f"`{self.file}` line {self.line}" if with_file else f"line {self.line}"


@dataclass(frozen=True, kw_only=True)
class CaseDetail:
    """Everything known about a case: a visible case shows it, a hidden one only to instructors."""

    messages: tuple[str, ...] = ()
    """What differs or what went wrong, in full (sizes, positions, the exception's message)."""
    inputs: str | None = None
    got: str | None = None
    expected: str | None = None
    spot: SourceSpot | None = None
    """Where the student's code raised."""


@dataclass(frozen=True, kw_only=True)
class CaseRecord:
    """One case of a code question (or one check of a custom-judged one)."""

    visible: bool
    """A visible case shows its detail; a hidden case only its summary (and instructors all)."""
    summary: CaseSummary
    detail: CaseDetail = CaseDetail()

    @property
    def passed(self) -> bool:
        return self.summary.passed


@dataclass(kw_only=True)
class QuestionResult:
    """One question's grade and the records its feedback is rendered from (one results.json test)."""

    question_id: str
    title: str
    number: str
    kind: QuestionKind
    function: str | None
    """The contract function a code question calls (None for written questions)."""
    score: float
    max_score: float
    visibility: str
    lead: str = ""
    """Trusted markdown before the cases: a written answer's feedback, why a question was not
    graded (missing file, library shortcut, not attempted), an instructor test's output."""
    cases: list[CaseRecord] = field(default_factory=list)
    unit: Literal["cases", "checks"] = "cases"
    """What the cases are: calls compared with the reference, or a custom judge's checks."""
    how: str = ""
    """How a custom judge made its checks, shown after "k/n checks passed"."""
    notes: list[str] = field(default_factory=list)
    """Trusted markdown after the cases: follow-through, diagnoses, needs-review, notebook notes."""
    hidden_feedback: HiddenFeedback = "category"
    """How much of a hidden case a student sees (the assignment's policy)."""
    misconceptions: list[str] = field(default_factory=list)
    answer_text: str | None = None
    """A written answer as given, for the class report."""
    not_attempted: bool = False
    error: str | None = None
    """A failure to run (missing file, import error, crash), for instructors and the class report."""
    carried: list[dict[str, str]] = field(default_factory=list)
    """Follow-through: mistakes charged in an earlier question that explain this one's wrong
    outputs, as {"from": question id, "misconception": id}."""
    carried_points: float = 0.0
    """The points those carried mistakes returned here."""
    needs_review: list[str] = field(default_factory=list)
    """Constructs an instructor should look at."""
    failure_kinds: tuple[str, ...] = ()
    """The kinds of the calls' failures (missing-function, import, exception, ...), for the views
    that explain them (a notebook cell that raised can explain a missing function)."""

    @property
    def status(self) -> str:
        return "passed" if self.score >= self.max_score - 1e-9 else "failed"


@dataclass(kw_only=True)
class GradeReport:
    """One graded submission."""

    assignment_id: str
    student: str | None
    seed: int
    questions: list[QuestionResult]
    execution_time: float
    isolated: bool
    warnings: list[str] = field(default_factory=list)
    """Notes for the student: missing files, notebook cells, the variant used."""
    events: list[str] = field(default_factory=list)
    """What the sandbox stopped, in words a student may see (no detail from their process)."""
    event_details: list[str] = field(default_factory=list)
    """The same events in full (exit statuses, counts), for instructors."""
    student_output: str = ""
    """What the student's code printed (truncated)."""
    grader_error: str | None = None
    """The grader itself failed midway."""
    answer_key: str | None = None
    """The expected written answers for this student's variant (markdown)."""
    notebook: dict[str, object] | None = None
    """For a notebook: {"file": ..., "failed_cells": [...], "answers_from": ...}."""

    @property
    def score(self) -> float:
        return round(sum(q.score for q in self.questions), 6)

    @property
    def max_score(self) -> float:
        return sum(q.max_score for q in self.questions)
