"""Reading a number answer (and an array or a shape of numbers) as students write one, and
saying how it was read.

Beyond a plain number (`12.53`, `1e-3`, `"1/3"`), a number question reads:
- thousands separators, one kind per number, in groups of three: `124,439,808`,
  `124 439 808` (plain, thin or no-break spaces), `124_439_808`, `124'439'808`;
- an SI-suffixed or worded count: `124.4M`, `1.5B`, `3k`, `2.5 million` (k, M, B or G, T);
- arithmetic, read by the safe expression parser with no symbols: `12*8*1024^2`,
  `$e^{2.45}$`, `exp(2.45)`, `2^20`;
- a factor: `4x`, `x4`, `×4`, `4 times`, `4-fold` (a number question has no symbol `x`);
- one number written two ways: `0.25 (1/4)`, `1/3 (0.333)` (the more precise is read).
Anything else is refused with a message that says what a number looks like here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal

from grader.written.answers import AnswerFormatError, _describe, as_number

How = Literal["plain", "separators", "suffix", "arithmetic", "factor"]

_SEPARATORS = ",_' \u00a0\u2009\u202f"
_GROUPED = re.compile(
    r"[+-]?\d{1,3}(?P<sep>[" + _SEPARATORS + r"])\d{3}(?:(?P=sep)\d{3})*(?:\.\d+)?"
)  # linear: fixed groups
_SUFFIXES = {"k": 3, "K": 3, "M": 6, "B": 9, "G": 9, "T": 12}
_WORDS = {"thousand": 3, "million": 6, "billion": 9, "trillion": 12}
_SUFFIXED = re.compile(
    r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*(?P<suffix>[kKMBGT]|thousand|million|billion|trillion)"
)
_NUM = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
_PLAIN = re.compile(rf"{_NUM}(?:\s*/\s*{_NUM})?")  # a number, or a fraction of two
_DECIMAL_COMMA = re.compile(r"[+-]?\d+,\d+")
_FACTOR = re.compile(
    rf"(?:[x×*]\s*(?P<before>{_NUM})|(?P<after>{_NUM})\s*(?:[x×]|times|-?fold))", re.IGNORECASE
)
MAX_TEXT = 200  # characters of a number answer read as arithmetic


@dataclass(frozen=True)
class NumberReading:
    """A number answer, read."""

    value: float
    how: How
    """Plain | separators | suffix (an SI or worded count) | arithmetic."""
    written: str
    """The text as written (for feedback)."""
    unit: float | None = None
    """suffix: the place value of the last digit written (1e5 for 124.4M)."""
    set_aside: str | None = None
    """What around the number was not read: "`p =` set aside"."""

    @property
    def note(self) -> str | None:
        """How the answer was read, when it was not a plain number."""
        whats = [self.set_aside] if self.set_aside else []
        if self.how != "plain":
            whats.append(
                {
                    "separators": "thousands separators dropped",
                    "suffix": "the suffix read as a power of ten",
                    "arithmetic": "the arithmetic evaluated",
                    "factor": "a factor",
                }[self.how]
            )
        if not whats:
            return None
        return f"`{self.written}` was read as {show_number(self.value)} ({'; '.join(whats)})"


def show_number(x: float) -> str:
    """A number as it can be typed back: integers as integers, others in their shortest form."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return repr(x)


def read_number(value: Any, example: str = "0.25") -> NumberReading:
    """A number answer, read as docs/answers.md says; AnswerFormatError (teaching) otherwise."""
    if not isinstance(value, str) or isinstance(value, bool):
        return NumberReading(as_number(value), "plain", str(value))
    written = value.strip().replace("\u2212", "-")
    text, set_aside = _bare(written)
    reading = _read_text(value, text, example)
    if set_aside is None:
        return reading
    return replace(reading, written=written, set_aside=set_aside)


_LABEL = re.compile(r"(?P<label>.*)(?P<sign>=|≈)\s*(?P<rest>[^=≈]*)", re.S)
_APPROX = re.compile(r"(?:~|≈|about|approx\.?|approximately)\s*(?P<rest>\S.*)", re.I | re.S)
_ASIDE = re.compile(r"(?P<rest>.*?\S)\s*\((?P<aside>[^()\d]*)\)", re.S)
_END_STOP = re.compile(r"(?P<rest>[+-]?\d*\.\d+)\.")
_TWICE = re.compile(rf"(?P<first>{_PLAIN.pattern})\s*\(\s*(?P<second>{_PLAIN.pattern})\s*\)")


