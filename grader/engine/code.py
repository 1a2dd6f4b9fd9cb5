"""Grading one code question: the shortcut ban, the case loop, the diagnosis, the score.

Follow-through (a mistake carried from an earlier question, a re-run with the reference's
function in place of the student's) is in grader/engine/follow.py; the records the steps pass
between them are in grader/engine/judged.py.

Each case becomes a `CaseRecord` (grader/records.py): a summary from a fixed vocabulary that any
view may show, and the full detail (messages, values, the student's line) that only a visible
case shows to the student. No text about a case is written here.

Over 800 lines (about 1,000) because the case loop is kept whole: the ban, the calls, the
records of a failed or stopped call and the judging of the compared outputs all read one
`CodeContext` and build one question's `QuestionResult` in turn, and split apart they would pass
that state back and forth through module boundaries (follow-through and the records already
live elsewhere).
"""

from __future__ import annotations

import ast
import contextlib
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from functools import lru_cache, partial
from typing import Any

from grader import catalog
from grader.engine import follow, shortcuts, syntax
from grader.engine.checks import Mismatch, compare, preview
from grader.engine.combos import together
from grader.engine.diagnosis import Explanation, Mistake, finite, shows, split, verdict
from grader.engine.judged import Carried, CaseVerdict, Graded, explain_case
from grader.engine.locate import Located
from grader.engine.sandbox_words import RESTARTS_SPENT
from grader.engine.trusted import all_nan, kept_runs, run_trusted, trusted_mutants
from grader.questions import Case, CodeQuestion, Tolerance
from grader.records import (
    BUILTIN_EXCEPTIONS,
    CaseDetail,
    CaseRecord,
    CaseSummary,
    Category,
    HiddenFeedback,
    QuestionResult,
    SourceSpot,
    case_text,
)
from grader.sandbox.session import CallOutcome, Failure, SkippedStatement, Spot, WorkerSession

LOOSE = 10.0  # a wrong case a half-explained mistake does not reproduce even at this many
# times the tolerance rules the mistake out (float32 noise is no evidence against it)
BUDGET_MARGIN = 1.0  # seconds: a call that fails with less budget left failed for the budget
REVIEW_SHOWN = 6  # constructs named in one needs-review note
ARGS_SHOWN = 6  # positional (and keyword) arguments of a case shown to instructors
ARG_ENTRIES = 4  # numbers shown of each argument
MESSAGES_SHOWN = 4  # mismatch messages kept per case
SOURCE_CHARS = 160  # characters of the student's line quoted (a syntax error, a skipped line)
SCORE_DIGITS = 4  # a question's score is rounded to this many decimals


@dataclass
class Searched:
    """The combinations' searches of one question's cases: per case (by id), the output searched
    (by identity) and what was found. A case no single mistake explains is searched when judged;
    `_with_combinations` may ask for the same search again, on the same output."""

    found: dict[int, tuple[Any, list[Explanation]]] = field(default_factory=dict)


def as_source_spot(spot: Spot) -> SourceSpot:
    """A line the worker reported, as it stands in the student's file."""
    return SourceSpot(file=spot.file, line=spot.line, text=spot.text)


def _shortcut_feedback(description: str) -> str:
    m = catalog.get("uses-library-shortcut")
    return (
        f"**0 points: library shortcut.** {description}. {m.explanation} (`uses-library-shortcut`)"
    )


@dataclass(frozen=True)
class _Defined:
    """Where the graded function is written: its module's source, its name there, the module."""

    source: str
    function: str
    file: str = ""
    """The student's other module the code file imports the function from ("" = the code file)."""


def _binds(node: ast.stmt) -> set[str]:
    """The module-level names a top-level statement binds."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {node.name}
    if isinstance(node, ast.Import | ast.ImportFrom):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


@lru_cache(maxsize=16)
def _top_level(source: str) -> tuple[tuple[ast.stmt, frozenset[str]], ...]:
    """A module's top-level statements with the names each binds (none when it does not
    parse)."""
    parsed = syntax.parsed(source)
    return () if parsed is None else tuple((n, frozenset(_binds(n))) for n in parsed.tree.body)


def _module_file(ctx: CodeContext, module: str) -> str | None:
    """The submission's file that `import module` loads (`a/b.py` or `a/b/__init__.py`), when
    it is the student's own and not the code file."""
    path = module.replace(".", "/")
    for file in (f"{path}.py", f"{path}/__init__.py"):
        if file != ctx.code_file and file in ctx.located.files:
            return file
    return None


def _defined(q: CodeQuestion, ctx: CodeContext) -> _Defined:
    """The source the scans read for `q`: the code file, or the student's own module or package
    module that the code file's last binding of the graded function imports it from
    (`from helpers import attention`, `from mylib.layers import *`), so that a shortcut written
    there is charged as one written in the code file is."""
    assert ctx.source is not None
    found: tuple[str, str] | None = None  # (file, the function's name there)
    for node, binds in _top_level(ctx.source):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                if a.name != "*" and (a.asname or a.name) != q.function:
                    continue
                file = _module_file(ctx, node.module)
                if a.name != "*":
                    found = (file, a.name) if file else None
                elif file and any(
                    q.function in b for _, b in _top_level(ctx.located.text(file) or "")
                ):
                    found = (file, q.function)
        elif q.function in binds:
            found = None
    if found is not None:
        text = ctx.located.text(found[0])
        if text is not None:
            return _Defined(text, found[1], found[0])
    return _Defined(ctx.source, q.function)


def _words(ctx: CodeContext, where: _Defined) -> Callable[[int], str]:
    """Lines of the module the function is written in, in the student's terms."""
    if not where.file:
        return ctx.line_words
    return lambda line: (
        SourceSpot(file=where.file, line=line).words(with_file=True) if line else "while it ran"
    )


