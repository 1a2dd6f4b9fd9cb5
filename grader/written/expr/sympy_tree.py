"""A checked tree as a sympy expression, built node by node from a whitelist and walked
once more; sympy is imported only here, and only when called."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from grader.written.expr import nodes
from grader.written.expr.errors import UNDEFINED, ExprError
from grader.written.expr.limits import MAX_RESULT_DIGITS, MAX_SYMBOLIC_EXPONENT
from grader.written.expr.nodes import BinOp, Call, Const, Neg, Node, Num, Op, Pow, Sym

if TYPE_CHECKING:
    import sympy


def _guard_power(base: sympy.Expr, exponent: sympy.Expr) -> None:
    """Refuse powers whose value would be astronomically large, before sympy computes them."""
    import sympy

    if not exponent.is_Number or base in (sympy.S.Zero, sympy.S.One, sympy.S.NegativeOne):
        return
    e = abs(float(exponent)) if exponent.is_finite else math.inf
    if e > MAX_SYMBOLIC_EXPONENT:
        raise ExprError(f"an exponent is too large (the limit is {MAX_SYMBOLIC_EXPONENT})")
    if (
        base.is_Number
        and base.is_finite
        and e * abs(math.log10(abs(float(base)))) > MAX_RESULT_DIGITS
    ):
        raise ExprError("a power in the answer is too large to compute")


def _sympy_funcs() -> dict[str, Any]:
    import sympy

    return {
        "exp": sympy.exp, "log": sympy.log, "ln": sympy.log, "sqrt": sympy.sqrt,
        "tanh": sympy.tanh, "sinh": sympy.sinh, "cosh": sympy.cosh, "cos": sympy.cos,
        "sin": sympy.sin, "abs": sympy.Abs, "max": sympy.Max, "min": sympy.Min,
    }  # fmt: skip


def to_sympy(tree: Node, symbols: dict[str, sympy.Symbol]) -> sympy.Expr:
    """Build the sympy expression for a checked tree, from the whitelist only."""
    import sympy

    funcs = _sympy_funcs()

    def build(tree: Node) -> sympy.Expr:
        match tree:
            case Num(frac):
                return sympy.Rational(frac.numerator, frac.denominator)
            case Sym(name):
                return symbols[name]
            case Const(name):
                return sympy.E if name == "e" else sympy.pi
            case Neg(operand):
                return -build(operand)
            case Call(name, args):
                values = [build(a) for a in args]
                if name == "sigmoid":
                    return 1 / (1 + sympy.exp(-values[0]))
                if name == "log" and len(values) == 2:
                    return sympy.log(values[0]) / sympy.log(values[1])
                return funcs[name](*values)
            case BinOp(op) if op in nodes.SUMS:
                first, rest = nodes.spine(tree, nodes.SUMS)
                terms = [build(first)]
                for op, node in rest:
                    value = build(node)
                    terms.append(value if op is Op.ADD else -value)
                return sympy.Add(*terms)
            case BinOp():
                first, rest = nodes.spine(tree, nodes.PRODUCTS)
                factors = [build(first)]
                for op, node in rest:
                    value = build(node)
                    factors.append(1 / value if op is Op.DIV else value)
                return sympy.Mul(*factors)
            case Pow(base, exponent):
                left, right = build(base), build(exponent)
                _guard_power(left, right)
                if left == sympy.E:
                    return sympy.exp(right)
                return left**right
        raise AssertionError(f"unknown node {tree!r}")

    return build(tree)


def check_tree(expr: sympy.Expr, allowed: set[str] | frozenset[str]) -> None:
    """Walk a sympy tree: only whitelisted node types, only declared symbols, no infinities."""
    import sympy

    allowed_types = (
        sympy.Symbol, sympy.Rational, sympy.Float, sympy.Add, sympy.Mul, sympy.Pow, sympy.exp,
        sympy.log, sympy.tanh, sympy.sinh, sympy.cosh, sympy.sin, sympy.cos, sympy.Abs,
        sympy.Max, sympy.Min,
    )  # fmt: skip
    allowed_atoms = (
        sympy.core.numbers.Exp1, sympy.core.numbers.Pi, sympy.core.numbers.ImaginaryUnit,
    )  # fmt: skip
    for node in sympy.preorder_traversal(expr):
        if node in (sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            raise ExprError(UNDEFINED)
        if isinstance(node, allowed_atoms):
            continue
        if not isinstance(node, allowed_types):
            raise ExprError(f"{type(node).__name__} is not allowed in an answer")
        if isinstance(node, sympy.Symbol) and node.name not in allowed:
            raise ExprError(f"unknown name '{node.name}'")


def build_sympy(tree: Node, names: frozenset[str]) -> sympy.Expr:
    import sympy

    table = {n: sympy.Symbol(n, real=True) for n in names}
    try:
        expr = to_sympy(tree, table)
    except ExprError:
        raise
    except (OverflowError, MemoryError, RecursionError) as err:
        raise ExprError("the answer is too large to compute") from err
    except (TypeError, ValueError) as err:
        raise ExprError(f"the answer cannot be computed: {err}") from err
    if not isinstance(expr, sympy.Expr):
        raise ExprError("the answer is not an expression")
    check_tree(expr, names)
    return expr
