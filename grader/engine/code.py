"""Grading one code question: the shortcut ban, the case loop, the diagnosis, the score."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grader import catalog
from grader.engine import shortcuts
from grader.engine.checks import compare, preview
from grader.engine.diagnosis import Explanation, explain, verdict
from grader.engine.locate import Located
from grader.engine.trusted import all_nan, run_trusted, trusted_mutants
from grader.questions import Case, CodeQuestion
from grader.report import QuestionResult
from grader.sandbox.session import CallOutcome, WorkerSession


def misconception_note(mid: str) -> str:
    m = catalog.get(mid)
    kind = "A convention the notes use elsewhere" if m.convention else "Diagnosis"
    return f"**{kind} — {m.title}** (`{m.id}`): {m.explanation} *Read: {m.section}.*"


def _shortcut_feedback(names: list[str], where: str) -> str:
    calls = ", ".join(f"`{n}`" for n in names)
    m = catalog.get("uses-library-shortcut")
    return (f"**0 points: library shortcut.** {where} uses {calls}, which this question asks you to write "
            f"yourself. {m.explanation} (`uses-library-shortcut`)")


@dataclass
class CodeContext:
    located: Located
    source: str | None
    file_problem: str | None  # missing file / syntax error: costs every question of the file
    session: WorkerSession | None
    seed: int


def grade_code(q: CodeQuestion, ctx: CodeContext, number: str) -> QuestionResult:
    result = QuestionResult(q.id, q.title, number, "code", q.function, 0.0, q.points, "", q.visibility)
    if ctx.file_problem is not None:
        result.feedback = ctx.file_problem
        result.error = ctx.file_problem
        return result
    assert ctx.source is not None and ctx.session is not None
    if q.forbidden:
        scope = None if q.forbid_in == "file" else q.function
        found = shortcuts.scan(ctx.source, q.forbidden, scope)
        if found:
            where = f"`{q.file}`" if q.forbid_in == "file" else f"`{q.function}` (line {found[0].line})"
            result.feedback = _shortcut_feedback([f.name for f in found], where)
            result.misconceptions = ["uses-library-shortcut"]
            return result
        tripped_at_import = [t for t in ctx.session.import_tripped if shortcuts.matches(t, q.forbidden)]
        if tripped_at_import and q.forbid_in == "file":
            result.feedback = _shortcut_feedback(tripped_at_import, f"`{q.file}`")
            result.misconceptions = ["uses-library-shortcut"]
            return result

    cases = list(q.cases(ctx.seed))
    if q.custom is not None:
        return q.custom(q, cases, _caller(q, ctx), result)
    total_weight = sum(c.weight for c in cases) or 1.0
    earned = 0.0
    lines: list[str] = []
    per_case: list[list[Explanation]] = []
    n_failed = 0
    for i, case in enumerate(cases):
        outcome: CallOutcome = ctx.session.call(q.function, case.args, dict(case.kwargs), torch_inputs=q.torch_inputs)
        tripped = [t for t in outcome.tripped if shortcuts.matches(t, q.forbidden)]
        if tripped:
            result.feedback = _shortcut_feedback(tripped, f"`{q.function}`")
            result.misconceptions = ["uses-library-shortcut"]
            result.score = 0.0
            return result
        if outcome.failure is not None:
            if outcome.failure.kind == "timeout":
                # Every later case would most likely wait out its limit too.
                n_failed += len(cases) - i
                lines.append(f"- ✘ {case.name}: {outcome.failure.message}")
                lines += [f"- ✘ {c.name}: not run (an earlier case of `{q.function}` timed out)" for c in cases[i + 1:]]
                result.error = result.error or outcome.failure.message
                break
            if outcome.failure.kind == "not-attempted" and i == 0:
                result.not_attempted = True
                result.feedback = f"Not attempted: `{q.function}` still raises `NotImplementedError`."
                return result
            if outcome.failure.kind in ("import", "crashed", "budget") and result.error is None:
                result.error = outcome.failure.message
            n_failed += 1
            lines.append(f"- ✘ {case.name}: {outcome.failure.message}")
            if outcome.failure.is_overflow and q.mutants:
                # math.exp(1000) raises where numpy gives inf: read it as "every output non-finite",
                # which only the overflow misconceptions (NONFINITE mutants) explain.
                want = run_trusted(q.reference, case)
                per_case.append(explain(all_nan(want), want, case.args, dict(case.kwargs),
                                        trusted_mutants(q.mutants), q.tolerance, exact=q.integer))
            continue
        want = run_trusted(q.reference, case)
        mismatches = compare(outcome.value, want, q.tolerance, exact=q.integer, names=q.output_names)
        if not mismatches:
            earned += case.weight
            lines.append(f"- ✔ {case.name}")
            continue
        n_failed += 1
        explanations: list[Explanation] = []
        if q.mutants:
            explanations = explain(outcome.value, want, case.args, dict(case.kwargs),
                                   trusted_mutants(q.mutants), q.tolerance, exact=q.integer)
        per_case.append(explanations)
        if explanations:
            earned += case.weight * catalog.get(explanations[0].misconception).credit
        lines.append(_case_line(case, mismatches, outcome.value, want))
    result.misconceptions = verdict(per_case, n_failed)
    result.score = round(q.points * earned / total_weight, 4)
    passed = sum(1 for line in lines if line.startswith("- ✔"))
    head = f"**{passed}/{len(cases)} cases passed.**"
    body = "\n".join(lines)
    notes = "\n\n".join(misconception_note(m) for m in result.misconceptions)
    result.feedback = "\n\n".join(part for part in (head, body, notes) if part)
    return result


def _case_line(case: Case, mismatches, got: Any, want: Any) -> str:
    reasons = "; ".join(m.message for m in mismatches[:4])
    line = f"- ✘ {case.name}: {reasons}"
    if case.visible:
        line += f"\n  - got: {preview(got)}\n  - expected: {preview(want)}"
    elif mismatches[0].reason in ("values", "exact"):
        line += f"\n  - got: {preview(got)}"
    return line


def _caller(q: CodeQuestion, ctx: CodeContext) -> Callable[..., CallOutcome]:
    assert ctx.session is not None

    def call(*args: Any, **kwargs: Any) -> CallOutcome:
        return ctx.session.call(q.function, args, kwargs, torch_inputs=q.torch_inputs)

    return call


def syntax_problem(name: str, source: str) -> str | None:
    try:
        shortcuts.parse_python(source, filename=name)
    except SyntaxError as err:
        text = (err.text or "").strip()
        where = f" at line {err.lineno}" + (f": `{text[:160]}`" if text else "")
        return f"`{name}` has a syntax error{where} ({err.msg}); no function in it could be run."
    except ValueError as err:  # null bytes
        return f"`{name}` could not be parsed: {err}"
    return None

