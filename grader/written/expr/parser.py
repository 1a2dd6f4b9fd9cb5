"""A safe parser for students' written expressions: text in, a checked tree out (`read`).

Nothing here calls `eval`, `sympify` or `parse_expr`. The text is normalised, split into
tokens by hand, read by a small recursive-descent parser into a tree of frozen dataclass nodes
(grader.written.expr.nodes), and checked
against size limits (`check_limits`: power towers, giant exponents and constant powers,
division by a constant 0) before anything is evaluated. `read` stops there and never
imports sympy: the numeric check (grader.written.expr.numeric) works on the tree. `interpret` and
`parse` go on to sympy objects, built node by node from a fixed whitelist (`to_sympy`) and
walked once more (`check_tree`); sympy is imported only then.

Reading rules (documented for students in docs/answers.md):

- `^` and `**` are powers, right-associative: `2^3^2 = 2^9`; `-x^2 = -(x^2)`.
- Juxtaposition multiplies, with the same precedence as `*` and read left to right:
  `2 d`, `4d^2 = 4·d²`, `(a+b)(a-b)`, `1/2d = (1/2)·d` (a note warns about this one).
- A whitelisted function name followed by `(` is a call: `exp(x)`; a declared symbol
  followed by `(` is a product: `d(12d+13) = d·(12d+13)`. A function name may also take a
  single power-level operand without brackets: `log x`, `log x^2 = log(x²)`. A whole-number
  power written on the function name is the power of its value, as in LaTeX:
  `tanh^2(z) = (tanh z)^2`, `\\sin^2 x = (sin x)^2`.
- A run of letters, digits and `_` that is not a declared symbol, a function or a
  constant is split into declared symbols by the longest match first (`dd_ff = d·d_ff`
  when `d` and `d_ff` are declared); a declared symbol such as `d_ff` is never split.
- `d_{ff}` is the same name as `d_ff`; Greek letters by name (`alpha`) or by character (α);
  a declared short name stands for its letter too (`eps` declared: ε, `epsilon`, `\\varepsilon`).
- A TAB before letters, a backspace or a form feed is a TOML escape that ate a backslash
  (`"\\tanh"` in a basic string): put back inside `$…$` when it completes a known command,
  otherwise refused with a message that suggests a literal string '…'.
- `e` and `pi` (π) are the constants unless declared as symbols; `sigma(...)` and `σ(...)`
  are the logistic sigmoid unless `sigma` is a declared symbol.
- LaTeX between `$…$` is translated to this syntax first (see `latex_to_plain`); sympy's
  own `parse_latex(..., backend="lark")` was tried and rejected: with the installed lark
  it fails on `\\tanh`, and `\\sigma(x)` is a syntax error there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING

from grader.written.expr.errors import ExprError
from grader.written.expr.latex import latex_to_plain, restore_toml_escapes, unwrap_latex
from grader.written.expr.limits import (
    MAX_DEPTH,
    MAX_DIGITS,
    MAX_LENGTH,
    MAX_NAME,
    MAX_NODES,
    MAX_POWER_NESTING,
    check_limits,
)
from grader.written.expr.nodes import BinOp, Call, Const, Neg, Node, Num, Op, Pow, Sym, postorder
from grader.written.expr.printing import show
from grader.written.expr.sympy_tree import build_sympy
from grader.written.expr.text import GREEK_SHORT, canonical_symbol, check_raw, normalize
from grader.written.expr.tokens import tokenize

if TYPE_CHECKING:
    import sympy

    from grader.written.expr.memo import Memo

FUNCTIONS = (
    "exp", "log", "ln", "sqrt", "tanh", "sigmoid", "sinh", "cosh", "abs", "max", "min", "cos", "sin",
)  # fmt: skip
CONSTANTS = ("e", "pi")


@lru_cache(maxsize=256)
def greek_aliases(symbols: frozenset[str]) -> dict[str, str]:
    """Full Greek names that stand for a declared short name: {"epsilon": "eps", "epsilon_1": "eps_1"}."""
    aliases = {}
    for s in symbols:
        base, sep, sub = s.partition("_")
        full = GREEK_SHORT.get(base)
        if full is not None and full + sep + sub not in symbols:
            aliases[full + sep + sub] = s
    return aliases


class _Parser:
    def __init__(
        self, tokens: list[tuple[str, str, int]], symbols: frozenset[str], open_names: bool
    ):
        self.toks = tokens
        self.k = 0
        self.symbols = symbols
        self.aliases = greek_aliases(symbols)  # ε (read as "epsilon") for a declared `eps`
        self.open_names = open_names  # trusted text: every unknown name is a symbol
        self.depth = 0
        self.nodes = 0
        self.pow_nesting = 0
        self.notes: list[str] = []

    # helpers
    def peek(self, offset: int = 0) -> tuple[str, str, int] | None:
        j = self.k + offset
        return self.toks[j] if j < len(self.toks) else None

    def node(self, node: Node) -> Node:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ExprError("the answer is too long or too complex to check")
        return node

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise ExprError(f"the answer is nested too deeply (more than {MAX_DEPTH} levels)")

    def expect(self, tok: str) -> None:
        t = self.peek()
        if t is None or t[1] != tok:
            where = f"at position {t[2] + 1}" if t else "at the end"
            raise ExprError(f"expected '{tok}' {where}")
        self.k += 1

    # grammar
    def parse(self) -> Node:
        if not self.toks:
            raise ExprError("the answer is empty")
        tree = self.sum()
        t = self.peek()
        if t is not None:
            if t[1] == ")":
                raise ExprError(f"a closing bracket at position {t[2] + 1} has no opening bracket")
            if t[1] == ",":
                raise ExprError(
                    f"unexpected ',' at position {t[2] + 1}: a comma only separates a function's arguments"
                )
            raise ExprError(f"unexpected {t[1]!r} at position {t[2] + 1}")
        return tree

    def sum(self) -> Node:
        left = self.term()
        while (t := self.peek()) is not None and t[1] in "+-" and t[0] == "op":
            self.k += 1
            left = self.node(BinOp(_BINARY[t[1]], left, self.term()))
        return left

    def starts_factor(self, t: tuple[str, str, int] | None) -> bool:
        return t is not None and (t[0] in ("number", "name") or t[1] == "(")

    def term(self) -> Node:
        left = self.unary()
        while True:
            t = self.peek()
            if t is not None and t[0] == "op" and t[1] in "*/":
                self.k += 1
                right = self.unary()
                if t[1] == "/" and self.starts_factor(self.peek()):
                    self.notes.append(
                        "a product after '/' is read left to right: a/2b means (a/2)*b; "
                        "write a/(2b) to divide by 2b"
                    )
                left = self.node(BinOp(_BINARY[t[1]], left, right))
            elif self.starts_factor(t):
                left = self.node(BinOp(Op.IMUL, left, self.power()))
            else:
                return left

    def unary(self) -> Node:
        t = self.peek()
        if t is not None and t[0] == "op" and t[1] in "+-":
            self.k += 1
            self.enter()
            operand = self.unary()
            self.depth -= 1
            return operand if t[1] == "+" else self.node(Neg(operand))
        return self.power()

    def power(self) -> Node:
        base = self.primary()
        t = self.peek()
        if t is not None and t[0] == "pow":
            if self.transpose():
                return base
            self.k += 1
            self.pow_nesting += 1
            if self.pow_nesting > MAX_POWER_NESTING:
                raise ExprError(
                    f"powers are nested too deeply (more than {MAX_POWER_NESTING} levels)"
                )
            self.enter()
            exponent = self.unary()  # right-associative, and 2^-1 is allowed
            self.depth -= 1
            self.pow_nesting -= 1
            return self.node(Pow(base, exponent))
        return base

    def transpose(self) -> bool:
        """`u^T`, `u^(T)`, `u^\\top`, `uᵀ`: a transpose when the question declares no symbol `T`,
        skipped (the answers' vectors are compared as numbers, where a transpose changes
        nothing). True when one was read."""
        if "T" in self.symbols or self.open_names:
            return False
        following = [self.peek(n) for n in (1, 2, 3)]
        words = [f[1] if f is not None else None for f in following]
        if words[0] == "T" and following[0][0] == "name":
            self.k += 2
        elif words[:3] == ["(", "T", ")"]:
            self.k += 4
        elif (
            following[0] is not None
            and following[0][0] == "name"
            and following[0][1][:1] == "T"
            and following[0][1][1:] in self.symbols
        ):  # `u^Tv`: the transpose, then the declared symbol written against it
            kind, word, pos = following[0]
            self.toks[self.k + 1] = (kind, word[1:], pos + 1)
            self.k += 1
        else:
            return False
        self.notes.append("`^T` was read as a transpose")
        return True

    def primary(self) -> Node:
        t = self.peek()
        if t is None:
            raise ExprError(
                "the answer ends too early: something is missing after the last operator"
            )
        kind, tok, pos = t
        if kind == "number":
            self.k += 1
            return self.node(Num(_number(tok), tok))
        if kind == "name":
            self.k += 1
            return self.name(tok, pos)
        if tok == "(":
            self.k += 1
            self.enter()
            inner = self.sum()
            self.depth -= 1
            t2 = self.peek()
            if t2 is None or t2[1] != ")":
                raise ExprError(f"the bracket opened at position {pos + 1} is never closed")
            self.k += 1
            return inner
        if kind == "pow":
            raise ExprError(f"'{tok}' at position {pos + 1} has nothing to raise to a power")
        raise ExprError(f"unexpected {tok!r} at position {pos + 1}")

    def name(self, word: str, pos: int) -> Node:
        nxt = self.peek()
        call_next = nxt is not None and nxt[1] == "("
        word = self.aliases.get(word, word)
        if word in self.symbols:
            return self.node(Sym(word))
        fname = _function_name(word, self.symbols)
        if fname is not None:
            return self.call(fname, word, pos)
        if word in CONSTANTS:
            return self.node(Const(word))
        if self.open_names:
            return self.node(Sym(word))
        if len(word) > MAX_NAME:
            raise ExprError(f"the name at position {pos + 1} is too long ({len(word)} letters)")
        pieces = _segment(word, self.symbols, call_next)
        if pieces is None:
            meant = _without_underscore(word, self.symbols)
            if meant is None:
                raise ExprError(_unknown_name(word, self.symbols))
            self.notes.append(f"`{word}` was read as `{meant}`")
            return self.node(Sym(meant))
        tree: Node | None = None
        for piece in pieces:
            if piece in self.symbols:
                part = self.node(Sym(piece))
            else:
                part = self.call(_function_name(piece, self.symbols) or piece, piece, pos)
            tree = part if tree is None else self.node(BinOp(Op.IMUL, tree, part))
        assert tree is not None
        return tree

    def call(self, fname: str, word: str, pos: int) -> Node:
        t = self.peek()
        if t is not None and t[0] == "pow":
            return self.function_power(fname, word, pos)
        self.enter()
        if t is None or t[1] != "(":
            # `log x`, `log x^2`: one power-level operand, no implicit product
            if not (t is not None and (t[0] in ("number", "name"))):
                raise ExprError(
                    f"the function {word} at position {pos + 1} needs an argument in brackets: {word}(…)"
                )
            arg = self.power()
            if self.starts_factor(self.peek()):
                self.notes.append(
                    f"{word} without brackets applies to the next factor only: write {word}(…) to be sure"
                )
            self.depth -= 1
            return self.node(Call(fname, (arg,)))
        self.k += 1
        args = [self.sum()]
        while (t2 := self.peek()) is not None and t2[1] == ",":
            self.k += 1
            args.append(self.sum())
        t3 = self.peek()
        if t3 is None or t3[1] != ")":
            raise ExprError(f"the bracket after {word} at position {pos + 1} is never closed")
        self.k += 1
        self.depth -= 1
        lo, hi = _ARITY[fname]
        if not lo <= len(args) <= hi:
            want = f"{lo}" if lo == hi else f"at least {lo}"
            raise ExprError(
                f"{word}(…) takes {want} argument{'s' if hi != 1 else ''}, got {len(args)}"
            )
        return self.node(Call(fname, tuple(args)))

    def function_power(self, fname: str, word: str, pos: int) -> Node:
        """`tanh^2(z)`, `tanh^2 z`, `\\sin^2(x)`: the standard power of a function's value,
        (tanh(z))^2; the exponent must be a positive whole number (`tanh^{-1}` is the inverse
        function in that notation, which the answers do not use)."""
        self.k += 1  # the ^
        t = self.peek()
        exponent: Num | None = None
        if t is not None and t[0] == "number":
            self.k += 1
            exponent = self.node(Num(_number(t[1]), t[1]))
        elif t is not None and t[1] == "(":
            # `^(2)`, which is how LaTeX's `^2` and `^{2}` arrive here
            close = self.peek(2)
            inner = self.peek(1)
            if inner is not None and inner[0] == "number" and close is not None and close[1] == ")":
                self.k += 3
                exponent = self.node(Num(_number(inner[1]), inner[1]))
        if exponent is None or exponent.value.denominator != 1 or exponent.value < 1:
            raise ExprError(
                f"{word}^… at position {pos + 1}: a power written on the function name must be a "
                f"positive whole number, as in {word}^2(z) = ({word}(z))^2; "
                f"otherwise write ({word}(…))^(…)"
            )
        value = self.call(fname, word, pos)
        return self.node(Pow(value, exponent))


_BINARY = {"+": Op.ADD, "-": Op.SUB, "*": Op.MUL, "/": Op.DIV}
_ARITY = {f: (1, 1) for f in FUNCTIONS}
_ARITY.update({"max": (2, 20), "min": (2, 20), "log": (1, 2)})


def _function_name(word: str, symbols: frozenset[str]) -> str | None:
    if word in FUNCTIONS:
        return word
    if word == "sigma" and "sigma" not in symbols:
        return "sigmoid"
    return None


def _number(tok: str) -> Fraction:
    mantissa, _, exponent = tok.lower().partition("e")
    if len(mantissa.replace(".", "").lstrip("0")) > MAX_DIGITS:
        raise ExprError(f"the number {tok[:20]}… has too many digits (the limit is {MAX_DIGITS})")
    if exponent and abs(int(exponent)) > 300:
        raise ExprError(f"the number {tok} is out of range")
    return Fraction(tok)


def _segment(word: str, symbols: frozenset[str], call_next: bool) -> list[str] | None:
    """Split a run of letters into declared symbols, longest match first (with backtracking).

    The last piece may be a function name when a `(` follows: `xexp(x)` = x·exp(x).
    """
    candidates = sorted(symbols, key=len, reverse=True)
    finals = sorted([*FUNCTIONS, *([] if "sigma" in symbols else ["sigma"])], key=len, reverse=True)
    memo: dict[int, list[str] | None] = {}

    def split(i: int) -> list[str] | None:
        if i == len(word):
            return []
        if i in memo:
            return memo[i]
        result = None
        for cand in candidates:
            if word.startswith(cand, i):
                rest = split(i + len(cand))
                if rest is not None:
                    result = [cand, *rest]
                    break
        if result is None and call_next:
            for f in finals:
                if word.endswith(f) and len(word) - len(f) == i:
                    result = [f]
                    break
        memo[i] = result
        return result

    pieces = split(0)
    return pieces if pieces and len(pieces) > 1 else None


def _without_underscore(word: str, symbols: frozenset[str]) -> str | None:
    """The one declared symbol that `word` writes without its underscores (`dk` for `d_k`,
    `dmodel` for `d_model`), or None when there is none or more than one."""
    meant = [s for s in symbols if "_" in s and s.replace("_", "") == word]
    return meant[0] if len(meant) == 1 else None


def _unknown_name(word: str, symbols: frozenset[str]) -> str:
    allowed = ", ".join(sorted(symbols)) if symbols else "none"
    msg = f"unknown name '{word}'. The symbols allowed here are: {allowed}"
    squashed = {s.replace("_", ""): s for s in symbols}
    if word.replace("_", "") in squashed:
        msg += f" (did you mean {squashed[word.replace('_', '')]}?)"
    return msg + "; the functions are " + ", ".join(FUNCTIONS)


# ------------------------------------------------------------------- public API


class Parsed:
    """A parsed answer: the checked tree, how it was read, reading notes, and (on demand)
    the sympy expression (`expr`: the first access imports sympy)."""

    __slots__ = ("tree", "shown", "notes", "symbols", "_expr")

    def __init__(self, tree: Node, shown: str, notes: list[str], symbols: frozenset[str]):
        self.tree = tree
        self.shown = shown  # the reading, with every product and bracket explicit
        self.notes = notes  # warnings about ambiguous writing ("1/2d")
        self.symbols = symbols  # the names that were allowed
        self._expr: sympy.Expr | None = None

    @property
    def expr(self) -> sympy.Expr:
        """The sympy expression (built on first use; raises ExprError like `interpret`)."""
        if self._expr is None:
            self._expr = build_sympy(self.tree, self.symbols)
        return self._expr

    @property
    def note(self) -> str | None:
        """The reading notes as one line for the student; None when there are none."""
        return "; ".join(self.notes) or None


def read(text: str, symbols: Sequence[str] | None, memo: Memo | None = None) -> Parsed:
    """Parse and check `text` without sympy; `symbols=None` is the trusted mode: every
    unknown name is a symbol. Raises ExprError with a message for the student. With a
    `memo`, a text read before with the same symbols is not read again."""
    if memo is not None:
        return memo.of_text("read", text, symbols, lambda: read(text, symbols))
    if isinstance(text, str) and "$" in text:
        text = restore_toml_escapes(text)
    check_raw(text)
    latex = unwrap_latex(text)
    plain = normalize(latex_to_plain(latex) if latex is not None else text)
    if len(plain) > 4 * MAX_LENGTH:
        raise ExprError("the answer is too long")
    declared = frozenset(canonical_symbol(s) for s in (symbols or ()))
    tokens = tokenize(plain)
    parser = _Parser(tokens, declared, open_names=symbols is None)
    tree = parser.parse()
    check_limits(tree)
    names = declared | _tree_names(tree) if symbols is None else declared
    return Parsed(tree, show(tree), list(dict.fromkeys(parser.notes)), frozenset(names))


def interpret(text: str, symbols: Sequence[str] | None) -> Parsed:
    """`read`, and the sympy expression built and checked too (imports sympy)."""
    parsed = read(text, symbols)
    parsed.expr  # noqa: B018 - built now, so that its errors are raised here
    return parsed


def read_pair(
    answer: str,
    expected: str,
    symbols: Sequence[str] | None,
    reader: Callable[[str, Sequence[str] | None], Parsed] = read,
) -> tuple[Parsed, Parsed] | str:
    """(the answer, the expected) read by `reader` (`read` or `interpret`): the expected with the
    declared `symbols` (None: every name), the answer with the expected's names. An expected
    side that does not parse is the grader's mistake (ValueError); an answer that does not, the
    student's: its message comes back instead of the pair."""
    try:
        want = reader(expected, None if symbols is None else list(symbols))
    except ExprError as err:
        raise ValueError(f"the expected expression {expected!r} does not parse: {err}") from err
    try:
        got = reader(answer, sorted(want.symbols) if symbols is None else list(symbols))
    except ExprError as err:
        return str(err)
    return got, want


def parse(text: str, symbols: Sequence[str]) -> sympy.Expr:
    """The sympy expression for a student's answer; raises ExprError with a readable message."""
    return interpret(text, symbols).expr


def _tree_names(tree: Node) -> set[str]:
    return {node.name for node in postorder(tree) if isinstance(node, Sym)}
