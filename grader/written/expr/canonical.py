"""One normalised text per answer (sums and products sorted, like terms collected, nothing
expanded), so that equal answers group together in class statistics."""

from __future__ import annotations

import math
from fractions import Fraction

from grader.written.expr import nodes
from grader.written.expr.limits import MAX_FOLD_BITS, check_limits
from grader.written.expr.nodes import BinOp, Call, Const, Neg, Node, Op, Pow, Sym

# A sum is {monomial: coefficient}; a monomial is a sorted tuple of (factor, exponent),
# a factor is (rank, text): rank 0 for symbols and constants, 1 for calls, 2 for powers
# with a non-integer exponent, 3 for a bracketed sum. Nothing is expanded.
_Factor = tuple[int, str]
_Mono = tuple[tuple[_Factor, int], ...]
_Poly = dict[_Mono, Fraction]


def canonical(tree: Node) -> str:
    """A normalised text of a checked tree, for grouping equal answers in class statistics.

    Sums and products are flattened and sorted, numbers combined, like terms and equal
    factors collected (`13d + 12d^2` and `d*13 + 12 d d` both read `12*d^2 + 13*d`);
    products of sums are not expanded: `d(12d+13)` stays `d*(12*d + 13)`.
    """
    return _print_poly(_Canon(check_limits(tree)).poly(tree))


class _Canon:
    def __init__(self, exact: dict[int, Fraction]):
        self.exact = exact

    def poly(self, node: Node) -> _Poly:
        value = self.exact.get(id(node))
        if value is not None:
            return {(): value} if value else {}
        match node:
            case Sym(name) | Const(name):
                return {(((0, name), 1),): Fraction(1)}
            case Neg(operand):
                return {m: -c for m, c in self.poly(operand).items()}
            case BinOp(op) if op in nodes.SUMS:
                first, rest = nodes.spine(node, nodes.SUMS)
                total = dict(self.poly(first))
                for op, part in rest:
                    for m, c in self.poly(part).items():
                        total[m] = total.get(m, Fraction(0)) + (c if op is Op.ADD else -c)
                return {m: c for m, c in total.items() if c}
            case BinOp():
                return self.product(node)
            case Pow():
                return self.power(node)
            case Call(name, args):
                name = {"ln": "log"}.get(name, name)
                texts = [_print_poly(self.poly(a)) for a in args]
                if name in ("max", "min"):
                    texts.sort()
                return {(((1, f"{name}(" + ", ".join(texts) + ")"), 1),): Fraction(1)}
        raise AssertionError(f"unknown node {node!r}")  # a Num is always folded

    def product(self, node: BinOp) -> _Poly:
        first, rest = nodes.spine(node, nodes.PRODUCTS)
        coef, factors = Fraction(1), {}
        for op, part in [(Op.MUL, first), *rest]:
            sign = -1 if op is Op.DIV else 1
            p = self.poly(part)
            if len(p) == 1:
                ((mono, c),) = p.items()
                if sign < 0:
                    coef /= c
                else:
                    coef *= c
                for f, e in mono:
                    factors[f] = factors.get(f, 0) + sign * e
            elif not p and sign > 0:
                coef = Fraction(0)
            else:
                f = (3, f"({_print_poly(p)})")
                factors[f] = factors.get(f, 0) + sign
        return _term(coef, factors)

    def power(self, node: Pow) -> _Poly:
        base, exponent = node.base, node.exponent
        n = self.exact.get(id(exponent))
        if isinstance(base, Const) and base.name == "e":
            return {(((1, f"exp({_print_poly(self.poly(exponent))})"), 1),): Fraction(1)}
        p = self.poly(base)
        if n is not None and n.denominator == 1:
            k = int(n)
            if len(p) == 1:
                ((mono, c),) = p.items()
                size = max(c.numerator.bit_length(), c.denominator.bit_length())
                if (c or k >= 0) and abs(k) * size <= MAX_FOLD_BITS:
                    return _term(c**k, {f: e * k for f, e in mono})
            return _term(Fraction(1), {_as_factor(p): k})
        text = _base_text(_as_factor(p)) + "^" + _base_text(_as_factor(self.poly(exponent)))
        return {(((2, text), 1),): Fraction(1)}


def _term(coef: Fraction, factors: dict[_Factor, int]) -> _Poly:
    if not coef:
        return {}
    mono = tuple(sorted((f, e) for f, e in factors.items() if e))
    return {mono: coef}


def _as_factor(p: _Poly) -> _Factor:
    """A sum as one factor: a lone symbol, call or number keeps its text, else brackets."""
    if len(p) == 1:
        ((mono, c),) = p.items()
        if c == 1 and len(mono) == 1 and mono[0][1] == 1:
            return mono[0][0]
        if not mono and c.denominator == 1 and c > 0:
            return (0, _int_text(c.numerator))
    return (3, f"({_print_poly(p)})")


def _base_text(f: _Factor) -> str:
    """A factor's text as the base or exponent of a power: a power gets brackets."""
    rank, text = f
    return f"({text})" if rank == 2 else text


def _int_text(n: int) -> str:
    if n.bit_length() < 10_000:
        return str(n)
    exponent = math.log10(n)  # math.log10 takes big ints; str() refuses over 4300 digits
    return f"{10 ** (exponent % 1):.12f}e{int(exponent)}"


def _coef_text(c: Fraction) -> tuple[str, str]:
    return _int_text(abs(c.numerator)), _int_text(c.denominator)


def _mono_text(mono: _Mono) -> tuple[list[str], list[str]]:
    num, den = [], []
    for f, e in mono:
        part = f[1] if abs(e) == 1 else f"{_base_text(f)}^{abs(e)}"
        (num if e > 0 else den).append(part)
    return num, den


def _degree(mono: _Mono) -> int:
    return sum(e for (rank, _), e in mono if rank == 0)


def _print_poly(p: _Poly) -> str:
    if not p:
        return "0"
    terms = sorted(p.items(), key=lambda mc: (not mc[0], -_degree(mc[0]), mc[0]))
    out = ""
    for i, (mono, c) in enumerate(terms):
        num, den = _mono_text(mono)
        top, bottom = _coef_text(c)
        if top != "1" or not num:
            num.insert(0, top)
        if bottom != "1":
            den.insert(0, bottom)
        text = "*".join(num)
        if den:
            text += "/" + (den[0] if len(den) == 1 else "(" + "*".join(den) + ")")
        if i == 0:
            out = f"-{text}" if c < 0 else text
        else:
            out += f" - {text}" if c < 0 else f" + {text}"
    return out