def _ban(q: CodeQuestion, ctx: CodeContext, result: QuestionResult) -> bool:
    """Charge a forbidden call the function can reach (read in the source of the module that
    defines it); True when charged. Calls the source hides are refused while the function runs
    (see the case loop)."""
    assert ctx.source is not None and ctx.session is not None
    where = _defined(q, ctx)
    found = shortcuts.scan(where.source, q.forbidden, where.function)
    if found:
        description = shortcuts.describe(found, where.function, _words(ctx, where))
        result.lead = _shortcut_feedback(description)
        result.misconceptions = ["uses-library-shortcut"]
        return True
    if ctx.session.tampered:
        result.lead = (
            f"**0 points: needs review.** `{ctx.shown_file}` loaded a library behind the grader's back "
            "(around its import hook), so library shortcuts cannot be ruled out; your instructor "
            "will look at it."
        )
        _flag_review(result, ["a banned library loaded around the grader's import hook"])
        return True
    return False


def _flag_review(result: QuestionResult, what: list[str]) -> None:
    """Constructs an instructor should look at (the class report lists them)."""
    if not what:
        return
    result.needs_review.extend(w for w in what if w not in result.needs_review)
    result.notes.append(
        "**Needs review:** this function (or code it reaches) uses "
        + ", ".join(what[:REVIEW_SHOWN])
        + ", which can reach a library or the grader's checks by a "
        "computed name; your instructor will look at it."
    )


def _review_items(q: CodeQuestion, ctx: CodeContext) -> list[str]:
    """What the source scan asks an instructor to review, and banned calls made at import that
    the source does not show. For a function imported from the student's own module: that
    module's constructs and import-time calls, then the code file's own import-time ones."""
    assert ctx.source is not None and ctx.session is not None
    where = _defined(q, ctx)
    places = [where] if not where.file else [where, _Defined(ctx.source, q.function)]
    items: list[str] = []
    for place in places:
        words = _words(ctx, place)
        for f in shortcuts.review(place.source, place.function):
            item = f"{f.name} ({words(f.line)})"
            if item not in items:
                items.append(item)
    visible = {f.name for f in shortcuts.scan(ctx.source, q.forbidden)}
    items += [
        f"`{u.name}` called while the file was imported ({ctx.line_words(u.line)})"
        for u in ctx.session.import_shortcuts
        if shortcuts.matches(u.name, q.forbidden)
        and u.name not in visible
        and (not where.file or u.file in ("", ctx.code_file))  # not another module's
    ]
    if where.file:
        words, shown = (
            _words(ctx, where),
            {f.name for f in shortcuts.scan(where.source, q.forbidden)},
        )
        items += [
            f"`{u.name}` called while `{where.file}` was imported ({words(u.line)})"
            for u in ctx.session.import_shortcuts
            if shortcuts.matches(u.name, q.forbidden)
            and u.name not in shown
            and u.file == where.file
        ]
    return items


BUDGET_SPENT = "not run: the submission's time budget ran out"


@dataclass
class CodeContext:
    """What every code question of one submission shares."""

    located: Located
    source: str | None
    file_problem: str | None
    """A missing file or a syntax error: it costs every question of the file."""
    session: WorkerSession | None
    seed: int
    follow_through: float = 1.0
    """The assignment's follow-through share (docs/conventions.md, "Follow-through")."""
    hidden_feedback: HiddenFeedback = "category"
    shown_file: str = ""
    """The code file as the student knows it (the notebook's name for a notebook)."""
    place: Callable[[Spot], SourceSpot] = as_source_spot
    """A line the worker reported, in the student's terms (a notebook maps it to its cell)."""
    docked: dict[str, list[Carried]] = field(default_factory=dict)
    """Questions graded so far with named mistakes: id -> what a question built on it may carry."""

    graded: dict[str, Graded] = field(default_factory=dict)
    """Code questions graded so far, by the student function they call."""

    code_file: str = ""
    """The module the worker imports ("transformer.py"), whose lines `place` maps."""
    call_seconds: float = 0.0
    """The limit on one call, for the words of a timeout."""
    cases: dict[str, list[Case] | Exception] = field(default_factory=dict)
    """Cases built before the question ran (while the sandbox started): taken once each."""
    left_out: tuple[syntax.LeftOut, ...] = ()
    """Top-level statements blanked out of the code file for their syntax errors (`source` is
    the file without them)."""

    def take_cases(self, q: CodeQuestion) -> list[Case]:
        """The question's cases: built already (what building them raised, raised now), or now."""
        built = self.cases.pop(q.id, None)
        if isinstance(built, Exception):
            raise built
        return built if built is not None else list(q.cases(self.seed))

    def line_words(self, line: int) -> str:
        """A line of the code file, in the student's terms ("line 12", "code cell 4, line 3")."""
        if not line:
            return "while it ran"
        return self.place(Spot(self.code_file, line)).words()