def _bare(text: str) -> tuple[str, str | None]:
    """The number's own text without what only surrounds it: a label and `=` (`p = 1/3`), an
    approximation sign (`≈ 0.94`, `~0.94`), a remark in brackets (`0.94 (rounded)`), a full
    stop after a decimal (`0.94.`); and what was set aside, in words."""
    if len(text) > MAX_TEXT:  # too long to be a number: refused as it is
        return text, None
    aside = []
    marked = text
    while len(marked) > 2 and marked[0] in "*_`" and marked[-1] == marked[0]:
        marked = marked[1:-1].strip()  # markdown's **0.94** or `0.94`
    if marked != text:
        text = marked
        aside.append("the markdown around it set aside")
    if (m := _LABEL.fullmatch(text)) and m.group("rest").strip():
        label = m.group("label").strip()
        text = m.group("rest").strip()
        sign = m.group("sign")
        aside.append(f"`{label} {sign}` set aside" if label else f"the `{sign}` set aside")
    if m := _APPROX.fullmatch(text):
        text = m.group("rest").strip()
        aside.append("the approximation sign set aside")
    if (m := _ASIDE.fullmatch(text)) and m.group("aside").strip():
        text = m.group("rest")
        aside.append(f"`({m.group('aside').strip()})` set aside")
    if m := _END_STOP.fullmatch(text):
        text = m.group("rest")
        aside.append("the full stop set aside")
    if (m := _TWICE.fullmatch(text)) and (same := _same_number(m["first"], m["second"])):
        text = same
        aside.append(f"`{m['first']}` and `{m['second']}` read as one number")
    return text, "; ".join(aside) or None


def _half_unit(text: str) -> float:
    """Half the place value of a decimal's last written digit (0 for a fraction: exact)."""
    if "/" in text:
        return 0.0
    exponent = Decimal(text.strip()).as_tuple().exponent
    return 0.5 * 10.0 ** int(exponent)


def _same_number(first: str, second: str) -> str | None:
    """`0.25 (1/4)`, `1/3 (0.333)`: one number written two ways (the same to the digits of the
    less precise), as the more precise of the two; None for two numbers (read as arithmetic)."""
    try:
        a, b = as_number(first), as_number(second)  # bounded sizes, or AnswerFormatError
        ua, ub = _half_unit(first), _half_unit(second)
    except (AnswerFormatError, ArithmeticError):
        return None
    if abs(a - b) > max(ua, ub) + 1e-12 * max(abs(a), abs(b)):
        return None
    return first if ua <= ub else second


def _read_text(value: Any, text: str, example: str) -> NumberReading:
    if _PLAIN.fullmatch(text):
        return NumberReading(as_number(text), "plain", text)
    grouped = _GROUPED.fullmatch(text)
    if grouped:
        plain = text.replace(grouped.group("sep"), "")
        return NumberReading(as_number(plain), "separators", text)
    suffixed = _SUFFIXED.fullmatch(text)
    if suffixed:
        num, suffix = suffixed.group("num"), suffixed.group("suffix")
        power = _SUFFIXES.get(suffix) or _WORDS[suffix]
        decimals = len(num.partition(".")[2])
        exact = Fraction(num) * 10**power
        return NumberReading(float(exact), "suffix", text, unit=10.0 ** (power - decimals))
    factor = _FACTOR.fullmatch(text)
    if factor:
        return NumberReading(
            as_number(factor.group("before") or factor.group("after")), "factor", text
        )
    if _DECIMAL_COMMA.fullmatch(text):
        raise AnswerFormatError(
            f"{_describe(value)}: a comma is read only between groups of three digits "
            f"(124,439,808); write a decimal with a point, such as {example}"
        )
    return _arithmetic(value, text, example)


def _arithmetic(value: Any, text: str, example: str) -> NumberReading:
    from grader.written.expr.errors import ExprError
    from grader.written.expr.limits import check_limits
    from grader.written.expr.numeric import evaluate
    from grader.written.expr.parser import read

    teach = (
        f"write a number such as {example}, with thousands separators if you like "
        "(124,439,808), or arithmetic such as 12*8*1024^2"
    )
    if len(text) > MAX_TEXT:
        raise AnswerFormatError(f"{_describe(value)} is too long to be a number: {teach}")
    try:
        parsed = read(text, [])
        exact = check_limits(parsed.tree).get(id(parsed.tree))
        result = exact if exact is not None else evaluate(parsed.tree, {})
    except ExprError as err:
        raise AnswerFormatError(
            f"{_describe(value)} could not be read as a number ({err}): {teach}"
        ) from err
    except Exception as err:  # noqa: BLE001 - mpmath's own errors on a bounded constant
        raise AnswerFormatError(f"{_describe(value)} could not be evaluated: {teach}") from err
    if isinstance(result, Fraction):
        x = _float(result)
    else:
        if abs(getattr(result, "imag", 0)) > 1e-12 * max(1.0, abs(result)):
            raise AnswerFormatError(f"{_describe(value)} is not a real number: {teach}")
        x = _float(getattr(result, "real", result))
    if not math.isfinite(x):
        raise AnswerFormatError(f"expected a finite number, got {_describe(value)}")
    return NumberReading(x, "arithmetic", text)


def _float(x: Any) -> float:
    try:
        return float(x)
    except (OverflowError, ValueError):
        return math.inf


