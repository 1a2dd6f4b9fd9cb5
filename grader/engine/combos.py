"""Several catalogued mistakes in one function, as one mutant.

A mutant written as the reference with keyword hooks (`functools.partial(reference, **hooks)`,
or a maker's closure over its hooks: grader/mutants.py, `hooked`) combines with another of the
same reference by merging their hooks. The engine tries such combinations when no single
mistake explains a wrong case (two, then three mistakes of the question's own), and when a
question carries several mistakes charged in the questions it builds on. The work is bounded:
at most MAX_PAIRS pairs and MAX_TRIPLES triples per question, and a carried group whose forms
multiply past MAX_FORMS is not tried.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from grader.engine.diagnosis import Mistake
from grader.mutants import Forms, any_form, hooked

MAX_FORMS = 256  # bound on the forms of carried mistakes tried together on one case
MAX_PAIRS = 120  # bound on the pairs tried on a case no single mistake explains
MAX_TRIPLES = 60  # bound on the triples tried on a case no pair explains


def forms(m: Any) -> tuple[Any, ...]:
    """A mutant's forms (itself when it has one)."""
    return m.forms if isinstance(m, Forms) else (m,)


def combine(a: Any, b: Any, *, deep: bool = True) -> Callable[..., Any] | None:
    """Two mistakes in one function, when both are hooks of the same reference (None otherwise).

    Their hooks are merged; a hook both set is combined in turn (a block whose LayerNorm holds
    two mistakes, an attention with a scale mistake and a softmax mistake). With `deep`, a
    mistake with several forms is combined form by form; without it (a question's own pairs,
    tried on every case no single mistake explains), forms are not multiplied: bounded work.
    """
    if isinstance(a, Forms) or isinstance(b, Forms):
        if not deep:
            return None
        each = [c for x in forms(a) for y in forms(b) if (c := combine(x, y)) is not None]
        return any_form(*each) if each else None
    ha, hb = hooked(a), hooked(b)
    if ha is None or hb is None or ha.base is not hb.base:
        return None
    hooks = dict(ha.hooks)
    for key, value in hb.hooks.items():
        if key in hooks and hooks[key] is not value:
            inner = combine(hooks[key], value, deep=deep)
            if inner is None:
                return None
            value = inner
        hooks[key] = value
    return ha.with_hooks(hooks)


def together(
    mutants: Mapping[str, Any], size: int, *, deep: bool = False, limit: int | None = None
) -> dict[Mistake, Callable[..., Any]]:
    """Every `size` (2 or 3) mistakes of `mutants` that combine, each as one mutant, in the
    question's order, at most `limit` of them (MAX_PAIRS, MAX_TRIPLES by default)."""
    cap = limit if limit is not None else (MAX_PAIRS if size == 2 else MAX_TRIPLES)
    ids = list(mutants)
    out: dict[Mistake, Callable[..., Any]] = {}
    groups: list[tuple[tuple[str, ...], Any]] = [((m,), mutants[m]) for m in ids]
    for _ in range(size - 1):
        grown: list[tuple[tuple[str, ...], Any]] = []
        for group, mutant in groups:
            for other in ids[ids.index(group[-1]) + 1 :]:
                both = combine(mutant, mutants[other], deep=deep)
                if both is not None:
                    grown.append(((*group, other), both))
        groups = grown
    for group, mutant in groups:
        out[group] = mutant
        if len(out) >= cap:
            break
    return out