def grade_code(q: CodeQuestion, ctx: CodeContext, number: str) -> QuestionResult:
    """One code question: the shortcut ban, every case called, then judged (compared or custom)."""
    result = QuestionResult(
        question_id=q.id,
        title=q.title,
        number=number,
        kind="code",
        function=q.function,
        score=0.0,
        max_score=q.points,
        visibility=q.visibility or "visible",
        hidden_feedback=ctx.hidden_feedback,
    )
    if ctx.file_problem is not None:
        result.lead = ctx.file_problem
        result.error = ctx.file_problem
        return result
    assert ctx.source is not None and ctx.session is not None
    in_file = any(q.function in binds for _, binds in _top_level(ctx.source))
    left = next((left for left in ctx.left_out if q.function in left.defines), None)
    if left is not None and not in_file:
        at = f" (`{left.text[:SOURCE_CHARS]}`)" if left.text else ""
        result.error = result.lead = (
            f"**Not run:** `{q.function}` was left out with the statements around the syntax "
            f"error at line {left.line}{at}: {left.message}. Fix it to have this question graded."
        )
        # lost, with nothing named: a later function that calls it is judged with the
        # reference's in its place (follow-through), as past a helper that raised
        ctx.graded[q.function] = Graded(
            q.id,
            number,
            frozenset(q.mutants),
            lost=True,
            named=False,
            reference=q.reference,
            missing="was left out of the file with its syntax error",
        )
        return result
    if q.forbidden and _ban(q, ctx, result):
        return result
    cases = ctx.take_cases(q)
    outcomes, wants = _call_cases(q, ctx.session, cases)
    if not _stopped(q, cases, outcomes, result, ctx):
        if q.custom is not None:
            _judge_custom(q, cases, outcomes, result, ctx)
        else:
            _judge_compared(q, cases, outcomes, result, ctx, follow.carriable(q, ctx), wants)
    if ctx.session.import_failure is not None and any(
        r.summary.category is Category.IMPORT for r in result.cases
    ):
        result.lead = import_words(ctx.session.import_failure, ctx)
    follow.record_docked(q, ctx, result, number)
    ctx.graded[q.function] = Graded(
        q.id,
        number,
        frozenset(q.mutants),
        lost=result.score < result.max_score - 1e-9,
        named=bool(result.misconceptions),
        reference=q.reference,
        missing="" if in_file else "is not in the file",
    )
    if q.forbidden:
        _flag_review(result, _review_items(q, ctx))
    return result


def missing_library_words(names: tuple[str, ...]) -> str:
    """The note for libraries the student's module imports and the grader's environment lacks
    (the worker gave each a stand-in: only a function that uses one fails)."""
    listed = ", ".join(f"`{n}`" for n in names)
    one = len(names) == 1
    return (
        f"{listed} {'is' if one else 'are'} not installed where your code is graded: "
        f"{'its import was' if one else 'their imports were'} given a stand-in, so only a "
        f"function that uses {'it' if one else 'them'} fails (remove the import if your "
        "functions do not need it)"
    )


def left_out_words(ctx: CodeContext) -> str:
    """The note for the top-level statements left out of the file for their syntax errors."""

    def one(left: syntax.LeftOut) -> str:
        lines = (
            f"line {left.first}" if left.first == left.last else f"lines {left.first}–{left.last}"
        )
        at = f": `{left.text[:SOURCE_CHARS]}`" if left.text else ""
        return f"{lines}, for the syntax error at line {left.line}{at} ({left.message})"

    return (
        f"`{ctx.shown_file or ctx.code_file}` does not parse as Python, so the top-level "
        f"statements with the errors were left out and the rest of the file graded: "
        + "; ".join(one(left) for left in ctx.left_out)
        + ". A function defined there is missing: fix the error to have it graded"
    )


def skipped_words(session: WorkerSession, ctx: CodeContext) -> str:
    """The note for the top-level statements skipped while the file was imported, so that the
    rest of the file ran (`WorkerSession.run_on`). What they raised is the student's own:
    nothing of a hidden case exists before the first call."""
    lines = (ctx.source or "").splitlines()
    shown = ctx.shown_file or ctx.code_file

    def one(s: SkippedStatement) -> str:
        text = lines[s.line - 1].strip() if 0 < s.line <= len(lines) else ""
        quoted = f" (`{text[:SOURCE_CHARS]}`)" if text else ""
        f = s.failure
        if s.stopped == "not-run":
            return f"line {s.line}{quoted} was not run: the time for importing the file was spent"
        if s.stopped == "wall":
            return f"line {s.line}{quoted} was stopped when the time for importing the file ran out"
        if f is None:
            return f"line {s.line}{quoted} was stopped after {s.stopped_after or 0:g} s of CPU time"
        if f.cause == "exit-raised":
            return f"line {s.line}{quoted} ends the program (`{f.detail}`)"
        said = f.exception or f.exception_type or "an exception"
        return f"line {s.line}{quoted} raised `{said[:197] + '…' if len(said) > 200 else said}`"

    skipped = session.skipped_statements
    if session.statement_by_statement and session.run_on is not None:
        head = (
            f"`{shown}` did not finish importing within {ctx.call_seconds:g} s, so it was run "
            "again one top-level statement at a time, as a notebook's cells are: each that runs "
            f"code may compute for {session.run_on.statement_seconds:g} s of CPU time, and all "
            f"together have {session.run_on.hard_stop:g} s: "
        )
    else:
        head = f"when `{shown}` was imported, "
    return (
        head
        + "; ".join(one(s) for s in skipped)
        + ": "
        + ("that statement was" if len(skipped) == 1 else "those statements were")
        + " skipped and the rest of the file run, so your functions were graded. Code that runs "
        'or tries your functions belongs under `if __name__ == "__main__":`, which grading does '
        "not run"
    )


