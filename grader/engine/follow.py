"""Follow-through (docs/conventions.md): a question built on the student's own earlier function
is not charged again for that function's mistake, whether it carries a named mistake or, when
the earlier function raised, returned something unusable, looped or ended the process, is right
with the reference's function in its place."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from grader import catalog
from grader.engine import calls
from grader.engine.checks import compare
from grader.engine.combos import MAX_FORMS, combine, forms
from grader.engine.diagnosis import Explanation, Mistake, split
from grader.engine.judged import Carried, CaseVerdict, Graded, explain_case
from grader.engine.trusted import computed, run_trusted
from grader.questions import Case, CodeQuestion
from grader.records import Category, QuestionResult
from grader.sandbox.session import CallOutcome

CodeContext = Any  # grader.engine.code's (not imported: code.py imports this module)


def builds_on(q: CodeQuestion, ctx: CodeContext) -> tuple[str, ...]:
    """The earlier questions `q` builds on: those it declares, and those whose function the
    student's own `q.function` calls (directly or through their other functions)."""
    found = [g.question for _, g in called_graded(q, ctx)]
    return tuple(dict.fromkeys((*q.depends_on, *found)))


def called_graded(q: CodeQuestion, ctx: CodeContext) -> list[tuple[str, Graded]]:
    """The student's earlier graded functions (other questions') that their `q.function` calls,
    directly or through their other functions, read in their own source (also when the file
    lacks one: left out with its syntax error, or never written)."""
    called = calls.called(ctx.source, q.function) if ctx.source else frozenset()
    return [(f, g) for f, g in ctx.graded.items() if f in called and g.question != q.id]


def unnamed_helpers(q: CodeQuestion, ctx: CodeContext) -> list[tuple[str, Graded]]:
    """The student's earlier graded functions that `q.function` calls and that lost points in
    their own question with no mistake named there: whatever they got wrong may be what is wrong
    here, so no mistake of this question's own can be told from its outputs."""
    return [(f, g) for f, g in called_graded(q, ctx) if g.lost and not g.named]


def helper_note(q: CodeQuestion, function: str, g: Graded) -> str:
    if g.missing:
        return (
            f"**Builds on your `{function}`:** your `{q.function}` calls `{function}`, which "
            f"{g.missing} (question {g.number}): the cases that need it fail here too. Correct "
            f"`{function}` first."
        )
    return (
        f"**Builds on your `{function}`:** your `{q.function}` calls your `{function}`, which "
        f"lost points in question {g.number} with a mistake the grader could not name; it may be "
        f"why cases fail here too, so no mistake is named for `{q.function}` itself. Correct "
        f"`{function}` first."
    )


def carriable(q: CodeQuestion, ctx: CodeContext) -> tuple[dict[str, Carried], float]:
    """The mistakes charged in the questions `q` builds on, by id, and the share they earn here."""
    share = ctx.follow_through if q.follow_through is None else q.follow_through
    deps = builds_on(q, ctx)
    if share <= 0 or not deps:
        return {}, 0.0
    found: dict[str, Carried] = {}
    for dep in deps:
        for c in ctx.docked.get(dep, []):
            if c.misconception in q.mutants:  # the mistake lifted to this question
                found.setdefault(c.misconception, c)
    return found, share


def carry(
    q: CodeQuestion,
    case: Case,
    outcome: CallOutcome | None,
    v: CaseVerdict,
    carriable: dict[str, Carried],
    share: float,
    *,
    strict: bool = False,
) -> CaseVerdict:
    """A wrong case that the carried mistakes reproduce exactly (one of them, or several at once
    when the question builds on several docked functions) is right given the student's own
    earlier functions: it earns `share` of its weight and is not charged again. One that they do
    not reproduce is judged as it is, with the question's own mistakes looked for on top of a
    carried one."""
    if not carriable or v.explanations is None:
        return v
    exact = [e.misconception for e in v.explanations if e.extra_wrong == 0]
    found = next((m for m in exact if m in carriable), None)
    together = None if found else _carried_together(q, case, outcome, v.want, carriable, strict)
    if found or together:
        roots = (carriable[found],) if found else together
        summary = replace(
            v.record.summary,
            category=Category.CARRIED,
            given=tuple(f"`{c.function}` (question {c.number})" for c in roots),
        )
        record = replace(v.record, summary=summary)
        return replace(v, credit=share, record=record, explanations=None, carried=roots)
    on_top = [e for e in _on_top(q, case, outcome, v.want, carriable) if not (strict and e.blank)]
    return replace(v, explanations=on_top) if on_top else v


