"""The reading options of a written question (docs/answers.md), with their defaults.

They are fields of `grader.questions.WrittenQuestion`; `option` reads one by name.
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any

from grader.questions import WrittenQuestion

_DEFAULTS: dict[str, Any] = {f.name: f.default for f in fields(WrittenQuestion)}
DEFAULT_COUNT_RIGHT_FROM: int = _DEFAULTS["count_right_from"]
DEFAULT_STEP_SHARE: float = _DEFAULTS["step_share"]
DEFAULT_MAX_STEPS: int = _DEFAULTS["max_steps"]


def option(question: WrittenQuestion, name: str) -> Any:
    """A reading option of a written question: its own value, or the default."""
    return getattr(question, name, _DEFAULTS[name])