def import_words(failure: Failure, ctx: CodeContext) -> str:
    """Why the student's file could not be imported, from what the grader knows for sure: what
    the submission's process said is shown only before any of its functions had been called."""
    shown = ctx.shown_file or ctx.code_file
    notebook = shown.endswith(".ipynb")
    doing = f"running the cells of `{shown}`" if notebook else f"importing `{shown}`"
    if failure.cause == "restarts-spent":  # the import did not fail: nothing is left to run it
        return (
            f"**Not run:** the process running your code was {RESTARTS_SPENT} after earlier "
            "calls; the questions graded before keep their points."
        )
    if failure.after_calls:
        return (
            "**Not run:** the process running your code had to be restarted after an earlier "
            f"call, and {doing} again failed; the questions graded before keep their points."
        )
    if failure.kind == "timeout":
        again = ""
        if ctx.session is not None and ctx.session.statement_by_statement:
            again = (
                ", nor when it was run again one top-level statement at a time with time limits "
                "on each (a statement that catches every exception, the limits' own too, is not "
                "stopped by them)"
            )
        return (
            f"**Not run:** {doing} did not finish within {ctx.call_seconds:g} s{again} (an infinite "
            "loop or a long computation at the top level of the file?)."
        )
    if failure.kind == "crashed":
        return f"**Not run:** the process running your code ended while {doing}."
    if failure.kind == "protocol":
        return (
            f"**Not run:** while {doing}, your code wrote data to the grader's channel; a "
            "submission must not write to it."
        )
    said = f"`{failure.exception}`" if failure.exception else "an exception"
    at = ""
    if failure.spot is not None:
        spot = ctx.place(failure.spot)
        at = f" at {spot.words(with_file=True)}" + (f": `{spot.text}`" if spot.text else "")
    what = (
        f"the cells of `{shown}` could not be run"
        if notebook
        else f"`{shown}` could not be imported"
    )
    return f"**Not run:** {what}: {said}{at}."


# ---------------------------------------------------------------------------- calling


def _call(
    q: CodeQuestion,
    session: WorkerSession,
    case: Case,
    last: bool = True,
    meanwhile: Callable[[], None] | None = None,
) -> CallOutcome:
    """One call of the student's function; past the submission's budget, a "not run" failure.
    `last`: the question's last case (`session.tampered`, read when the next question starts,
    is then up to date; the calls before it skip the worker's read of its mappings).
    `meanwhile`: run while the worker computes (`WorkerSession.call`)."""
    before = session.remaining()
    if before <= 0:
        return CallOutcome(failure=Failure("budget", BUDGET_SPENT))
    try:
        outcome = session.call(
            q.function,
            case.args,
            dict(case.kwargs),
            torch_inputs=q.torch_inputs,
            banned=q.forbidden,
            check=last,
            meanwhile=meanwhile,
        )
    except (OSError, ValueError):
        if session.remaining() > BUDGET_MARGIN:
            raise  # not the budget: our bug, visible as such
        return CallOutcome(
            failure=Failure("budget", BUDGET_SPENT)
        )  # the sandbox's own deadline closed the pipes
    failure = outcome.failure
    if failure is not None and session.remaining() <= BUDGET_MARGIN:
        if failure.kind == "budget" or (
            failure.kind == "crashed" and failure is session.import_failure
        ):
            return replace(outcome, failure=Failure("budget", BUDGET_SPENT))
        if (
            failure.kind == "timeout" and before < session.limits.call_seconds
        ):  # the budget, not the call, ran out
            return replace(
                outcome,
                failure=Failure(
                    "budget",
                    f"`{q.function}` was stopped when the submission's time budget ran out",
                ),
            )
    return outcome


def _call_cases(
    q: CodeQuestion, session: WorkerSession, cases: list[Case]
) -> tuple[list[CallOutcome | None], list[Any]]:
    """Each case's outcome; None for the cases not run after a timeout (each would wait it out
    too), a refused library shortcut or a first case that is not attempted; a "not run" failure
    for those the submission's time budget did not reach. With them, a compared question's
    reference outputs, each computed while the worker ran its case (`NOT_YET` where it was not,
    or raised: `_judge_case` computes it then, and raises as it always did)."""
    outcomes: list[CallOutcome | None] = []
    wants: list[Any] = [NOT_YET] * len(cases)
    for i, case in enumerate(cases):
        meanwhile = None if q.custom is not None else partial(_reference_into, wants, i, q, case)
        outcome = _call(q, session, case, last=i == len(cases) - 1, meanwhile=meanwhile)
        outcomes.append(outcome)
        kind = outcome.failure.kind if outcome.failure is not None else None
        if _tripped(q, outcome) or kind == "timeout" or (kind == "not-attempted" and i == 0):
            break
    if session.remaining() <= 0:
        outcomes += [CallOutcome(failure=Failure("budget", BUDGET_SPENT))] * (
            len(cases) - len(outcomes)
        )
        return outcomes, wants
    return outcomes + [None] * (len(cases) - len(outcomes)), wants


NOT_YET = object()
"""A reference output not computed yet."""


def _reference_into(wants: list[Any], i: int, q: CodeQuestion, case: Case) -> None:
    with contextlib.suppress(Exception):  # computed again by `_judge_case`, raising there
        wants[i] = run_trusted(q.reference, case)


def _tripped(q: CodeQuestion, outcome: CallOutcome) -> list[str]:
    return [t for t in outcome.tripped if shortcuts.matches(t, q.forbidden)] if q.forbidden else []


def _other_module(ctx: CodeContext, base: str) -> str:
    """The student's module (its path in the submission) that the worker names by its file name
    `base`, when it is not the code file: "" for the code file or when the name is ambiguous."""
    if not base or base == ctx.code_file.rpartition("/")[2]:
        return ""
    paths = [f for f in ctx.located.files if f.rpartition("/")[2] == base]
    return paths[0] if len(paths) == 1 else ""


def _stopped(
    q: CodeQuestion,
    cases: list[Case],
    outcomes: list[CallOutcome | None],
    result: QuestionResult,
    ctx: CodeContext,
) -> bool:
    """A library shortcut refused while the function ran, or a function not attempted: the
    question ends here (`result` filled in).

    A shortcut refused on a visible case is described as the worker reported it (the call, the
    line); on a hidden case only by the question's own forbidden names, since the submission's
    process chooses what it reports."""
    for case, outcome in zip(cases, outcomes):
        tripped = _tripped(q, outcome) if outcome is not None else []
        if tripped:
            if case.visible:
                uses = [
                    shortcuts.Finding(u.name, u.line, u.function, _other_module(ctx, u.file))
                    for u in outcome.shortcuts
                    if u.name in tripped
                ]
                found = uses or [shortcuts.Finding(t, 0) for t in tripped]
            else:
                patterns = dict.fromkeys(str(shortcuts.matches(t, q.forbidden)) for t in tripped)
                found = [shortcuts.Finding(p, 0) for p in patterns]
            result.lead = _shortcut_feedback(shortcuts.describe(found, q.function, ctx.line_words))
            result.misconceptions = ["uses-library-shortcut"]
            result.score = 0.0
            return True
    first = outcomes[0] if outcomes else None
    if first is not None and first.failure is not None and first.failure.kind == "not-attempted":
        result.not_attempted = True
        result.lead = f"Not attempted: `{q.function}` still raises `NotImplementedError`."
        return True
    return False


