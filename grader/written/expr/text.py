"""An answer's characters made plain: refused control characters, Unicode operators,
Greek letters and super/subscripts written in ASCII, declared symbol names in one spelling."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

from grader.written.expr.errors import ExprError
from grader.written.expr.limits import MAX_LENGTH

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
    "\u1d40": "^T ", "\u22a4": "^T ",  # ᵀ and ⊤ after a vector: its transpose
}  # fmt: skip
_SUPERSCRIPTS = {"⁰": "0", "¹": "1", "²": "2", "³": "3", "⁴": "4", "⁵": "5", "⁶": "6",
                 "⁷": "7", "⁸": "8", "⁹": "9", "⁻": "-"}  # fmt: skip
_SUBSCRIPTS = {"₀": "0", "₁": "1", "₂": "2", "₃": "3", "₄": "4", "₅": "5", "₆": "6",
               "₇": "7", "₈": "8", "₉": "9"}  # fmt: skip


# TOML's escapes: in a "..." string, `\t`, `\b` and `\f` (and `\n`, `\r`) eat a backslash
TOML_ESCAPES = {"\x08": "b", "\x0c": "f", "\t": "t", "\n": "n", "\r": "r"}


def check_raw(text: Any) -> str:
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
        if ch in TOML_ESCAPES:
            raise ExprError(_toml_escape_message(ch))
        if unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co"):
            raise ExprError(
                f"the answer contains an invisible control character (U+{ord(ch):04X}); "
                "retype it with plain characters"
            )
    return text


def _toml_escape_message(ch: str) -> str:
    """A TAB, backspace or form feed: almost always a TOML escape that ate a backslash."""
    escape = "\\" + TOML_ESCAPES[ch]
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


@lru_cache(maxsize=4096)  # every read normalises the same few declared names again
def canonical_symbol(name: str) -> str:
    """The ASCII name of a declared symbol: `α` -> `alpha`, `d_{ff}` -> `d_ff`."""
    plain = normalize(name).strip()
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", plain):
        raise ValueError(f"bad symbol name {name!r}: expected letters, digits and _ only")
    return plain
