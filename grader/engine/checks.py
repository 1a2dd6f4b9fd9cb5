"""Comparing a student's output with the expected one: structure, shape, finiteness, values.

The tolerance policy (README, "How a grade is decided"): arrays and scalars pass when
|got - want| <= atol + rtol * |want| everywhere, with rtol = 1e-4 and atol = 1e-6 by
default, which accepts float32 work; integers, booleans, strings and shapes must match
exactly. Shapes must match exactly too: `(n,)` is not `(n, 1)`.

Each mismatch says where (which output), why (its `reason`, a fixed vocabulary) and, in its
message, everything: sizes, positions, error sizes. A hidden case shows only the reason and
where (grader/records.py); the message is a visible case's and the instructor's.

The work done is bounded by the expected output's size: a returned list or array whose shape
cannot be the expected one is rejected before anything is converted or copied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np

from grader.questions import Tolerance


@dataclass(frozen=True)
class Mismatch:
    """One way the output differs, with where (a tuple element or dict key) and why."""

    where: str
    """ "" for the whole output, "grad_U", "[1]", "['W_h']"."""
    reason: str
    """ "structure" | "type" | "shape" | "nonfinite" | "values" | "exact"."""
    message: str
    """In full: for a visible case and for instructors."""


def _label(where: str) -> str:
    return f"`{where}`: " if where else ""


def as_array(value: Any) -> np.ndarray | None:
    """A returned array in any accepted form (ndarray, list, number) as an ndarray, or None."""
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, bool):
        return np.asarray(value)
    if isinstance(value, (int, float, list, tuple)):
        try:
            a = np.asarray(value)
        except (ValueError, TypeError):
            return None
        return a if a.dtype.kind in "biuf" else None
    return None


def compare(
    got: Any,
    want: Any,
    tol: Tolerance = Tolerance(),
    *,
    exact: bool = False,
    names: tuple[str, ...] = (),
    where: str = "",
) -> list[Mismatch]:
    """Every mismatch between `got` and `want` (empty when they match)."""
    n = _cheap_size(got)  # (an expected array has its own shape check, as cheap)
    if not isinstance(want, np.ndarray) and n > MAX_EXTRA_VALUES:
        m = _leaves(want)
        if n > OVERSIZE * m:
            return [
                Mismatch(
                    where,
                    "structure",
                    f"{_label(where)}returned {n} values where {m} were expected",
                )
            ]
    if isinstance(want, dict):
        return _compare_dict(got, want, tol, exact, where)
    if isinstance(want, tuple) and not _is_plain_sequence(want):
        return _compare_tuple(got, want, tol, exact, names, where)
    if isinstance(want, np.ndarray):
        return _compare_array(got, want, tol, exact, where)
    if isinstance(want, bool):
        if isinstance(got, (bool, np.bool_)) or (
            isinstance(got, np.ndarray) and got.shape == () and got.dtype == bool
        ):
            if bool(got) == want:
                return []
            return [Mismatch(where, "exact", f"{_label(where)}expected `{want}`")]
        return [Mismatch(where, "type", f"{_label(where)}expected True or False, got {_kind(got)}")]
    if isinstance(want, (int, float)):
        return _compare_scalar(got, want, tol, exact, where)
    if isinstance(want, (list, tuple, str)) or want is None:
        return _compare_exact(got, want, where)
    raise TypeError(f"cannot compare with a {type(want).__name__}")


def matches(got: Any, want: Any, tol: Tolerance = Tolerance(), *, exact: bool = False) -> bool:
    """Whether `compare(got, want, tol, exact=exact)` finds nothing: the diagnosis asks this of
    every mutant's output, and most differ. An array of floats against an expected one of its
    shape is decided by `_values_match` alone, without writing what differs."""
    if (
        isinstance(got, np.ndarray)
        and isinstance(want, np.ndarray)
        and got.shape == want.shape
        and got.dtype.kind == "f"
        and want.dtype.kind == "f"
        and not exact
    ):
        return _values_match(_float64(got), _float64(want), tol, exact)
    return not compare(got, want, tol, exact=exact)


def _float64(a: np.ndarray) -> np.ndarray:
    """The array as float64, copied only when it is not already (nothing here writes into it)."""
    return a.astype(np.float64, copy=False)


OVERSIZE = 8  # an output this many times larger than the expected one is not looked at
MAX_EXTRA_VALUES = 10_000  # ... once it holds more values than this
PREVIEW_ENTRIES = 6  # numbers a preview of one array shows
PART_ENTRIES = 3  # numbers shown of each part of a tuple or dict
PARTS_SHOWN = 6  # parts of a tuple or dict shown
KEY_CHARS = 40  # characters of a dict key shown
UNCONVERTED_LIST = 10_000  # a list with more values is shown as text, not converted


def _cheap_size(x: Any) -> int:
    """How many values an output holds, read without converting it (a list: its length)."""
    if isinstance(x, np.ndarray):
        return int(x.size)
    if isinstance(x, (list, tuple, dict, str, bytes)):
        return len(x)
    return 1


def _leaves(want: Any) -> int:
    """How many values the expected output holds (it is the reference's: small)."""
    if isinstance(want, np.ndarray):
        return int(want.size)
    if isinstance(want, dict):
        return sum(_leaves(v) for v in want.values()) + len(want)
    if isinstance(want, (list, tuple)):
        return sum(_leaves(v) for v in want) + 1
    if isinstance(want, str):
        return len(want) + 1
    return 1


def _kind(x: Any) -> str:
    if isinstance(x, np.ndarray):
        return f"an array of shape {tuple(x.shape)}"
    if x is None:
        return "None"
    return f"a {type(x).__name__}"


def _is_plain_sequence(want: tuple) -> bool:
    """A tuple of plain values (a shape, a BPE pair) is compared exactly, not element by element."""
    return all(isinstance(v, (int, str)) and not isinstance(v, bool) for v in want)


def _compare_dict(got: Any, want: dict, tol: Tolerance, exact: bool, where: str) -> list[Mismatch]:
    if not isinstance(got, dict):
        return [
            Mismatch(
                where,
                "structure",
                f"{_label(where)}expected a dict with keys "
                f"{', '.join(map(repr, want))}, got {_kind(got)}",
            )
        ]
    missing = [k for k in want if k not in got]
    out: list[Mismatch] = []
    if missing:
        out.append(
            Mismatch(
                where, "structure", f"{_label(where)}missing keys: {', '.join(map(repr, missing))}"
            )
        )
    for k, w in want.items():
        if k in got:
            out += compare(
                got[k],
                w,
                tol,
                exact=exact,
                where=f"{where}[{k!r}]" if where else repr(k),
            )
    return out


def _compare_tuple(
    got: Any,
    want: tuple,
    tol: Tolerance,
    exact: bool,
    names: tuple[str, ...],
    where: str,
) -> list[Mismatch]:
    if not isinstance(got, (tuple, list)) or len(got) != len(want):
        desc = f"a tuple of {len(want)} values" + (f" ({', '.join(names)})" if names else "")
        got_desc = f"{len(got)} values" if isinstance(got, (tuple, list)) else _kind(got)
        return [Mismatch(where, "structure", f"{_label(where)}expected {desc}, got {got_desc}")]
    out: list[Mismatch] = []
    for i, (g, w) in enumerate(zip(got, want)):
        label = names[i] if i < len(names) else f"[{i}]"
        out += compare(
            g,
            w,
            tol,
            exact=exact,
            where=f"{where}{label}" if not where else f"{where}.{label}",
        )
    return out


def _compare_scalar(
    got: Any, want: float, tol: Tolerance, exact: bool, where: str
) -> list[Mismatch]:
    if isinstance(got, np.ndarray) and got.shape == ():
        got = got.item()
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        shape_note = f" of shape {tuple(got.shape)}" if isinstance(got, np.ndarray) else ""
        return [
            Mismatch(
                where,
                "type",
                f"{_label(where)}expected a single number, got {_kind(got)}{shape_note}"
                if not shape_note
                else f"{_label(where)}expected a single number, got an array{shape_note}",
            )
        ]
    try:
        value = float(got)
    except OverflowError:  # an int beyond float range: not any expected value
        return [
            Mismatch(
                where,
                "values",
                f"{_label(where)}value differs (got an integer of "
                f"{len(str(abs(got))) if abs(got) < 10**4000 else 'thousands of'} digits)",
            )
        ]
    return _values(np.asarray(value), np.asarray(float(want)), tol, exact, where)


def list_shape(value: Any, limit: int = 32) -> tuple[int, ...]:
    """The shape of a nested list read along its first elements (cheap; ragged lists not checked)."""
    shape: list[int] = []
    node = value
    while isinstance(node, (list, tuple)) and len(shape) < limit:
        shape.append(len(node))
        if not node:
            break
        node = node[0]
    return tuple(shape)


def _fits(value: Any, shape: tuple[int, ...]) -> bool:
    """Whether a nested list has exactly `shape`, checked in at most prod(shape) steps."""
    if not shape:
        return not isinstance(value, (list, tuple))
    if not isinstance(value, (list, tuple)) or len(value) != shape[0]:
        return False
    if len(shape) == 1:
        return not any(isinstance(v, (list, tuple)) for v in value)
    return all(_fits(v, shape[1:]) for v in value)


def _array_of_shape(
    got: Any, want: np.ndarray, where: str
) -> tuple[np.ndarray | None, list[Mismatch]]:
    """`got` as an array when its shape is the expected one; the mismatch otherwise.

    Nothing larger than the expected output is converted: an ndarray's shape is read as is, a
    list's along its first elements, before any copy.
    """
    if isinstance(got, np.ndarray):
        shape = tuple(got.shape)
    elif isinstance(got, (list, tuple)) and not isinstance(got, bool):
        shape = list_shape(got)
        if shape == want.shape and not _fits(got, want.shape):
            return None, [
                Mismatch(
                    where,
                    "type",
                    f"{_label(where)}expected an array of shape "
                    f"{tuple(want.shape)}, got a ragged list",
                )
            ]
    elif isinstance(got, (bool, int, float)):
        shape = ()
    else:
        shape = None
    if shape is not None and shape != want.shape:
        return None, [
            Mismatch(
                where, "shape", f"{_label(where)}expected shape {tuple(want.shape)}, got {shape}"
            )
        ]
    g = as_array(got)
    if g is None:
        return None, [
            Mismatch(
                where,
                "type",
                f"{_label(where)}expected an array of shape {tuple(want.shape)}, got {_kind(got)}",
            )
        ]
    return g, []


def _compare_array(
    got: Any, want: np.ndarray, tol: Tolerance, exact: bool, where: str
) -> list[Mismatch]:
    g, problem = _array_of_shape(got, want, where)
    if g is None:
        return problem
    if want.dtype == bool or want.dtype.kind in "iu" or exact:
        if g.dtype.kind == "f" and not np.all(np.isfinite(g)):
            return [Mismatch(where, "nonfinite", f"{_label(where)}contains NaN or inf")]
        if not np.array_equal(g.astype(np.float64), want.astype(np.float64)):
            n = int(np.sum(g.astype(np.float64) != want.astype(np.float64)))
            return [
                Mismatch(
                    where,
                    "exact",
                    f"{_label(where)}{n} of {want.size} entries differ (exact match expected)",
                )
            ]
        if want.dtype == bool and g.dtype != bool:
            return [_not_boolean(g, where)]
        return []
    return _values(_float64(g), _float64(want), tol, exact, where)


def _not_boolean(g: np.ndarray, where: str) -> Mismatch:
    """A mask with the right entries as numbers: the handouts' masks are boolean, and code that
    combines masks with `~`, `&` or indexing reads 0/1 numbers differently (`~1` is -2)."""
    return Mismatch(
        where,
        "type",
        f"{_label(where)}the right entries as {g.dtype} 0s and 1s: a mask must be boolean "
        "(`dtype=bool`, True and False)",
    )


def _same_nonfinite(g: np.ndarray, w: np.ndarray) -> bool:
    """Non-finite values match only non-finite values of the same kind at the same place
    (a mutant such as an unstable softmax produces NaN on purpose)."""
    g_bad, w_bad = ~np.isfinite(g), ~np.isfinite(w)
    return np.array_equal(g_bad, w_bad) and np.array_equal(
        np.nan_to_num(g[g_bad], nan=0.0), np.nan_to_num(w[w_bad], nan=0.0)
    )


def _nonfinite_mismatch(g: np.ndarray, w: np.ndarray, where: str) -> Mismatch | None:
    """What differs in the non-finite values (`_same_nonfinite`); None when nothing does."""
    if _same_nonfinite(g, w):
        return None
    n = int(np.sum(~np.isfinite(g) & np.isfinite(w)))
    if n:
        return Mismatch(
            where,
            "nonfinite",
            f"{_label(where)}{n} entr{'y is' if n == 1 else 'ies are'} NaN or inf",
        )
    return Mismatch(where, "values", f"{_label(where)}values differ")


def _values_match(g: np.ndarray, w: np.ndarray, tol: Tolerance, exact: bool) -> bool:
    """The decision `_values` explains: the same non-finite entries at the same places, and the
    finite ones equal (`exact`) or within the tolerance."""
    if not (np.isfinite(g).all() and np.isfinite(w).all()):  # methods: no dispatch per call
        if not _same_nonfinite(g, w):
            return False
        keep = np.isfinite(g)
        g, w = g[keep], w[keep]
    if exact:
        return np.array_equal(g, w)
    return bool((np.abs(g - w) <= tol.atol + tol.rtol * np.abs(w)).all())


def _values(
    g: np.ndarray, w: np.ndarray, tol: Tolerance, exact: bool, where: str
) -> list[Mismatch]:
    if _values_match(g, w, tol, exact):
        return []
    if not (np.isfinite(g).all() and np.isfinite(w).all()):
        bad = _nonfinite_mismatch(g, w, where)
        if bad is not None:
            return [bad]
        keep = np.isfinite(g)
        g, w = g[keep], w[keep]
    if g.ndim == 0 or g.size == 1:
        return [
            Mismatch(
                where, "values", f"{_label(where)}value differs (got {_fmt(g.reshape(-1)[0])})"
            )
        ]
    err = np.abs(g - w)
    worst = int(np.argmax(err)) if err.size else 0
    idx = np.unravel_index(worst, g.shape) if g.ndim else ()
    n_bad = int(np.sum(err > tol.atol + tol.rtol * np.abs(w)))
    return [
        Mismatch(
            where,
            "values",
            f"{_label(where)}{n_bad} of {g.size} entries differ "
            f"(largest error {_fmt(err.reshape(-1)[worst])} at index {tuple(int(i) for i in idx)})",
        )
    ]


def _compare_exact(got: Any, want: Any, where: str) -> list[Mismatch]:
    sized = isinstance(got, (list, tuple)) or (isinstance(got, np.ndarray) and got.ndim > 0)
    longer = (
        sized and isinstance(want, (list, tuple)) and len(got) > len(want)
    )  # differs: no conversion needed
    if not longer and _plain(got) == _plain(want):
        return []
    return [Mismatch(where, "exact", f"{_label(where)}differs (got {_short(got)})")]


def _plain(x: Any) -> Any:
    """Lists and tuples compare alike; numpy scalars and 0-d arrays as Python values."""
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return _plain(x.tolist())
    if isinstance(x, np.generic):
        return x.item()
    return x


def _fmt(x: float) -> str:
    """A number as feedback shows it: four significant digits, a whole number below 10^15 in
    full (a parameter count of 7,086,336 is not 7.086e+06, which hides a difference of 1,536)."""
    value = float(x)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def _short(x: Any, limit: int = 120) -> str:
    try:  # a repr's item i starts at character 1 + 3i or later ("[a, b"): the rest never shows
        text = repr(_head(x, limit // 3 + 1))
    except ValueError:  # an int too long to print (Python's 4300-digit limit)
        return "a number too long to show"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _head(x: Any, n: int) -> Any:
    """At most the first `n` items at every level, as plain Python values (lists for tuples and
    arrays, numbers for numpy scalars, a dict's first `n` entries): the same first `n`
    characters of repr, bounded work (a dict of large arrays is never printed whole)."""
    if isinstance(x, dict):
        return {k: _head(v, n) for k, v in islice(x.items(), n)}
    if isinstance(x, (list, tuple)):
        return [_head(v, n) for v in x[:n]]
    if isinstance(x, np.ndarray):
        return [_head(v, n) for v in x[:n]] if x.ndim else x.item()
    if isinstance(x, np.generic):
        return x.item()
    return x


def preview(value: Any, limit: int = PREVIEW_ENTRIES) -> str:
    """What came back, briefly: a shape and a few numbers (for a visible case and instructors)."""
    if isinstance(value, dict):
        items = islice(value.items(), PARTS_SHOWN)
        return (
            "{"
            + ", ".join(f"{_short(k, KEY_CHARS)}: {preview(v, PART_ENTRIES)}" for k, v in items)
            + "}"
        )
    if isinstance(value, tuple):
        return "(" + ", ".join(preview(v, PART_ENTRIES) for v in value[:PARTS_SHOWN]) + ")"
    shape = list_shape(value) if isinstance(value, list) else ()
    if len(shape) > 0 and _size(shape) > UNCONVERTED_LIST:
        return f"a list of shape {shape}: {_short(value)}"  # not converted: too large
    a = as_array(value) if not isinstance(value, np.ndarray) else value
    if a is None or a.dtype.kind not in "biuf":
        return _short(value)
    if a.ndim == 0:
        return _fmt(a.item()) if a.dtype.kind == "f" else str(a.item())
    flat = a.reshape(-1)[:limit]
    nums = ", ".join(_fmt(v) if a.dtype.kind == "f" else str(v) for v in flat.tolist())
    more = ", …" if a.size > limit else ""
    return f"shape {tuple(a.shape)}: [{nums}{more}]"


def _size(shape: tuple[int, ...]) -> int:
    return math.prod(shape)