# ---------------------------------------------------------------------------- case records


def _reason_category(reason: str) -> Category:
    """A mismatch's reason (grader/engine/checks.py) as a case's category."""
    return {
        "structure": Category.STRUCTURE,
        "type": Category.STRUCTURE,
        "shape": Category.SHAPE,
        "nonfinite": Category.NONFINITE,
    }.get(reason, Category.VALUES)


_FAILURES: dict[str, Category] = {
    "exception": Category.RAISED,
    "not-attempted": Category.RAISED,  # NotImplementedError raised on a later case
    "timeout": Category.TIMEOUT,
    "crashed": Category.CRASHED,
    "bad-output": Category.UNREADABLE,
    "protocol": Category.UNREADABLE,
    "missing-function": Category.MISSING,
    "import": Category.IMPORT,
    "budget": Category.NOT_RUN,
}


def _output_name(where: str) -> str:
    """The output a mismatch is about, by its first component: a declared name, a position or a
    key of the reference's output (never anything of the student's)."""
    if where.startswith("["):
        return where.split("]", 1)[0] + "]"
    return where.split(".", 1)[0].split("[", 1)[0]


def _inputs(case: Case) -> str:
    parts = [preview(a, ARG_ENTRIES) for a in case.args[:ARGS_SHOWN]]
    parts += [f"{k}={preview(v, ARG_ENTRIES)}" for k, v in list(case.kwargs.items())[:ARGS_SHOWN]]
    return ", ".join(parts)


def _failure_record(
    q: CodeQuestion, case: Case, outcome: CallOutcome | None, ctx: CodeContext
) -> CaseRecord:
    """A case whose call produced no value (None: not run after an earlier timeout)."""
    if outcome is None:
        return CaseRecord(
            visible=case.visible,
            summary=CaseSummary(
                label=case.name, category=Category.NOT_RUN, not_run_because="timeout"
            ),
            detail=CaseDetail(messages=(f"not run (an earlier case of `{q.function}` timed out)",)),
        )
    failure = outcome.failure
    assert failure is not None
    at_import = ctx.session is not None and failure is ctx.session.import_failure
    category = Category.IMPORT if at_import else _FAILURES.get(failure.kind, Category.CRASHED)
    name = failure.exception_type if failure.kind in ("exception", "not-attempted") else None
    if failure.kind == "not-attempted":
        name = "NotImplementedError"
    builtin = (
        name
        if name in BUILTIN_EXCEPTIONS and (failure.builtin or failure.kind == "not-attempted")
        else None
    )
    summary = CaseSummary(
        label=case.name,
        category=category,
        exception=builtin,
        own_exception=category is Category.RAISED and builtin is None,
        limit_seconds=ctx.call_seconds if category is Category.TIMEOUT else None,
        not_run_because="budget" if category is Category.NOT_RUN else "",
    )
    spot = ctx.place(failure.spot) if failure.spot is not None else None
    detail = CaseDetail(messages=(failure.message,), inputs=_inputs(case), spot=spot)
    return CaseRecord(visible=case.visible, summary=summary, detail=detail)


def _mismatch_record(case: Case, mismatches: list[Mismatch], got: Any, want: Any) -> CaseRecord:
    """A wrong case: which outputs differ and how (the summary), and everything else (detail)."""
    outputs: dict[str, Category] = {}
    for m in mismatches:
        outputs.setdefault(_output_name(m.where), _reason_category(m.reason))
    summary = CaseSummary(
        label=case.name,
        category=_reason_category(mismatches[0].reason),
        outputs=tuple((n, c) for n, c in outputs.items() if n),
    )
    detail = CaseDetail(
        messages=tuple(m.message for m in mismatches[:MESSAGES_SHOWN]),
        inputs=_inputs(case),
        got=preview(got),
        expected=preview(want),
    )
    return CaseRecord(visible=case.visible, summary=summary, detail=detail)


def case_line(case: Case, mismatches: list[Mismatch], got: Any, want: Any) -> str:
    """A wrong visible case as the student reads it in the feedback (the handouts' check tool
    copies this, so it says the same)."""
    record = _mismatch_record(case, mismatches, got, want)
    return case_text(replace(record, visible=True))


def _passed_record(case: Case) -> CaseRecord:
    return CaseRecord(
        visible=case.visible, summary=CaseSummary(label=case.name, category=Category.PASSED)
    )


# ---------------------------------------------------------------------------- judging


