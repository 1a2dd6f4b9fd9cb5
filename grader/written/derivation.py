"""Derivations, checked step by step (docs/answers.md, "Derivations").

A derivation question (`Written(steps=True)`) accepts a TOML array of steps or one string of
steps joined by `=`, in plain text or LaTeX. Each step is checked equal to the step before
with the checker that checks answers (numerically at many points, sympy as the fallback, under
the same limits), and the last step against the key. A step may start with a derivative
operator (`d/dz tanh(z)`), and an array item `name = definition` defines one of the names the
question declares with its definition (`p_a = exp(z_a)/S`): it is checked against that
definition and is no link of the chain.

Scoring: full marks for an unbroken chain to the right result; `step_share` of the points
for the right result reached through a step that does not follow (or cannot be read); nothing
for a wrong result. The feedback names the first step that does not follow and the known
mistake it shows, and never the expected result.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from grader.questions import WrittenQuestion, WrongForm
from grader.written.answers import AnswerFormatError, _describe
from grader.written.equations import is_label, split_equals
from grader.written.expr.parser import CONSTANTS, FUNCTIONS
from grader.written.expr.relations import declarations
from grader.written.expr.steps import has_operator, uses_prime
from grader.written.expr.text import canonical_symbol
from grader.written.hints import DERIVATION_EXAMPLE
from grader.written.question import option

if TYPE_CHECKING:
    from grader.written.expr.checker import ExprChecker

MAX_STEP_CHARS = 2000  # one step, as one expression answer
MAX_TOTAL_CHARS = 12_000  # all the steps of one derivation
CHAIN_SECONDS = 20.0  # wall clock for checking one derivation; later links are not checked

LinkState = Literal["first", "follows", "broken", "unreadable", "unchecked", "definition",
                    "bad-definition", "introduced"]  # fmt: skip


@dataclass(frozen=True)
class Step:
    """One step as written."""

    number: int
    """1-based, in the order written."""
    text: str
    defines: str | None = None
    """The name this step defines ("p_a = …", "J = …")."""
    introduced: bool = False
    """A name of the student's own (not declared on the question)."""


@dataclass(frozen=True)
class Chain:
    """A derivation as written: its steps, and the label in front when there is one."""

    steps: tuple[Step, ...]
    label: str | None = None


@dataclass(frozen=True)
class StepResult:
    step: Step
    state: LinkState
    """How this step relates to the one before."""
    shown: str | None = None
    """How it was read."""
    error: str | None = None
    """Why it could not be read."""


@dataclass(frozen=True)
class ChainResult:
    """What checking a derivation found."""

    chain: Chain
    steps: tuple[StepResult, ...]
    final_correct: bool
    final_error: str | None = None
    misconceptions: tuple[WrongForm, ...] = ()
    found_at: int | None = None
    """The step a misconception was matched on."""
    timed_out: bool = False
    canonical: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def unbroken(self) -> bool:
        return all(s.state in _SOUND for s in self.steps)

    @property
    def first_problem(self) -> StepResult | None:
        return next((s for s in self.steps if s.state not in _SOUND), None)


_SOUND = ("first", "follows", "definition", "introduced")


def _new_name(head: str, declared: set[str]) -> str | None:
    """`J`, `L_{naive}`: a name the student introduces (not declared, no function or constant)."""
    try:
        name = canonical_symbol(head.replace("\\", ""))
    except ValueError:
        return None
    if name in declared or name in FUNCTIONS or name in CONSTANTS or name in ("sigma", "d"):
        return None
    return name


