"""Grading one submission: locate its files, run the questions, name the mistakes, score.

The flow: locate the files; start the sandboxed worker (it preloads numpy/torch while the
trusted side computes the reference outputs); call the student's functions case by case;
compare; on a mismatch, ask the mutants which misconception explains it; judge the
written answers; collect everything into a `GradeReport`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from grader import catalog, sandbox
from grader.course import variants
from grader.engine import shortcuts
from grader.engine.checks import compare, preview
from grader.engine.diagnosis import AnyOf, Explanation, explain, verdict
from grader.engine.locate import Located, SubmissionError, locate
from grader.questions import Assignment, Case, CodeQuestion, Rng, TableLM, WrittenQuestion
from grader.sandbox.session import CallOutcome, WorkerSession
from grader.written.expr.judge import ExprJudge

ANSWERS_FILE = "answers.toml"
_TORCH_IMPORT = re.compile(r"^\s*(import\s+torch|from\s+torch[\s.])", re.M)


@dataclass
class QuestionResult:
    """One question's grade and feedback (one entry of results.json's `tests`)."""

    question_id: str
    title: str
    number: str
    kind: str  # "code" | "written"
    function: str | None
    score: float
    max_score: float
    feedback: str  # markdown
    visibility: str
    misconceptions: list[str] = field(default_factory=list)
    answer_text: str | None = None  # a written answer as given, for the class report
    not_attempted: bool = False
    error: str | None = None  # a failure to run (missing file, import error, crash), for the class report

    @property
    def status(self) -> str:
        return "passed" if self.score >= self.max_score - 1e-9 else "failed"


@dataclass
class GradeReport:
    assignment_id: str
    student: str | None
    seed: int
    questions: list[QuestionResult]
    execution_time: float
    isolated: bool
    warnings: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)  # what the sandbox stopped, in plain words
    student_output: str = ""  # what the student's code printed (truncated)
    grader_error: str | None = None  # the grader itself failed midway

    @property
    def score(self) -> float:
        return round(sum(q.score for q in self.questions), 6)

    @property
    def max_score(self) -> float:
        return sum(q.max_score for q in self.questions)


# ---------------------------------------------------------------------------- helpers


def materialize(value: Any) -> Any:
    """A case argument as the trusted reference sees it (special arguments built for real)."""
    from grader.sandbox import worker

    if isinstance(value, Rng):
        return np.random.default_rng(value.seed)
    if isinstance(value, TableLM):
        spec = {"table": [[list(k), list(v)] for k, v in value.table.items()], "default": list(value.default)}
        return worker.build_lm(spec)
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, tuple):
        return tuple(materialize(v) for v in value)
    if isinstance(value, list):
        return [materialize(v) for v in value]
    if isinstance(value, dict):
        return {k: materialize(v) for k, v in value.items()}
    return value


def plain(value: Any) -> Any:
    """A trusted output as plain data: torch tensors to numpy, numpy scalars to Python."""
    if isinstance(value, AnyOf):
        return AnyOf(*(plain(o) for o in value.options))
    if isinstance(value, np.generic):
        return value.item()
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        return value.detach().cpu().numpy().copy()
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    return value


def run_trusted(fn: Callable[..., Any], case: Case) -> Any:
    """The trusted function on a case (always NumPy, even where the student gets torch tensors)."""
    return plain(fn(*materialize(case.args), **materialize(dict(case.kwargs))))


def misconception_note(mid: str) -> str:
    m = catalog.get(mid)
    kind = "A convention the notes use elsewhere" if m.convention else "Diagnosis"
    return f"**{kind} — {m.title}** (`{m.id}`): {m.explanation} *Read: {m.section}.*"


def _shortcut_feedback(names: list[str], where: str) -> str:
    calls = ", ".join(f"`{n}`" for n in names)
    m = catalog.get("uses-library-shortcut")
    return (f"**0 points: library shortcut.** {where} uses {calls}, which this question asks you to write "
            f"yourself. {m.explanation} (`uses-library-shortcut`)")


# ---------------------------------------------------------------------------- code questions


@dataclass
class _CodeContext:
    located: Located
    source: str | None
    file_problem: str | None  # missing file / syntax error: costs every question of the file
    session: WorkerSession | None
    seed: int


def _grade_code(q: CodeQuestion, ctx: _CodeContext, number: str) -> QuestionResult:
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
                per_case.append(explain(_all_nan(want), want, case.args, dict(case.kwargs),
                                        _trusted_mutants(q.mutants), q.tolerance, exact=q.integer))
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
                                   _trusted_mutants(q.mutants), q.tolerance, exact=q.integer)
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


def _all_nan(value: Any) -> Any:
    """The same structure with every number NaN."""
    if isinstance(value, dict):
        return {k: _all_nan(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_all_nan(v) for v in value)
    if isinstance(value, np.ndarray):
        return np.full(value.shape, np.nan)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float("nan")
    return value


def _trusted_mutants(mutants: Mapping[str, Callable[..., Any]]) -> dict[str, Callable[..., Any]]:
    """Mutants called on freshly built arguments (new arrays, a new rng) with plain outputs."""

    def bind(f: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *a, **k: plain(f(*materialize(a), **materialize(k)))

    return {mid: bind(f) for mid, f in mutants.items()}


def _case_line(case: Case, mismatches, got: Any, want: Any) -> str:
    reasons = "; ".join(m.message for m in mismatches[:4])
    line = f"- ✘ {case.name}: {reasons}"
    if case.visible:
        line += f"\n  - got: {preview(got)}\n  - expected: {preview(want)}"
    elif mismatches[0].reason in ("values", "exact"):
        line += f"\n  - got: {preview(got)}"
    return line


def _caller(q: CodeQuestion, ctx: _CodeContext) -> Callable[..., CallOutcome]:
    assert ctx.session is not None

    def call(*args: Any, **kwargs: Any) -> CallOutcome:
        return ctx.session.call(q.function, args, kwargs, torch_inputs=q.torch_inputs)

    return call


def _syntax_problem(name: str, source: str) -> str | None:
    try:
        shortcuts.parse_python(source, filename=name)
    except SyntaxError as err:
        text = (err.text or "").strip()
        where = f" at line {err.lineno}" + (f": `{text[:160]}`" if text else "")
        return f"`{name}` has a syntax error{where} ({err.msg}); no function in it could be run."
    except ValueError as err:  # null bytes
        return f"`{name}` could not be parsed: {err}"
    return None


# ---------------------------------------------------------------------------- written questions


def _grade_written_all(questions: list[tuple[str, WrittenQuestion]], located: Located, assignment_id: str,
                       student: str | None, judge: ExprJudge) -> list[QuestionResult]:
    from grader.written.answers import load_answers_text
    from grader.written.grading import grade_written

    sheet = load_answers_text(located.text(ANSWERS_FILE), located.missing_message(ANSWERS_FILE))
    numbers = variants.numbers(assignment_id, student)
    results = []
    for number, q in questions:  # the caller owns the judge: it may serve many submissions
        w = grade_written(q, sheet, numbers, judge)
        results.append(QuestionResult(q.id, q.title, number, "written", None, w.score, q.points, w.feedback,
                                      q.visibility, list(w.misconceptions), w.answer_text,
                                      not_attempted=w.not_attempted))
    return results


# ---------------------------------------------------------------------------- the whole submission


def grade_submission(submission: Path, assignment: Assignment, *, student: str | None = None,
                     limits: sandbox.Limits | None = None, hide: tuple[Path, ...] = (),
                     instructor_tests: list[tuple[str, str]] | None = None,
                     judge: ExprJudge | None = None) -> GradeReport:
    """Grade one submission folder or zip against an assignment.

    `instructor_tests`: (file name, source) of extra gradescope-utils unittest modules; by
    default those in grader/suites/<id>_unittests/. `judge`: an expression judge to reuse
    across submissions (batch grading); by default one is started and stopped here.
    """
    from grader.engine import instructor_tests as extra_tests

    started = time.monotonic()
    seed = variants.seed_for(assignment.id, student)
    limits = limits or sandbox.Limits()
    numbered = [(str(i + 1), assignment.resolved(q)) for i, q in enumerate(assignment.questions)]
    wanted = tuple(n for n in (assignment.code_file, ANSWERS_FILE) if n)
    try:
        located = locate(Path(submission), wanted)
    except SubmissionError as err:
        located = Located(notes=[str(err)])
    results: dict[str, QuestionResult] = {}
    session: WorkerSession | None = None
    warnings: list[str] = list(located.notes)
    events: list[str] = []
    output = ""
    grader_error: str | None = None
    extra: list[QuestionResult] = []
    modules = extra_tests.discover(assignment.id) if instructor_tests is None else instructor_tests
    written_qs = [(n, q) for n, q in numbered if isinstance(q, WrittenQuestion)]
    own_judge = judge is None
    judge = judge or ExprJudge()
    if located.files.get(ANSWERS_FILE) and any(q.answer_kind == "expression" for _, q in written_qs):
        judge.prestart()  # sympy loads in its own process while the code questions run
    try:
        code_qs = [(n, q) for n, q in numbered if isinstance(q, CodeQuestion)]
        if code_qs:
            ctx = _code_context(assignment, located, seed, limits, hide)
            session = ctx.session
            for number, q in code_qs:
                try:
                    results[q.id] = _grade_code(q, ctx, number)
                    if session is not None and results[q.id].status == "failed":
                        session.kill_strays(q.function)  # a misbehaving function may have left processes
                except Exception as exc:  # noqa: BLE001 - a bug of ours costs one question, visibly
                    grader_error = f"question {q.id}: {type(exc).__name__}: {exc}"
                    results[q.id] = _internal_error(q, number, grader_error)
            if modules and session is not None:
                extra = extra_tests.run(session, modules, first_number=len(numbered))
        if written_qs:
            try:
                for r in _grade_written_all(written_qs, located, assignment.id, student, judge):
                    results[r.question_id] = r
            except Exception as exc:  # noqa: BLE001
                grader_error = f"written answers: {type(exc).__name__}: {exc}"
                for number, q in written_qs:
                    results.setdefault(q.id, _internal_error(q, number, grader_error))
    finally:
        if own_judge:
            judge.close()
        if session is not None:
            output = session.output()
            events = list(session.events)
            if session.warning:
                warnings.append(session.warning)
            isolated = session.isolated
            session.close()
        else:
            isolated = sandbox.can_isolate()
    ordered = [results[q.id] for q in assignment.questions if q.id in results] + extra
    return GradeReport(assignment.id, student, seed, ordered, time.monotonic() - started, isolated,
                       warnings, events, output, grader_error)


def _internal_error(q: CodeQuestion | WrittenQuestion, number: str, message: str) -> QuestionResult:
    return QuestionResult(q.id, q.title, number, q.kind, getattr(q, "function", None), 0.0, q.points,
                          f"The grader itself failed on this question ({message}); this is not your mistake. "
                          "Please tell your instructor.", q.visibility, error=message)


def _code_context(assignment: Assignment, located: Located, seed: int, limits: sandbox.Limits,
                  hide: tuple[Path, ...]) -> _CodeContext:
    name = assignment.code_file
    assert name is not None
    source = located.text(name)
    if source is None:
        return _CodeContext(located, None, located.missing_message(name), None, seed)
    problem = _syntax_problem(name, source)
    if problem is not None:
        return _CodeContext(located, source, problem, None, seed)
    py_files = {k: v for k, v in located.files.items() if k.endswith(".py")}
    uses_torch = assignment.preload_torch or any(_TORCH_IMPORT.search(v.decode("utf-8", "replace"))
                                                 for v in py_files.values())
    tripwires = sorted({p for q in assignment.questions if isinstance(q, CodeQuestion) for p in q.forbidden})
    session = WorkerSession(py_files, name[:-3], preload=("numpy", "torch") if uses_torch else ("numpy",),
                            tripwires=tuple(tripwires), limits=limits, hide=hide)
    session.start()
    return _CodeContext(located, source, None, session, seed)
