"""Grading one submission: locate its files, run the questions, name the mistakes, score.

The flow: locate the files; start the sandboxed worker (it preloads numpy/torch while the
trusted side computes the reference outputs); call the student's functions case by case;
compare; on a mismatch, ask the mutants which misconception explains it; judge the
written answers; collect everything into a `GradeReport`.

Whatever the submission does, grading finishes and keeps what it graded: a question the
submission's time budget did not reach says so, the written answers are graded whatever
happened to the code (within their own time limit), and a failure of the grader itself
costs only the question it happened in.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grader import sandbox
from grader.course import content, variants
from grader.engine import shortcuts, syntax
from grader.engine.code import (
    BUDGET_SPENT,
    CodeContext,
    as_source_spot,
    grade_code,
    left_out_words,
    missing_library_words,
    skipped_words,
    syntax_problem,
)
from grader.engine.locate import ANSWERS_FILE, Located, SubmissionError, locate
from grader.engine.sandbox_words import event_words, failure_words
from grader.engine.trusted import TrustedRuns, kept_runs, remembering
from grader.questions import Assignment, CodeQuestion, WrittenQuestion
from grader.records import GradeReport, QuestionResult
from grader.sandbox import runtime
from grader.sandbox.session import Event, RunOn, WorkerSession
from grader.written.expr.checker import ExprChecker

WRITTEN_SECONDS = 60.0  # wall clock for all written answers of one submission together
_TORCH_IMPORT = re.compile(r"^\s*(import\s+torch|from\s+torch[\s.])", re.M)


@dataclass
class _Run:
    """One submission's grading: what it was given, and what its steps collect as they go."""

    submission: Path
    assignment: Assignment
    student: str | None
    limits: sandbox.Limits
    hide: tuple[Path, ...]
    instructor_tests: list[tuple[str, str]] | None
    """None: the assignment's own, if any."""
    checker: ExprChecker
    own_checker: bool
    """Started here, so stopped here."""
    started: float = field(default_factory=time.monotonic)
    seed: int = 0
    code_qs: list[tuple[str, CodeQuestion]] = field(default_factory=list)
    written_qs: list[tuple[str, WrittenQuestion]] = field(default_factory=list)
    located: Located = field(default_factory=Located)
    results: dict[str, QuestionResult] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    extra: list[QuestionResult] = field(default_factory=list)
    """Instructors' unittest entries."""
    grader_error: str | None = None
    session: WorkerSession | None = None
    output: str = ""
    """What the student's code printed."""
    events: list[Event] = field(default_factory=list)
    """What the sandbox stopped or restarted."""
    isolated: bool = False

    def failed(
        self, q: CodeQuestion | WrittenQuestion, number: str, where: str, exc: Exception
    ) -> None:
        """A bug of ours: it costs this one question, visibly."""
        self.grader_error = f"{where}: {type(exc).__name__}: {exc}"
        self.results[q.id] = _internal_error(q, number, self.grader_error)


# ---------------------------------------------------------------------------- written questions


def _written_result(q: WrittenQuestion, number: str, w) -> QuestionResult:
    return QuestionResult(
        question_id=q.id,
        title=q.title,
        number=number,
        kind="written",
        function=None,
        score=w.score,
        max_score=q.points,
        lead=w.feedback,
        visibility=q.visibility or "visible",
        misconceptions=list(w.misconceptions),
        answer_text=w.answer_text,
        not_attempted=w.not_attempted,
    )


