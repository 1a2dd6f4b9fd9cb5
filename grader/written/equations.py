"""`LHS = RHS` in an expression answer, and chains of steps `a = b = c`.

An answer may name the quantity before giving it: `dh/dz = 1 - h^2`,
`$\\frac{\\partial J}{\\partial v_c} = -u_o + …$`, `J = …`. When the left-hand side is a
label (a single symbol, or a derivative written `dX/dY`, `∂X/∂Y`, `\\frac{dX}{dY}`,
`\\nabla_{Y} X`, `X'` or `f'(z)`), the right-hand side is graded and the feedback says so.
Splitting happens outside `$…$` and inside it alike: `$a = b$` is the steps `$a$`, `$b$`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

MAX_PARTS = 200  # `=` signs read in one answer; a longer chain is refused before any check

_D = r"(?:d|\\partial|∂|\\mathrm\{d\})"
_NAME = (
    r"(?:\\?[A-Za-zα-ωΑ-Ω]+(?:_\{[^{}=]{1,40}\}|_[A-Za-z0-9]+)?(?:\^\{?\(?[0-9t+\-]{1,6}\)?\}?)?)"
)
_NAME_ARGS = _NAME + r"(?:\([^()=]{0,60}\))?"


@cache
def _labels() -> tuple[re.Pattern[str], ...]:
    """The forms of a label (compiled when an answer is first split: about 6 ms)."""
    return (
        re.compile(
            r"\\[dt]?frac\{\s*"
            + _D
            + r"\s*\{?"
            + _NAME_ARGS
            + r"\}?\s*\}\{\s*"
            + _D
            + r"\s*\{?"
            + _NAME
            + r"\}?\s*\}"
        ),
        re.compile(
            _D
            + r"\s*\(?\s*"
            + _NAME_ARGS
            + r"\s*\)?\s*/\s*"
            + _D
            + r"\s*\(?\s*"
            + _NAME
            + r"\s*\)?"
        ),
        re.compile(r"(?:\\nabla|∇)\s*(?:_\{?" + _NAME + r"\}?)?\s*" + _NAME_ARGS),
        re.compile(_NAME + r"\s*(?:'|′|\^\{?\\prime\}?)+\s*(?:\([^()=]{0,60}\))?"),
        re.compile(_NAME_ARGS),
    )


@cache
def operator() -> re.Pattern[str]:
    """A derivative operator applied to what follows: d/dz (…),
    \\frac{\\partial}{\\partial z_b} …"""
    return re.compile(
        r"\s*(?:\\[dt]?frac\{\s*" + _D + r"\s*\}\{\s*" + _D + r"\s*\{?(?P<a>" + _NAME + r")\}?\s*\}"
        r"|" + _D + r"\s*/\s*" + _D + r"\s*(?P<b>" + _NAME + r"))\s*"
    )


_FUNCTIONS = {"exp", "log", "ln", "sqrt", "tanh", "sigmoid", "sinh", "cosh", "abs", "max", "min",
              "cos", "sin", "sigma"}  # fmt: skip


@dataclass(frozen=True)
class Parts:
    """An answer split at its `=` signs (outside brackets), LaTeX parts rewrapped in `$…$`."""

    parts: tuple[str, ...]
    label: str | None
    """The first part when it names the quantity (dropped from `parts`)."""


def _unwrapped(text: str) -> tuple[str, bool]:
    s = text.strip()
    if "$" not in s:
        return s, False
    return s.replace("$$", "$").replace("$", " ").strip(), True


def split_equals(text: str) -> list[str]:
    """The parts of `text` between top-level `=` signs (`==` counts as one sign)."""
    body, latex = _unwrapped(text)
    body = body.replace("==", "=").replace("\\approx", "=").replace("≈", "=")
    pieces: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(body):
        if ch in "({[":
            depth += 1
        elif ch in ")}]":
            depth = max(0, depth - 1)
        elif ch == "=" and depth == 0 and (i == 0 or body[i - 1] not in "<>!:"):
            pieces.append(body[start:i])
            start = i + 1
            if len(pieces) > MAX_PARTS:
                break
    pieces.append(body[start:])
    pieces = [p.strip() for p in pieces]
    return [f"${p}$" if latex else p for p in pieces]


def is_label(part: str) -> bool:
    """A single symbol or a derivative written as a name for the quantity (not an expression)."""
    body, _ = _unwrapped(part)
    body = re.sub(r"\\(left|right|,|;|!|quad)", "", body).strip()
    found = operator().match(body) if body else None
    if not body or found and found.end() < len(body):
        return False
    labels = _labels()
    if any(p.fullmatch(body) for p in labels[:-1]):
        return True
    if labels[-1].fullmatch(body):
        head = re.match(r"\\?([A-Za-z]+)", body)
        return not (head and head.group(1).lower() in _FUNCTIONS)
    return False


def parts_of(text: str) -> Parts:
    """`text` split at `=`, the first part dropped when it is a label and more follow."""
    pieces = split_equals(text)
    if len(pieces) > 1 and is_label(pieces[0]):
        return Parts(tuple(pieces[1:]), pieces[0])
    return Parts(tuple(pieces), None)
