"""Reading a student's `answers.toml`: one key per written question, read as forgivingly as
a TOML syntax error allows.

A missing file costs every written question, with one message naming the file expected.
A syntax error costs only the keys it touches: the file is then read line by line (each
`key = value` statement on its own, multi-line arrays and triple-quoted strings joined as
far as they parse), and each unreadable key gets an error quoting its line and number.
Empty template values (`""`, `[]`) read as "not attempted".

The `as_*` helpers turn a TOML value into the form a question kind wants, raising
`AnswerFormatError` with a message for the student.

Every step is bounded, whatever the file holds: its size (MAX_BYTES), the depth of its keys
and values (a deeper line costs only its own key), the work spent re-reading a broken file,
the digits and exponents of a number (`1/1e999999999` is refused, not computed), and
finding each key's line (one pass over the file, not one per key).
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import numpy as np

FILE_NAME = "answers.toml"
NOT_FOUND = "answers.toml not found: expected a file named answers.toml beside your code"
MAX_BYTES = 1 << 20  # a larger answers.toml is refused as a whole
MAX_STATEMENT_LINES = 200  # a multi-line value longer than this is not joined further
MAX_JOINED_BYTES = (
    256 << 10
)  # text re-parsed while joining broken multi-line values, for the whole file
MAX_KEY_PARTS = 32  # dotted parts of one key or table header (tomllib is quadratic in them)
MAX_NESTING = 64  # nested arrays and inline tables in one line
MAX_DIGITS = 400  # digits of a number written as text ("0.25", "1/3")
MAX_EXPONENT = 400  # |exponent| of a number written as text ("1e-3"); beyond it no answer needs


def _toml() -> Any:
    """The TOML reader, imported when an answers.toml is first read (a grade without one never
    loads it: about 8 ms)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    return tomllib


def toml_table(text: str) -> dict[str, Any] | None:
    """The table `text` is as a whole TOML document, or None when it is not one."""
    try:
        return _toml().loads(text)
    except _parse_errors():
        return None


def _parse_errors() -> tuple[type[BaseException], ...]:
    """What reading a TOML text may raise (ValueError: an integer of over 4300 digits)."""
    return (_toml().TOMLDecodeError, ValueError, RecursionError)


Status = Literal["answered", "empty", "missing", "error", "no-file"]


class AnswerFormatError(ValueError):
    """A value of the wrong form for its question; the message is meant for the student."""


@dataclass(frozen=True)
class AnswerEntry:
    """One key as read from the file."""

    key: str
    """Dotted for keys inside tables: "part1.q2"."""
    value: Any = None
    """The TOML value; None when it could not be read."""
    line: int | None = None
    """1-based line of the key in the file."""
    error: str | None = None
    """Why the value could not be read, quoting the line."""


@dataclass(frozen=True)
class Answer:
    """What a question finds under its key."""

    key: str
    status: Status
    """Answered | empty (template left blank) | missing | error | no-file."""
    value: Any = None
    """The TOML value when answered."""
    message: str | None = None
    """For the student, for every status but "answered"."""
    line: int | None = None


@dataclass(frozen=True)
class AnswerSheet:
    """A student's answers.toml, read."""

    path: Path | None
    """The file read (None when none was given)."""
    found: bool
    """The file exists and could be decoded."""
    entries: Mapping[str, AnswerEntry] = field(default_factory=dict)
    """By dotted key."""
    problems: tuple[str, ...] = ()
    """Notes about the whole file (a syntax error, stray lines)."""
    file_error: str | None = None
    """Set when no key can be read at all (missing, too large)."""

    def get(self, key: str) -> Answer:
        """The answer under `key`, with a status and a message for every non-answer."""
        if self.file_error is not None:
            return Answer(key, "no-file", message=self.file_error)
        entry = self.entries.get(key)
        if entry is None:
            return Answer(
                key,
                "missing",
                message=f"no answer: the key `{key}` is not in answers.toml (not attempted)",
            )
        if entry.error is not None:
            return Answer(key, "error", message=entry.error, line=entry.line)
        if is_empty(entry.value):
            return Answer(key, "empty", entry.value, message="not attempted", line=entry.line)
        return Answer(key, "answered", entry.value, line=entry.line)


