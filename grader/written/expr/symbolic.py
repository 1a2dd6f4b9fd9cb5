"""The sympy path: proven by sympy, or agreeing at many random points of sympy expressions.

grader.written.expr.equivalence answers most checks without sympy (grader.written.expr.numeric); this
module is its fallback when the numeric check on the trees cannot decide (the expected
side undefined at most points), and the reference it is tested against. Importing it
imports sympy (0.4-0.7 s). The check runs in three steps, cheapest first:

1. sympy's automatic simplification already makes the difference 0;
2. the numeric test: both sides evaluated with 30 significant digits at 24 random points
   (16 with every symbol in [0.5, 2], 8 with random signs, |value| in [0.5, 2]); points
   where the EXPECTED side is undefined (nan, ±∞) are replaced, up to 80 tries, and at
   least 12 valid points are required. One disagreement (relative 1e-9) settles "different".
3. when the numbers agree, cheap symbolic steps (expand, cancel, rewriting tanh/sigmoid/
   cosh into exp) try to prove it, within a time budget, to label the verdict "symbolic".

Call this inside the checker's worker process (grader.written.expr.checker), which enforces a hard
wall-clock limit; the budgets here only keep the common case fast.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator, Sequence

import mpmath
import sympy

from grader.written.expr.numeric import DIGITS, agree_at_points
from grader.written.expr.parser import Parsed, interpret, read_pair
from grader.written.expr.relations import declarations, related
from grader.written.expr.verdict import Verdict

SYMBOLIC_BUDGET = 0.5  # seconds for the labelling step
SYMBOLIC_MAX_OPS = 150  # larger differences skip the symbolic step


class _OutOfTime(Exception):
    pass


@contextlib.contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise _OutOfTime after `seconds` (main thread on POSIX only; elsewhere no limit)."""
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def _alarm(signum: int, frame: object) -> None:
        raise _OutOfTime

    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _value(expr: sympy.Expr, point: dict[sympy.Symbol, sympy.Float]) -> mpmath.mpc | None:
    """The value at a point with DIGITS digits, or None where it is undefined."""
    try:
        v = expr.evalf(DIGITS, subs=point)
        if not v.is_number or v.has(sympy.nan, sympy.zoo, sympy.oo, -sympy.oo):
            return None
        re_part, im_part = v.as_real_imag()
        with mpmath.workdps(DIGITS):
            z = mpmath.mpc(sympy.Float(re_part, DIGITS)._mpf_, sympy.Float(im_part, DIGITS)._mpf_)
    except (TypeError, ValueError, ArithmeticError, AttributeError):
        return None
    if mpmath.isnan(z) or mpmath.isinf(z):
        return None
    return z


def numerically_equal(answer: sympy.Expr, expected: sympy.Expr) -> bool | None:
    """True/False from random points; None when too few points are valid to decide."""
    symbols = sorted(answer.free_symbols | expected.free_symbols, key=lambda s: s.name)

    def at(expr: sympy.Expr):
        return lambda raw: _value(expr, {s: sympy.Float(x, DIGITS) for s, x in zip(symbols, raw)})

    return agree_at_points(at(expected), at(answer), len(symbols))


def _rewrite_exp(e: sympy.Expr) -> sympy.Expr:
    return e.rewrite(sympy.exp)


def symbolically_zero(diff: sympy.Expr, budget: float = SYMBOLIC_BUDGET) -> bool:
    """Cheap proof that `diff` is identically 0; False when unproven (not a disproof)."""
    if diff == 0:
        return True
    if sympy.count_ops(diff) > SYMBOLIC_MAX_OPS:
        return False
    steps = (
        sympy.expand,
        lambda e: sympy.cancel(sympy.together(e)),
        lambda e: sympy.cancel(sympy.expand(_rewrite_exp(e))),
        lambda e: sympy.simplify(_rewrite_exp(e)),
    )
    try:
        with time_budget(budget):
            for step in steps:
                if step(diff) == 0:
                    return True
    except (_OutOfTime, RecursionError, TypeError, ValueError, ArithmeticError):
        return False
    return False


def compare(answer: Parsed, expected: sympy.Expr) -> Verdict:
    """The verdict for a parsed answer against a parsed expected expression."""
    a = answer.expr
    if a - expected == 0:  # sympy's automatic evaluation already agrees
        return Verdict(True, None, answer.shown, "symbolic", readable_canonical(a), answer.note)
    numeric = numerically_equal(a, expected)
    if numeric is None:
        return Verdict(False, "could not check this answer: the expected expression is undefined "
                       "at most sample points (tell your instructor)", answer.shown, None,
                       readable_canonical(a), answer.note)  # fmt: skip
    if not numeric:
        return Verdict(False, None, answer.shown, "numeric", readable_canonical(a), answer.note)
    method = "symbolic" if symbolically_zero(a - expected) else "numeric"
    return Verdict(True, None, answer.shown, method, readable_canonical(a), answer.note)


def readable_canonical(expr: sympy.Expr) -> str:
    """sympy's own form of the answer, `^` for powers: the same text for the same input."""
    return str(expr).replace("**", "^")


def equivalent(
    answer: str,
    expected: str,
    symbols: Sequence[str] | None = None,
) -> Verdict:
    """Is the student's `answer` the same function as the trusted `expected`?

    `symbols`: the declared names; None means the free symbols of `expected` (read with
    every name allowed). Parse errors in the answer come back as `Verdict.error`.
    Relations among the symbols ("h = tanh(z)") are used as in the fast path.
    """
    names, relations = declarations(symbols)
    if relations:
        assert names is not None
        return related(answer, expected, names, relations, equivalent)
    pair = read_pair(answer, expected, symbols, interpret)
    if isinstance(pair, str):
        return Verdict(False, pair, None, None)
    got, want = pair
    return compare(got, want.expr)
