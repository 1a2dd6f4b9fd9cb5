"""Reading a student's `answers.toml`: one key per written question, read as forgivingly as
a TOML syntax error allows.

A missing file costs every written question, with one message naming the file expected.
A syntax error costs only the keys it touches: the file is then read line by line (each
`key = value` statement on its own, multi-line arrays and triple-quoted strings joined as
far as they parse), and each unreadable key gets an error quoting its line and number.
Empty template values (`""`, `[]`) read as "not attempted".

The `as_*` helpers turn a TOML value into the form a question kind wants, raising
`AnswerFormatError` with a message for the student.
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

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FILE_NAME = "answers.toml"
NOT_FOUND = "answers.toml not found: expected a file named answers.toml beside your code"
MAX_BYTES = 1 << 20  # a larger answers.toml is refused as a whole
MAX_STATEMENT_LINES = 200  # a multi-line value longer than this is not joined further

Status = Literal["answered", "empty", "missing", "error", "no-file"]


class AnswerFormatError(ValueError):
    """A value of the wrong form for its question; the message is meant for the student."""


@dataclass(frozen=True)
class AnswerEntry:
    """One key as read from the file."""

    key: str  # dotted for keys inside tables: "part1.q2"
    value: Any = None  # the TOML value; None when it could not be read
    line: int | None = None  # 1-based line of the key in the file
    error: str | None = None  # why the value could not be read, quoting the line


@dataclass(frozen=True)
class Answer:
    """What a question finds under its key."""

    key: str
    status: Status  # answered | empty (template left blank) | missing | error | no-file
    value: Any = None  # the TOML value when answered
    message: str | None = None  # for the student, for every status but "answered"
    line: int | None = None


@dataclass(frozen=True)
class AnswerSheet:
    """A student's answers.toml, read."""

    path: Path | None  # the file read (None when none was given)
    found: bool  # the file exists and could be decoded
    entries: Mapping[str, AnswerEntry] = field(default_factory=dict)  # by dotted key
    problems: tuple[str, ...] = ()  # notes about the whole file (a syntax error, stray lines)
    file_error: str | None = None  # set when no key can be read at all (missing, too large)

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
    if isinstance(raw, bytes):
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
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        problems.append(
            f"answers.toml is not valid TOML ({err}); it was read line by line, and only "
            "the lines that could not be read cost their answers"
        )
        entries, more = _read_line_by_line(lines)
        return AnswerSheet(path, True, entries, tuple(problems + more))
    entries = {}
    for key, value in _flatten(data):
        entries[key] = AnswerEntry(key, value, _find_line(lines, key))
    return AnswerSheet(path, True, entries, tuple(problems))


def _reason(err: Exception) -> str:
    return re.sub(r"\s*\(at (line \d+, column \d+|end of document)\)", "", str(err)).strip()


def _flatten(data: Mapping[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in data.items():
        full = f"{prefix}{key}"
        if isinstance(value, dict):
            yield from _flatten(value, full + ".")
        else:
            yield full, value


def _find_line(lines: list[str], key: str) -> int | None:
    last = re.escape(key.rsplit(".", 1)[-1])
    pattern = re.compile(rf"""^\s*(?:[\w.\-"' ]*\.)?\s*["']?{last}["']?\s*=""")
    for n, line in enumerate(lines, start=1):
        if pattern.match(line):
            return n
    return None


def _quote(n: int, line: str) -> str:
    shown = line.strip().replace("`", "'")
    if len(shown) > 120:
        shown = shown[:117] + "..."
    return f"line {n}: `{shown}`"


_HEADER = re.compile(r"""^\s*\[\s*([A-Za-z0-9_\-."' ]+?)\s*\]\s*(#.*)?$""")
_ASSIGN = re.compile(
    r"""^\s*(?:[A-Za-z0-9_\-]+|"[^"\n]*"|'[^'\n]*')(?:\s*\.\s*(?:[A-Za-z0-9_\-]+|"[^"\n]*"|'[^'\n]*'))*\s*="""
)
_KEY_GUESS = re.compile(r"""^\s*["']?([A-Za-z0-9_\-.]+)""")


def _read_line_by_line(lines: list[str]) -> tuple[dict[str, AnswerEntry], list[str]]:
    """Best-effort reading of a file with a syntax error: each statement on its own."""
    entries: dict[str, AnswerEntry] = {}
    problems: list[str] = []
    table = ""
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
                names = _flatten_keys(tomllib.loads(f"[{header.group(1)}]"))
                table = names + "."
            except tomllib.TOMLDecodeError:
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
        end, data, reason = _statement(lines, i)
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


def _statement(lines: list[str], start: int) -> tuple[int, dict[str, Any] | None, str]:
    """Parse `key = value` from lines[start], joining continuation lines while they help."""
    first_reason = ""
    text = ""
    for end in range(start, min(len(lines), start + MAX_STATEMENT_LINES)):
        if end > start:
            nxt = lines[end]
            open_string = (text.count('"""') % 2 == 1) or (text.count("'''") % 2 == 1)
            if not open_string and (_ASSIGN.match(nxt) or _HEADER.match(nxt)):
                break
        text = text + ("\n" if end > start else "") + lines[end]
        try:
            return end, tomllib.loads(text), ""
        except tomllib.TOMLDecodeError as err:
            if end == start:
                first_reason = _reason(err)
                literal = _as_literal_string(text)
                if literal is not None:  # LaTeX in "..." with single backslashes: "\sqrt"
                    try:
                        return end, tomllib.loads(literal), ""
                    except tomllib.TOMLDecodeError:
                        pass
    return start, None, first_reason or "unreadable value"


def _as_literal_string(line: str) -> str | None:
    """`key = "a\\sqrt b"` as `key = 'a\\sqrt b'` when the value is one basic string with
    backslashes and no single quote: TOML rejects `\\s`, but the student meant LaTeX."""
    m = re.fullmatch(r'(\s*[^=]+=\s*)"([^"\n]*\\[^"\n]*)"(\s*(?:#.*)?)', line)
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
        x = float(value)
    elif isinstance(value, str):
        s = value.strip().replace("\u2212", "-").replace(" ", "")
        num, slash, den = s.partition("/")
        if not _NUMBER.fullmatch(num) or (slash and not _NUMBER.fullmatch(den)):
            raise AnswerFormatError(f"expected a number such as 0.25, got {_describe(value)}")
        if slash:
            d = Fraction(den)
            if d == 0:
                raise AnswerFormatError(f"{value!r} divides by zero")
            x = float(Fraction(num) / d)
        else:
            x = float(num)
    else:
        raise AnswerFormatError(f"expected a number, got {_describe(value)}")
    if not math.isfinite(x):
        raise AnswerFormatError(f"expected a finite number, got {_describe(value)}")
    return x


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
        items = [p for p in re.split(r"\s*(?:,|x|×|\*)\s*", s) if p != ""] if s else []
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
    letters = frozenset(p.strip("()").upper() for p in parts)
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
    for item in items:
        if isinstance(item, (bool, list, dict)):
            raise AnswerFormatError(
                f"a list item must be a string or a number, got {_describe(item)}"
            )
        out.append(float(item) if isinstance(item, (int, float)) else str(item).strip())
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
    return repr(value)
