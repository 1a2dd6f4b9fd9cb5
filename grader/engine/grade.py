"""Grading one submission: locate its files, run the questions, name the mistakes, score.

The flow: locate the files; start the sandboxed worker (it preloads numpy/torch while the
trusted side computes the reference outputs); call the student's functions case by case;
compare; on a mismatch, ask the mutants which misconception explains it; judge the
written answers; collect everything into a `GradeReport`.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

from grader import sandbox
from grader.course import variants
from grader.engine import notebook
from grader.engine.code import CodeContext, grade_code, syntax_problem
from grader.engine.locate import Located, SubmissionError, locate
from grader.questions import Assignment, CodeQuestion, WrittenQuestion
from grader.report import GradeReport, QuestionResult
from grader.sandbox.session import WorkerSession
from grader.written.expr.judge import ExprJudge

ANSWERS_FILE = "answers.toml"
_TORCH_IMPORT = re.compile(r"^\s*(import\s+torch|from\s+torch[\s.])", re.M)


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
    notebook.use_notebook(located, assignment.code_file, limits.call_seconds)  # `<stem>.ipynb` for `<stem>.py`
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
            warnings += notebook.cell_notes(session, located)  # cells that raised or overran
            for number, q in code_qs:
                try:
                    results[q.id] = grade_code(q, ctx, number)
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
    return notebook.relabel(GradeReport(assignment.id, student, seed, ordered, time.monotonic() - started,
                                        isolated, warnings, events, output, grader_error), located)


def _internal_error(q: CodeQuestion | WrittenQuestion, number: str, message: str) -> QuestionResult:
    return QuestionResult(q.id, q.title, number, q.kind, getattr(q, "function", None), 0.0, q.points,
                          f"The grader itself failed on this question ({message}); this is not your mistake. "
                          "Please tell your instructor.", q.visibility, error=message)


def _code_context(assignment: Assignment, located: Located, seed: int, limits: sandbox.Limits,
                  hide: tuple[Path, ...]) -> CodeContext:
    name = assignment.code_file
    assert name is not None
    source = located.text(name)
    if source is None:
        return CodeContext(located, None, located.missing_message(name), None, seed)
    problem = syntax_problem(name, source)
    if problem is not None:
        return CodeContext(located, source, problem, None, seed)
    py_files = {k: v for k, v in located.files.items() if k.endswith(".py")}
    uses_torch = assignment.preload_torch or any(_TORCH_IMPORT.search(v.decode("utf-8", "replace"))
                                                 for v in py_files.values())
    tripwires = sorted({p for q in assignment.questions if isinstance(q, CodeQuestion) for p in q.forbidden})
    session = WorkerSession(py_files, name[:-3], preload=("numpy", "torch") if uses_torch else ("numpy",),
                            tripwires=tuple(tripwires), limits=limits, hide=hide)
    session.start()
    return CodeContext(located, source, None, session, seed)
