"""Naming the mistake: which catalog mutant explains a wrong output.

On a mismatch, every mutant that applies to the question runs on the same inputs (on the
trusted side) and the student's output is compared with it output by output (tuple
elements, dict keys). A mutant explains a case when every output the student got wrong
matches the mutant's; among those, the one that also agrees on the most outputs the
student got right wins (the closest explanation), then the question's own order, which
puts root causes (a forward-pass bug) before their downstream symptoms.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.engine.checks import as_array, matches
from grader.engine.trusted import materialize as _fresh  # fresh copies of array arguments
from grader.mutants import NOT_APPLICABLE, AnyOf, NonFinite
from grader.questions import Tolerance


def _matches(got: Any, predicted: Any, tol: Tolerance, exact: bool) -> bool:
    if isinstance(predicted, NonFinite):
        return _nonfinite(got)
    return matches(got, predicted, tol, exact=exact)


def _nonfinite(leaf: Any) -> bool:
    """Whether one output (an array, a list or a number) holds a NaN or an inf."""
    a = np.asarray(leaf) if isinstance(leaf, np.generic) else as_array(leaf)  # no copy
    return a is not None and a.dtype.kind in "fc" and not bool(np.isfinite(a).all())


def _blank(leaf: Any) -> bool:
    """Whether one output is NaN or inf in every entry: it then says only that something
    overflowed or divided by zero somewhere, never which mistake."""
    a = np.asarray(leaf) if isinstance(leaf, np.generic) else as_array(leaf)
    return a is not None and a.size > 0 and a.dtype.kind in "fc" and not np.isfinite(a).any()


def finite(value: Any) -> bool:
    """Whether no part of an output holds a NaN or an inf (tokens and other non-numbers count as
    finite; a ragged list is looked at element by element)."""
    for leaf in _parts(value).values():
        if isinstance(leaf, list) and as_array(leaf) is None:
            if not all(finite(x) for x in leaf):
                return False
        elif _nonfinite(leaf):
            return False
    return True


Mistake = str | tuple[str, ...]
"""A catalog id, or the ids of mistakes found together in one function."""


def split(mistake: Mistake) -> list[str]:
    """The catalog ids behind a diagnosis."""
    return list(mistake) if isinstance(mistake, tuple) else [mistake]


@dataclass(frozen=True)
class Explanation:
    misconception: Mistake
    extra_wrong: int
    """Outputs the mutant gets wrong that the student got right (0 = exact fit)."""
    order: int
    """The mutant's position in the question's list (root causes first)."""
    blank: bool = False
    """Matched only on outputs NaN or inf everywhere, by a mutant not marked NONFINITE there:
    evidence only when the student's code gives finite outputs elsewhere (grader/engine/code.py)."""


def _is_container(value: Any) -> bool:
    if isinstance(value, dict):
        return True
    return isinstance(value, tuple) and not all(isinstance(v, (int, str)) for v in value)


def _parts(value: Any, prefix: tuple = ()) -> dict[tuple, Any]:
    """Leaves of a nested output (tuple elements, dict entries), keyed by their path."""
    if not _is_container(value):
        return {prefix: value}
    items = value.items() if isinstance(value, dict) else enumerate(value)
    out: dict[tuple, Any] = {}
    for key, v in items:
        out.update(_parts(v, (*prefix, key)))
    return out


def _student_parts(got: Any, want_parts: dict[tuple, Any]) -> dict[tuple, Any]:
    """The student's output at the same paths (a path that does not exist is left out)."""
    out = {}
    for path in want_parts:
        node, ok = got, True
        for key in path:
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, (tuple, list)) and isinstance(key, int) and key < len(node):
                node = node[key]
            else:
                ok = False
                break
        if ok:
            out[path] = node
    return out


