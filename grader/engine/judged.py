"""What the judging of one code question passes between its steps: a case's verdict, a mistake
carried from an earlier question, and a code question graded earlier in the submission."""

from __future__ import annotations

from collections.abc import Callable, Container
from dataclasses import dataclass
from typing import Any

from grader.engine.diagnosis import Explanation, Mistake, explain
from grader.engine.trusted import trusted_mutants
from grader.questions import Case, CodeQuestion
from grader.records import CaseRecord, Category


@dataclass(frozen=True)
class Carried:
    """A mistake charged in an earlier question, which a question built on it may carry."""

    misconception: str
    root: str
    """The question where it was charged."""
    number: str
    """That question's number, for the feedback."""
    function: str
    """The student's function it is in."""


@dataclass(frozen=True)
class Graded:
    """A code question graded earlier in this submission, as a later one that calls its function
    sees it."""

    question: str
    """Its id."""
    number: str
    """Its number, for the feedback."""
    mistakes: frozenset[str]
    """The catalog ids it can name."""
    lost: bool
    """It lost points."""
    named: bool
    """A mistake was named there."""
    reference: Callable[..., Any] | None = None
    """Its trusted function, to stand in for the student's in a composite's re-run."""
    missing: str = ""
    """Why the student's file lacks the function, in words ("": it has it): "was left out of the
    file with its syntax error", "is not in the file"."""


@dataclass
class CaseVerdict:
    """One case as judged: its credit, its record, and what explains it."""

    credit: float
    """The share of the case's weight earned."""
    record: CaseRecord
    explanations: list[Explanation] | None
    """The mistakes that explain the case (None: it passed, or nothing could be diagnosed)."""
    carried: tuple[Carried, ...] = ()
    """Right given mistakes charged in earlier questions."""
    want: Any = None
    """The reference's output on the case (None when the call gave no value)."""
    got: Any = None
    """The student's output (None when the call gave no value or the case passed)."""
    stood_in: tuple[str, ...] = ()
    """The student's earlier functions the reference's stood in for in a re-run of the case."""
    rescued: bool = False
    """Right in that re-run: follow-through credit (grader/engine/follow.py)."""
    raised_in: str | None = None
    """The student's earlier function the case's own run raised in."""
    stopped: bool = False
    """Rescued where the case's own run gave no answer: stopped at its time limit, the process
    ended, or not run after an earlier case timed out."""
    diagnosed: bool = True
    """False: wrong values whose mistakes are looked for only when a re-run with the reference's
    functions standing in for the student's earlier ones does not make the case right
    (grader/engine/code.py, `_judge_compared`)."""

    @property
    def followed(self) -> bool:
        """Right given the student's earlier work: a carried mistake, or a re-run's."""
        return bool(self.carried) or self.rescued

    @property
    def passed(self) -> bool:
        return self.record.summary.category is Category.PASSED


def explain_case(
    q: CodeQuestion,
    case: Case,
    got: Any,
    want: Any,
    mutants: dict[Mistake, Any],
    among: Container[Mistake] | None = None,
) -> list[Explanation]:
    """The mutants that explain `got` on this case, best first (run on the trusted side); with
    `among`, only those of them, each keeping its place in `mutants` as its order."""
    return explain(
        got,
        want,
        case.args,
        dict(case.kwargs),
        trusted_mutants(mutants),
        q.tolerance,
        exact=q.integer,
        among=among,
        copied=True,
    )
