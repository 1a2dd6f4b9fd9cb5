"""Grading a derivation question: the chain checked (grader.written.derivation), scored by
the question's rule and told back step by step, never showing the expected result."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from grader.questions import WrittenQuestion, WrongForm
from grader.written.answers import AnswerFormatError
from grader.written.derivation import ChainResult, StepResult, chain_of, check_chain
from grader.written.hints import expects
from grader.written.question import option
from grader.written.result import WrittenResult

if TYPE_CHECKING:
    from grader.written.expr.checker import ExprChecker


@dataclass(frozen=True)
class Words:
    """The written feedback's own ways of quoting an answer and telling a known mistake."""

    code: Callable[[str], str]
    mistake_line: Callable[[WrongForm, str, Any], str]


MAX_LISTED = 12  # steps listed one by one in the feedback


def grade_derivation(
    question: WrittenQuestion,
    value: Any,
    expected: Any,
    variant: Mapping[str, Any],
    checker: ExprChecker | None,
    result: Callable[..., WrittenResult],
    words: Words,
) -> WrittenResult:
    """Score a derivation answer: full, `step_share` of the points, or nothing (`words`: how
    the written answers' feedback quotes an answer and tells a known mistake)."""
    _code, _mistake_line = words.code, words.mistake_line

    if checker is None:
        raise RuntimeError(f"question {question.id}: a derivation question needs an ExprChecker")
    hidden = question.visibility == "hidden"
    try:
        chain = chain_of(value, question)
    except AnswerFormatError as err:
        return result("unreadable", f"**Could not read your answer.** {err}\n\n"
                      f"{expects(question, expected)}")  # fmt: skip
    wrong = list(question.wrong_forms(variant)) if question.wrong_forms is not None else []
    checked = check_chain(question, chain, str(expected), wrong, checker)
    final = next((r for r in reversed(checked.steps) if r.step.defines is None), None)
    answer_text = checked.canonical or (final.shown if final and final.shown else None)
    interpreted = final.shown if final else None
    misconceptions = [wf.misconception for wf in checked.misconceptions]
    share = float(option(question, "step_share"))
    lines: list[str] = []
    if checked.final_correct and checked.unbroken:
        status, score, head = "correct", question.points, "**Correct.**"
    elif checked.final_correct:
        status, score = "wrong", round(question.points * share, 6)
        head = "**Right result, but a step does not follow.**"
    else:
        status, score, head = "wrong", 0.0, "**Not correct.**"
        if final is None or checked.final_error:
            status = "unreadable" if all(r.state == "unreadable" for r in checked.steps) else status
    lines.append(head)
    if hidden:
        return _scored(result, status, score, question, "\n\n".join(lines), misconceptions,
                       answer_text, interpreted)  # fmt: skip
    lines.append(_steps_line(checked, _code))
    if chain.label:
        lines.append(f"Note: `{chain.label.strip()}` was read as the quantity asked for.")
    problem = checked.first_problem
    if problem is not None:
        lines.append(_problem_line(problem, checked, _code))
    elif not checked.final_correct and final is not None and not checked.final_error:
        lines.append(
            "Every step follows from the one before, but the result is not the quantity asked "
            "for: the first step already differs from it."
        )
    elif checked.final_error and final is not None:
        lines.append(f"Your last step could not be checked: {checked.final_error}.")
    for wf in checked.misconceptions:
        line = _mistake_line(wf, "expression", expected)
        if checked.found_at is not None:
            line = line.replace("This matches", f"Step {checked.found_at} matches", 1)
        lines.append(line)
    if checked.timed_out:
        lines.append("Checking stopped before the end of your derivation (it took too long); "
                     "the steps after that were not checked.")  # fmt: skip
    if status != "correct" and checked.final_correct:
        lines.append(
            f"Score: {share:.0%} of the points ({_pts(score)} of {_pts(question.points)}) for a "
            "right result reached through a step that does not follow."
        )
    return _scored(result, status, score, question, "\n\n".join(lines), misconceptions,
                   answer_text, interpreted)  # fmt: skip


def _scored(
    result: Callable[..., WrittenResult],
    status: str,
    score: float,
    question: WrittenQuestion,
    feedback: str,
    misconceptions: list[str],
    answer_text: str | None,
    interpreted: str | None,
) -> WrittenResult:
    from dataclasses import replace

    out = result(status, feedback, misconceptions=misconceptions, answer_text=answer_text,
                 interpreted=interpreted)  # fmt: skip
    return replace(out, score=score, passed=score >= question.points)


def _pts(x: float) -> str:
    return f"{x:g}"


_STATE = {
    "first": "",
    "follows": "follows",
    "broken": "does not follow",
    "unreadable": "could not be read",
    "unchecked": "not checked",
    "definition": "definition, checked",
    "bad-definition": "not the definition",
    "introduced": "a name of yours",
}


def _steps_line(checked: ChainResult, code: Callable[[str], str]) -> str:
    n = sum(r.step.defines is None for r in checked.steps)
    d = len(checked.steps) - n
    defs = f" and {d} definition{'s' if d != 1 else ''}" if d else ""
    listed = []
    for r in checked.steps[:MAX_LISTED]:
        shown = r.shown if r.shown is not None else r.step.text
        if r.step.defines:
            shown = f"{r.step.defines} = {shown}"
        state = _STATE[r.state]
        listed.append(f"{r.step.number}. {code(shown)}" + (f" ({state})" if state else ""))
    more = (
        "" if len(checked.steps) <= MAX_LISTED else f"; and {len(checked.steps) - MAX_LISTED} more"
    )
    head = f"Your derivation was read as {n} step{'s' if n != 1 else ''}{defs}: "
    return head + "; ".join(listed) + more + "."


def _problem_line(problem: StepResult, checked: ChainResult, code: Callable[[str], str]) -> str:
    k = problem.step.number
    if problem.state == "unreadable":
        return f"Step {k} ({code(problem.step.text)}) could not be read: {problem.error}."
    if problem.state == "unchecked":
        return f"Step {k} could not be checked against the step before it."
    if problem.state == "bad-definition":
        return (f"Step {k} defines {problem.step.defines} as {code(problem.shown or problem.step.text)}, "
                f"which is not its definition on this question.")  # fmt: skip
    before = next(
        r for r in reversed(checked.steps[: checked.steps.index(problem)]) if r.step.defines is None
    )
    return (
        f"Step {before.step.number} → {k} is not an equality: "
        f"{code(before.shown or before.step.text)} vs {code(problem.shown or problem.step.text)}."
    )


__all__ = ["WrongForm", "grade_derivation"]
