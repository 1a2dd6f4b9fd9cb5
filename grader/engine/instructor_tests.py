"""Instructors' own unittest modules (gradescope-utils decorators), run against the submission.

An assignment may ship extra test modules in `grader/suites/<id>_unittests/test_*.py`,
written as for gradescope-utils: `unittest.TestCase` methods decorated with `@weight`,
`@visibility`, `@number`, `@partial_credit`, importing the student's module by name.

They run here, on the trusted side, with gradescope-utils' own JSONTestRunner; the student's
module they import is a proxy whose functions call into the sandboxed worker like every other
question (plain data in, plain data out). Nothing the student's code does (patching the
runner's result builder, `unittest`, numpy's comparisons) can reach the runner or the test
code, so each entry is the runner's honest verdict; the trusted side still caps every entry
at the weights the module declares.
"""

from __future__ import annotations

import ast
import io
import math
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from grader.engine.syntax import parse_python
from grader.questions import VISIBILITIES
from grader.records import QuestionResult
from grader.sandbox.session import WorkerSession

_SUITES = Path(__file__).resolve().parents[1] / "suites"
_VISIBILITIES = set(VISIBILITIES)


class StudentCallFailed(Exception):
    """A call into the student's module that produced no value (its exception, a timeout, a crash)."""


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
                if (
                    isinstance(deco, ast.Call)
                    and isinstance(deco.func, ast.Name)
                    and deco.func.id in ("weight", "partial_credit")
                    and deco.args
                    and isinstance(deco.args[0], ast.Constant)
                    and isinstance(deco.args[0].value, (int, float))
                ):
                    weights.append(float(deco.args[0].value))
    return weights


def student_proxy(
    session: WorkerSession,
    bans: Mapping[str, tuple[str, ...]] | None = None,
    torch_inputs: bool = False,
) -> types.ModuleType:
    """A stand-in for the student's module: `proxy.f(*args)` runs `f` in the worker and returns
    its plain-data result, or raises StudentCallFailed with the feedback the grader would give.
    `bans`: function -> the entry points refused while it runs; by default every ban of the
    assignment (the session's tripwires) holds for every function the tests call. `torch_inputs`:
    arrays arrive as torch tensors in the worker (a5), as in the assignment's own questions."""
    default = tuple(session.tripwires) if bans is None else ()
    bans = dict(bans or {})
    proxy = types.ModuleType(
        session.module, f"the student's `{session.module}.py`, run in the sandbox"
    )

    def function(name: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            outcome = session.call(
                name, args, kwargs, banned=bans.get(name, default), torch_inputs=torch_inputs
            )
            if outcome.tripped:
                raise StudentCallFailed(
                    f"`{name}` called a forbidden library function: {', '.join(outcome.tripped)}"
                )
            if outcome.failure is not None:
                raise StudentCallFailed(outcome.failure.message)
            return outcome.value

        call.__name__ = call.__qualname__ = name
        return call

    def module_getattr(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return function(name)

    proxy.__getattr__ = module_getattr  # type: ignore[method-assign] - PEP 562 module __getattr__
    return proxy


def run_module(name: str, source: str, proxy: types.ModuleType) -> list[dict[str, Any]]:
    """Load one instructor module with `proxy` importable as the student's module, run it with
    gradescope-utils' JSONTestRunner, and return the runner's test entries."""
    import unittest  # here, not at the top: a grade without instructor modules never pays for it

    from gradescope_utils.autograder_utils.json_test_runner import JSONTestRunner

    module = types.ModuleType(name.removesuffix(".py"))
    module.__file__ = name
    saved = sys.modules.get(proxy.__name__)
    sys.modules[proxy.__name__] = proxy
    try:
        exec(compile(source, name, "exec"), module.__dict__)  # noqa: S102 - the instructor's own test file
        suite = unittest.defaultTestLoader.loadTestsFromModule(module)
        runner = JSONTestRunner(stream=io.StringIO(), buffer=True)
        runner.run(suite)
    finally:
        if saved is None:
            sys.modules.pop(proxy.__name__, None)
        else:
            sys.modules[proxy.__name__] = saved
    tests = runner.json_data.get("tests", [])
    return tests if isinstance(tests, list) else []


def run(
    session: WorkerSession,
    modules: list[tuple[str, str]],
    first_number: int,
    timeout: float = 60.0,
    bans: Mapping[str, tuple[str, ...]] | None = None,
    torch_inputs: bool = False,
) -> list[QuestionResult]:
    """Run each module; one QuestionResult per test entry, checked against its declared weights.

    `bans`: graded function -> the library entry points its question forbids (refused in
    the worker while the instructor's tests call it too; by default every ban of the
    assignment holds for every function). `timeout` is kept for callers; every
    call into the worker has the session's own per-call and per-submission limits.
    """
    del timeout
    proxy = student_proxy(session, bans, torch_inputs)
    results: list[QuestionResult] = []
    number = first_number
    for name, source in modules:
        declared = declared_weights(source)
        try:
            tests: list[dict[str, Any]] = run_module(name, source, proxy)
            why = (
                None
                if _consistent(tests, declared)
                else "their results do not match their declared weights"
            )
        except Exception as exc:  # noqa: BLE001 - the instructor's module itself is broken: say so, cost nothing else
            tests, why = [], f"{type(exc).__name__}: {str(exc)[:300]}"
        if why is not None:
            number += 1
            results.append(
                QuestionResult(
                    question_id=f"unittest:{name}",
                    title=f"Instructor tests ({name})",
                    number=str(number),
                    kind="instructor",
                    function=None,
                    score=0.0,
                    max_score=sum(declared),
                    lead=f"The tests in `{name}` could not be scored: {why}.",
                    visibility="visible",
                    error=why,
                )
            )
            continue
        for entry in tests:
            number += 1
            results.append(_entry_result(name, entry, number))
    return results


def _entry_result(name: str, entry: dict[str, Any], number: int) -> QuestionResult:
    max_score = _finite(entry.get("max_score"))
    score = min(max(_finite(entry.get("score")), 0.0), max_score)
    visibility = entry.get("visibility") if entry.get("visibility") in _VISIBILITIES else "visible"
    label = str(entry.get("name", "test"))[:200]
    return QuestionResult(
        question_id=f"unittest:{name}:{label}",
        title=label,
        number=str(entry.get("number") or number),
        kind="instructor",
        function=None,
        score=score,
        max_score=max_score,
        lead=str(entry.get("output", ""))[:4000],
        visibility=visibility,
    )


def _finite(value: Any) -> float:
    """A score as a finite number (NaN, inf or junk count as 0)."""
    try:
        number = float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0
    return number if math.isfinite(number) else 0.0


def _consistent(tests: list, declared: list[float]) -> bool:
    if not all(isinstance(t, dict) for t in tests):
        return False
    try:
        got = sorted(float(t.get("max_score", 0.0) or 0.0) for t in tests if "max_score" in t)
    except (TypeError, ValueError):
        return False
    return got == sorted(declared)