def chain_of(value: Any, question: WrittenQuestion) -> Chain:
    """The steps of a derivation answer; AnswerFormatError (teaching) when they cannot be."""
    names, relations = declarations([*question.symbols, *question.relations])
    declared = set(names or ())
    example = f"`{DERIVATION_EXAMPLE}`"
    if isinstance(value, str):
        items: list[Any] = [value]
    elif isinstance(value, list):
        items = value
    else:
        raise AnswerFormatError(
            f"expected a derivation: steps joined by `=` in one string ({example}) or a TOML "
            f'array of steps (["d/dx (x^3 + x)", "3 x^2 + 1"]), got {_describe(value)}'
        )
    total = 0
    steps: list[Step] = []
    label: str | None = None
    limit = int(option(question, "max_steps"))
    for i, item in enumerate(items, start=1):
        if isinstance(item, (int, float)) and not isinstance(item, bool):
            item = repr(item)
        if not isinstance(item, str):
            raise AnswerFormatError(
                f"item {i} of your derivation is {_describe(item)}: each step is an expression "
                f"in quotes, such as {example}"
            )
        total += len(item)
        if total > MAX_TOTAL_CHARS:
            raise AnswerFormatError(
                f"the derivation is too long to check (over {MAX_TOTAL_CHARS} characters)"
            )
        parts = split_equals(item)
        head = parts[0].strip("$ ")
        if isinstance(value, list) and len(parts) == 2 and head in relations:
            steps.append(Step(len(steps) + 1, parts[1], defines=head))
            continue
        new = _new_name(head, declared) if isinstance(value, list) and len(parts) == 2 else None
        if new is not None and i < len(items):  # `J = -log(p_a)`, then steps that use J
            steps.append(Step(len(steps) + 1, parts[1], defines=new, introduced=True))
            declared.add(new)
            continue
        if not steps and label is None and len(parts) + len(items) > 2 and is_label(parts[0]):
            label, parts = parts[0], parts[1:]
        for part in parts:
            if not part.strip("$ "):
                raise AnswerFormatError(
                    f"step {len(steps) + 1} of your derivation is empty (two `=` in a row, or an "
                    f"`=` at an end?): write the steps as {example}"
                )
            if len(part) > MAX_STEP_CHARS:
                raise AnswerFormatError(
                    f"step {len(steps) + 1} is too long (over {MAX_STEP_CHARS} characters)"
                )
            steps.append(Step(len(steps) + 1, part))
            if len(steps) > limit:
                raise AnswerFormatError(
                    f"a derivation here has at most {limit} steps; yours has more: keep the "
                    "steps that matter"
                )
    if not any(s.defines is None for s in steps):
        raise AnswerFormatError(f"the derivation has no step to grade: write it as {example}")
    return Chain(tuple(steps), label)


def check_chain(
    question: WrittenQuestion,
    chain: Chain,
    expected: str,
    wrong_forms: Sequence[WrongForm],
    checker: ExprChecker,
) -> ChainResult:
    """Check every link of `chain`, its last step against `expected`, and the known mistakes."""
    symbols = [*question.symbols, *question.relations]
    _, relations = declarations(symbols)
    deadline = time.monotonic() + CHAIN_SECONDS
    results: list[StepResult] = []
    previous: str | None = None
    last: StepResult | None = None
    timed_out = False
    for step in chain.steps:
        if time.monotonic() > deadline:
            timed_out = True
            results.append(StepResult(step, "unchecked"))
            previous = None
            continue
        if step.introduced:
            v = checker.check_step(step.text, None, symbols)
            if v.error is None:
                symbols = [*symbols, step.defines, f"{step.defines} = {step.text}"]
            results.append(StepResult(step, "unreadable" if v.error else "introduced",
                                      v.interpreted, v.error))  # fmt: skip
            continue
        if step.defines is not None:
            v = checker.check_step(step.text, relations[step.defines], symbols)
            state: LinkState = "definition" if v.equivalent and v.error is None else (
                "unreadable" if v.error else "bad-definition")  # fmt: skip
            results.append(StepResult(step, state, v.interpreted, v.error))
            continue
        v = checker.check_step(step.text, previous, symbols)
        if v.error is not None:
            results.append(StepResult(step, "unreadable", None, v.error))
            previous = None
            last = None
            continue
        state = "first" if previous is None and not results_have_link(results) else (
            "follows" if v.equivalent else "broken")  # fmt: skip
        if previous is None and results_have_link(results):
            state = "unchecked"
        result = StepResult(step, state, v.interpreted)
        results.append(result)
        previous = step.text
        last = result
    final_correct, final_error, canonical = False, None, None
    if last is not None and last is next(
        (r for r in reversed(results) if r.step.defines is None), None
    ):
        verdict = checker.check_step(last.step.text, expected, symbols)
        final_correct = verdict.equivalent and verdict.error is None
        final_error = verdict.error
        canonical = verdict.canonical
        if uses_prime(last.step.text) or has_operator(last.step.text):
            final_correct = False
            final_error = "it still asks for a derivative (f'(…) or d/dx): write the result out"
    else:
        final_error = "the last step could not be read"
    found: list[WrongForm] = []
    found_at: int | None = None
    problem = next((r for r in results if r.state == "broken"), None)
    candidates = [problem] if problem is not None else []
    if not final_correct and last is not None and last is not problem:
        candidates.append(last)
    for where in candidates:
        for wf in wrong_forms:
            if any(f.misconception == wf.misconception for f in found):
                continue
            if time.monotonic() > deadline:
                break
            v = checker.check_step(where.step.text, str(wf.answer), symbols)
            if v.equivalent and v.error is None:
                found.append(wf)
                found_at = where.step.number if found_at is None else found_at
        if found:
            break
    return ChainResult(chain, tuple(results), final_correct, final_error, tuple(found), found_at,
                       timed_out, canonical)  # fmt: skip


def results_have_link(results: Sequence[StepResult]) -> bool:
    """Has a step of the chain (not a definition) been read before this one?"""
    return any(r.step.defines is None for r in results)
