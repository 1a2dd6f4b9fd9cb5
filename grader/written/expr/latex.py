"""LaTeX between `$…$` translated into the plain answer syntax, for the commands the
handouts use; TOML escapes that ate a LaTeX backslash are put back first."""

from __future__ import annotations

import re

from grader.written.expr.errors import ExprError
from grader.written.expr.limits import MAX_DEPTH
from grader.written.expr.text import GREEK_NAMES, TOML_ESCAPES

_COMMAND = re.compile(r"\\([A-Za-z]+)")
_LATEX_FUNCTIONS = {"exp", "log", "ln", "tanh", "sinh", "cosh", "sin", "cos", "max", "min"}
_LATEX_OPS = {"cdot": "*", "times": "*", "ast": "*", "div": "/"}
_LATEX_SPACES = {",", ";", ":", "!", " ", "quad", "qquad", "displaystyle", "textstyle"}
_LATEX_SIZES = {"big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr", "left", "right"}
_LATEX_WORDS = {"mathrm", "mathit", "operatorname", "text", "textrm", "mathbf"}
_LATEX_GREEK_VARIANTS = {"varepsilon": "epsilon", "vartheta": "theta", "varphi": "phi",
                         "varsigma": "sigma", "varrho": "rho"}  # fmt: skip


def unwrap_latex(text: str) -> str | None:
    """The LaTeX inside `$…$`, `$$…$$` or `\\(…\\)`, the whole text when it uses a known LaTeX
    command without them (`\\frac{1}{\\sqrt{d_k}}`), or None when the text is not LaTeX."""
    s = text.strip()
    for left, right in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if s.startswith(left) and s.endswith(right) and len(s) >= len(left) + len(right):
            inner = s[len(left) : len(s) - len(right)]
            if "$" in inner:
                raise ExprError("write one LaTeX expression between a single pair of $ signs")
            return inner
    if "$" in s:
        raise ExprError("put the whole LaTeX expression between $ signs, e.g. $\\frac{1}{d}$")
    if any(m.group(1) in _KNOWN_COMMANDS for m in _COMMAND.finditer(s)):
        return s  # LaTeX without its $ signs: a backslash command means nothing else here
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
        if name in ("top", "intercal"):
            return " T "  # a transpose, as in `u^\\top v`: read by the parser's `^T`
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
     "textstyle", "top", "intercal"} | _LATEX_FUNCTIONS | set(_LATEX_OPS) | set(_LATEX_GREEK_VARIANTS) | GREEK_NAMES
)  # fmt: skip


def restore_toml_escapes(text: str) -> str:
    """Undo TOML's escapes inside LaTeX written in a "..." string with single backslashes.

    TOML reads `\\frac` as a form feed and "rac", `\\tanh` as a tab and "anh": a control
    character followed by the rest of a known command is put back as that command.
    """

    def put_back(m: re.Match[str]) -> str:
        letter = TOML_ESCAPES[m.group(1)]
        word = letter + m.group(2)
        return "\\" + word if word in _KNOWN_COMMANDS else m.group(0)

    return re.sub(r"([\x08\x0c\t\n\r])([A-Za-z]*)", put_back, text)


def latex_to_plain(src: str) -> str:
    """Translate the LaTeX subset the handouts use (\\frac, \\sqrt, ^{}, _{}, \\cdot, ...)."""
    plain = _Latex(src).sequence()
    # `_ff` after a name written as `d _{ff}` or `\alpha _1`: glue it back
    return re.sub(r"\s+_", "_", plain)