def _grade_written_part(run: _Run) -> None:
    """Every written question, each on its own; past WRITTEN_SECONDS the rest are not reached.

    Each step is bounded (numbers' digits and exponents, the file's size and nesting, each
    expression in the hard-killed checker), so the limit is checked between questions.
    """
    questions, located, checker = run.written_qs, run.located, run.checker
    if not questions:
        return
    load_answers_text, grade_written = _written_stack()
    deadline = time.monotonic() + WRITTEN_SECONDS
    sheet = load_answers_text(
        located.files.get(ANSWERS_FILE), located.missing_message(ANSWERS_FILE)
    )
    run.warnings += [p for p in sheet.problems if p not in run.warnings]  # how the file was read
    numbers = variants.numbers(run.assignment.id, run.student)
    checker.forget()  # the caller owns the checker: it may serve many submissions
    for number, q in questions:
        if time.monotonic() > deadline:
            run.results[q.id] = _written_not_reached(q, number)
            continue
        try:
            run.results[q.id] = _written_result(
                q, number, grade_written(q, sheet, numbers, checker)
            )
        except Exception as exc:  # noqa: BLE001 - a bug of ours costs one question, visibly
            run.failed(q, number, f"written answer {q.key}", exc)


# The written part's modules in the order they load (each after those it imports): loaded one by
# one while the worker's sandbox is built, the student's module is asked for as soon as it is up.
_WRITTEN_MODULES = (
    "grader.written.answers",
    "grader.written.numbers",
    "grader.written.result",
    "grader.written.grading",
)


def _written_stack() -> tuple[Callable, Callable]:
    """The written part's reader and grader, imported when first needed: by `_grade_code_part`
    while the worker's sandbox is built (the trusted side is idle then), or here."""
    from grader.written.answers import load_answers_text
    from grader.written.grading import grade_written

    return load_answers_text, grade_written


def _written_not_reached(q: WrittenQuestion, number: str) -> QuestionResult:
    why = (
        f"not graded: checking your written answers took longer than {WRITTEN_SECONDS:g} s in all "
        "(very long or very deeply nested answers?), and this one was not reached"
    )
    return _unscored(q, number, f"**Not graded.** {why}.", why)


# ---------------------------------------------------------------------------- code questions


def _grade_code_part(run: _Run) -> None:
    """Every code question in the one worker; past the submission's budget the rest are not run."""
    questions, located, limits = run.code_qs, run.located, run.limits
    if not questions:
        return
    try:
        ctx = _code_context(run.assignment, located, run.seed, limits, run.hide)
        if ctx.session is not None:
            _while_the_sandbox_starts(ctx, [q for _, q in questions])
            if run.written_qs:
                for module in _WRITTEN_MODULES:
                    if ctx.session.launched_ready():  # the student's module imports meanwhile
                        ctx.session.wait_started()
                    importlib.import_module(module)
            ctx.session.wait_started()  # what starting the worker raised, raised here
    except Exception as exc:  # noqa: BLE001 - the worker could not be started: ours, visible
        for number, q in questions:
            run.failed(q, number, "starting the worker", exc)
        return
    run.session = session = ctx.session
    if ctx.left_out:
        run.warnings.append(left_out_words(ctx))
    if located.notebook is not None:
        run.warnings += _notebook().cell_notes(session, located)  # cells that raised or overran
    for number, q in questions:
        if session is not None and session.remaining() <= 0:
            run.results[q.id] = _budget_spent(q, number, limits.submission_seconds)
            continue
        try:
            run.results[q.id] = grade_code(q, ctx, number)
            if session is not None and run.results[q.id].status == "failed":
                session.kill_strays(q.function)  # a misbehaving function may have left processes
        except Exception as exc:  # noqa: BLE001 - a bug of ours costs one question, visibly
            run.failed(q, number, f"question {q.id}", exc)
    if session is not None and session.missing_libraries:
        run.warnings.append(missing_library_words(session.missing_libraries))
    if session is not None and session.skipped_statements:
        run.warnings.append(skipped_words(session, ctx))


def _while_the_sandbox_starts(ctx: CodeContext, questions: list[CodeQuestion]) -> None:
    """The trusted side's own work for the questions, done while the worker's sandbox is built
    on another core (`WorkerSession.launch`): every question's cases (kept in
    `ctx`, each built once, what it raised kept for its question) and the source scans (memoised
    by grader.engine.shortcuts). Nothing here reads the session; none of it depends on what the
    submission does."""
    if ctx.source is None:
        return
    for q in questions:
        if q.forbidden:
            with contextlib.suppress(Exception):  # raised again where the question scans
                shortcuts.scan(ctx.source, q.forbidden, q.function)
                shortcuts.review(ctx.source, q.function)
                shortcuts.scan(ctx.source, q.forbidden)
        try:
            ctx.cases[q.id] = list(q.cases(ctx.seed))
        except Exception as exc:  # noqa: BLE001 - raised again in its question (grade_code)
            ctx.cases[q.id] = exc