def _judge_case(
    q: CodeQuestion,
    case: Case,
    outcome: CallOutcome | None,
    result: QuestionResult,
    ctx: CodeContext,
    computed: Any = NOT_YET,
    carried: Collection[str] = (),
    diagnose: bool = True,
    searched: Searched | None = None,
) -> CaseVerdict:
    """One case against the reference's output (`computed` already, or computed now); a wrong
    one explained by the question's mistakes, those `carried` from the questions it builds on
    first (`_explanations`), or, without `diagnose`, left for `_diagnosed`."""

    def reference() -> Any:
        return run_trusted(q.reference, case) if computed is NOT_YET else computed

    if outcome is None or outcome.failure is not None:
        record = _failure_record(q, case, outcome, ctx)
        if outcome is not None and outcome.failure is not None:
            _note_failure(outcome.failure, result)
        if (
            outcome is not None
            and outcome.failure is not None
            and outcome.failure.is_overflow
            and q.mutants
        ):
            # math.exp(1000) raises where numpy gives inf: read it as "every output non-finite",
            # which only the overflow misconceptions (NONFINITE mutants) explain.
            want = reference()
            explained = explain_case(q, case, all_nan(want), want, q.mutants)
            return CaseVerdict(0.0, record, explained, want=want)
        return CaseVerdict(0.0, record, None)
    want = reference()
    mismatches = compare(outcome.value, want, q.tolerance, exact=q.integer, names=q.output_names)
    if not mismatches:
        return CaseVerdict(1.0, _passed_record(case), None, want=want)
    record = _mismatch_record(case, mismatches, outcome.value, want)
    if q.mutants and not diagnose:
        return CaseVerdict(0.0, record, [], want=want, got=outcome.value, diagnosed=False)
    explanations = _case_explanations(q, case, outcome.value, want, carried, searched)
    return CaseVerdict(_credit(explanations), record, explanations, want=want, got=outcome.value)


def _case_explanations(
    q: CodeQuestion,
    case: Case,
    got: Any,
    want: Any,
    carried: Collection[str] = (),
    searched: Searched | None = None,
) -> list[Explanation]:
    """The single mistakes that explain a wrong case, else two or three of them at once."""
    if not q.mutants:
        return []
    explanations = _explanations(q, case, got, want, carried)
    if not explanations:  # no one mistake explains it: two (or three) at once?
        explanations = _explain_together(q, case, got, want, searched)
    return explanations


def _diagnosed(
    q: CodeQuestion, case: Case, v: CaseVerdict, strict: bool, searched: Searched | None = None
) -> CaseVerdict:
    """A verdict `_judge_case` left undiagnosed, as it would have judged it: its explanations on
    the student's own output and their credit (weighed as `_weighed` does)."""
    if v.diagnosed or v.followed:
        return v
    explanations = _case_explanations(q, case, v.got, v.want, searched=searched)
    diagnosed = replace(v, credit=_credit(explanations), explanations=explanations, diagnosed=True)
    return _weighed(diagnosed, strict)


def _explanations(
    q: CodeQuestion, case: Case, got: Any, want: Any, carried: Collection[str]
) -> list[Explanation]:
    """The question's mistakes that explain a wrong case, best first. Those carried from the
    questions it builds on are run first: when the first of them that reproduces the case
    exactly does so on finite outputs, follow-through takes the case as right given the
    student's earlier function (`follow.carry` takes the first such mistake and drops the rest),
    and the question's other mistakes, which could not change that, are not run."""
    if not carried:
        return explain_case(q, case, got, want, q.mutants)
    first = explain_case(q, case, got, want, q.mutants, among=carried)
    exact = [e for e in first if e.extra_wrong == 0]
    if exact and not exact[0].blank:  # blank ones are dropped when no output is finite
        return first
    rest = explain_case(q, case, got, want, q.mutants, among=set(q.mutants) - set(carried))
    return sorted([*first, *rest], key=lambda e: (e.extra_wrong, e.order))


def _explain_together(
    q: CodeQuestion, case: Case, got: Any, want: Any, searched: Searched | None = None
) -> list[Explanation]:
    """The combinations of the question's own mistakes (two, then three: grader/engine/combos.py)
    that reproduce `got` exactly, ordered after the single mistakes (`searched`: what earlier
    searches of the question's cases found)."""
    searched = Searched() if searched is None else searched
    known = searched.found.get(id(case))
    if known is not None and known[0] is got:
        return known[1]
    found = _together_search(q, case, got, want)
    searched.found[id(case)] = (got, found)
    return found


def _together_search(q: CodeQuestion, case: Case, got: Any, want: Any) -> list[Explanation]:
    for size in (2, 3):
        combos = _combinations(q, size)
        found = [
            replace(e, order=len(q.mutants) + e.order)
            for e in explain_case(q, case, got, want, combos)
            if e.extra_wrong == 0
        ]
        if found:
            return found
    return []


def _combinations(q: CodeQuestion, size: int) -> dict[Mistake, Callable[..., Any]]:
    """The question's mistakes combined `size` at a time, the same functions for every
    submission and question copy that share its mistakes while trusted outputs are kept (so
    that their outputs on a case already searched are kept too)."""
    runs = kept_runs()
    if runs is None:
        return together(q.mutants, size)
    return runs.made_once(q.mutants, ("together", size), lambda: together(q.mutants, size))


def _with_combinations(
    q: CodeQuestion,
    cases: list[Case],
    verdicts: list[CaseVerdict],
    strict: bool = False,
    searched: Searched | None = None,
) -> list[CaseVerdict]:
    """When no single mistake explains every failed case (two deviations in one function: each
    alone is near the student's output on some cases), the combinations that reproduce a case
    are added to its explanations, so that one that explains every case can be named."""
    failed = [v for v in verdicts if not v.passed and not v.followed]
    failed_ids = {id(v) for v in failed if v.got is not None and v.explanations is not None}
    if not q.mutants or not failed_ids:
        return verdicts
    singles = {
        e.misconception
        for v in failed
        for e in v.explanations or []
        if isinstance(e.misconception, str)
    }
    if any(
        all(any(e.misconception == m for e in v.explanations or []) for v in failed)
        for m in singles
    ):
        return verdicts
    out = []
    for case, v in zip(cases, verdicts):
        if id(v) in failed_ids and not any(
            isinstance(e.misconception, tuple) for e in v.explanations or []
        ):
            extra = [
                e
                for e in _explain_together(q, case, v.got, v.want, searched)
                if not (strict and e.blank)
            ]
            v = replace(v, explanations=[*(v.explanations or []), *extra])
        out.append(v)
    return out


