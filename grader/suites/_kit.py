"""One question builder for the hidden suites.

Each suite makes its builder once, with what all its code questions share (the assignment's
id prefix, its code file, a list of banned library shortcuts, torch inputs), and then writes
each question as data: its id, title, points, student function, trusted reference, cases and
mistakes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from grader.questions import Case, CodeQuestion


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
        return CodeQuestion(
            id=id if id.startswith(prefix + ".") else f"{prefix}.{id}",
            title=title,
            points=points,
            file=file,
            function=function,
            reference=reference,
            cases=cases,
            mutants=dict(mutants or {}),
            **{**shared, **fields},
        )

    return build