def suffix_close(reading: NumberReading, want: float) -> bool:
    """An SI-suffixed count that is the expected count rounded at its last written digit."""
    if reading.how != "suffix" or reading.unit is None:
        return False
    return abs(reading.value - want) <= reading.unit / 2 + 1e-9 * abs(want)


MAX_ARRAY_TEXT = 20_000  # characters of an array written as one string
MAX_ARRAY_NESTING = 4  # brackets deep: an answer is a vector or a matrix


def _nesting(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        if ch == "[":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == "]":
            depth -= 1
    return deepest


_PRINTED = re.compile(
    r"(?:np\.|numpy\.|torch\.)?(?:array|tensor)\((.*?)(?:,\s*dtype=[\w.]+)?\)", re.S
)
_NUMERIC = re.compile(r"[\[\]()\s0-9eE.,+\-]*")


def _array_text(text: str) -> list | None:
    """The array a string spells: `"[0.5, -1.0]"`, `"(0.5, -1.0)"`, or as numpy and torch print
    one (`"[[ 0.5 -1. ]\n [ 2.  0.25]]"`, `"array([0.5, -1.])"`); None when it spells none."""
    import json

    s = text.strip()
    printed = _PRINTED.fullmatch(s)
    if printed:
        s = printed.group(1).strip()
    if s[:1] not in ("[", "(") or _nesting(s) > MAX_ARRAY_NESTING:
        return None
    try:  # TOML's and JSON's own form, items quoted or not
        parsed = json.loads(s.replace("'", '"'))
        if isinstance(parsed, list):
            return parsed
    except (ValueError, RecursionError):
        pass
    if not _NUMERIC.fullmatch(s):
        return None
    s = s.replace("(", "[").replace(")", "]")
    s = re.sub(r"(?<=[0-9.])\s+(?=[-+0-9.])", ",", s)  # numpy's spaces between numbers
    s = re.sub(r"\]\s*\[", "],[", s)  # and between rows
    s = re.sub(r"(?<![0-9])\.(?=[0-9])", "0.", s)  # .5 -> 0.5
    s = re.sub(r"(?<=[0-9])\.(?![0-9])", ".0", s)  # 1. -> 1.0
    s = re.sub(r"(?<=[\[,])\s*\+", "", s)  # +1 -> 1
    try:
        parsed = json.loads(s)
    except (ValueError, RecursionError):
        return None
    return parsed if isinstance(parsed, list) else None


def read_array(value: Any) -> tuple[Any, tuple[str, ...]]:
    """An array answer as TOML arrays of numbers, and how it was read when it was not one: an
    array written as a string (`"[0.5, -1.0]"`) is read as the array it spells, and a number
    written as a string inside an array (`"23,236,608"`) as `read_number` reads it."""
    notes: list[str] = []
    if isinstance(value, str) and len(value) <= MAX_ARRAY_TEXT:
        parsed = _array_text(value)
        if parsed is not None:
            value = parsed
            notes.append("the array written as a string was read as an array")
    if not isinstance(value, list):
        return value, tuple(notes)

    def number(x: Any) -> Any:
        if isinstance(x, list):
            return [number(v) for v in x]
        if isinstance(x, str):
            try:
                reading = read_number(x)
            except AnswerFormatError:
                return x  # as_array says what is wrong with it
            notes.append(reading.note or "numbers written as strings were read as numbers")
            return reading.value
        return x

    read = number(value)
    return read, tuple(dict.fromkeys(notes))[:3]


_SIZE = re.compile(r"(?:torch\.)?Size\((.*)\)", re.S)
_SPACED = re.compile(r"[(\[]?\s*\d+(?:\s+\d+)+\s*[)\]]?")


def read_shape(value: Any) -> tuple[Any, str | None]:
    """A shape answer in a form `as_shape` reads, and how it was read when it was not one:
    torch's `torch.Size([2, 4])`, a label before `=` (`(B, T) = (2, 4)`), sizes separated by
    spaces (`2 4`), one whole number for a one-dimensional shape (`8`)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10**18:
        return [value], f"`{value}` was read as the one-dimensional shape ({value},)"
    if not isinstance(value, str) or len(value) > MAX_TEXT:
        return value, None
    text = value.strip()
    notes = []
    if "=" in text:
        left, _, right = text.rpartition("=")
        if any(ch.isalpha() for ch in left):
            text = right.strip()
            notes.append(f"the sizes after `=` were read (`{left.strip()}` is their label)")
    size = _SIZE.fullmatch(text)
    if size:
        text = size.group(1).strip()
        notes.append("torch's `Size(…)` was read as the shape it holds")
    if _SPACED.fullmatch(text):
        text = ", ".join(text.strip("()[] \t\n").split())
        notes.append("sizes separated by spaces were read as a shape")
    return (text, "; ".join(notes)) if notes else (value, None)