RUN_FAILURES = ("timeout", "import", "crashed", "budget")
"""The failures that are the question's `error` (the class report lists them): its code did not
run to an answer, as opposed to raising or returning something wrong."""


def _note_failure(failure: Failure, result: QuestionResult) -> None:
    """The question's first run failure (for instructors and the class report) and its kind."""
    if failure.kind not in result.failure_kinds:
        result.failure_kinds = (*result.failure_kinds, failure.kind)
    if failure.kind in RUN_FAILURES and result.error is None:
        result.error = failure.message


def _forget_stood_in_stops(
    outcomes: list[CallOutcome | None], verdicts: list[CaseVerdict], result: QuestionResult
) -> None:
    """When every call of the question that did not run to an answer was made right with the
    reference's functions in place of the student's earlier ones (follow.with_stand_ins), the
    stops were those functions' own, reported at their questions: this one keeps no run
    failure (else the class report would list it among the failed runs twice)."""
    stops = [
        v
        for o, v in zip(outcomes, verdicts)
        if o is not None and o.failure is not None and o.failure.kind in RUN_FAILURES
    ]
    if stops and all(v.rescued and v.stopped for v in stops):
        result.error = None
        result.failure_kinds = tuple(
            k for k in result.failure_kinds if k not in follow.STOPPED_KINDS
        )


def _judge_compared(
    q: CodeQuestion,
    cases: list[Case],
    outcomes: list[CallOutcome | None],
    result: QuestionResult,
    ctx: CodeContext,
    carriable: tuple[dict[str, Carried], float] = ({}, 0.0),
    wants: list[Any] | None = None,
) -> None:
    """Each case compared with the reference (`wants`: its outputs computed already, from
    `_call_cases`); a wrong one explained by the mutants, or, when it is right given a mistake
    charged in a question it builds on, earning follow-through credit."""
    computed = wants if wants is not None else [NOT_YET] * len(cases)
    # With no carried mistake to try and earlier functions of the student's that may be re-run
    # with the reference's in their place, a case with wrong values is diagnosed only if that
    # re-run does not make it right (a right one drops its diagnosis: follow.with_stand_ins).
    defer = not carriable[0] and follow.may_stand_in(q, ctx, carriable[1])
    searched = Searched()
    judged_cases = [
        _judge_case(
            q,
            case,
            outcome,
            result,
            ctx,
            want,
            carried=carriable[0].keys(),
            diagnose=not defer,
            searched=searched,
        )
        for case, outcome, want in zip(cases, outcomes, computed)
    ]
    strict = not any(v.passed or (v.got is not None and finite(v.got)) for v in judged_cases)
    verdicts = [
        follow.carry(q, case, outcome, _weighed(v, strict), *carriable, strict=strict)
        for case, outcome, v in zip(cases, outcomes, judged_cases)
    ]
    diagnose = partial(_diagnosed, q, strict=strict, searched=searched)
    verdicts = follow.with_stand_ins(q, cases, outcomes, verdicts, ctx, carriable[1], diagnose)
    _forget_stood_in_stops(outcomes, verdicts, result)
    verdicts = [diagnose(case, v) for case, v in zip(cases, verdicts)]
    verdicts = _with_combinations(q, cases, verdicts, strict, searched)
    own = [v for v in verdicts if not v.followed]
    per_case = [v.explanations for v in own if v.explanations is not None]
    n_failed = sum(1 for v in own if not v.passed)
    total_weight = sum(c.weight for c in cases) or 1.0
    earned = sum(c.weight * v.credit for c, v in zip(cases, verdicts))
    judged = [(c, v) for c, v in zip(cases, verdicts) if not v.followed and v.want is not None]
    result.misconceptions = [
        m
        for named in verdict(per_case, n_failed)
        if _explains_all(named, per_case, n_failed)
        or not _contradicted(q, named, judged, carriable[0])
        for m in split(named)
    ]
    result.score = round(q.points * earned / total_weight, SCORE_DIGITS)
    carried = [(c, v) for c, v in zip(cases, verdicts) if v.followed]
    result.carried_points = round(
        q.points * sum(c.weight * v.credit for c, v in carried) / total_weight, SCORE_DIGITS
    )
    roots = list(dict.fromkeys(r for _, v in carried for r in v.carried))
    result.carried = [{"from": r.root, "misconception": r.misconception} for r in roots]
    result.cases = [v.record for v in verdicts]
    helpers = follow.unnamed_helpers(q, ctx) if result.score < q.points - 1e-9 else []
    replaced = follow.replaced_everywhere(verdicts)
    helpers = [(f, g) for f, g in helpers if f not in replaced]
    if helpers:
        result.misconceptions = []  # a helper's mistake is named at the helper, or not at all
    result.notes += [
        *(follow.carried_note(r) for r in roots),
        *follow.stand_in_notes(verdicts, ctx.graded),
        *(follow.helper_note(q, f, g) for f, g in helpers),
        *(catalog.note(m, q.function, _right_outputs(q, verdicts)) for m in result.misconceptions),
    ]


def _weighed(v: CaseVerdict, strict: bool) -> CaseVerdict:
    """The case's explanations without those that match only because both outputs are NaN or
    inf everywhere, when the student's code gave no finite output on any case: a mistake is
    named on non-finite outputs only when it is non-finite where theirs is and their code is
    finite elsewhere (or the mistake is marked as producing NaN or inf there: an overflow)."""
    if not strict or not v.explanations or not any(e.blank for e in v.explanations):
        return v
    kept = [e for e in v.explanations if not e.blank]
    return replace(v, explanations=kept, credit=_credit(kept))


