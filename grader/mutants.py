"""Mistake forms: what a mutant may return besides a plain value (several forms, "some NaN/inf")."""

from __future__ import annotations

import copy
import types
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np

# What a mutant raises when its mistake does not apply to a case's inputs: shapes that do not
# broadcast, an index or axis the arrays do not have (numpy's AxisError is both), arithmetic
# that fails (overflow, division by zero), a type it cannot take. Anything else is a bug of
# ours and reaches the engine's visible "the grader itself failed" path.
NOT_APPLICABLE: tuple[type[BaseException], ...] = (
    ValueError,
    IndexError,
    TypeError,
    ArithmeticError,
)


class NonFinite:
    """A mutant's output that stands for "some NaN or inf here", whatever the exact pattern.

    Overflow mistakes (an unstable sigmoid or softmax) produce NaN or inf in places that depend
    on how the student wrote the formula; a mutant returns this marker for such an output.
    """

    def __repr__(self) -> str:
        return "NONFINITE"


NONFINITE = NonFinite()


class AnyOf:
    """A mutant's output when a mistake has several natural outputs (all listed); any one matches.

    E.g. a row whose keys are all masked gives NaN when filled with -inf but a uniform row
    when filled with -1e9: both are the same misconception.
    """

    def __init__(self, *options: Any) -> None:
        if not options:
            raise ValueError("AnyOf needs at least one output")
        self.options = options


class Forms:
    """One mistake with several natural forms, as one mutant: called, it returns every form's
    output (an AnyOf; a form that does not apply to the inputs is left out). Its `forms` stay
    readable, so two mistakes can be combined form by form."""

    def __init__(self, *forms: Callable[..., Any]) -> None:
        self.forms = forms

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        outs = []
        for f in self.forms:
            try:
                outs.append(f(*_fresh(args, {}), **_fresh(kwargs, {})))
            except NOT_APPLICABLE:  # this form does not apply to these inputs
                continue
        if not outs:
            raise ValueError("no form of this mistake applies to these inputs")
        return outs[0] if len(outs) == 1 else AnyOf(*outs)


_SHARED = (int, float, complex, str, bytes, bool, type(None), np.generic)  # immutable: shared


def _fresh(value: Any, memo: dict[int, Any]) -> Any:
    """`copy.deepcopy(value)` for a case's arguments, at a fraction of its cost: arrays copied,
    tuples, lists and dicts rebuilt, an object met twice copied once (aliases stay aliases, as
    deepcopy keeps them), immutable values shared, anything else (a generator's state, a
    language model) left to deepcopy itself, with the same memo. Each form then runs on
    arguments no other form has written into."""
    if isinstance(value, _SHARED):
        return value
    known = memo.get(id(value))
    if known is not None:
        return known[1]
    if type(value) is np.ndarray:
        out: Any = value.copy()
    elif type(value) in (tuple, list):
        out = [_fresh(v, memo) for v in value]
        out = tuple(out) if type(value) is tuple else out
    elif type(value) is dict:
        out = {k: _fresh(v, memo) for k, v in value.items()}
    else:
        deep = {k: v[1] for k, v in memo.items()}  # deepcopy's memo: id -> copy
        out = copy.deepcopy(value, deep)
    memo[id(value)] = (value, out)  # the original kept alive: its id is not reused meanwhile
    return out


def any_form(*forms: Callable[..., Any]) -> Callable[..., Any]:
    """One mistake with several natural forms as one mutant: every form's output, any one matches.

    A form that does not apply to the inputs (an axis the array does not have) is left out.
    """
    return forms[0] if len(forms) == 1 else Forms(*forms)


def concrete(value: Any) -> Any:
    """A mutant's output with NONFINITE markers read as NaN and AnyOf as its first option
    (for separation checks)."""
    if isinstance(value, AnyOf):
        return concrete(value.options[0])
    if isinstance(value, NonFinite):
        return float("nan")
    if isinstance(value, tuple):
        return tuple(concrete(v) for v in value)
    if isinstance(value, dict):
        return {k: concrete(v) for k, v in value.items()}
    return value


class Hooked:
    """A mutant read as one reference function with keyword hooks, so that two mistakes of one
    function can be merged into one mutant (their hooks merged)."""

    def __init__(self, base: Any, hooks: dict[str, Any], rebuild: Callable[..., Any]) -> None:
        self.base = base  # what two mutants must share to combine (the function, or the maker)
        self.hooks = hooks
        self._rebuild = rebuild

    def with_hooks(self, hooks: dict[str, Any]) -> Callable[..., Any]:
        """The same reference with these hooks."""
        return self._rebuild(hooks)


def hooked(m: Any) -> Hooked | None:
    """`m` as a reference with keyword hooks: `functools.partial(reference, **hooks)`, or a
    closure made by a maker `lambda ...: reference(..., **hooks)` whose only free variable is
    the hooks' dict (two closures of one maker share their code). None for anything else."""
    if isinstance(m, partial):
        if m.args:
            return None
        return Hooked(m.func, dict(m.keywords), lambda h, f=m.func: partial(f, **h))
    if not isinstance(m, types.FunctionType) or m.__closure__ is None:
        return None
    if len(m.__code__.co_freevars) != 1:
        return None
    try:
        hooks = m.__closure__[0].cell_contents
    except ValueError:  # an empty cell
        return None
    if not isinstance(hooks, dict) or not all(isinstance(k, str) for k in hooks):
        return None

    def rebuild(h: dict[str, Any], f: types.FunctionType = m) -> Callable[..., Any]:
        g = types.FunctionType(
            f.__code__, f.__globals__, f.__name__, f.__defaults__, (types.CellType(dict(h)),)
        )
        g.__kwdefaults__ = f.__kwdefaults__
        return g

    return Hooked(m.__code__, dict(hooks), rebuild)


def failed_checks(judgement: Any) -> frozenset[str]:
    """The checks a custom judge's judgement failed (its `checks`: (what, passed, detail))."""
    return frozenset(what for what, ok, _ in judgement.checks if not ok)


def judged_alike(
    candidates: Sequence[str],
    failed: frozenset[str],
    mutants: Mapping[str, Callable[..., Any]],
    judge_outputs: Callable[[Callable[..., Any]], Any],
) -> list[str]:
    """The candidate mistakes a custom judge may name: those that reproduce what the student's
    code did. A judge reads statistics over every case, not outputs case by case, so the rule
    that grader/engine/diagnosis.py applies to compared outputs (a mistake is named only when it
    reproduces the failing cases, and a case the student got right where it shows rules it out)
    reads here: the mistake's own outputs on the same cases, judged by the same checks
    (`judge_outputs(mutant)`: a judgement, its naming left out), fail exactly the checks the
    student's failed. Naming none beats naming a wrong one (issue 33)."""
    kept = []
    for mid in candidates:
        mutant = mutants.get(mid)
        if mutant is not None and failed_checks(judge_outputs(mutant)) == failed:
            kept.append(mid)
    return kept
