"""What grading one submission produces: typed records per question and per case.

Grading never writes feedback text for a case: it records what happened (the case's category,
which output, a built-in exception's name) and, apart, everything else it knows (messages,
values, the student's line). Every view (terminal, markdown, results.json, the class report,
notebooks) renders these records, and the one rule per visibility that turns a question's
records into markdown lives here, beside them: a visible case shows its detail (what differs,
the inputs, what came back and what was expected, the student's line); a hidden case only its
`CaseSummary`, whose fields hold only trusted values from a fixed vocabulary (the student's
process chooses everything it produces: values, messages, class names, shapes, line numbers,
how long it takes, and could make any of it spell the hidden inputs). The assignment's
`hidden_feedback` may show less of a hidden case: "category" (the default) its label, passed or
not, which output and a category in fixed words; "pass-fail" its label and ✔/✘; "summary" only
how many hidden cases passed. Instructors see every case in full (`instructor=True`). The rules
are written out for users in docs/feedback.md.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Callable, Sequence
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
        """ "line 12", "`word_vectors.py` line 12", "code cell 4 (`def f(…)`), line 3"."""
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
    """The graded function a code question calls (None for written questions)."""
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

    @property
    def feedback(self) -> str:
        """The whole feedback as the student sees it (markdown)."""
        return question_markdown(self)


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


# ---------------------------------------------------------------------------- rendering

CATEGORY_WORDS: dict[Category, str] = {
    Category.STRUCTURE: "wrong type or structure",
    Category.SHAPE: "wrong shape",
    Category.NONFINITE: "NaN or inf",
    Category.VALUES: "values differ",
}


def _raised(s: CaseSummary, function: str | None) -> str:
    where = f" in `{function}`" if function else ""
    if s.exception is not None:
        return f"raised `{s.exception}`{where}"
    return f"raised an exception{where} of a class that is not one of Python's built-in exceptions"


def summary_words(s: CaseSummary, function: str | None = None) -> str:
    """A case's category in fixed words: nothing in them comes from the student's process."""
    f = f"`{function}`" if function else "the function"
    c = s.category
    if c is Category.CARRIED:
        return "right given your " + " and your ".join(s.given)
    if s.outputs:
        return "; ".join(
            f"`{name}`: {CATEGORY_WORDS.get(how, 'differs')}" for name, how in s.outputs
        )
    if c in CATEGORY_WORDS:
        return CATEGORY_WORDS[c]
    if c is Category.RAISED:
        return _raised(s, function)
    if c is Category.TIMEOUT:
        limit = f" within {s.limit_seconds:g} s" if s.limit_seconds else ""
        return f"{f} did not return{limit} (an infinite loop, a sleep, or waiting for input?)"
    if c is Category.CRASHED:
        return f"the process running your code ended, or was stopped by a limit, during {f}"
    if c is Category.UNREADABLE:
        return (
            f"{f} returned a value the grader could not read; return numpy arrays, torch "
            "tensors, lists or numbers"
        )
    if c is Category.NOT_RUN:
        if s.not_run_because == "timeout":
            return f"not run (an earlier case of {f} timed out)"
        return "not run: the submission's time budget ran out"
    if c is Category.MISSING:
        return f"the file has no function {f}"
    if c is Category.IMPORT:
        return "not run: your file could not be imported (see above)"
    return ""


def _mark(record: CaseRecord) -> str:
    return "✔" if record.passed else "✘"


def _summary_line(record: CaseRecord, function: str | None) -> str:
    s = record.summary
    if s.category is Category.PASSED:
        return f"- ✔ {s.label}"
    words = summary_words(s, function)
    sep = " — " if s.category is Category.CARRIED else ": "
    return f"- {_mark(record)} {s.label}{sep + words if words else ''}"


def _detail_lines(detail: CaseDetail) -> list[str]:
    out = []
    if detail.spot is not None:
        text = f": `{detail.spot.text}`" if detail.spot.text else ""
        out.append(f"  - raised at {detail.spot.words(with_file=True)}{text}")
    if detail.inputs is not None:
        out.append(f"  - inputs: {detail.inputs}")
    if detail.got is not None:
        out.append(f"  - got: {detail.got}")
    if detail.expected is not None:
        out.append(f"  - expected: {detail.expected}")
    return out


def _full_line(record: CaseRecord, function: str | None, marker: str = "") -> str:
    """A case with everything known about it (a visible case; any case for instructors)."""
    s, d = record.summary, record.detail
    if s.category is Category.PASSED:
        return f"- ✔ {s.label}{marker}"
    if s.category is Category.CARRIED:
        return f"- ✔ {s.label}{marker} — {summary_words(s, function)}"
    said = "; ".join(_one_line(m) for m in d.messages) or summary_words(s, function)
    lines = [f"- ✘ {s.label}{marker}" + (f": {said}" if said else "")]
    if not s.passed:
        lines += _detail_lines(d)
    return "\n".join(lines)


def case_text(record: CaseRecord, function: str | None = None) -> str:
    """One case with everything known about it, as a visible case reads."""
    return _full_line(record, function)


def case_lines(q: QuestionResult, *, instructor: bool = False) -> list[str]:
    """One line (or a few) per case, as the viewer may see it."""
    if instructor:
        return [_full_line(r, q.function, "" if r.visible else " (hidden)") for r in q.cases]
    policy = q.hidden_feedback
    lines: list[str] = []
    hidden = [r for r in q.cases if not r.visible]
    for r in q.cases:
        if r.visible:
            lines.append(_full_line(r, q.function))
        elif policy == "category":
            lines.append(_summary_line(r, q.function))
        elif policy == "pass-fail":
            lines.append(f"- {_mark(r)} {r.summary.label}")
    if policy == "summary" and hidden:
        passed = sum(r.passed for r in hidden)
        lines.append(f"- {passed} of {len(hidden)} hidden {q.unit} passed")
    return lines


def head(q: QuestionResult) -> str:
    """ "**4/6 cases passed**, 1 more right given your earlier work." and its kin."""
    if q.unit == "checks":
        checks = [r for r in q.cases if r.summary.category in (Category.PASSED, Category.FAILED)]
        passed = sum(r.passed for r in checks)
        return f"**{passed}/{len(checks)} checks passed**" + (f" ({q.how})." if q.how else ".")
    n_passed = sum(r.summary.category is Category.PASSED for r in q.cases)
    carried = sum(r.summary.category is Category.CARRIED for r in q.cases)
    more = f", {carried} more right given your earlier work." if carried else "."
    return f"**{n_passed}/{len(q.cases)} cases passed**{more}"


def question_markdown(q: QuestionResult, *, instructor: bool = False) -> str:
    """The question's whole feedback: its lead, its cases, its notes."""
    parts = [q.lead] if q.lead else []
    if q.cases:
        parts.append(head(q))
        parts.append("\n".join(case_lines(q, instructor=instructor)))
    parts += q.notes
    return "\n\n".join(p for p in parts if p)