def _carried_together(
    q: CodeQuestion,
    case: Case,
    outcome: CallOutcome | None,
    want: Any,
    carriable: dict[str, Carried],
    strict: bool = False,
) -> tuple[Carried, ...] | None:
    """The carried mistakes (two, or all of them) that together reproduce the case exactly: a
    block built on a LayerNorm and a feed-forward network that were both docked."""
    if len(carriable) < 2 or outcome is None or outcome.failure is not None:
        return None
    ids = list(carriable)
    groups = [(a, b) for i, a in enumerate(ids) for b in ids[i + 1 :]]
    if len(ids) > 2:
        groups.append(tuple(ids))
    combos: dict[Mistake, Callable[..., Any]] = {}
    for group in groups:
        if math.prod(len(forms(q.mutants[m])) for m in group) > MAX_FORMS:
            continue  # bounded work: a group whose forms multiply past the bound is not tried
        both: Any = q.mutants[group[0]]
        for mid in group[1:]:
            both = combine(both, q.mutants[mid]) if both is not None else None
        if both is not None:
            combos[tuple(group)] = both
    if not combos:
        return None
    for e in explain_case(q, case, outcome.value, want, combos):
        if e.extra_wrong == 0 and not (strict and e.blank):
            return tuple(carriable[m] for m in split(e.misconception))
    return None


def _on_top(
    q: CodeQuestion,
    case: Case,
    outcome: CallOutcome | None,
    want: Any,
    carriable: dict[str, Carried],
) -> list[Explanation]:
    """The question's own mistakes, each combined with a carried one (mutants written as
    `functools.partial(reference, **hooks)` combine by merging their hooks)."""
    if outcome is None or outcome.failure is not None:
        return []
    combos = {}
    for own, mutant in q.mutants.items():
        for carried in carriable:
            both = combine(q.mutants[carried], mutant) if own != carried else None
            if both is not None:
                combos.setdefault(own, both)
    if not combos:
        return []
    return explain_case(q, case, outcome.value, want, combos)


def carried_note(c: Carried) -> str:
    m = catalog.get(c.misconception)
    return (
        f"**Follow-through:** right given your `{c.function}`, whose mistake ({m.title}, "
        f"`{m.id}`) was charged in question {c.number}; it is not charged again here."
    )


def record_docked(q: CodeQuestion, ctx: CodeContext, result: QuestionResult, number: str) -> None:
    """What a later question built on this one may carry: its own named mistakes, and those it
    carried itself (charged at their root)."""
    own = [
        Carried(m, q.id, number, q.function)
        for m in result.misconceptions
        if m != "uses-library-shortcut"
    ]
    through = [
        c
        for dep in builds_on(q, ctx)
        for c in ctx.docked.get(dep, [])
        if any(r["misconception"] == c.misconception for r in result.carried)
    ]
    if result.score < result.max_score - 1e-9 and (own or through):
        ctx.docked[q.id] = own + through


# ---------------------------------------------------------------------------- stand-ins

UNUSABLE = (
    Category.RAISED,
    Category.UNREADABLE,
    Category.SHAPE,
    Category.STRUCTURE,
    Category.NONFINITE,
)
"""A case's failures that an earlier function's may cause with no value to carry: it raised,
or returned something of the wrong kind, shape or structure, or NaN or inf."""

STOPPED = (Category.TIMEOUT, Category.CRASHED, Category.NOT_RUN)
"""A case's failures where the process gave no answer at all: the call was stopped at its time
limit, the process ended during it, or it was not run after an earlier case timed out. An
earlier function that loops or ends the process may cause them; one re-run that fails too (the
question's own code then loops or crashes, and a re-run costs up to a call's time limit) ends
the re-runs of such cases for the question."""

