"""Where the assignments, solutions and bundled samples live: the repository or the wheel."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # the grader package


@cache
def content_root() -> Path:
    """The folder holding `assignments/` and `solutions/`.

    In a wheel they are copied to `grader/_content/`; in a checkout (editable install or
    running from the repository) they sit beside the `grader` package.
    """
    bundled = _PACKAGE / "_content"
    if (bundled / "assignments").is_dir():
        return bundled
    return _PACKAGE.parent


def assignment_dir(assignment_id: str) -> Path:
    return content_root() / "assignments" / assignment_id


def solution_dir(assignment_id: str) -> Path:
    return content_root() / "solutions" / assignment_id


def samples_dir() -> Path:
    """Bundled demo submissions (buggy and hostile ones), inside the grader package."""
    return _PACKAGE / "samples"