def _credit(explanations: list[Explanation]) -> float:
    """The share of a wrong case's weight its diagnosis keeps (a convention's partial credit)."""
    if not explanations:
        return 0.0
    return min(catalog.get(m).credit for m in split(explanations[0].misconception))


def _explains_all(named: Mistake, per_case: list[list[Explanation]], n_failed: int) -> bool:
    return sum(any(e.misconception == named for e in es) for es in per_case) >= n_failed


def _contradicted(
    q: CodeQuestion,
    named: Mistake,
    judged: list[tuple[Case, CaseVerdict]],
    carried: dict[str, Carried],
) -> bool:
    """A mistake that explains only some of the failed cases is not named when, on a case where
    it shows, the student's output is not what it computes: a case they got right, or a wrong
    one it does not explain even at LOOSE times the tolerance (unless a mistake carried from an
    earlier question shows there too, or the output holds NaN or inf: a shared NaN is no
    evidence). The cases it explains then agree with it by coincidence (a beam search has two or
    three plausible answers). One that explains every failed case is named even so (a ReLU left
    out while the GELU branch is right is still a missing activation). Two mistakes named
    together are held only to the cases the student got right."""
    mine = trusted_mutants({m: q.mutants[m] for m in split(named) if m in q.mutants})
    theirs = trusted_mutants({m: q.mutants[m] for m in carried if m in q.mutants})
    loose = replace(q.tolerance, rtol=LOOSE * q.tolerance.rtol, atol=LOOSE * q.tolerance.atol)

    def against(case: Case, v: CaseVerdict) -> bool:
        if v.credit == 1.0:
            return True
        if isinstance(named, tuple) or v.explanations is None or not finite(v.got):
            return False
        if any(e.misconception == named for e in v.explanations):
            return False
        return not any(_shows(m, case, v.want, q) for m in theirs.values())

    return any(
        _shows(m, case, v.want, q, unlike=None if v.credit == 1.0 else (v.got, loose))
        for case, v in judged
        if against(case, v)
        for m in mine.values()
    )


def _shows(
    mutant: Callable[..., Any],
    case: Case,
    want: Any,
    q: CodeQuestion,
    unlike: tuple[Any, Tolerance] | None = None,
) -> bool:
    """`shows` for one of the question's mutants, wrapped by `trusted_mutants` (it copies the
    case's arguments itself)."""
    return shows(
        mutant,
        want,
        case.args,
        dict(case.kwargs),
        q.tolerance,
        exact=q.integer,
        unlike=unlike,
        copied=True,
    )


def _right_outputs(q: CodeQuestion, verdicts: list[CaseVerdict]) -> tuple[str, ...]:
    """The named outputs no wrong case reports wrong (for the diagnosis's wording)."""
    wrong = {name for v in verdicts if not v.record.passed for name, _ in v.record.summary.outputs}
    return tuple(n for n in q.output_names if n not in wrong)


def _judge_custom(
    q: CodeQuestion,
    cases: list[Case],
    outcomes: list[CallOutcome | None],
    result: QuestionResult,
    ctx: CodeContext,
) -> None:
    """Every output judged together by the question's own judge (invariants, distributions).

    A check shows its detail to the student only when it is about a visible case (named after
    one) or every case is visible: the judge reads every output, and its words may carry a
    hidden case's."""
    assert q.custom is not None
    outputs = [o.value if o is not None and o.failure is None else None for o in outcomes]
    records: list[CaseRecord] = []
    for c, o in zip(cases, outcomes):
        if o is None or o.failure is not None:
            if o is not None and o.failure is not None:
                _note_failure(o.failure, result)
            records.append(_failure_record(q, c, o, ctx))
    j = q.custom(cases, outputs)
    # a failed call costs the checks it could not feed: scale by the share of calls that ran
    share = sum(o is not None for o in outputs) / len(outputs) if records else 1.0
    result.score = round(q.points * j.fraction * share, SCORE_DIGITS)
    visible = {c.name for c in cases if c.visible}
    all_visible = all(c.visible for c in cases)
    if j.fatal is not None:
        records.append(
            CaseRecord(
                visible=all_visible,
                summary=CaseSummary(label="the outputs could be read", category=Category.FAILED),
                detail=CaseDetail(messages=(j.fatal,)),
            )
        )
    for what, ok, detail in j.checks:
        shown = all_visible or what in visible
        records.append(
            CaseRecord(
                visible=shown,
                summary=CaseSummary(
                    label=what, category=Category.PASSED if ok else Category.FAILED
                ),
                detail=CaseDetail(messages=(detail,) if not ok and detail else ()),
            )
        )
    result.cases = records
    result.unit = "checks"
    result.how = j.how
    result.misconceptions = list(j.misconceptions) if result.score < q.points else []
    result.notes += [catalog.note(m, q.function) for m in result.misconceptions]


def syntax_problem(
    name: str, source: str, line_words: Callable[[int], str] = lambda n: f"line {n}"
) -> str | None:
    """Why the file cannot be read as Python, in the student's terms (None when it can)."""
    if syntax.parsed(source) is not None:  # the parse every later reader shares
        return None
    try:
        syntax.parse_python(source, filename=name)
    except SyntaxError as err:
        text = (err.text or "").strip()
        where = f" at {line_words(err.lineno)}" if err.lineno else ""
        where += f": `{text[:SOURCE_CHARS]}`" if text else ""
        return f"`{name}` has a syntax error{where} ({err.msg}); no function in it could be run."
    except ValueError as err:  # null bytes
        return f"`{name}` could not be parsed: {err}"
    except (RecursionError, MemoryError):
        return (
            f"`{name}` is too deeply nested for Python to read (an expression with tens of thousands of "
            "terms or brackets?); Python itself cannot import it, so no function in it could be run."
        )
    return None