def is_empty(value: Any) -> bool:
    """A template's blank: "" (or only spaces), [] or a list of only blanks."""
    if isinstance(value, str):
        return not value.strip()
    if isinstance(value, list):
        return all(is_empty(v) for v in value)
    return value is None


# ------------------------------------------------------------------------- reading


def load_answers(path: Path | None) -> AnswerSheet:
    """Read answers.toml (or `path/answers.toml` for a folder); never raises for bad files."""
    if path is not None and Path(path).is_dir():
        path = Path(path) / FILE_NAME
    if path is None or not Path(path).is_file():
        return AnswerSheet(path, False, file_error=NOT_FOUND)
    path = Path(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        return AnswerSheet(
            path, False, file_error=f"answers.toml could not be read ({err.strerror})"
        )
    if len(raw) > MAX_BYTES:
        return AnswerSheet(
            path,
            False,
            file_error=f"answers.toml is too large ({len(raw)} bytes; the limit is {MAX_BYTES})",
        )
    return parse_answers(raw, path)


def load_answers_text(text: str | bytes | None, missing_message: str = NOT_FOUND) -> AnswerSheet:
    """Read answers.toml from its text (as located in a submission); None: the file is missing."""
    if text is None:
        return AnswerSheet(None, False, file_error=missing_message)
    if len(text) > MAX_BYTES:
        return AnswerSheet(
            None, False, file_error=f"answers.toml is too large (the limit is {MAX_BYTES} bytes)"
        )
    return parse_answers(text)


def parse_answers(raw: bytes | str, path: Path | None = None) -> AnswerSheet:
    """Read the text of an answers.toml."""
    problems: list[str] = []
    if isinstance(raw, bytes) and raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        text = raw.decode("utf-16", errors="replace")  # Windows' "Unicode": its BOM says so
        problems.append("answers.toml was saved as UTF-16 and read as such: save it as UTF-8")
    elif isinstance(raw, bytes):
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", errors="replace")
            problems.append(
                "answers.toml is not valid UTF-8: save it as UTF-8 (unreadable characters were replaced)"
            )
    else:
        text = raw
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    too_deep = _too_deep(lines)
    if too_deep:
        lines = ["" if i in too_deep else line for i, line in enumerate(lines)]
        text = "\n".join(lines)
    try:
        data = _toml().loads(text)
    except _parse_errors() as err:
        problems.append(
            f"answers.toml is not valid TOML ({_why(err)}); it was read line by line, and only "
            "the lines that could not be read cost their answers"
        )
        entries, more = _read_line_by_line(lines)
        return AnswerSheet(
            path, True, {**too_deep_entries(too_deep), **entries}, tuple(problems + more)
        )
    found = _line_index(lines)
    entries = too_deep_entries(too_deep)
    for key, value in _flatten(data):
        entries[key] = AnswerEntry(key, value, found.get(_last_part(key)))
    return AnswerSheet(path, True, entries, tuple(problems))


def _why(err: Exception) -> str:
    if isinstance(err, RecursionError):
        return "values nested too deeply"
    return str(err)


def _too_deep(lines: list[str]) -> dict[int, AnswerEntry]:
    """Lines whose key has more than MAX_KEY_PARTS parts or whose value nests more than
    MAX_NESTING levels, each as the error of its key (they are blanked before parsing)."""
    out: dict[int, AnswerEntry] = {}
    for i, line in enumerate(lines):
        if line.lstrip().startswith("#"):
            continue
        head = line.split("=", 1)[0] if not line.lstrip().startswith("[") else line
        deep_key = head.count(".") >= MAX_KEY_PARTS and (
            line.lstrip().startswith("[") or "=" in line
        )
        if deep_key or _nesting(line) > MAX_NESTING:
            what = (
                f"more than {MAX_KEY_PARTS} dotted parts"
                if deep_key
                else f"more than {MAX_NESTING} levels"
            )
            guess = _KEY_GUESS.match(line)
            key = guess.group(1)[:80] if guess else f"line {i + 1}"
            out[i] = AnswerEntry(
                key,
                None,
                i + 1,
                f"{_quote(i + 1, line)} is nested too deeply ({what}) to be an answer",
            )
    return out


def too_deep_entries(too_deep: dict[int, AnswerEntry]) -> dict[str, AnswerEntry]:
    return {e.key: e for e in too_deep.values()}


def _nesting(line: str) -> int:
    """The deepest run of [ and { in a line, outside quoted strings (roughly: enough to refuse)."""
    if line.count("[") + line.count("{") <= MAX_NESTING:
        return 0
    depth = deepest = 0
    quote = ""
    for ch in line:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth = max(0, depth - 1)
    return deepest


def _reason(err: Exception) -> str:
    return re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(err)).strip()