def reason(
    q: QuestionResult, titles: Callable[[Sequence[str]], list[str]] = lambda ids: list(ids)
) -> str:
    """Why a question lost points, in one line a student may see: the diagnosis when one was
    named, else the first line of its lead, else its first failed case in fixed words."""
    if q.not_attempted:
        return "not attempted"
    if q.misconceptions:
        return "diagnosis: " + "; ".join(titles(q.misconceptions))
    if q.lead:
        first = next((line for line in q.lead.splitlines() if line.strip()), "")
        return _plain(first)
    failed = next((r for r in q.cases if not r.passed), None)
    if failed is not None:  # in fixed words whatever the case: a reason is one line
        if not failed.visible and q.hidden_feedback != "category":
            return _plain(f"{failed.summary.label}: failed")
        return _plain(_summary_line(failed, q.function).replace("✘", "", 1))
    notes = [n for n in q.notes if n.strip()]
    return _plain(notes[0].splitlines()[0]) if notes else "no feedback"


def _one_line(text: str) -> str:
    """A message on one line (an array's repr spans several), so the case list stays a list."""
    return re.sub(r"\s*\n\s*", " ", text)


def _plain(markdown: str) -> str:
    """One line of markdown as plain text: no emphasis, code ticks or list markers."""
    text = re.sub(r"\*\*|__|`", "", markdown)
    text = re.sub(r"^\s*[-*]\s+", "", text)
    return " ".join(text.split())


def case_data(record: CaseRecord) -> dict[str, object]:
    """A case as plain data, in full (for instructors: results.json's `extra_data`)."""
    s, d = record.summary, record.detail
    data: dict[str, object] = {
        "label": s.label,
        "visible": record.visible,
        "category": s.category.value,
    }
    if s.outputs:
        data["outputs"] = {name: how.value for name, how in s.outputs}
    if s.exception or s.own_exception:
        data["exception"] = s.exception
    if s.given:
        data["given"] = list(s.given)
    if d.messages:
        data["messages"] = [m[:600] for m in d.messages]
    for key in ("inputs", "got", "expected"):
        value = getattr(d, key)
        if value is not None:
            data[key] = value[:600]
    if d.spot is not None:
        data["line"] = d.spot.words(with_file=True) + (f": {d.spot.text}" if d.spot.text else "")
    return data
