"""Are two expressions the same function? Usually decided without sympy.

The fast path never imports sympy: both texts are read into checked trees
(`grader.written.expr.parser.read`), and the trees are evaluated with mpmath at 30 digits at 24
random points (16 with every symbol in [0.5, 2], 8 with random signs, |value| in
[0.5, 2]; points where the EXPECTED side is undefined are redrawn, up to 80 tries, and at
least 12 valid points are required; see grader.written.expr.numeric). Equal at every valid point
(relative 1e-9) is "equivalent", one disagreement is "different"; the method is "numeric".

Only when that cannot decide (too few valid points) does the old sympy path run
(grader.written.expr.symbolic, imported then): sympy's automatic simplification, the same
numeric test on sympy expressions, and cheap symbolic steps that label a proof
"symbolic".

Declared relations between symbols travel with the declared names as "h = tanh(z)": both
sides are then compared with every related symbol replaced by its definition, so `1 - h^2` and
`1 - tanh(z)^2` are the same answer where the question declares h = tanh(z)
(grader.written.expr.relations).

Call this inside the checker's worker process (grader.written.expr.checker), which enforces a hard
wall-clock limit; the guards here only keep the common case fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from grader.written.expr.canonical import canonical
from grader.written.expr.errors import ExprError
from grader.written.expr.memo import Memo
from grader.written.expr.nodes import Sym, postorder
from grader.written.expr.numeric import compile_tree, numbers_close
from grader.written.expr.numeric import numerically_equal as numerically_equal_trees
from grader.written.expr.parser import Parsed, read, read_pair
from grader.written.expr.relations import declarations, related
from grader.written.expr.verdict import Verdict

__all__ = [
    "declarations",
    "equivalent",
    "fast_equivalent",
    "numbers_close",
    "numerically_equal_trees",
]

# the sympy path's functions (on sympy expressions), loaded on first use, under their
# old names: `from grader.written.expr.equivalence import symbolically_zero` imports sympy
_SYMBOLIC = (
    "compare",
    "numerically_equal",
    "readable_canonical",
    "symbolically_zero",
    "time_budget",
)


def __getattr__(name: str) -> Any:
    if name in _SYMBOLIC:
        from grader.written.expr import symbolic

        return getattr(symbolic, name)
    raise AttributeError(f"module 'grader.written.expr.equivalence' has no attribute {name!r}")


def fast_equivalent(
    answer: str,
    expected: str,
    symbols: Sequence[str] | None = None,
    memo: Memo | None = None,
) -> Verdict | None:
    """The verdict without sympy, or None when the numeric check cannot decide.

    Raises ValueError when `expected` does not parse (the grader's mistake).
    Undecided: the expected side undefined at too many sample points, or a constant part
    of either side that mpmath finds undefined or out of range.
    """
    pair = read_pair(answer, expected, symbols, partial(read, memo=memo))
    if isinstance(pair, str):
        return Verdict(False, pair, None, None)
    got, want = pair
    order = sorted(_names_in(want, got))
    try:
        want_program = compile_tree(want.tree, order)
        got_program = compile_tree(got.tree, order)
    except ExprError:
        # a constant part mpmath cannot evaluate (log(0), cosh(10^9)): sympy decides
        # whether it is undefined (an error for the student) or just large
        return None
    numeric = numerically_equal_trees(got_program, want_program, len(order), memo)
    if numeric is None:
        return None
    return Verdict(numeric, None, got.shown, "numeric", canonical(got.tree), got.note)


def _names_in(*parsed: Parsed) -> set[str]:
    """The symbols the trees use (the declared but unused ones draw no sample values)."""
    return {n.name for p in parsed for n in postorder(p.tree) if isinstance(n, Sym)}


def equivalent(
    answer: str,
    expected: str,
    symbols: Sequence[str] | None = None,
    memo: Memo | None = None,
) -> Verdict:
    """Is the student's `answer` the same function as the trusted `expected`?

    `symbols`: the declared names, and relations among them as "h = tanh(z)"; None means the
    free symbols of `expected` (read with every name allowed). Parse errors in the answer come
    back as `Verdict.error`. `memo`: what earlier checks of this submission read and computed
    (grader.written.expr.memo).
    """
    names, relations = declarations(symbols)
    if relations:
        assert names is not None
        return related(
            answer, expected, names, relations, lambda a, e, n: equivalent(a, e, n, memo), memo
        )
    verdict = fast_equivalent(answer, expected, symbols, memo)
    if verdict is not None:
        return verdict
    from grader.written.expr.symbolic import equivalent as sympy_equivalent

    return sympy_equivalent(answer, expected, symbols)
