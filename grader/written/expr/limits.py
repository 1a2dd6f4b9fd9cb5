"""The safety limits on an answer (length, nesting, size, exponents, digits) and the check
on the parsed tree that must pass before anything is evaluated."""

from __future__ import annotations

import math
from fractions import Fraction

from grader.written.expr.errors import UNDEFINED, ExprError
from grader.written.expr.nodes import BinOp, Neg, Node, Num, Op, Pow, postorder

MAX_LENGTH = 2000  # characters in one answer
MAX_DEPTH = 60  # nested brackets / calls / unary signs
MAX_NODES = 1000  # tree nodes after parsing
MAX_POWER_NESTING = 3  # a^b^c^d is the deepest tower accepted
MAX_DIGITS = 30  # digits in one number literal
MAX_NAME = 100  # letters in one run of names written together ("dd_ff")
MAX_SYMBOLIC_EXPONENT = 1000  # |n| in x^n
MAX_RESULT_DIGITS = 10_000  # digits of a constant power such as 10^100
MAX_FOLD_BITS = 35_000  # bits of a rational constant folded exactly (10^10000 has 33 220)


def _log10(value: Fraction) -> float:
    """log10 |value| for a nonzero Fraction of any size (math.log10 takes big ints)."""
    return math.log10(abs(value.numerator)) - math.log10(value.denominator)


def _guard_power_values(base: Fraction | None, exponent: Fraction | None) -> None:
    """Refuse x^n with |n| > MAX_SYMBOLIC_EXPONENT, and constant powers with too many digits."""
    if exponent is None or base in (0, 1, -1):
        return
    e = abs(exponent)
    if e > MAX_SYMBOLIC_EXPONENT:
        raise ExprError(f"an exponent is too large (the limit is {MAX_SYMBOLIC_EXPONENT})")
    if base is not None and float(e) * abs(_log10(base)) > MAX_RESULT_DIGITS:
        raise ExprError("a power in the answer is too large to compute")


def check_limits(tree: Node) -> dict[int, Fraction]:
    """The guards that must hold before anything is evaluated, on the tree itself.

    Rational constant subtrees are folded exactly (Fractions) to find exponents and
    divisors: `x^(10^12)` and `9^9^9` are refused (the exponent is too large), `10^20000`
    too (too many digits), `1/0` and `0^-1` are undefined. Returns the folded values by
    node id (the nodes stay alive in `tree`).
    """
    values: dict[int, Fraction] = {}
    for node in postorder(tree):
        if isinstance(node, Num):
            values[id(node)] = node.value
            continue
        _fold(node, values)
        folded = values.get(id(node))
        if (
            folded is not None
            and max(folded.numerator.bit_length(), folded.denominator.bit_length()) > MAX_FOLD_BITS
        ):
            raise ExprError("a number in the answer is too large to compute")
    return values


def _fold(node: Node, values: dict[int, Fraction]) -> None:
    """Guard one node and fold it when its operands are exact rational constants."""
    match node:
        case Neg(operand):
            v = values.get(id(operand))
            if v is not None:
                values[id(node)] = -v
        case Pow(base, exponent):
            a, b = values.get(id(base)), values.get(id(exponent))
            _guard_power_values(a, b)
            if a is not None and b is not None:
                if a == 0 and b < 0:
                    raise ExprError(UNDEFINED)
                if b.denominator == 1:
                    values[id(node)] = a ** int(b)
                elif a in (0, 1):
                    values[id(node)] = a
        case BinOp(op, left, right):
            a, b = values.get(id(left)), values.get(id(right))
            if op is Op.DIV and b == 0:
                raise ExprError(UNDEFINED)
            if a is None or b is None:
                return
            if op is Op.ADD:
                values[id(node)] = a + b
            elif op is Op.SUB:
                values[id(node)] = a - b
            elif op is Op.DIV:
                values[id(node)] = a / b
            else:  # MUL, IMUL
                values[id(node)] = a * b