def explain(
    got: Any,
    want: Any,
    args: tuple,
    kwargs: Mapping[str, Any],
    mutants: Mapping[Mistake, Callable[..., Any]],
    tol: Tolerance,
    *,
    exact: bool = False,
    among: Container[Mistake] | None = None,
    copied: bool = False,
) -> list[Explanation]:
    """The mutants that explain `got` on this case, best first (empty when none does); with
    `among`, only those mutants are run, each keeping its place in `mutants` as its order. Each
    mutant runs on fresh copies of the arguments; `copied`: the mutants make them themselves
    (grader.engine.trusted.trusted_mutants), so none are made here."""
    want_parts = _parts(want)
    got_parts = _student_parts(got, want_parts)
    wrong = {
        k
        for k in want_parts
        if k not in got_parts or not matches(got_parts[k], want_parts[k], tol, exact=exact)
    }
    if not wrong:
        return []
    # Outputs NaN or inf everywhere match any mutant that is NaN everywhere too (any NaN spreads
    # through a forward pass): such a match is marked, and the engine weighs it (Explanation).
    blank = all(k in got_parts and _blank(got_parts[k]) for k in wrong)
    found: list[tuple[int, int, Explanation]] = []
    for order, (mid, mutant) in enumerate(mutants.items()):
        if among is not None and mid not in among:
            continue
        try:
            with np.errstate(
                all="ignore"
            ):  # mutants such as an unstable softmax overflow on purpose
                predicted = _call(mutant, args, kwargs, copied)
        except (
            NOT_APPLICABLE
        ):  # this mistake does not apply to these inputs; anything else is our bug
            continue
        best = None
        for option in predicted.options if isinstance(predicted, AnyOf) else (predicted,):
            mparts = _parts(option)
            if set(mparts) != set(want_parts):
                continue
            if any(
                k not in got_parts or not _matches(got_parts[k], mparts[k], tol, exact)
                for k in wrong
            ):
                continue
            extra = sum(
                1
                for k in want_parts
                if k not in wrong and not _matches(want_parts[k], mparts[k], tol, exact)
            )
            weak = blank and not all(isinstance(mparts[k], NonFinite) for k in wrong)
            best = (extra, weak) if best is None else min(best, (extra, weak))
        if best is None:
            continue
        extra, weak = best
        found.append((extra, order, Explanation(mid, extra, order, blank=weak)))
    found.sort(key=lambda t: (t[0], t[1]))
    return [e for _, _, e in found]


def shows(
    mutant: Callable[..., Any],
    want: Any,
    args: tuple,
    kwargs: Mapping[str, Any],
    tol: Tolerance,
    *,
    exact: bool = False,
    unlike: tuple[Any, Tolerance] | None = None,
    copied: bool = False,
) -> bool:
    """Whether a mistake shows on a case: every form of the mutant's output differs from the
    right one. A student who got such a case right does not have that mistake.

    Given `unlike` = (a student's wrong output, a tolerance), whether the mistake shows there as
    something other than that output: every form differs from it at that tolerance, whether the
    form is the right output (the mistake shows nothing where the student's code went wrong) or
    another wrong one (a case where their code raised has no output: it speaks against the
    mistake only where the mistake shows). A mistake is named only when it reproduces what the student's code did on
    the failing cases (issue 33): a failed case with a value it does not reproduce even loosely
    speaks against it, as a case the student got right where it shows does (a flipped flag is
    not "missing biases" on the models that have none: there the student adds them).
    `copied`: as for `explain`."""
    try:
        with np.errstate(all="ignore"):
            predicted = _call(mutant, args, kwargs, copied)
    except NOT_APPLICABLE:
        return False
    forms = predicted.options if isinstance(predicted, AnyOf) else (predicted,)
    if unlike is not None and unlike[0] is not None:  # None: their code raised, no value
        return _differs(forms, unlike[0], unlike[1], exact)
    return _differs(forms, want, tol, exact)


def _call(mutant: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any], copied: bool) -> Any:
    """The mutant on the case's arguments: fresh copies of them, unless it makes its own."""
    return mutant(*args, **kwargs) if copied else mutant(*_fresh(args), **_fresh(kwargs))


def _differs(forms: tuple[Any, ...], than: Any, tol: Tolerance, exact: bool) -> bool:
    """Every form differs from `than` in some part."""
    than_parts = _parts(than)
    for option in forms:
        mparts = _parts(option)
        if set(mparts) == set(than_parts) and all(
            _matches(than_parts[k], mparts[k], tol, exact) for k in than_parts
        ):
            return False
    return True


def verdict(per_case: list[list[Explanation]], n_failed: int) -> list[Mistake]:
    """The misconception named for a question: the one explaining the most failed cases.

    It must explain at least half of the failed cases; one it explains only where the outputs
    are NaN or inf everywhere (blank matches: any NaN spreads, so NaN everywhere says only that
    something overflowed somewhere) must explain all of them (a student's log of a zero count:
    NaN on every case with a zero, right on the others), not leave a finite wrong case
    unexplained. Ties go to the closer fit, then to the question's order (root causes first).
    """
    if n_failed == 0:
        return []
    tally: dict[Mistake, list[int]] = {}  # id -> [cases explained, total extra_wrong, order]
    solid: set[Mistake] = set()  # explained somewhere by more than a blank match
    for explanations in per_case:
        for e in explanations:
            t = tally.setdefault(e.misconception, [0, 0, e.order])
            t[0] += 1
            t[1] += e.extra_wrong
            if not e.blank:
                solid.add(e.misconception)
    tally = {m: t for m, t in tally.items() if m in solid or t[0] >= n_failed}
    if not tally:
        return []
    mid, (count, _, _) = min(tally.items(), key=lambda kv: (-kv[1][0], kv[1][1], kv[1][2]))
    return [mid] if count * 2 >= n_failed else []