def _budget_spent(q: CodeQuestion, number: str, seconds: float) -> QuestionResult:
    feedback = (
        f"`{q.function}`: {BUDGET_SPENT} ({seconds:g} s for the whole submission); the "
        "questions graded before it keep their points."
    )
    return _unscored(q, number, feedback, BUDGET_SPENT)


def _run_instructor_tests(run: _Run) -> None:
    """The instructor's unittest modules (by default the assignment's own), in the same worker."""
    from grader.engine import instructor_tests as extra_tests

    assignment = run.assignment
    modules = (
        extra_tests.discover(assignment.id)
        if run.instructor_tests is None
        else run.instructor_tests
    )
    first_number = len(assignment.questions)
    if modules and run.session is not None:
        code = [q for q in assignment.questions if isinstance(q, CodeQuestion)]
        try:  # every ban of the assignment holds in these calls (the default, the strictest)
            run.extra = extra_tests.run(
                run.session,
                modules,
                first_number=first_number,
                torch_inputs=any(q.torch_inputs for q in code),
            )
        except Exception as exc:  # noqa: BLE001 - a bug of ours: the other results stand
            run.grader_error = f"instructor tests: {type(exc).__name__}: {exc}"


# ---------------------------------------------------------------------------- the whole submission


def grade_submission(
    submission: Path,
    assignment: Assignment,
    *,
    student: str | None = None,
    limits: sandbox.Limits | None = None,
    hide: tuple[Path, ...] = (),
    instructor_tests: list[tuple[str, str]] | None = None,
    checker: ExprChecker | None = None,
    runs: TrustedRuns | None = None,
) -> GradeReport:
    """Grade one submission folder or zip against an assignment: the `STEPS` in order, then the
    worker and the checker stopped whatever happened, then the report.

    `instructor_tests`: (file name, source) of extra gradescope-utils unittest modules; by
    default those in grader/suites/<id>_unittests/. `checker`: an expression checker to reuse
    across submissions (batch grading); by default one is started and stopped here. `runs`: the
    reference's and the mutants' outputs to reuse across submissions; by default those of an
    enclosing `trusted.remembering` block (a batch's pool process keeps one for all its
    submissions, which share the visible cases), else kept for this submission only.
    """
    run = _Run(
        submission=Path(submission),
        assignment=assignment,
        student=student,
        limits=limits or sandbox.Limits(),
        hide=hide,
        instructor_tests=instructor_tests,
        checker=checker or ExprChecker(),
        own_checker=checker is None,
    )
    with remembering(runs or kept_runs() or TrustedRuns()):
        try:
            for step in STEPS:
                step(run)
        finally:
            _stop(run)
        return _report(run)


def _number_questions(run: _Run) -> None:
    """The student's seed, and each question numbered and resolved, code and written apart."""
    assignment = run.assignment
    run.seed = variants.seed_for(assignment.id, run.student)
    numbered = [(str(i + 1), assignment.resolved(q)) for i, q in enumerate(assignment.questions)]
    run.code_qs = [(n, q) for n, q in numbered if isinstance(q, CodeQuestion)]
    run.written_qs = [(n, q) for n, q in numbered if isinstance(q, WrittenQuestion)]


def _locate_files(run: _Run) -> None:
    """The code file and answers.toml in the folder or zip, or a notebook of the same stem."""
    run.located = _locate(run.submission, run.assignment, run.limits)
    run.warnings = list(run.located.notes)


def _prestart_checker(run: _Run) -> None:
    """sympy loads in its own process while the code questions run (when an answer needs it)."""
    if run.located.files.get(ANSWERS_FILE) and any(
        q.answer_kind == "expression" for _, q in run.written_qs
    ):
        run.checker.prestart()


