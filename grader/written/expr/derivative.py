"""The derivative of a parsed tree by one symbol, built in the tree's own nodes (no sympy).

A derivation step such as `d/dh tanh(w h + b)` asks the checker for a derivative. The rules
here are the calculus of the functions an answer may use (grader.written.expr.parser's
FUNCTIONS): sums, products, quotients, powers, and exp, log, sqrt, tanh, sigmoid, sinh, cosh,
sin and cos by the chain rule. Products by 0 and 1 and sums with 0 are folded as the tree is
built, and nothing else is simplified: the steps are compared numerically, so the derivative
need only be equal, not tidy. `abs`, `max` and `min` have no derivative in these functions
(sign, Heaviside): for those `derivative` returns None and the caller asks sympy, whose import
costs a grade about 0.2 s (so it is asked for nothing else).
"""

from __future__ import annotations

from fractions import Fraction

from grader.written.expr import nodes
from grader.written.expr.limits import check_limits
from grader.written.expr.nodes import BinOp, Call, Const, Neg, Node, Num, Op, Pow, Sym

ZERO = Num(Fraction(0), "0")
ONE = Num(Fraction(1), "1")
TWO = Num(Fraction(2), "2")
WITHOUT_RULES = frozenset({"abs", "max", "min"})
"""The answer functions whose derivative is none of them (sign, Heaviside): sympy's to take."""


class _NoRule(Exception):
    """A function this module has no derivative for (the caller falls back to sympy)."""


def derivative(tree: Node, variable: str) -> Node | None:
    """d tree / d variable as a tree, or None when it needs a function outside the rules."""
    try:
        return _d(tree, variable)
    except _NoRule:
        return None


def _d(tree: Node, x: str) -> Node:
    match tree:
        case Num() | Const():
            return ZERO
        case Sym(name):
            return ONE if name == x else ZERO
        case Neg(operand):
            return _neg(_d(operand, x))
        case BinOp(op, left, right) if op in nodes.SUMS:
            return _join(op, _d(left, x), _d(right, x))
        case BinOp(Op.DIV, left, right):  # (l/r)' = l'/r - l r'/r^2
            dl, dr = _d(left, x), _d(right, x)
            return _join(
                Op.SUB,
                _join(Op.DIV, dl, right),
                _join(Op.DIV, _join(Op.MUL, left, dr), Pow(right, TWO)),
            )
        case BinOp(_, left, right):  # a product, written with `*` or without
            return _join(
                Op.ADD, _join(Op.MUL, _d(left, x), right), _join(Op.MUL, left, _d(right, x))
            )
        case Pow(base, exponent):
            return _power(base, exponent, x)
        case Call(name, args):
            return _call(name, args, x)
    raise AssertionError(f"unknown node {tree!r}")


def _power(base: Node, exponent: Node, x: str) -> Node:
    db, de = _d(base, x), _d(exponent, x)
    if _is(de, 0):  # b^n: n b^(n-1) b'
        return _join(Op.MUL, _join(Op.MUL, exponent, _pow(base, _minus_one(exponent))), db)
    if isinstance(base, Const) and base.name == "e":  # e^u: e^u u'
        return _join(Op.MUL, Pow(base, exponent), de)
    # b^u = e^(u log b): b^u (u' log b + u b'/b)
    rate = _join(
        Op.ADD,
        _join(Op.MUL, de, Call("log", (base,))),
        _join(Op.DIV, _join(Op.MUL, exponent, db), base),
    )
    return _join(Op.MUL, Pow(base, exponent), rate)


def _call(name: str, args: tuple[Node, ...], x: str) -> Node:
    if name == "log" and len(args) == 2:  # log(u, b) = log(u) / log(b)
        return _d(BinOp(Op.DIV, Call("log", args[:1]), Call("log", args[1:])), x)
    slopes = [_d(a, x) for a in args]
    if all(_is(s, 0) for s in slopes):
        return ZERO
    if name in WITHOUT_RULES:
        raise _NoRule(name)
    u, du = args[0], slopes[0]
    match name:
        case "exp":
            outer: Node = Call("exp", (u,))
        case "log" | "ln":
            return _join(Op.DIV, du, u)
        case "sqrt":
            return _join(Op.DIV, du, _join(Op.MUL, TWO, Call("sqrt", (u,))))
        case "tanh":
            outer = _join(Op.SUB, ONE, Pow(Call("tanh", (u,)), TWO))
        case "sigmoid":
            outer = _join(Op.MUL, Call("sigmoid", (u,)), _join(Op.SUB, ONE, Call("sigmoid", (u,))))
        case "sinh":
            outer = Call("cosh", (u,))
        case "cosh":
            outer = Call("sinh", (u,))
        case "sin":
            outer = Call("cos", (u,))
        case "cos":
            outer = _neg(Call("sin", (u,)))
        case _:  # a function added to the grammar without a rule here: sympy takes it
            raise _NoRule(name)
    return _join(Op.MUL, outer, du)


# --------------------------------------------------------------- building with 0 and 1 folded


def _is(tree: Node, value: int) -> bool:
    return isinstance(tree, Num) and tree.value == value


def _number(value: Fraction) -> Node:
    """A rational as nodes that print back unambiguously (`1/2` as a quotient, `-3` negated)."""
    if value < 0:
        return Neg(_number(-value))
    whole = Num(Fraction(value.numerator), str(value.numerator))
    if value.denominator == 1:
        return whole
    return BinOp(Op.DIV, whole, Num(Fraction(value.denominator), str(value.denominator)))


def _minus_one(exponent: Node) -> Node:
    value = check_limits(exponent).get(id(exponent))  # a constant exponent's exact value
    return _join(Op.SUB, exponent, ONE) if value is None else _number(value - 1)


def _pow(base: Node, exponent: Node) -> Node:
    if _is(exponent, 1):
        return base
    if _is(exponent, 0):
        return ONE
    return Pow(base, exponent)


def _join(op: Op, a: Node, b: Node) -> Node:
    """`a op b` with 0 and 1 folded: `a + 0`, `0 - b`, `1 * b`, `a * 0`, `0 / b`, `a / 1`."""
    if op in nodes.SUMS:
        if _is(b, 0):
            return a
        if _is(a, 0):
            return b if op is Op.ADD else _neg(b)
    else:
        if _is(a, 0) or (op is Op.MUL and _is(b, 0)):
            return ZERO
        if _is(b, 1):
            return a
        if op is Op.MUL and _is(a, 1):
            return b
    return BinOp(op, a, b)


def _neg(a: Node) -> Node:
    if _is(a, 0):
        return ZERO
    if isinstance(a, Neg):
        return a.operand
    return Neg(a)
