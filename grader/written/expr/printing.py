"""A tree printed back as text with every product and bracket explicit (how the grader
read an answer), and sympy's text in the same syntax."""

from __future__ import annotations

from typing import TYPE_CHECKING

from grader.written.expr.nodes import spine

if TYPE_CHECKING:
    import sympy

_PREC = {"+": 1, "-": 1, "*": 2, "/": 2, "imul": 2, "neg": 3, "^": 4}
_OPS = {"+": " + ", "-": " - ", "*": "*", "/": "/", "imul": "*"}


def show(tree: tuple) -> str:
    """The tree as text with `*` for every product and `^` for powers: "d*(12*d + 13)"."""
    kind = tree[0]
    if kind == "num":
        return tree[2]
    if kind in ("sym", "const"):
        return tree[1]
    if kind == "call":
        return f"{tree[1]}(" + ", ".join(show(a) for a in tree[2]) + ")"
    if kind == "neg":
        inner = show(tree[1])
        return f"-({inner})" if _prec(tree[1]) <= 3 else f"-{inner}"
    if kind == "^":
        left, right = show(tree[1]), show(tree[2])
        left = f"({left})" if _prec(tree[1]) <= 4 else left
        right = f"({right})" if _prec(tree[2]) <= 4 else right
        return f"{left}^{right}"
    family = ("+", "-") if kind in ("+", "-") else ("*", "imul", "/")
    p = _PREC[kind]
    first, rest = spine(tree, family)
    text = show(first)
    if _prec(first) < p:
        text = f"({text})"
    divided = False
    for op, node in rest:
        part = show(node)
        rp = _prec(node)
        if rp == 3 or (op != "+" and rp <= p):
            part = f"({part})"
        if divided and op in ("*", "imul"):  # 1/2*d reads better as (1/2)*d
            text = f"({text})"
        divided = op == "/"
        text += _OPS[op] + part
    return text


def _prec(tree: tuple) -> int:
    return _PREC.get(tree[0], 5)


def readable(expr: sympy.Expr) -> str:
    """sympy's text for an expression with `^` for powers: "d*(12*d + 13)"."""
    return str(expr).replace("**", "^")