STOPPED_KINDS = ("timeout", "crashed")
"""The call failures behind a STOPPED case that a re-run may make right (not the submission's
budget running out, nor an import that failed)."""

WRONG_VALUES = (Category.VALUES,)
"""A case's failure that an earlier function's wrong values may cause, with no mistake charged
there that reproduces it (none named, or one this question cannot compute): re-run the same way,
its own mistakes then looked for in the re-run's output only."""


def stand_ins(q: CodeQuestion, ctx: CodeContext) -> dict[str, Graded]:
    """The student's earlier graded functions that `q.function` calls (read in their source) and
    that lost points in their own question, by name: the reference's may stand in for them."""
    return {f: g for f, g in called_graded(q, ctx) if g.lost and g.reference is not None}


def may_stand_in(q: CodeQuestion, ctx: CodeContext, share: float) -> bool:
    """Whether `with_stand_ins` may re-run the question's wrong cases."""
    return share > 0 and ctx.session is not None and bool(stand_ins(q, ctx))


def with_stand_ins(
    q: CodeQuestion,
    cases: list[Case],
    outcomes: list[CallOutcome | None],
    verdicts: list[CaseVerdict],
    ctx: CodeContext,
    share: float,
    diagnose: Callable[[Case, CaseVerdict], CaseVerdict],
) -> list[CaseVerdict]:
    """Each case that failed unusably (UNUSABLE), gave no answer (STOPPED) or gave wrong values
    (WRONG_VALUES) and that no carried mistake explains, in a function that calls earlier
    functions of the student's that lost points: re-run with the reference's in their place
    (the one it raised in first, then all of them), its own logic judged on that run. Right,
    it earns `share` of its weight and is not charged again; wrong, it is judged as it is, its
    own mistakes looked for in the re-run's output (for wrong values, only there: what the
    student's own output shows may be the earlier function's mistake). `diagnose` gives a
    verdict its diagnosis on the student's own output, when it was left for later
    (`CaseVerdict.diagnosed`), before a wrong re-run reads it."""
    helpers = stand_ins(q, ctx) if share > 0 and ctx.session is not None else {}
    if not helpers:
        return verdicts
    out = []
    stopped_again = False  # a re-run of a stopped case was not made right: no more of them
    for case, outcome, v in zip(cases, outcomes, verdicts):
        failure = outcome.failure if outcome is not None else None
        category = v.record.summary.category
        if (
            outcome is not None
            and not v.passed
            and not v.followed
            and category in UNUSABLE
            and (failure is None or failure.kind in ("exception", "bad-output"))
        ):
            v = _judged_with(q, case, outcome, v, ctx, helpers, share, diagnose)
        elif (
            not stopped_again
            and not v.followed
            and category in STOPPED
            # None: not run after a timeout (a refused shortcut or a stub's first case scores
            # the question before it is judged: grader/engine/code.py, `_stopped`)
            and (outcome is None or (failure is not None and failure.kind in STOPPED_KINDS))
            and ctx.session.remaining() > ctx.call_seconds + STAND_IN_MARGIN
        ):
            v = _judged_with(q, case, outcome, v, ctx, helpers, share, diagnose, stopped=True)
            stopped_again = not v.rescued
        elif (
            outcome is not None
            and failure is None
            and not v.passed
            and not v.followed
            and v.record.summary.category in WRONG_VALUES
        ):
            v = _judged_with(q, case, outcome, v, ctx, helpers, share, diagnose, values=True)
        out.append(v)
    return out


