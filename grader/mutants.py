"""Mistake forms: what a mutant may return besides a plain value (several forms, "some NaN/inf")."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any


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
                outs.append(f(*copy.deepcopy(args), **copy.deepcopy(kwargs)))
            except Exception:  # noqa: BLE001 - this form does not apply to these inputs
                continue
        if not outs:
            raise ValueError("no form of this mistake applies to these inputs")
        return outs[0] if len(outs) == 1 else AnyOf(*outs)


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
