"""A tree printed back as text with every product and bracket explicit (how the grader
read an answer), and sympy's text in the same syntax."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grader.written.expr import nodes
from grader.written.expr.nodes import BinOp, Call, Const, Neg, Node, Num, Op, Pow, Sym

if TYPE_CHECKING:
    import sympy

_PREC = {Op.ADD: 1, Op.SUB: 1, Op.MUL: 2, Op.DIV: 2, Op.IMUL: 2}
_OPS = {Op.ADD: " + ", Op.SUB: " - ", Op.MUL: "*", Op.DIV: "/", Op.IMUL: "*"}


def show(tree: Node) -> str:
    """The tree as text with `*` for every product and `^` for powers: "d*(12*d + 13)"."""
    match tree:
        case Num(_, text):
            return text
        case Sym(name) | Const(name):
            return name
        case Call(name, args):
            return f"{name}(" + ", ".join(show(a) for a in args) + ")"
        case Neg(operand):
            inner = show(operand)
            return f"-({inner})" if _prec(operand) <= 3 else f"-{inner}"
        case Pow(base, exponent):
            left, right = show(base), show(exponent)
            left = f"({left})" if _prec(base) <= 4 else left
            right = f"({right})" if _prec(exponent) <= 4 else right
            return f"{left}^{right}"
    assert isinstance(tree, BinOp)
    family = nodes.SUMS if tree.op in nodes.SUMS else nodes.PRODUCTS
    p = _PREC[tree.op]
    first, rest = nodes.spine(tree, family)
    text = show(first)
    if _prec(first) < p:
        text = f"({text})"
    divided = False
    for op, node in rest:
        part = show(node)
        rp = _prec(node)
        if rp == 3 or (op is not Op.ADD and rp <= p):
            part = f"({part})"
        if divided and op in (Op.MUL, Op.IMUL):  # 1/2*d reads better as (1/2)*d
            text = f"({text})"
        divided = op is Op.DIV
        text += _OPS[op] + part
    return text


def _prec(tree: Node) -> int:
    """1 sums, 2 products, 3 a minus sign, 4 powers, 5 atoms and calls."""
    if isinstance(tree, BinOp):
        return _PREC[tree.op]
    if isinstance(tree, Neg):
        return 3
    if isinstance(tree, Pow):
        return 4
    return 5


def readable(expr: sympy.Expr) -> str:
    """sympy's text for an expression with `^` for powers: "d*(12*d + 13)"."""
    return str(expr).replace("**", "^")
