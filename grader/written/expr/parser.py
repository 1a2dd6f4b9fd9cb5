"""A safe parser for students' written expressions: text in, a checked tree out.

Nothing here calls `eval`, `sympify` or `parse_expr`. The text is normalised, split into
tokens by hand, read by a small recursive-descent parser into a tree of tuples, and checked
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

import math
import re
import unicodedata
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sympy

MAX_LENGTH = 2000  # characters in one answer
MAX_DEPTH = 60  # nested brackets / calls / unary signs
MAX_NODES = 1000  # tree nodes after parsing
MAX_POWER_NESTING = 3  # a^b^c^d is the deepest tower accepted
MAX_DIGITS = 30  # digits in one number literal
MAX_NAME = 100  # letters in one run of names written together ("dd_ff")
MAX_SYMBOLIC_EXPONENT = 1000  # |n| in x^n
MAX_RESULT_DIGITS = 10_000  # digits of a constant power such as 10^100
MAX_FOLD_BITS = 35_000  # bits of a rational constant folded exactly (10^10000 has 33 220)

FUNCTIONS = (
    "exp", "log", "ln", "sqrt", "tanh", "sigmoid", "sinh", "cosh", "abs", "max", "min", "cos", "sin",
)  # fmt: skip
CONSTANTS = ("e", "pi")

GREEK = {
    "α": "alpha", "β": "beta", "γ": "gamma", "δ": "delta", "ε": "epsilon", "ϵ": "epsilon",
    "ζ": "zeta", "η": "eta", "θ": "theta", "ϑ": "theta", "ι": "iota", "κ": "kappa",
    "λ": "lambda", "μ": "mu", "µ": "mu", "ν": "nu", "ξ": "xi", "ο": "omicron", "π": "pi",
    "ρ": "rho", "σ": "sigma", "ς": "sigma", "τ": "tau", "υ": "upsilon", "φ": "phi",
    "ϕ": "phi", "χ": "chi", "ψ": "psi", "ω": "omega", "Γ": "Gamma", "Δ": "Delta",
    "Θ": "Theta", "Λ": "Lambda", "Ξ": "Xi", "Π": "Pi", "Σ": "Sigma", "Φ": "Phi", "Ψ": "Psi",
    "Ω": "Omega",
}  # fmt: skip
GREEK_NAMES = frozenset(GREEK.values())
# Short ASCII names a handout may declare for a Greek letter (`eps` for ε: `lambda` is a
# Python keyword, `epsilon` a long word); the letter and its full name read as that symbol.
GREEK_SHORT = {"eps": "epsilon", "lam": "lambda", "lmbda": "lambda", "lmb": "lambda"}

_REPLACE = {
    "\u2212": "-", "\u2013": "-", "\u2014": "-", "\u2010": "-", "\u2011": "-", "\ufe63": "-",
    "\uff0d": "-", "\u00d7": "*", "\u22c5": "*", "\u00b7": "*", "\u2219": "*", "\u2022": "*",
    "\u2217": "*", "\u00f7": "/", "\u2215": "/", "\u2044": "/",
}  # fmt: skip
_SUPERSCRIPTS = {"⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6",
                 "⁷": "7", "⁸": "8", "⁹": "9", "⁻": "-"}  # fmt: skip
_SUBSCRIPTS = {"₀": "0", "₁": "1", "₂": "2", "₃": "3", "₄": "4", "₅": "5", "₆": "6",
               "₇": "7", "₈": "8", "₉": "9"}  # fmt: skip


class ExprError(ValueError):
    """An answer that cannot be read; the message is meant for the student."""


# ---------------------------------------------------------------------------- text


def _check_raw(text: Any) -> str:
    if not isinstance(text, str):
        raise ExprError(f"expected the expression as text, got {type(text).__name__}")
    if len(text) > MAX_LENGTH:
        raise ExprError(
            f"the answer is too long ({len(text)} characters; the limit is {MAX_LENGTH})"
        )
    for i, ch in enumerate(text):
        if ch in "\n\r":
            continue
        if ch == "\t" and not text[i + 1 : i + 2].isalpha():
            continue  # a TAB used as a space; one before letters is an eaten `\t` ("\tanh")
        if ch in _TOML_ESCAPES:
            raise ExprError(_toml_escape_message(ch))
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co"):
            raise ExprError(
                f"the answer contains an invisible control character (U+{ord(ch):04X}); "
                "retype it with plain characters"
            )
    return text


def _toml_escape_message(ch: str) -> str:
    """A TAB, backspace or form feed: almost always a TOML escape that ate a backslash."""
    escape = "\\" + _TOML_ESCAPES[ch]
    name = {"\t": "a TAB", "\x08": "a backspace", "\x0c": "a form feed"}[ch]
    example = {"\t": "\\tanh", "\x08": "\\beta", "\x0c": "\\frac"}[ch]
    return (
        f'the answer contains {name} character (U+{ord(ch):04X}): in a TOML "…" string, '
        f"`{escape}` is read as {name}, so `{example}` loses its `{escape}`. Write the answer "
        f"as a literal string in single quotes, '…', where backslashes stay as typed"
    )


def normalize(text: str) -> str:
    """Plain-ASCII form of an answer: Unicode operators, Greek, super/subscripts, spaces."""
    out: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in _SUPERSCRIPTS:
            j = i
            while j < len(text) and text[j] in _SUPERSCRIPTS:
                j += 1
            out.append("^(" + "".join(_SUPERSCRIPTS[c] for c in text[i:j]) + ")")
            i = j
            continue
        if ch in _SUBSCRIPTS:
            j = i
            while j < len(text) and text[j] in _SUBSCRIPTS:
                j += 1
            out.append("_" + "".join(_SUBSCRIPTS[c] for c in text[i:j]))
            i = j
            continue
        if ch in _REPLACE:
            out.append(_REPLACE[ch])
        elif ch in GREEK:
            out.append(GREEK[ch])
        elif ch == "√":
            out.append(" sqrt ")
        elif ch.isspace():
            out.append(" ")
        else:
            # fullwidth forms and the like; NFKC keeps letters and digits as they read
            out.append(unicodedata.normalize("NFKC", ch))
        i += 1
    plain = "".join(out)
    # subscripts in braces: d_{ff} is d_ff
    return re.sub(r"_\{\s*([A-Za-z0-9]+)\s*\}", r"_\1", plain)


def canonical_symbol(name: str) -> str:
    """The ASCII name of a declared symbol: `α` -> `alpha`, `d_{ff}` -> `d_ff`."""
    plain = normalize(name).strip()
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", plain):
        raise ValueError(f"bad symbol name {name!r}: expected letters, digits and _ only")
    return plain


# -------------------------------------------------------------------------- LaTeX

_LATEX_FUNCTIONS = {"exp", "log", "ln", "tanh", "sinh", "cosh", "sin", "cos", "max", "min"}
_LATEX_OPS = {"cdot": "*", "times": "*", "ast": "*", "div": "/"}
_LATEX_SPACES = {",", ";", ":", "!", " ", "quad", "qquad", "displaystyle", "textstyle"}
_LATEX_SIZES = {"big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "left", "right"}
_LATEX_WORDS = {"mathrm", "mathit", "operatorname", "text", "textrm", "mathbf"}
_LATEX_GREEK_VARIANTS = {"varepsilon": "epsilon", "vartheta": "theta", "varphi": "phi",
                         "varsigma": "sigma", "varrho": "rho"}  # fmt: skip


def unwrap_latex(text: str) -> str | None:
    """The LaTeX inside `$…$`, `$$…$$` or `\\(…\\)`, or None when the text is not LaTeX."""
    s = text.strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if s.startswith(left) and s.endswith(right) and len(s) >= len(left) + len(right):
            inner = s[len(left) : len(s) - len(right)]
            if "$" in inner:
                raise ExprError("write one LaTeX expression between a single pair of $ signs")
            return inner
    if "$" in s:
        raise ExprError("put the whole LaTeX expression between $ signs, e.g. $\\frac{1}{d}$")
    return None


class _Latex:
    """A small LaTeX-to-plain translator for the commands the handouts use."""

    def __init__(self, src: str) -> None:
        self.src = src
        self.i = 0
        self.depth = 0

    def error(self, msg: str) -> ExprError:
        return ExprError(f"LaTeX: {msg}")

    def command(self) -> str:
        m = re.compile(r"\\([A-Za-z]+|.)").match(self.src, self.i)
        if not m:
            raise self.error("a lone backslash at the end")
        self.i = m.end()
        return m.group(1)

    def skip_space(self) -> None:
        while self.i < len(self.src) and self.src[self.i].isspace():
            self.i += 1

    def group(self) -> str:
        """One argument: `{…}` or a single character/command, translated."""
        self.skip_space()
        if self.i >= len(self.src):
            raise self.error("a command is missing its argument")
        if self.src[self.i] == "{":
            self.i += 1
            inner = self.sequence(stop="}")
            self.i += 1
            return inner
        if self.src[self.i] == "\\":
            return self.atom()
        ch = self.src[self.i]
        self.i += 1
        return ch

    def word(self) -> str:
        """The letters in `\\mathrm{…}` and friends."""
        self.skip_space()
        m = re.compile(r"\{\s*([A-Za-z][A-Za-z0-9_ ]*?)\s*\}").match(self.src, self.i)
        if not m:
            raise self.error("\\mathrm{…} and \\operatorname{…} may hold only a name")
        self.i = m.end()
        return m.group(1).replace(" ", "")

    def delimiter(self) -> str:
        self.skip_space()
        if self.src.startswith("\\{", self.i) or self.src.startswith("\\}", self.i):
            self.i += 2
            return "(" if self.src[self.i - 1] == "{" else ")"
        if self.src.startswith("\\lvert", self.i) or self.src.startswith("\\rvert", self.i):
            raise self.error("write abs(…) instead of |…|")
        ch = self.src[self.i : self.i + 1]
        self.i += 1
        return {"(": "(", ")": ")", "[": "(", "]": ")", ".": ""}.get(ch) or self._bad_delim(ch)

    def _bad_delim(self, ch: str) -> str:
        if ch == "|":
            raise self.error("write abs(…) instead of |…|")
        raise self.error(f"unsupported delimiter {ch!r} after \\left or \\right")

    def atom(self) -> str:
        name = self.command()
        if name in ("frac", "dfrac", "tfrac"):
            num, den = self.group(), self.group()
            return f"(({num})/({den}))"
        if name == "sqrt":
            self.skip_space()
            if self.src.startswith("[", self.i):
                self.i += 1
                index = self.sequence(stop="]")
                self.i += 1
                return f"(({self.group()})^(1/({index})))"
            return f"sqrt({self.group()})"
        if name in _LATEX_OPS:
            return _LATEX_OPS[name]
        if name in _LATEX_SPACES:
            return " "
        if name in _LATEX_SIZES:
            return self.delimiter()
        if name in ("{", "}"):
            return "(" if name == "{" else ")"
        if name in _LATEX_FUNCTIONS or name in ("sigma", "pi") or name in GREEK_NAMES:
            return f" {name} "
        if name in _LATEX_GREEK_VARIANTS:
            return f" {_LATEX_GREEK_VARIANTS[name]} "
        if name in _LATEX_WORDS:
            return f" {self.word()} "
        raise self.error(f"the command \\{name} is not supported here")

    def sequence(self, stop: str | None = None) -> str:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise self.error("too deeply nested")
        out: list[str] = []
        while self.i < len(self.src):
            ch = self.src[self.i]
            if stop is not None and ch == stop:
                self.depth -= 1
                return "".join(out)
            if ch == "\\":
                out.append(self.atom())
            elif ch == "{":
                self.i += 1
                out.append("(" + self.sequence(stop="}") + ")")
                self.i += 1
            elif ch == "}":
                raise self.error("a closing } without its opening {")
            elif ch == "^":
                self.i += 1
                out.append(f"^({self.group()})")
            elif ch == "_":
                self.i += 1
                sub = self.group().strip()
                if not re.fullmatch(r"[A-Za-z0-9]+", sub):
                    raise self.error(f"a subscript may hold only letters and digits, got {sub!r}")
                out.append("_" + sub)
            else:
                out.append(ch)
                self.i += 1
        if stop is not None:
            raise self.error(f"a {'{' if stop == '}' else '['} is never closed")
        self.depth -= 1
        return "".join(out)


_KNOWN_COMMANDS = (
    {"frac", "dfrac", "tfrac", "sqrt", "left", "right", "big", "Big", "bigl", "bigr", "mathrm",
     "mathit", "mathbf", "operatorname", "text", "textrm", "quad", "qquad", "displaystyle",
     "textstyle"} | _LATEX_FUNCTIONS | set(_LATEX_OPS) | set(_LATEX_GREEK_VARIANTS) | GREEK_NAMES
)  # fmt: skip


_TOML_ESCAPES = {"\x08": "b", "\x0c": "f", "\t": "t", "\n": "n", "\r": "r"}


def restore_toml_escapes(text: str) -> str:
    """Undo TOML's escapes inside LaTeX written in a "..." string with single backslashes.

    TOML reads `\\frac` as a form feed and "rac", `\\tanh` as a tab and "anh": a control
    character followed by the rest of a known command is put back as that command.
    """

    def put_back(m: re.Match[str]) -> str:
        letter = _TOML_ESCAPES[m.group(1)]
        word = letter + m.group(2)
        return "\\" + word if word in _KNOWN_COMMANDS else m.group(0)

    return re.sub(r"([\x08\x0c\t\n\r])([A-Za-z]*)", put_back, text)


def latex_to_plain(src: str) -> str:
    """Translate the LaTeX subset the handouts use (\\frac, \\sqrt, ^{}, _{}, \\cdot, ...)."""
    plain = _Latex(src).sequence()
    # `_ff` after a name written as `d _{ff}` or `\alpha _1`: glue it back
    return re.sub(r"\s+_", "_", plain)


# ------------------------------------------------------------------------- tokens

_TOKEN = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<name>[A-Za-z][A-Za-z0-9_]*)
  | (?P<pow>\*\*|\^)
  | (?P<op>[-+*/(),{}])
  """,
    re.VERBOSE,
)

