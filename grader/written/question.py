"""A written question with the reading options of docs/answers.md.

`Written` is a `WrittenQuestion` with a few more fields, each with a default that a plain
`WrittenQuestion` also gets (grader.written.grading reads them with `option`):
an example answer for messages that cannot read an answer, whether a number is an exact
count, from what length a wrong list says how many of its items are right, and whether an
expression question accepts a derivation (steps checked one by one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.questions import WrittenQuestion

DEFAULT_COUNT_RIGHT_FROM = 4  # lists at least this long say how many items are right
DEFAULT_STEP_SHARE = 0.5  # of the points, for a right result reached through a broken step
DEFAULT_MAX_STEPS = 30  # steps of one derivation that are checked


@dataclass(frozen=True)
class Written(WrittenQuestion):
    """A written question with reading options (docs/answers.md, docs/authoring.md)."""

    example: str | None = None  # shown in refusals: "4718592", "s t</w>", "2 d_k + 1"
    integer: bool | None = None  # an exact count; None: inferred from the key and tolerance
    count_right_from: int = DEFAULT_COUNT_RIGHT_FROM  # 0: never say how many items are right
    steps: bool = False  # the answer may be a derivation: steps checked one by one
    step_share: float = DEFAULT_STEP_SHARE  # right result, broken step: this share of points
    max_steps: int = DEFAULT_MAX_STEPS


_DEFAULTS: dict[str, Any] = {
    "example": None,
    "integer": None,
    "count_right_from": DEFAULT_COUNT_RIGHT_FROM,
    "steps": False,
    "step_share": DEFAULT_STEP_SHARE,
    "max_steps": DEFAULT_MAX_STEPS,
}


def option(question: WrittenQuestion, name: str) -> Any:
    """A reading option of any written question: its own value, or the default."""
    return getattr(question, name, _DEFAULTS[name])
