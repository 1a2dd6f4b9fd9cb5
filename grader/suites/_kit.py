"""The shared kit of the hidden suites: the code-question builder, and short forms for
written questions and visible cases.

Each suite makes its builder once, with what all its code questions share (the assignment's
id prefix, its code file, a list of banned library shortcuts, torch inputs), and then writes
each question as data: its id, title, points, student function, trusted reference, cases and
mistakes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from grader.questions import AnswerKind, Case, CodeQuestion, WrittenQuestion, WrongForm


def builder(prefix: str, file: str, **shared: Any) -> Callable[..., CodeQuestion]:
    """A function building the code questions of one assignment.

    `build(qid, title, points, function, reference, cases, mutants=None, **fields)`: `qid` may
    be written with or without the assignment's prefix ("lstm_cell" or "a3.lstm_cell"); the
    `shared` fields are the defaults every question of the suite takes, `fields` override them.
    """

    def build(
        id: str,  # noqa: A002 - the question's field name
        title: str,
        points: float,
        function: str,
        reference: Callable[..., Any],
        cases: Callable[[int], list[Case]],
        mutants: Mapping[str, Callable[..., Any]] | None = None,
        **fields: Any,
    ) -> CodeQuestion:
        qid = id if id.startswith(prefix + ".") else f"{prefix}.{id}"
        head = (qid, title, points, file, function, reference, cases, dict(mutants or {}))
        return CodeQuestion(*head, **{**shared, **fields})  # a question's fields win

    return build


def reference_builder(prefix: str, file: str, **shared: Any) -> Callable[..., CodeQuestion]:
    """`builder` with the graded function named once, by its trusted reference.

    `build(reference, title, points, cases, mutants=None, *, function=None, id=None, **fields)`
    grades the student's function of the reference's name (`function` where they differ: a
    partial or a lambda), under the id `prefix.function` unless `id` is given.
    """
    build = builder(prefix, file, **shared)

    def build_on(
        reference: Callable[..., Any],
        title: str,
        points: float,
        cases: Callable[[int], list[Case]],
        mutants: Mapping[str, Callable[..., Any]] | None = None,
        *,
        function: str | None = None,
        id: str | None = None,  # noqa: A002 - the question's field name
        **fields: Any,
    ) -> CodeQuestion:
        function = function or reference.__name__
        return build(id or function, title, points, function, reference, cases, mutants, **fields)

    return build_on


# ---------------------------------------------------------------- written questions and cases

ABCD = ("A", "B", "C", "D")


def choice(
    id: str,  # noqa: A002 - the question's field name
    title: str,
    points: float,
    key: str,
    answer: str,
    *wrong: tuple[str, str, str],
    choices: tuple[str, ...] = ABCD,
    **fields: Any,
) -> WrittenQuestion:
    """A multiple-choice written question whose right letter is the same for every student.

    Each of `wrong` is a (letter, misconception id, message) triple: a letter that is named.
    """
    forms = tuple(WrongForm(*w) for w in wrong)
    named = (lambda n: list(forms)) if forms else None
    return WrittenQuestion(
        id,
        title,
        points,
        key,
        "choice",
        lambda n: answer,
        choices=choices,
        wrong_forms=named,
        **fields,
    )


def written(
    id: str,  # noqa: A002 - the question's field name
    title: str,
    points: float,
    key: str,
    kind: AnswerKind,
    expected: Callable[[Mapping[str, Any]], Any],
    wrong_forms: Callable[[Mapping[str, Any]], Sequence[WrongForm]] | None = None,
    **fields: Any,
) -> WrittenQuestion:
    """A written question whose answer is computed from the student's numbers (`expected`);
    `wrong_forms` gives the named wrong answers for the same numbers."""
    return WrittenQuestion(
        id, title, points, key, kind, expected, wrong_forms=wrong_forms, **fields
    )


def slipped(
    answer: Callable[..., Any], numbers: Mapping[str, Any], *slips: tuple[dict[str, Any], str, str]
) -> list[WrongForm]:
    """The named wrong answers of a written question: for each (hooks, misconception id,
    message) slip, `answer(numbers, **hooks)` with that message."""
    return [WrongForm(answer(numbers, **hooks), mid, message) for hooks, mid, message in slips]


def shown(name: str, *args: Any, **kwargs: Any) -> list[Case]:
    """The visible case a hidden-case list starts with: the notes' or the README's numbers."""
    return [Case(name, args, kwargs, visible=True)]
