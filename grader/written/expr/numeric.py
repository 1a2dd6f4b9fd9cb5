"""The sympy-free numeric check: parsed trees evaluated with mpmath at random points.

A tree from `grader.written.expr.parser.read` is compiled once into a short stack program
(constant subtrees evaluated in advance: exact rationals from `check_limits`, the rest
with mpmath; a computation that occurs twice done once), then run at each sample point
with 30-digit arithmetic. Values may turn complex (`sqrt`, `log`, fractional powers of
negative numbers), as with sympy's real symbols: principal branches throughout.

Sampling follows grader.written.expr.symbolic exactly (same seed, same points, same order):
24 valid points wanted, 16 with every symbol in [0.5, 2], 8 with random signs; a point
where the EXPECTED side is undefined (division by zero, non-finite, out of range) is
redrawn, up to 80 tries; at least 12 valid points are needed. One disagreement
(relative 1e-9) settles "different"; fewer valid points than that is "cannot decide"
(None), and the caller falls back to sympy.

Nothing here can run away: every intermediate value is checked (|log2 x| <= MAX_MAG, or
the point is undefined; smaller values underflow to 0), and exp/sinh/cosh/sin/cos/powers
refuse arguments whose results would be out of range or need a huge working precision
before computing anything.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from fractions import Fraction
from typing import Any

import mpmath
from mpmath import mpc, mpf

from grader.written.expr.errors import UNDEFINED, ExprError
from grader.written.expr.limits import check_limits
from grader.written.expr.memo import Memo
from grader.written.expr.nodes import BinOp, Call, Const, Neg, Node, Pow, Sym, postorder

N_POINTS = 24  # valid sample points wanted
N_POSITIVE = 16  # of which all symbols in [0.5, 2]
MIN_POINTS = 12  # fewer valid points than this: cannot decide
MAX_TRIES = 80  # sample attempts, counting points where the expected side is undefined
RTOL = 1e-9
ATOL = 1e-12
DIGITS = 30
SEED = 20240917  # fixed: the same answer always gets the same verdict

MAX_MAG = 1 << 16  # |log2 |x|| of any intermediate value (about 10^±19700)
EXP_LIMIT = MAX_MAG  # |Re z| in exp(z), sinh, cosh, and z = y·log(x) in x^y
TRIG_LIMIT = 2.0**40  # |z| in sin/cos, |Im z| in exp and friends: beyond, 30 digits are noise

Number = mpf | mpc


class Undefined(Exception):
    """The value at this point is undefined, infinite or out of range."""


def numbers_close(
    a: complex | float | Number, b: complex | float | Number, rtol: float = RTOL, atol: float = ATOL
) -> bool:
    """|a - b| <= atol + rtol * max(|a|, |b|), for real or complex numbers (mpmath too)."""
    return bool(abs(a - b) <= atol + rtol * max(abs(a), abs(b)))


# ------------------------------------------------------------------ bounded values

_ZERO = mpf(0)


def _part_ok(raw: tuple) -> bool:
    """True for a usable mpf part, False for one that underflows; raises when out of range."""
    _sign, man, exp, bc = raw
    if not man:
        if exp:  # inf or nan
            raise Undefined
        return True
    mag = exp + bc
    if mag > MAX_MAG:
        raise Undefined
    return mag >= -MAX_MAG


def bounded(v: Any) -> Number:
    """`v` as an mpmath number in range: raises Undefined for nan/inf/too large; tiny is 0."""
    if isinstance(v, mpf):
        return v if _part_ok(v._mpf_) else _ZERO
    if isinstance(v, mpc):
        re_raw, im_raw = v._mpc_
        re_ok, im_ok = _part_ok(re_raw), _part_ok(im_raw)
        if not im_raw[1] or not im_ok:  # no imaginary part left: a real number
            return v.real if re_ok else _ZERO
        return v if re_ok else mpc(0, v.imag)
    if isinstance(v, (int, float, Fraction)):
        return bounded(_mp(v))
    raise Undefined


def _mp(v: int | float | Fraction) -> mpf:
    if isinstance(v, Fraction):
        if v.denominator == 1:
            return mpf(v.numerator)
        return mpf(v.numerator) / v.denominator
    return mpf(v)


def _re(z: Number) -> mpf:
    return z.real if isinstance(z, mpc) else z


def _im(z: Number) -> mpf:
    return z.imag if isinstance(z, mpc) else _ZERO


# |x| < 2**(exp + bc) for an mpf x with raw parts (sign, man, exp, bc): a real exponent of at
# most this many bits is inside ±EXP_LIMIT, read from its parts without a comparison of numbers
_EXP_BITS = EXP_LIMIT.bit_length() - 1
assert EXP_LIMIT == 1 << _EXP_BITS


def _exp_arg(z: Number) -> bool:
    """Check an exponent for exp: False when exp(z) underflows to 0; raises when out of range."""
    if isinstance(z, mpf):
        _sign, man, exp, bc = z._mpf_
        if man and exp + bc <= _EXP_BITS or not (man or exp):  # small, or zero (not inf/nan)
            return True
    re_part = _re(z)
    if abs(_im(z)) > TRIG_LIMIT:
        raise Undefined
    if re_part > EXP_LIMIT:
        raise Undefined
    return bool(re_part >= -EXP_LIMIT)


def _exp(z: Number) -> Number:
    return mpmath.exp(z) if _exp_arg(z) else _ZERO


def _sigmoid(z: Number) -> Number:
    if _re(z) >= 0:
        return 1 / (1 + _exp(-z))
    w = _exp(z)  # no overflow on the negative side
    return w / (1 + w)


def _hyperbolic(f: Callable[[Number], Number]) -> Callable[[Number], Number]:
    def call(z: Number) -> Number:
        if abs(_re(z)) > EXP_LIMIT or abs(_im(z)) > TRIG_LIMIT:
            raise Undefined
        return f(z)

    return call


def _tanh(z: Number) -> Number:
    if abs(_im(z)) > TRIG_LIMIT:
        raise Undefined
    re_part = _re(z)
    if abs(re_part) > EXP_LIMIT:  # tanh saturates long before
        return mpf(1) if re_part > 0 else mpf(-1)
    return mpmath.tanh(z)


def _trig(f: Callable[[Number], Number]) -> Callable[[Number], Number]:
    def call(z: Number) -> Number:
        if abs(z) > TRIG_LIMIT:
            raise Undefined
        return f(z)

    return call


def _log(z: Number, base: Number | None = None) -> Number:
    if not z:
        raise Undefined
    if base is None:
        return mpmath.log(z)
    if not base:
        raise Undefined
    return mpmath.log(z) / mpmath.log(base)  # log(z, 1) divides by 0: undefined


def _real(v: Number) -> mpf:
    if isinstance(v, mpc):
        if v.imag and abs(v.imag) > 1e-25 * abs(v.real):
            raise Undefined  # max/min of a complex number
        return v.real
    return v


def _max(*args: Number) -> Number:
    return max(_real(a) for a in args)


def _min(*args: Number) -> Number:
    return min(_real(a) for a in args)


def _pow(base: Number, exponent: Number | int) -> Number:
    if isinstance(exponent, int):  # an integer constant: exact repeated squaring
        if not base and exponent < 0:
            raise Undefined
        if base and abs(exponent) * abs(mpmath.mag(base)) > 4 * MAX_MAG:
            raise Undefined
        return base**exponent
    if not base:
        if _re(exponent) > 0:
            return _ZERO
        if not exponent:
            return mpf(1)
        raise Undefined
    w = exponent * mpmath.log(base)
    if not _exp_arg(w):
        return _ZERO
    return base**exponent


FUNCTIONS: dict[str, Callable[..., Number]] = {
    "exp": _exp,
    "log": _log,
    "ln": _log,
    "sqrt": mpmath.sqrt,
    "tanh": _tanh,
    "sigmoid": _sigmoid,
    "sinh": _hyperbolic(mpmath.sinh),
    "cosh": _hyperbolic(mpmath.cosh),
    "sin": _trig(mpmath.sin),
    "cos": _trig(mpmath.cos),
    "abs": abs,
    "max": _max,
    "min": _min,
}

_BINARY: dict[str, Callable[[Number, Any], Number]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "imul": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "^": _pow,
}


# ------------------------------------------------------------------------ programs

# An instruction is (opcode, argument): ("val", number), ("sym", index), ("neg", None),
# (binary op, None), ("powi", int), ("call", (function, n_args)); ("keep", slot) stores the
# value on top of the stack, ("load", slot) pushes a stored one (`_shared`).
Program = list[tuple[str, Any]]


def _apply(op: str, arg: Any, args: list[Any]) -> Number:
    """One instruction on its operands; Undefined when the value does not exist or is too large."""
    try:
        if op == "neg":
            value = -args[0]
        elif op == "powi":
            value = _pow(args[0], arg)
        elif op == "call":
            value = FUNCTIONS[arg[0]](*args)
        else:
            value = _BINARY[op](args[0], args[1])
    except Undefined:
        raise
    except (ZeroDivisionError, ValueError, OverflowError, ArithmeticError, TypeError) as err:
        raise Undefined from err
    return bounded(value)


def compile_tree(tree: Node, names: Sequence[str]) -> Program:
    """A stack program for `tree`, with symbols numbered as in `names`.

    Constant subtrees are evaluated now; one that is undefined raises ExprError (like
    sympy's zoo in the old path): `log(0)`, `x + 1/(1 - 1)`, a number out of range.
    """
    exact = check_limits(tree)
    index = {n: i for i, n in enumerate(names)}
    # per node: ("val", value) for a constant, else its code
    done: dict[int, tuple[str, Any]] = {}
    with mpmath.workdps(DIGITS):
        for node in postorder(tree):
            key = id(node)
            if key in exact:
                done[key] = ("val", _constant(bounded, exact[key]))
                continue
            children: list[Node]
            match node:
                case Sym(name):
                    done[key] = ("code", [("sym", index[name])])
                    continue
                case Const(name):
                    done[key] = ("val", +mpmath.e if name == "e" else +mpmath.pi)
                    continue
                case Call(name, args):
                    children = list(args)
                    op, arg = "call", (name, len(children))
                case Neg(operand):
                    children = [operand]
                    op, arg = "neg", None
                case Pow(Const("e"), exponent):
                    children = [exponent]
                    op, arg = "call", ("exp", 1)  # e^x is exp(x), as sympy reads it
                case Pow(base, exponent) if (
                    id(exponent) in exact and exact[id(exponent)].denominator == 1
                ):
                    children = [base]
                    op, arg = "powi", int(exact[id(exponent)])
                case Pow(base, exponent):
                    children = [base, exponent]
                    op, arg = "^", None
                case BinOp(binary, left, right):
                    children = [left, right]
                    op, arg = binary.value, None
            parts = [done.pop(id(c)) for c in children]
            if all(p[0] == "val" for p in parts):
                values = [p[1] for p in parts]
                done[key] = ("val", _constant(_apply, op, arg, values))
                continue
            code: Program = []
            for p in parts:
                if p[0] == "val":
                    code.append(p)
                else:
                    code.extend(p[1])
            code.append((op, arg))
            done[key] = ("code", code)
    kind, body = done[id(tree)]
    return [("val", body)] if kind == "val" else _shared(body)


def _operands(op: str, arg: Any) -> int:
    if op in ("val", "sym"):
        return 0
    if op in ("neg", "powi"):
        return 1
    return arg[1] if op == "call" else 2


def _shared(program: Program) -> Program:
    """`program` with each computation that occurs more than once done once per run: the first
    occurrence keeps its value, the later ones load it. A definition substituted into a step
    (p_a, p_b, p_c sharing one sum of exponentials) repeats whole subtrees. A computation gives
    the same value wherever it occurs, so every run gives the value the unshared program gives,
    or fails where it fails."""
    table: dict[tuple[str, Any, tuple[int, ...]], int] = {}
    ends: list[tuple[int, int]] = []  # per instruction: the computation it ends, where it starts
    stack: list[tuple[int, int]] = []
    for i, (op, arg) in enumerate(program):
        n = _operands(op, arg)
        operands = stack[len(stack) - n :] if n else []
        del stack[len(stack) - n :]
        key = (op, arg, tuple(c for c, _ in operands))
        computation = table.setdefault(key, len(table))
        ends.append((computation, operands[0][1] if operands else i))
        stack.append(ends[-1])
    seen: set[int] = set()
    again: set[int] = set()  # the computations that occur more than once
    repeated: dict[int, int] = {}  # start -> end of the widest later occurrence starting there
    for i, (computation, start) in enumerate(ends):
        if start == i:  # a number or a symbol: nothing to save
            continue
        if computation in seen:
            repeated[start] = max(repeated.get(start, i), i)
            again.add(computation)
        else:
            seen.add(computation)
    if not repeated:
        return program
    slots: dict[int, int] = {}
    out: Program = []
    i = 0
    while i < len(program):
        if i in repeated:
            out.append(("load", slots[ends[repeated[i]][0]]))
            i = repeated[i] + 1
            continue
        out.append(program[i])
        computation = ends[i][0]
        if computation in again and computation not in slots and ends[i][1] != i:
            slots[computation] = len(slots)
            out.append(("keep", slots[computation]))
        i += 1
    return out


def _constant(compute: Callable[..., Number], *args: Any) -> Number:
    try:
        return compute(*args)
    except Undefined as err:
        raise ExprError(UNDEFINED) from err


def run(program: Program, point: Sequence[Number]) -> Number:
    """The program's value at `point` (call inside mpmath.workdps(DIGITS)); raises Undefined."""
    stack: list[Any] = []
    kept: dict[int, Any] = {}
    for op, arg in program:
        if op == "val":
            stack.append(arg)
        elif op == "sym":
            stack.append(point[arg])
        elif op == "neg":
            stack[-1] = -stack[-1]
        elif op == "call":
            n = arg[1]
            args = stack[-n:]
            del stack[-n:]
            stack.append(_apply(op, arg, args))
        elif op == "powi":
            stack[-1] = _apply(op, arg, [stack[-1]])
        elif op == "keep":
            kept[arg] = stack[-1]
        elif op == "load":
            stack.append(kept[arg])
        else:
            b = stack.pop()
            stack[-1] = _apply(op, arg, [stack[-1], b])
    return stack[0]


# ------------------------------------------------------------------------ sampling


def points(n_symbols: int) -> Iterator[list[float]]:
    """The sample points, as the sympy path draws them (same seed, same order of draws)."""
    rng = random.Random(SEED)
    for k in range(MAX_TRIES):
        point = []
        for _ in range(n_symbols):
            magnitude = rng.uniform(0.5, 2.0)
            sign = 1 if k % N_POINTS < N_POSITIVE or rng.random() < 0.5 else -1
            point.append(sign * magnitude)
        yield point


def value_at(program: Program, point: Sequence[Number]) -> Number | None:
    try:
        return run(program, point)
    except Undefined:
        return None
    except (ArithmeticError, ValueError, TypeError):
        return None


def agree_at_points(
    want_at: Callable[[list[Any]], Any], got_at: Callable[[list[Any]], Any], n_symbols: int
) -> bool | None:
    """The sampling policy, shared by the fast path and the sympy fallback.

    `want_at` / `got_at` give a point's value or None where undefined. True when the two agree
    at every valid point (N_POINTS of them, points where the expected side is undefined
    redrawn); False at the first valid point where they differ; None when too few points are
    valid to decide.
    """
    wanted = N_POINTS if n_symbols else 1
    valid = 0
    for raw in points(n_symbols):
        want = want_at(raw)
        if want is None:
            continue
        got = got_at(raw)
        if got is None or not numbers_close(got, want):
            return False
        valid += 1
        if valid >= wanted:
            return True
    return True if valid >= min(MIN_POINTS, wanted) else None


def _remembered(program: Program, memo: Memo | None) -> Callable[[list[float]], Number | None]:
    """`value_at(program, point)` for raw points, each computed once per `memo` (call inside
    workdps): a value depends on the program and the point only."""
    known: dict[tuple[float, ...], Number | None] = (
        {} if memo is None else memo.get(("values", tuple(program)), dict)
    )

    def value(raw: list[float]) -> Number | None:
        point = tuple(raw)
        if point not in known:
            known[point] = value_at(program, [mpf(x) for x in raw])
        return known[point]

    return value


def numerically_equal(
    answer: Program, expected: Program, n_symbols: int, memo: Memo | None = None
) -> bool | None:
    """True/False from random points; None when too few points are valid to decide.

    Both programs number their symbols the same way (n_symbols of them). `memo` keeps the
    programs' values for the next comparison that meets them (grader.written.expr.memo).
    """
    with mpmath.workdps(DIGITS):
        return agree_at_points(_remembered(expected, memo), _remembered(answer, memo), n_symbols)


def evaluate(tree: Node, values: dict[str, float]) -> Number:
    """The value of a parsed tree with the given symbol values (for tests and debugging)."""
    names = sorted(values)
    program = compile_tree(tree, names)
    with mpmath.workdps(DIGITS):
        return run(program, [mpf(values[n]) for n in names])


__all__ = [
    "ATOL",
    "DIGITS",
    "MIN_POINTS",
    "N_POINTS",
    "RTOL",
    "Undefined",
    "compile_tree",
    "evaluate",
    "numbers_close",
    "numerically_equal",
    "points",
    "run",
]