def _flatten(data: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in data.items():
        full = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _flatten(value, full + ".")
        else:
            yield full, value


def _last_part(key: str) -> str:
    return key.rsplit(".", 1)[-1].strip().strip("\"'").strip()


def _line_index(lines: list[str]) -> dict[str, int]:
    """The first line (1-based) assigning each key name (the last part of a dotted key), in one pass."""
    index: dict[str, int] = {}
    for n, line in enumerate(lines, start=1):
        head, eq, _ = line.partition("=")
        if eq and _KEY_CHARS.fullmatch(head):
            index.setdefault(_last_part(head), n)
    return index


def _quote(n: int, line: str) -> str:
    shown = line.strip().replace("`", "'")
    if len(shown) > 120:
        shown = shown[:117] + "..."
    return f"line {n}: `{shown}`"


_HEADER = re.compile(r"""^\s*\[([A-Za-z0-9_\-."' ]+)\]\s*(#.*)?$""")  # linear: no nested repeats
_KEY_CHARS = re.compile(r"""[\w.\-"' ]+""")
_ASSIGN = re.compile(
    r"""^\s*(?:[A-Za-z0-9_\-]+|"[^"\n]*"|'[^'\n]*')(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|"[^"\n]*"|'[^'\n]*'))*\s*="""
)
_KEY_GUESS = re.compile(r"""^\s*["']?([A-Za-z0-9_\-.]+)""")


_STRAIGHT = str.maketrans(
    {"\u201c": '"', "\u201d": '"', "\u201e": '"', "\u00ab": '"', "\u00bb": '"',
     "\u2018": "'", "\u2019": "'"}
)  # fmt: skip
_CURLY = re.compile(f"[{''.join(map(chr, _STRAIGHT))}]")  # the quotes `_STRAIGHT` replaces


def _read_line_by_line(lines: list[str]) -> tuple[dict[str, AnswerEntry], list[str]]:
    """Best-effort reading of a file with a syntax error: each statement on its own."""
    entries: dict[str, AnswerEntry] = {}
    problems: list[str] = []
    table = ""
    budget = [MAX_JOINED_BYTES]  # text re-parsed while joining lines, shared by every statement
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        header = _HEADER.match(line)
        if header and not stripped.startswith("[["):
            try:
                names = _flatten_keys(_toml().loads(f"[{header.group(1)}]"))
                table = names + "."
            except _parse_errors():
                problems.append(f"{_quote(i + 1, line)} is not a valid table header")
                table = ""
            i += 1
            continue
        if not _ASSIGN.match(line):
            guess = _KEY_GUESS.match(line)
            message = f"{_quote(i + 1, line)} is not of the form `key = value`"
            if guess:
                key = table + guess.group(1)
                entries.setdefault(key, AnswerEntry(key, None, i + 1, message))
            else:
                problems.append(message)
            i += 1
            continue
        end, data, reason = _statement(lines, i, budget)
        if data is None and _CURLY.search(line):  # an editor's autocorrect: “d_k”, ‘B’
            straight = line.translate(_STRAIGHT)
            end2, data, _ = _statement([straight], 0, budget)
            if data is not None:
                end = i + end2
                problems.append(
                    f"{_quote(i + 1, line)}: its curly quotes were read as straight quotes "
                    "(write \" or ' in answers.toml)"
                )
        if data is None:
            guess = _KEY_GUESS.match(line)
            key = table + (guess.group(1) if guess else stripped.split("=")[0].strip())
            message = f"{_quote(i + 1, line)} could not be read: {reason}"
            entries.setdefault(key, AnswerEntry(key, None, i + 1, message))
            i += 1
            continue
        for key, value in _flatten(data, table):
            if key in entries:
                first = entries[key].line
                entries[key] = AnswerEntry(
                    key,
                    None,
                    i + 1,
                    f"{_quote(i + 1, line)}: `{key}` is given twice (lines {first} and {i + 1})",
                )
            else:
                entries[key] = AnswerEntry(key, value, i + 1)
        i = end + 1
    return entries, problems


def _flatten_keys(data: Mapping[str, Any]) -> str:
    parts = []
    node: Any = data
    while isinstance(node, dict) and len(node) == 1:
        ((name, node),) = node.items()
        parts.append(name)
    return ".".join(parts)


def _statement(
    lines: list[str], start: int, budget: list[int]
) -> tuple[int, dict[str, Any] | None, str]:
    """Parse `key = value` from lines[start], joining continuation lines while they help (and
    while `budget[0]`, the bytes left to re-parse in this file, lasts)."""
    first_reason = ""
    text = ""
    for end in range(start, min(len(lines), start + MAX_STATEMENT_LINES)):
        if end > start:
            if budget[0] <= 0:
                break
            nxt = lines[end]
            open_string = (text.count('"""') % 2 == 1) or (text.count("'''") % 2 == 1)
            if not open_string and (_ASSIGN.match(nxt) or _HEADER.match(nxt)):
                break
        text = text + ("\n" if end > start else "") + lines[end]
        budget[0] -= len(text)
        try:
            return end, _toml().loads(text), ""
        except _parse_errors() as err:
            if end == start:
                first_reason = _reason(err) if not isinstance(err, RecursionError) else _why(err)
                literal = _as_literal_string(text)
                if literal is not None:  # LaTeX in "..." with single backslashes: "\sqrt"
                    try:
                        return end, _toml().loads(literal), ""
                    except _parse_errors():
                        pass
    return start, None, first_reason or "unreadable value"


def _as_literal_string(line: str) -> str | None:
    """`key = "a\\sqrt b"` as `key = 'a\\sqrt b'` when the value is one basic string with
    backslashes and no single quote: TOML rejects `\\s`, but the student meant LaTeX."""
    m = re.fullmatch(
        r'([^=]+=\s*)"([^"\n\\]*\\[^"\n]*)"(\s*(?:#.*)?)', line
    )  # linear: one way to match
    if not m or "'" in m.group(2):
        return None
    return f"{m.group(1)}'{m.group(2)}'{m.group(3)}"


# ---------------------------------------------------------------------- conversion

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def as_expression(value: Any) -> str:
    """An expression answer: a string (a bare TOML number is accepted as its text)."""
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return repr(value)
    raise AnswerFormatError(
        f'expected an expression in quotes, such as "2 d^2 + d", got {_describe(value)}'
    )


def as_number(value: Any) -> float:
    """A number answer: a TOML int/float, or a string holding a number or a fraction a/b."""
    if isinstance(value, bool):
        raise AnswerFormatError(f"expected a number, got {_describe(value)}")
    if isinstance(value, (int, float)):
        x = _to_float(value)
    elif isinstance(value, str):
        s = value.strip().replace("\u2212", "-").replace(" ", "")
        num, slash, den = s.partition("/")
        if not _NUMBER.fullmatch(num) or (slash and not _NUMBER.fullmatch(den)):
            raise AnswerFormatError(f"expected a number such as 0.25, got {_describe(value)}")
        for part in (num, den) if slash else (num,):
            _check_size(part, value)
        if slash:
            d = Fraction(den)
            if d == 0:
                raise AnswerFormatError(f"{_describe(value)} divides by zero")
            x = _to_float(Fraction(num) / d)
        else:
            x = float(num)
    else:
        raise AnswerFormatError(f"expected a number, got {_describe(value)}")
    if not math.isfinite(x):
        raise AnswerFormatError(f"expected a finite number, got {_describe(value)}")
    return x


def _check_size(number: str, value: Any) -> None:
    """Refuse a number too long or with an exponent too large to be an answer (before any
    arithmetic: `Fraction("1e999999999")` would compute 10**999999999)."""
    mantissa, _, exponent = number.lower().partition("e")
    digits = sum(ch.isdigit() for ch in mantissa)
    if digits > MAX_DIGITS:
        raise AnswerFormatError(
            f"{_describe(value)} has {digits} digits; write at most {MAX_DIGITS}"
        )
    if exponent and (len(exponent.lstrip("+-")) > 6 or abs(int(exponent)) > MAX_EXPONENT):
        raise AnswerFormatError(
            f"{_describe(value)} has an exponent out of range (at most "
            f"{MAX_EXPONENT} either way): write the number as a decimal or a fraction"
        )


def _to_float(x: int | float | Fraction) -> float:
    try:
        return float(x)
    except OverflowError:
        return math.inf  # then refused as not finite


def as_array(value: Any) -> np.ndarray:
    """A vector or matrix answer: (nested) TOML arrays of numbers, rectangular."""
    if not isinstance(value, list):
        raise AnswerFormatError(f"expected an array such as [1.0, 2.0], got {_describe(value)}")
    shape = _shape_of(value)
    flat = [as_number(x) for x in _leaves(value)]
    return np.array(flat, dtype=np.float64).reshape(shape)


def _shape_of(value: Any) -> tuple[int, ...]:
    if not isinstance(value, list):
        return ()
    if not value:
        return (0,)
    shapes = {_shape_of(v) for v in value}
    if len(shapes) != 1:
        raise AnswerFormatError("the rows of the array have different lengths")
    return (len(value), *shapes.pop())


def _leaves(value: Any) -> Iterable[Any]:
    if isinstance(value, list):
        for v in value:
            yield from _leaves(v)
    else:
        yield value


def as_shape(value: Any) -> tuple[int, ...]:
    """A shape answer: an array of ints, or a string such as "(2, 4, 8)" or "2x4x8"."""
    if isinstance(value, list):
        items = value
    elif isinstance(value, str):
        s = value.strip().strip("()[]").strip()
        items = (
            [p.strip() for p in re.split(r"[,x×*]", s) if p.strip()] if s else []
        )  # linear split
    else:
        raise AnswerFormatError(
            f'expected a shape such as [2, 4, 8] or "(2, 4, 8)", got {_describe(value)}'
        )
    dims = []
    for item in items:
        if isinstance(item, bool) or not (
            isinstance(item, int) or (isinstance(item, str) and item.strip().isdigit())
        ):
            raise AnswerFormatError(f"a shape holds whole numbers only, got {_describe(item)}")
        if len(item.strip()) > 18 if isinstance(item, str) else abs(item) >= 10**18:
            raise AnswerFormatError(f"{_describe(item)} is too large to be a size")
        dims.append(int(item))
    return tuple(dims)


def as_choice(value: Any, allowed: Iterable[str] = ()) -> frozenset[str]:
    """A choice answer: "B", "A,C", "a c" or ["A", "C"]; letters upper-cased."""
    if isinstance(value, str):
        parts = [p for p in re.split(r"[\s,;/&+]+|\band\b", value.strip()) if p]
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        parts = [v.strip() for v in value if v.strip()]
    else:
        raise AnswerFormatError(
            f'expected a letter such as "B" or letters such as "A, C", got {_describe(value)}'
        )
    letters = frozenset(p.strip("().:;!").upper() for p in parts)  # "(B)", "A." read as letters
    allowed_set = {a.upper() for a in allowed}
    if not letters:
        raise AnswerFormatError("no choice given")
    bad = sorted(
        x
        for x in letters
        if (allowed_set and x not in allowed_set)
        or not allowed_set
        and not re.fullmatch(r"[A-Z]", x)
    )
    if bad:
        options = ", ".join(sorted(allowed_set)) if allowed_set else "single letters"
        raise AnswerFormatError(
            f"{', '.join(repr(b) for b in bad)} is not one of the choices ({options})"
        )
    return letters


def as_list(value: Any) -> list[str | float]:
    """A short list answer: a TOML array of strings/numbers, or one string split at commas."""
    if isinstance(value, str):
        items: list[Any] = [p for p in (s.strip() for s in value.split(",")) if p]
    elif isinstance(value, list):
        items = value
    else:
        raise AnswerFormatError(f'expected a list such as ["a", "b"], got {_describe(value)}')
    out: list[str | float] = []
    for i, item in enumerate(items, start=1):
        if isinstance(item, (bool, list, dict)):
            raise AnswerFormatError(
                f"item {i} of your list must be a string or a number, got {_describe(item)}"
            )
        out.append(_to_float(item) if isinstance(item, (int, float)) else str(item).strip())
    return out


def as_text(value: Any) -> str:
    """A free-text answer."""
    if isinstance(value, str):
        return value.strip()
    raise AnswerFormatError(f"expected text in quotes, got {_describe(value)}")


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f'"{shown}"'
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, int) and abs(value) >= 10**40:
        return f"an integer of {len(str(abs(value)))} digits"
    return repr(value)
