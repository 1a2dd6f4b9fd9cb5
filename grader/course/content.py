"""Where the assignments, solutions and bundled samples live: the repository or the wheel."""

from __future__ import annotations

import importlib.util
import os
import sys
from functools import cache
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]  # the grader package
_GRADER_TREES = ("grader", "reference", "solutions")  # folder names hidden wherever they sit


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


def grader_trees() -> list[Path]:
    """What no student code may see: the `grader`, `reference` and `solutions` trees, wherever.

    Passed to the sandbox as `hide=` (with the results folder). Every copy on the import path
    counts (an editable install puts the wheel's `grader/_content/solutions` into
    site-packages); in a repository checkout, its `tests` and the whole checkout too (the
    sandbox leaves uncovered what holds the worker's own interpreter, a venv inside it).
    """
    hidden = [_PACKAGE]
    spec = importlib.util.find_spec("reference")
    if spec is not None and spec.submodule_search_locations:
        hidden += [Path(p).resolve() for p in spec.submodule_search_locations]
    for entry in sys.path:
        for name in _GRADER_TREES:
            candidate = Path(os.path.abspath(entry or ".")) / name
            if candidate.is_dir():
                hidden.append(candidate.resolve())
    root = content_root().resolve()
    hidden.append(root / "solutions")
    if root == _PACKAGE.parent:  # a checkout: tests, samples, docs all sit beside the packages
        hidden += [root / "tests", root]
    return list(dict.fromkeys(hidden))
