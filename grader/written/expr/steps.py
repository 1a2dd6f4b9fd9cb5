"""One step of a derivation, checked in the judge's worker: read it, take a derivative it
asks for, and compare it with the step before.

A step may start with a derivative operator applied to what follows: `d/dz tanh(z)`,
`∂/∂z_b (exp(z_a)/S)`, `$\\frac{\\partial}{\\partial v_c} \\log(…)$`. The operand is read
like any answer, every defined name replaced by its definition, differentiated on the tree
(grader.written.expr.derivative; by sympy, imported only then, for abs, max and min) and
written back in the answer grammar; the judge's hard time limit bounds it as it bounds every
check.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from grader.written.equations import operator
from grader.written.expr.derivative import derivative
from grader.written.expr.errors import ExprError
from grader.written.expr.nodes import Node, Sym
from grader.written.expr.parser import read
from grader.written.expr.printing import readable, show
from grader.written.expr.relations import declarations, definitions, substitute
from grader.written.expr.sympy_tree import to_sympy
from grader.written.expr.verdict import Verdict

if TYPE_CHECKING:
    from grader.written.expr.memo import Memo

MAX_DERIVATIVE_CHARS = 4000  # a derivative written back longer than this is refused

# f'(x) for the functions whose derivative the notes use, written out in the answer grammar
# (plain text and LaTeX alike): tanh'(x) = 1 - tanh(x)^2, σ'(x) = σ(x)(1 - σ(x))
PRIME = re.compile(r"(\\?)(tanh|sigmoid|sigma|σ|exp|log|ln)\s*(?:'|′|\^\{?\\prime\}?)\s*\(")
_PRIMED = {
    "tanh": "(1 - {f}tanh({x})^2)",
    "sigmoid": "({s}({x})(1 - {s}({x})))",
    "sigma": "({s}({x})(1 - {s}({x})))",
    "σ": "({s}({x})(1 - {s}({x})))",
    "exp": "{f}exp({x})",
    "log": "(1/({x}))",
    "ln": "(1/({x}))",
}


def uses_prime(text: str) -> bool:
    return PRIME.search(text) is not None


def write_primes(text: str) -> str:
    """`tanh'(z)` and its kin written out; a bracket that never closes is left for the parser."""
    latex = "$" in text
    out = text
    for _ in range(20):  # one rewrite per primed call, a bounded number of them
        m = PRIME.search(out)
        if m is None:
            break
        depth, end = 1, m.end()
        while end < len(out) and depth:
            depth += {"(": 1, ")": -1}.get(out[end], 0)
            end += 1
        if depth:
            break
        inner = out[m.end() : end - 1]
        f = "\\" if latex else ""
        sig = "\\sigma" if latex else "sigmoid"
        out = out[: m.start()] + _PRIMED[m.group(2)].format(f=f, s=sig, x=inner) + out[end:]
    return out


def _unwrap(text: str) -> tuple[str, bool]:
    s = text.strip()
    if "$" not in s:
        return s, False
    return s.replace("$$", "$").replace("$", " ").strip(), True


def has_operator(text: str) -> bool:
    body, _ = _unwrap(text)
    m = operator().match(body)
    return bool(m) and m.end() < len(body)


def expand(text: str, symbols: Sequence[str] | None, memo: Memo | None = None) -> str:
    """`text` with a leading derivative operator carried out (unchanged without one)."""
    return _expand(text, symbols, memo)[0]


def _expand(
    text: str, symbols: Sequence[str] | None, memo: Memo | None = None
) -> tuple[str, str | None]:
    """(the step with its derivative taken, the operator as read: `d/dz(tanh(z))`) or
    (the step, None) when it holds no operator. With a `memo`, each derivative is taken once."""
    if memo is not None:
        return memo.of_text("expand", text, symbols, lambda: _expand(text, symbols))
    body, latex = _unwrap(text)
    m = operator().match(body)
    if not m or m.end() >= len(body):
        return text, None
    wrap = (lambda s: f"${s}$") if latex else (lambda s: s)
    names, relations = declarations(symbols)
    variable = read(wrap(m.group("a") or m.group("b")), names).tree
    if not isinstance(variable, Sym):
        raise ExprError(f"`{m.group(0).strip()}` differentiates by something that is not a symbol")
    if variable.name in relations:
        raise ExprError(
            f"differentiate by a symbol, not by the defined name {variable.name} "
            f"({variable.name} = {relations[variable.name]})"
        )
    operand = body[m.end() :]
    if has_operator(wrap(operand)):
        raise ExprError("one derivative per step: take the inner derivative in a step of its own")
    parsed = read(wrap(operand), names)
    tree = parsed.tree
    if relations:
        defined = definitions(relations, names)
        for _ in relations:  # a definition may use another defined name
            tree = substitute(tree, defined)
    taken = derivative(tree, variable.name)
    shown = show(taken) if taken is not None else _by_sympy(tree, variable.name, names)
    if len(shown) > MAX_DERIVATIVE_CHARS:
        raise ExprError("the derivative is too large to check")
    return shown, f"d/d{variable.name}({parsed.shown})"


def _by_sympy(tree: Node, variable: str, names: frozenset[str] | None) -> str:
    """The derivative taken by sympy, for the functions `derivative` has no rule for (abs, max,
    min), written back in the answer grammar."""
    import sympy

    table = {n: sympy.Symbol(n, real=True) for n in names or ()}
    taken = sympy.diff(to_sympy(tree, table), table[variable])
    if taken.has(sympy.Derivative, sympy.Subs):
        raise ExprError("this derivative cannot be taken in closed form here")
    return re.sub(r"\bE\b", "e", readable(taken))  # sympy's Euler number


def check_step(
    answer: str,
    previous: str | None,
    symbols: Sequence[str] | None,
    memo: Memo | None = None,
) -> Verdict:
    """Is step `answer` equal to `previous` (None: is it readable)? Errors are the step's own.
    `memo`: what this submission's earlier checks read and computed (grader.written.expr.memo)."""
    from grader.written.expr.equivalence import equivalent

    names, _ = declarations(symbols)
    primed = answer.strip() if uses_prime(answer) else None  # shown as written, never expanded
    answer = write_primes(answer)
    previous = None if previous is None else write_primes(previous)
    try:
        expanded, operator = _expand(answer, symbols, memo)
        got = read(expanded, names, memo)
    except ExprError as err:
        return Verdict(False, str(err))
    shown = operator or primed or got.shown  # what was written, never a derivative it asks for
    note = "; ".join(got.notes) or None
    if previous is None:
        return Verdict(True, None, shown, None, None, note)
    try:
        before = expand(previous, symbols, memo)
    except ExprError as err:
        return Verdict(False, f"the step before could not be read: {err}")
    try:
        verdict = equivalent(expanded, before, symbols, memo)
    except ValueError as err:
        return Verdict(False, f"the step before could not be read: {err}")
    if verdict.error is not None:
        return verdict
    return Verdict(verdict.equivalent, None, shown, verdict.method, verdict.canonical,
                   note or verdict.note)  # fmt: skip
