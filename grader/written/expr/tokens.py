"""Plain answer text split into tokens (numbers, names, powers, operators), with a hint
for each character that has no place in an expression."""

from __future__ import annotations

import re

from grader.written.expr.errors import ExprError

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
