"""Running the trusted side: the reference and the mutants on a case, with plain outputs."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from grader.mutants import AnyOf
from grader.questions import Case, Rng, TableLM


def _inside(value: Any, f: Callable[[Any], Any]) -> Any:
    """`f` applied to each entry of a tuple, a list or a dict's values (other values as they are)."""
    if isinstance(value, tuple):
        return tuple(f(v) for v in value)
    if isinstance(value, list):
        return [f(v) for v in value]
    if isinstance(value, dict):
        return {k: f(v) for k, v in value.items()}
    return value


def materialize(value: Any) -> Any:
    """A case argument as the trusted reference sees it (special arguments built for real, every
    array a fresh copy, so that a function writing into its inputs spoils no other run)."""
    if isinstance(value, Rng):
        return np.random.default_rng(value.seed)
    if isinstance(value, TableLM):
        return value  # immutable, and callable as next_log_probs(prefix)
    if isinstance(value, np.ndarray):
        return value.copy()
    return _inside(value, materialize)


def plain(value: Any) -> Any:
    """A trusted output as plain data: torch tensors to numpy, numpy scalars to Python."""
    if isinstance(value, AnyOf):
        return AnyOf(*(plain(o) for o in value.options))
    if isinstance(value, np.generic):
        return value.item()
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        return value.detach().cpu().numpy().copy()
    return _inside(value, plain)


def run_trusted(fn: Callable[..., Any], case: Case) -> Any:
    """The trusted function on a case (always NumPy, even where the student gets torch tensors)."""
    return plain(fn(*materialize(case.args), **materialize(dict(case.kwargs))))


def all_nan(value: Any) -> Any:
    """The same structure with every number NaN."""
    if isinstance(value, dict):
        return {k: all_nan(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(all_nan(v) for v in value)
    if isinstance(value, np.ndarray):
        return np.full(value.shape, np.nan)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float("nan")
    return value


def trusted_mutants(mutants: Mapping[Any, Callable[..., Any]]) -> dict[Any, Callable[..., Any]]:
    """Mutants called on freshly built arguments (new arrays, a new rng) with plain outputs."""

    def bind(f: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *a, **k: plain(f(*materialize(a), **materialize(k)))

    return {mid: bind(f) for mid, f in mutants.items()}
