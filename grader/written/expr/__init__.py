"""Written expression answers: a safe parser, an equivalence check, a hard-kill checker.

Importing this package does not import sympy: `parse`, `equivalent` and friends load
their modules on first use, and `ExprChecker` starts its worker process on the first check.
`read` (a checked tree) and `equivalent` (numeric, on trees) import sympy only when the
numeric check cannot decide; `parse` returns a sympy expression and so imports it.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ExprError",
    "ExprChecker",
    "Verdict",
    "check_equivalent",
    "equivalent",
    "parse",
    "read",
    "readable",
]

_LAZY = {
    "ExprChecker": "grader.written.expr.checker",
    "Verdict": "grader.written.expr.verdict",
    "check_equivalent": "grader.written.expr.checker",
    "ExprError": "grader.written.expr.errors",
    "parse": "grader.written.expr.parser",
    "read": "grader.written.expr.parser",
    "readable": "grader.written.expr.printing",
    "equivalent": "grader.written.expr.equivalence",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'grader.written.expr' has no attribute {name!r}")