def _judged_with(
    q: CodeQuestion,
    case: Case,
    outcome: CallOutcome,
    v: CaseVerdict,
    ctx: CodeContext,
    helpers: dict[str, Graded],
    share: float,
    diagnose: Callable[[Case, CaseVerdict], CaseVerdict],
    values: bool = False,
    stopped: bool = False,
) -> CaseVerdict:
    """`with_stand_ins` for one case (`outcome` None: not run after an earlier case timed out);
    `stopped`: its own run gave no answer (`STOPPED`)."""
    spot = outcome.failure.spot if outcome is not None and outcome.failure is not None else None
    raised_in = (
        calls.holding(ctx.source, spot.line)
        if spot is not None and ctx.source and spot.file == ctx.code_file
        else None
    )
    tries = [{raised_in: helpers[raised_in]}] if raised_in in helpers else []
    if not tries or len(helpers) > 1:
        tries.append(helpers)
    want = v.want if v.want is not None else run_trusted(q.reference, case)
    value: Any = None
    for replaced in tries:
        if ctx.session.remaining() <= STAND_IN_MARGIN:
            return v
        r = ctx.session.call(
            q.function,
            case.args,
            dict(case.kwargs),
            torch_inputs=q.torch_inputs,
            banned=q.forbidden,
            replace={f: _trusted(g.reference) for f, g in replaced.items()},
        )
        if r.failure is not None or r.tripped:
            continue
        value = r.value
        if not compare(value, want, q.tolerance, exact=q.integer, names=q.output_names):
            given = tuple(
                f"`{f}` (question {g.number}) replaced by the reference's"
                for f, g in replaced.items()
            )
            summary = replace(v.record.summary, category=Category.CARRIED, given=given)
            return replace(
                v,
                credit=share,
                record=replace(v.record, summary=summary),
                explanations=None,
                stood_in=tuple(replaced),
                rescued=True,
                raised_in=raised_in,
                stopped=stopped,
            )
    v = diagnose(case, v)  # not made right: what the student's own output shows is read
    names = tuple(tries[-1])
    if values:
        # Wrong values either way: the case is judged on the re-run's output, the composite's own
        # logic with the reference's callees, and names only what shows there.
        if value is None:
            return v
        own = explain_case(q, case, value, want, q.mutants) if q.mutants else []
        return replace(
            v, explanations=own or None, want=want, got=value, stood_in=names, raised_in=None
        )
    if value is None or v.explanations or not q.mutants:
        return replace(v, stood_in=names, raised_in=raised_in)
    own = explain_case(q, case, value, want, q.mutants)
    if not own:
        return replace(v, stood_in=names, raised_in=raised_in)
    return replace(v, explanations=own, want=want, got=value, stood_in=names, raised_in=raised_in)


STAND_IN_MARGIN = 1.0  # seconds of the submission's budget a re-run leaves for what follows


def _trusted(reference: Callable[..., Any]) -> Callable[..., Any]:
    """A reference as a stand-in: fresh arguments, plain outputs (the trusted side's own run)."""
    return lambda *a, **k: computed(reference, a, k)


def stand_in_notes(verdicts: list[CaseVerdict], graded: dict[str, Graded]) -> list[str]:
    """One follow-through note per earlier function a re-run that earned credit replaced."""
    rescued = [v for v in verdicts if v.rescued]
    names = list(dict.fromkeys(f for v in rescued for f in v.stood_in))
    notes = []
    for f in names:
        number = graded[f].number
        if graded[f].missing:
            notes.append(
                f"**Follow-through:** judged with the reference's `{f}` (question {number}) in "
                f"place of yours, which {graded[f].missing}; not charged again here."
            )
            continue
        if all(v.stopped for v in rescued if f in v.stood_in):
            notes.append(
                f"**Follow-through:** judged with the reference's `{f}` (question {number}) in "
                "place of yours, with which these cases gave no answer (a call stopped at its time "
                "limit, or the process ended); not charged again here."
            )
            continue
        how = "raised" if any(v.raised_in == f for v in rescued) else "was wrong"
        notes.append(
            f"**Follow-through:** judged with the reference's `{f}` in place of yours, which "
            f"{how} on these inputs (question {number}); not charged again here."
        )
    return notes


def replaced_everywhere(verdicts: list[CaseVerdict]) -> frozenset[str]:
    """The earlier functions the reference's stood in for on every failed case of the question's
    own: whatever they got wrong is then not what is wrong here."""
    failed = [v for v in verdicts if not v.passed and not v.followed]
    if not failed:
        return frozenset()
    common = set(failed[0].stood_in)
    for v in failed[1:]:
        common &= set(v.stood_in)
    return frozenset(common)