_BAD_CHARS = {
    "!": "factorials (!) are not supported",
    "=": "write only the expression: no '=' and nothing left of it",
    "[": "square brackets are not allowed; use round brackets ( )",
    "]": "square brackets are not allowed; use round brackets ( )",
    "|": "write abs(…) instead of |…|",
    "'": "quotes are not allowed inside an expression",
    '"': "quotes are not allowed inside an expression",
    ".": "a '.' may only appear inside a number such as 0.5",
    "_": "a name must start with a letter",
    ":": "':' is not allowed in an expression",
    ";": "';' is not allowed in an expression",
    "\\": "LaTeX must be written between $ signs, e.g. $\\frac{1}{d}$",
    "$": "LaTeX must be written between a pair of $ signs",
}


def tokenize(text: str) -> list[tuple[str, str, int]]:
    """(kind, text, position) tokens; kinds: number, name, pow, op."""
    tokens: list[tuple[str, str, int]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            ch = text[pos]
            hint = _BAD_CHARS.get(ch, "")
            raise ExprError(
                f"unexpected character {ch!r} at position {pos + 1}" + (f": {hint}" if hint else "")
            )
        kind = m.lastgroup or ""
        if kind != "space":
            tok = m.group()
            if kind == "op" and tok in "{}":
                tok = "(" if tok == "{" else ")"
            tokens.append((kind, tok, pos))
        pos = m.end()
    return tokens


# ------------------------------------------------------------------------- parser

# Tree nodes are tuples: ("num", Fraction, text), ("sym", name), ("const", name),
# ("+"|"-"|"*"|"/"|"^", left, right), ("neg", operand), ("call", fname, (args...)),
# and ("imul", left, right) for a product written without `*`.


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

    def node(self, *parts: Any) -> tuple:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise ExprError("the answer is too long or too complex to check")
        return tuple(parts)

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
    def parse(self) -> tuple:
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

    def sum(self) -> tuple:
        left = self.term()
        while (t := self.peek()) is not None and t[1] in "+-" and t[0] == "op":
            self.k += 1
            left = self.node(t[1], left, self.term())
        return left

    def starts_factor(self, t: tuple[str, str, int] | None) -> bool:
        return t is not None and (t[0] in ("number", "name") or t[1] == "(")

    def term(self) -> tuple:
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
                left = self.node(t[1], left, right)
            elif self.starts_factor(t):
                left = self.node("imul", left, self.power())
            else:
                return left

    def unary(self) -> tuple:
        t = self.peek()
        if t is not None and t[0] == "op" and t[1] in "+-":
            self.k += 1
            self.enter()
            operand = self.unary()
            self.depth -= 1
            return operand if t[1] == "+" else self.node("neg", operand)
        return self.power()

    def power(self) -> tuple:
        base = self.primary()
        t = self.peek()
        if t is not None and t[0] == "pow":
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
            return self.node("^", base, exponent)
        return base

    def primary(self) -> tuple:
        t = self.peek()
        if t is None:
            raise ExprError(
                "the answer ends too early: something is missing after the last operator"
            )
        kind, tok, pos = t
        if kind == "number":
            self.k += 1
            return self.node("num", _number(tok), tok)
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

    def name(self, word: str, pos: int) -> tuple:
        nxt = self.peek()
        call_next = nxt is not None and nxt[1] == "("
        word = self.aliases.get(word, word)
        if word in self.symbols:
            return self.node("sym", word)
        fname = _function_name(word, self.symbols)
        if fname is not None:
            return self.call(fname, word, pos)
        if word in CONSTANTS:
            return self.node("const", word)
        if self.open_names:
            return self.node("sym", word)
        if len(word) > MAX_NAME:
            raise ExprError(f"the name at position {pos + 1} is too long ({len(word)} letters)")
        pieces = _segment(word, self.symbols, call_next)
        if pieces is None:
            raise ExprError(_unknown_name(word, self.symbols))
        tree: tuple | None = None
        for piece in pieces:
            if piece in self.symbols:
                part = self.node("sym", piece)
            else:
                part = self.call(_function_name(piece, self.symbols) or piece, piece, pos)
            tree = part if tree is None else self.node("imul", tree, part)
        assert tree is not None
        return tree

    def call(self, fname: str, word: str, pos: int) -> tuple:
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
            return self.node("call", fname, (arg,))
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
        return self.node("call", fname, tuple(args))

    def function_power(self, fname: str, word: str, pos: int) -> tuple:
        """`tanh^2(z)`, `tanh^2 z`, `\\sin^2(x)`: the standard power of a function's value,
        (tanh(z))^2; the exponent must be a positive whole number (`tanh^{-1}` is the inverse
        function in that notation, which the answers do not use)."""
        self.k += 1  # the ^
        t = self.peek()
        exponent: tuple | None = None
        if t is not None and t[0] == "number":
            self.k += 1
            exponent = self.node("num", _number(t[1]), t[1])
        elif t is not None and t[1] == "(":
            # `^(2)`, which is how LaTeX's `^2` and `^{2}` arrive here
            close = self.peek(2)
            inner = self.peek(1)
            if inner is not None and inner[0] == "number" and close is not None and close[1] == ")":
                self.k += 3
                exponent = self.node("num", _number(inner[1]), inner[1])
        if exponent is None or exponent[1].denominator != 1 or exponent[1] < 1:
            raise ExprError(
                f"{word}^… at position {pos + 1}: a power written on the function name must be a "
                f"positive whole number, as in {word}^2(z) = ({word}(z))^2; "
                f"otherwise write ({word}(…))^(…)"
            )
        value = self.call(fname, word, pos)
        return self.node("^", value, exponent)


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


def _unknown_name(word: str, symbols: frozenset[str]) -> str:
    allowed = ", ".join(sorted(symbols)) if symbols else "none"
    msg = f"unknown name '{word}'. The symbols allowed here are: {allowed}"
    squashed = {s.replace("_", ""): s for s in symbols}
    if word.replace("_", "") in squashed:
        msg += f" (did you mean {squashed[word.replace('_', '')]}?)"
    return msg + "; the functions are " + ", ".join(FUNCTIONS)


# ------------------------------------------------------------ limits on the tree

_UNDEFINED = "the answer is undefined (a division by zero?)"


def _children(tree: tuple) -> tuple[tuple, ...]:
    kind = tree[0]
    if kind in ("num", "sym", "const"):
        return ()
    if kind == "call":
        return tuple(tree[2])
    if kind == "neg":
        return (tree[1],)
    return (tree[1], tree[2])


def postorder(tree: tuple) -> list[tuple]:
    """Every node once, children before parents, without recursion (long sums are deep)."""
    out: list[tuple] = []
    stack: list[tuple[tuple, bool]] = [(tree, False)]
    while stack:
        node, expanded = stack.pop()
        if expanded:
            out.append(node)
            continue
        stack.append((node, True))
        for child in reversed(_children(node)):
            stack.append((child, False))
    return out


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


def check_limits(tree: tuple) -> dict[int, Fraction]:
    """The guards that must hold before anything is evaluated, on the tree itself.

    Rational constant subtrees are folded exactly (Fractions) to find exponents and
    divisors: `x^(10^12)` and `9^9^9` are refused (the exponent is too large), `10^20000`
    too (too many digits), `1/0` and `0^-1` are undefined. Returns the folded values by
    node id (the tuples stay alive in `tree`).
    """
    values: dict[int, Fraction] = {}
    for node in postorder(tree):
        kind = node[0]
        if kind == "num":
            values[id(node)] = node[1]
            continue
        _fold(node, values)
        folded = values.get(id(node))
        if (
            folded is not None
            and max(folded.numerator.bit_length(), folded.denominator.bit_length()) > MAX_FOLD_BITS
        ):
            raise ExprError("a number in the answer is too large to compute")
    return values


def _fold(node: tuple, values: dict[int, Fraction]) -> None:
    """Guard one node and fold it when its operands are exact rational constants."""
    kind = node[0]
    if kind in ("sym", "const", "call"):
        return
    if kind == "neg":
        v = values.get(id(node[1]))
        if v is not None:
            values[id(node)] = -v
        return
    a, b = values.get(id(node[1])), values.get(id(node[2]))
    if kind == "^":
        _guard_power_values(a, b)
        if a is not None and b is not None:
            if a == 0 and b < 0:
                raise ExprError(_UNDEFINED)
            if b.denominator == 1:
                values[id(node)] = a ** int(b)
            elif a in (0, 1):
                values[id(node)] = a
        return
    if kind == "/" and b == 0:
        raise ExprError(_UNDEFINED)
    if a is None or b is None:
        return
    if kind == "+":
        values[id(node)] = a + b
    elif kind == "-":
        values[id(node)] = a - b
    elif kind in ("*", "imul"):
        values[id(node)] = a * b
    else:
        values[id(node)] = a / b


# ----------------------------------------------------------------- tree -> sympy


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


def _spine(tree: tuple, family: tuple[str, ...]) -> tuple[tuple, list[tuple[str, tuple]]]:
    """A left-nested chain a op b op c ... as (a, [(op, b), (op, c), ...]), without recursion."""
    rest: list[tuple[str, tuple]] = []
    node = tree
    while node[0] in family:
        rest.append((node[0], node[2]))
        node = node[1]
    rest.reverse()
    return node, rest


def _sympy_funcs() -> dict[str, Any]:
    import sympy

    return {
        "exp": sympy.exp, "log": sympy.log, "ln": sympy.log, "sqrt": sympy.sqrt,
        "tanh": sympy.tanh, "sinh": sympy.sinh, "cosh": sympy.cosh, "cos": sympy.cos,
        "sin": sympy.sin, "abs": sympy.Abs, "max": sympy.Max, "min": sympy.Min,
    }  # fmt: skip


def to_sympy(tree: tuple, symbols: dict[str, sympy.Symbol]) -> sympy.Expr:
    """Build the sympy expression for a checked tree, from the whitelist only."""
    import sympy

    funcs = _sympy_funcs()

    def build(tree: tuple) -> sympy.Expr:
        kind = tree[0]
        if kind == "num":
            frac: Fraction = tree[1]
            return sympy.Rational(frac.numerator, frac.denominator)
        if kind == "sym":
            return symbols[tree[1]]
        if kind == "const":
            return sympy.E if tree[1] == "e" else sympy.pi
        if kind == "neg":
            return -build(tree[1])
        if kind == "call":
            args = [build(a) for a in tree[2]]
            if tree[1] == "sigmoid":
                return 1 / (1 + sympy.exp(-args[0]))
            if tree[1] == "log" and len(args) == 2:
                return sympy.log(args[0]) / sympy.log(args[1])
            return funcs[tree[1]](*args)
        if kind in ("+", "-"):
            first, rest = _spine(tree, ("+", "-"))
            terms = [build(first)]
            for op, node in rest:
                value = build(node)
                terms.append(value if op == "+" else -value)
            return sympy.Add(*terms)
        if kind in ("*", "imul", "/"):
            first, rest = _spine(tree, ("*", "imul", "/"))
            factors = [build(first)]
            for op, node in rest:
                value = build(node)
                factors.append(1 / value if op == "/" else value)
            return sympy.Mul(*factors)
        if kind == "^":
            left, right = build(tree[1]), build(tree[2])
            _guard_power(left, right)
            if left == sympy.E:
                return sympy.exp(right)
            return left**right
        raise AssertionError(f"unknown node {kind}")

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
            raise ExprError(_UNDEFINED)
        if isinstance(node, allowed_atoms):
            continue
        if not isinstance(node, allowed_types):
            raise ExprError(f"{type(node).__name__} is not allowed in an answer")
        if isinstance(node, sympy.Symbol) and node.name not in allowed:
            raise ExprError(f"unknown name '{node.name}'")


# ------------------------------------------------------------------- public API


class Parsed:
    """A parsed answer: the checked tree, how it was read, reading notes, and (on demand)
    the sympy expression (`expr`: the first access imports sympy)."""

    __slots__ = ("tree", "shown", "notes", "symbols", "_expr")

    def __init__(self, tree: tuple, shown: str, notes: list[str], symbols: frozenset[str]):
        self.tree = tree
        self.shown = shown  # the reading, with every product and bracket explicit
        self.notes = notes  # warnings about ambiguous writing ("1/2d")
        self.symbols = symbols  # the names that were allowed
        self._expr: sympy.Expr | None = None

    @property
    def expr(self) -> sympy.Expr:
        """The sympy expression (built on first use; raises ExprError like `interpret`)."""
        if self._expr is None:
            self._expr = _build_sympy(self.tree, self.symbols)
        return self._expr


def _build_sympy(tree: tuple, names: frozenset[str]) -> sympy.Expr:
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


def read(text: str, symbols: Sequence[str] | None) -> Parsed:
    """Parse and check `text` without sympy; `symbols=None` is the trusted mode: every
    unknown name is a symbol. Raises ExprError with a message for the student."""
    if isinstance(text, str) and "$" in text:
        text = restore_toml_escapes(text)
    _check_raw(text)
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


def parse(text: str, symbols: Sequence[str]) -> sympy.Expr:
    """The sympy expression for a student's answer; raises ExprError with a readable message."""
    return interpret(text, symbols).expr


def _tree_names(tree: tuple) -> set[str]:
    return {node[1] for node in postorder(tree) if node[0] == "sym"}


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
    first, rest = _spine(tree, family)
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


# -------------------------------------------------------------- canonical text

# A sum is {monomial: coefficient}; a monomial is a sorted tuple of (factor, exponent),
# a factor is (rank, text): rank 0 for symbols and constants, 1 for calls, 2 for powers
# with a non-integer exponent, 3 for a bracketed sum. Nothing is expanded.
_Factor = tuple[int, str]
_Mono = tuple[tuple[_Factor, int], ...]
_Poly = dict[_Mono, Fraction]


def canonical(tree: tuple) -> str:
    """A normalised text of a checked tree, for grouping equal answers in class statistics.

    Sums and products are flattened and sorted, numbers combined, like terms and equal
    factors collected (`13d + 12d^2` and `d*13 + 12 d d` both read `12*d^2 + 13*d`);
    products of sums are not expanded: `d(12d+13)` stays `d*(12*d + 13)`.
    """
    return _print_poly(_Canon(check_limits(tree)).poly(tree))


class _Canon:
    def __init__(self, exact: dict[int, Fraction]):
        self.exact = exact

    def poly(self, node: tuple) -> _Poly:
        value = self.exact.get(id(node))
        if value is not None:
            return {(): value} if value else {}
        kind = node[0]
        if kind in ("sym", "const"):
            return {(((0, node[1]), 1),): Fraction(1)}
        if kind == "neg":
            return {m: -c for m, c in self.poly(node[1]).items()}
        if kind in ("+", "-"):
            first, rest = _spine(node, ("+", "-"))
            total = dict(self.poly(first))
            for op, part in rest:
                for m, c in self.poly(part).items():
                    total[m] = total.get(m, Fraction(0)) + (c if op == "+" else -c)
            return {m: c for m, c in total.items() if c}
        if kind in ("*", "imul", "/"):
            first, rest = _spine(node, ("*", "imul", "/"))
            coef, factors = Fraction(1), {}
            for op, part in [("*", first), *rest]:
                sign = -1 if op == "/" else 1
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
        if kind == "^":
            return self.power(node)
        # a call
        name = {"ln": "log"}.get(node[1], node[1])
        args = [_print_poly(self.poly(a)) for a in node[2]]
        if name in ("max", "min"):
            args.sort()
        return {(((1, f"{name}(" + ", ".join(args) + ")"), 1),): Fraction(1)}

    def power(self, node: tuple) -> _Poly:
        base, exponent = node[1], node[2]
        n = self.exact.get(id(exponent))
        if base[0] == "const" and base[1] == "e":
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