STEPS: tuple[Callable[[_Run], None], ...] = (
    _number_questions,
    _locate_files,
    _prestart_checker,
    _grade_code_part,  # every code question in one sandboxed worker
    _run_instructor_tests,
    _grade_written_part,  # whatever the code did
)
"""Grading one submission, step by step: each reads and fills the run, in this order."""


def _stop(run: _Run) -> None:
    """The checker (when it is ours) and the worker stopped; what the worker printed and the
    sandbox's events kept for the report."""
    if run.own_checker:
        run.checker.close()
    run.output, run.events, run.isolated = _close_session(run)


def _report(run: _Run) -> GradeReport:
    """The results in the assignment's order, the instructor tests after them, as one report."""
    assignment, located, events = run.assignment, run.located, run.events
    shown = _shown_file(located, assignment.code_file)
    ordered = [_finite(run.results[q.id]) for q in assignment.questions if q.id in run.results]
    ordered += [_finite(r) for r in run.extra]
    report = GradeReport(
        assignment_id=assignment.id,
        student=run.student,
        seed=run.seed,
        questions=ordered,
        execution_time=time.monotonic() - run.started,
        isolated=run.isolated,
        warnings=run.warnings,
        events=[event_words(e, shown) for e in events],
        event_details=[e.detail for e in events],
        student_output=run.output,
        grader_error=run.grader_error,
        answer_key=_answer_key(assignment, run.student),
    )
    return report if located.notebook is None else _notebook().relabel(report, located)


def _answer_key(assignment: Assignment, student: str | None) -> str | None:
    """The expected written answers of the student's own variant (shown as the assignment's
    `reveal_answers` allows; never inside a question's feedback)."""
    from grader.written.grading import answer_key

    written = [
        q
        for q in assignment.questions
        if isinstance(q, WrittenQuestion) and q.answer_kind != "text"
    ]
    if not written:
        return None
    try:
        return answer_key(written, variants.numbers(assignment.id, student))
    except Exception as exc:  # noqa: BLE001 - the key is a courtesy: its failure costs no grade
        return f"(the answer key could not be computed: {type(exc).__name__})"


def _locate(submission: Path, assignment: Assignment, limits: sandbox.Limits) -> Located:
    wanted = tuple(n for n in (assignment.code_file, ANSWERS_FILE) if n)
    try:
        located = locate(Path(submission), wanted)
    except SubmissionError as err:
        located = Located(notes=[str(err)])
    if any(name.endswith(".ipynb") for name in located.files):  # `<stem>.ipynb` for `<stem>.py`
        keys = [q.key for q in assignment.questions if isinstance(q, WrittenQuestion)]
        _notebook().use_notebook(located, assignment.code_file, limits.call_seconds, keys)
    return located


def _notebook():  # noqa: ANN202 - the module
    """grader.engine.notebook, imported by a submission that holds a notebook: a grade of .py
    files goes without its imports (about 12 ms)."""
    from grader.engine import notebook

    return notebook


def _close_session(run: _Run) -> tuple[str, list[Event], bool]:
    """The worker's output and events, then the worker stopped, whatever state it was left in."""
    session = run.session
    if session is None:
        return "", [], sandbox.can_isolate()
    output = session.output()
    events = list(session.events)
    if session.warning:
        run.warnings.append(session.warning)
    try:
        session.close()
    except (
        OSError,
        ValueError,
    ):  # its pipes already closed (stopped at the budget): kill what is left
        if session.proc is not None:
            with contextlib.suppress(OSError, ValueError):
                session.proc.kill()
    return output, events, session.isolated


def _finite(r: QuestionResult) -> QuestionResult:
    """A score that is not a finite number (an instructor test scoring NaN) counts as 0."""
    if math.isfinite(r.score) and math.isfinite(r.max_score):
        return r
    r.max_score = r.max_score if math.isfinite(r.max_score) else 0.0
    r.score = 0.0
    r.notes.append("(A score that was not a finite number was counted as 0.)")
    return r


