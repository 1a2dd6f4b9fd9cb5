"""Instructors' own unittest modules (gradescope-utils decorators), run against the submission.

An assignment may ship extra test modules in `grader/suites/<id>_unittests/test_*.py`,
written as for gradescope-utils: `unittest.TestCase` methods decorated with `@weight`,
`@visibility`, `@number`, `@partial_credit`. seqgrade runs them inside the sandboxed worker,
with gradescope-utils' own JSONTestRunner, and merges their entries into results.json with
the runner's semantics (a failing test scores 0, `partial_credit` sets its own score).

They run in the student's process, as they would under gradescope-utils, so a hostile
submission could tamper with them: the trusted side therefore caps every entry at the weights
the module declares (read from its source) and drops results that do not add up.
"""

from __future__ import annotations

import ast
from pathlib import Path

from grader.engine.shortcuts import parse_python
from grader.report import QuestionResult
from grader.sandbox.session import WorkerSession

_SUITES = Path(__file__).resolve().parents[1] / "suites"
_VISIBILITIES = {"visible", "hidden", "after_due_date", "after_published"}


def discover(assignment_id: str) -> list[tuple[str, str]]:
    """(file name, source) of the assignment's instructor test modules, in name order."""
    folder = _SUITES / f"{assignment_id}_unittests"
    if not folder.is_dir():
        return []
    return [(p.name, p.read_text()) for p in sorted(folder.glob("test_*.py"))]


def declared_weights(source: str) -> list[float]:
    """The @weight(...) and @partial_credit(...) values of a module's test methods."""
    weights = []
    for node in ast.walk(parse_python(source)):
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Name)
                        and deco.func.id in ("weight", "partial_credit") and deco.args
                        and isinstance(deco.args[0], ast.Constant) and isinstance(deco.args[0].value, (int, float))):
                    weights.append(float(deco.args[0].value))
    return weights


def run(session: WorkerSession, modules: list[tuple[str, str]], first_number: int,
        timeout: float = 60.0) -> list[QuestionResult]:
    """Run each module; one QuestionResult per test entry, validated against declared weights."""
    results: list[QuestionResult] = []
    number = first_number
    for name, source in modules:
        declared = declared_weights(source)
        tests, failure = session.run_unittest(name, source, timeout)
        if failure is not None or not _consistent(tests, declared):
            why = failure.message if failure else "they returned results that do not match their declared weights"
            number += 1
            results.append(QuestionResult(f"unittest:{name}", f"Instructor tests ({name})", str(number), "instructor",
                                          None, 0.0, sum(declared), f"The tests in `{name}` could not be scored: {why}.",
                                          "visible", error=why))
            continue
        for entry in tests:
            number += 1
            max_score = float(entry.get("max_score", 0.0) or 0.0)
            score = min(max(float(entry.get("score", 0.0) or 0.0), 0.0), max_score)
            visibility = entry.get("visibility") if entry.get("visibility") in _VISIBILITIES else "visible"
            label = str(entry.get("name", "test"))[:200]
            results.append(QuestionResult(f"unittest:{name}:{label}", label, str(entry.get("number") or number),
                                          "instructor", None, score, max_score,
                                          str(entry.get("output", ""))[:4000], visibility))
    return results


def _consistent(tests: list, declared: list[float]) -> bool:
    if not all(isinstance(t, dict) for t in tests):
        return False
    try:
        got = sorted(float(t.get("max_score", 0.0) or 0.0) for t in tests if "max_score" in t)
    except (TypeError, ValueError):
        return False
    return got == sorted(declared)