def _internal_error(q: CodeQuestion | WrittenQuestion, number: str, message: str) -> QuestionResult:
    feedback = (
        f"The grader itself failed on this question ({message}); this is not your mistake. "
        "Please tell your instructor."
    )
    return _unscored(q, number, feedback, message)


def _unscored(
    q: CodeQuestion | WrittenQuestion, number: str, feedback: str, error: str
) -> QuestionResult:
    """A question that earned nothing because it could not be graded (the reason in `error`)."""
    return QuestionResult(
        question_id=q.id,
        title=q.title,
        number=number,
        kind=q.kind,
        function=getattr(q, "function", None),
        score=0.0,
        max_score=q.points,
        lead=feedback,
        visibility=q.visibility or "visible",
        error=error,
    )


def _shown_file(located: Located, code_file: str | None) -> str | None:
    """The code file as the student knows it: the notebook's name when a notebook is graded."""
    return located.notebook.notebook if located.notebook is not None else code_file


def _run_on(source: str, limits: sandbox.Limits) -> RunOn:
    """How a `.py` whose top level fails is run on, by a notebook's time rules: its statements
    that only import or define have no CPU limit, as a notebook's cells of such statements have
    none; one that runs code gets a notebook cell's CPU time and starts only within the cells'
    budget; every one is stopped at the notebook's hard stop (docs/conventions.md, "Code")."""
    from grader.engine.notebook_source import TimeShares, only_defines

    tree = syntax.parsed(source)
    body = tree.tree.body if tree is not None else []
    shares = TimeShares.for_import(limits.call_seconds)
    return RunOn(
        statement_seconds=shares.cell_seconds,
        budget=shares.budget,
        hard_stop=shares.hard_stop,
        defining_lines=frozenset(s.lineno for s in body if only_defines(s)),
    )


def _code_context(
    assignment: Assignment,
    located: Located,
    seed: int,
    limits: sandbox.Limits,
    hide: tuple[Path, ...],
) -> CodeContext:
    name = assignment.code_file
    assert name is not None
    shared = {
        "seed": seed,
        "follow_through": assignment.follow_through,
        "hidden_feedback": assignment.hidden_feedback,
        "shown_file": _shown_file(located, name),
        "place": as_source_spot if located.notebook is None else _notebook().place(located),
        "code_file": name,
        "call_seconds": limits.call_seconds,
    }
    source = located.text(name)
    if source is None:
        return CodeContext(located, None, located.missing_message(name), None, **shared)
    left_out: tuple[syntax.LeftOut, ...] = ()
    if located.notebook is None:
        problem = syntax_problem(shared["shown_file"], source)
        salvaged = syntax.without_broken_statements(source) if problem is not None else None
        if salvaged is not None:  # the statements with the errors left out, the rest graded
            (source, left_out), problem = salvaged, None
    else:
        problem = syntax_problem(shared["shown_file"], source, _notebook().line_words(located))
    if problem is not None:
        return CodeContext(located, source, problem, None, **shared)
    py_files = {k: v for k, v in located.files.items() if k.endswith(".py")}
    if left_out:
        py_files[name] = source.encode("utf-8")
    uses_torch = assignment.preload_torch or any(
        _TORCH_IMPORT.search(v.decode("utf-8", "replace")) for v in py_files.values()
    )
    tripwires = sorted(
        {p for q in assignment.questions if isinstance(q, CodeQuestion) for p in q.forbidden}
    )
    session = WorkerSession(
        py_files,
        name[:-3],
        preload=runtime.preload(uses_torch),
        tripwires=tuple(tripwires),
        not_shortcuts=tuple(sorted(shortcuts.NOT_SHORTCUTS)),
        limits=limits,
        hide=(*content.grader_trees(), *hide),  # the grader's own trees, always
        words=failure_words,
        run_on=_run_on(source, limits) if located.notebook is None else None,
    )
    session.launch()  # the sandbox built while the trusted side works (see above)
    return CodeContext(located, source, None, session, left_out=left_out, **shared)
