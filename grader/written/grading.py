"""Grading one written question from a student's answers.toml.

The expected answer comes from `question.expected(variant)`; a wrong answer is compared
with `question.wrong_forms(variant)` to name the misconception it shows. Expressions go
through the checker (a separate process with a hard time limit); numbers, arrays, shapes,
choices and lists are compared here. Feedback on a wrong answer says how it was read,
names the misconception when one is recognised and says "close, but not within the
tolerance" for a rounded number; it never shows the expected value, expression or letter
(docs/feedback.md): those go only into `answer_key`, the answer-key test whose visibility the
instructor chooses. A hidden question's feedback says only right or wrong.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from grader.questions import Tolerance, WrittenQuestion, WrongForm
from grader.written.answers import (
    AnswerFormatError,
    AnswerSheet,
    as_array,
    as_choice,
    as_expression,
    as_list,
    as_number,
    as_shape,
    as_text,
)
from grader.written.choices import read_choice
from grader.written.equations import is_label, split_equals
from grader.written.hints import (
    example_number,
    expects,
    integer_question,
    list_format,
    malformed_item,
)
from grader.written.items import read_list
from grader.written.numbers import read_array, read_number, read_shape, suffix_close
from grader.written.question import option
from grader.written.result import Status, WrittenResult

if TYPE_CHECKING:
    from grader.written.expr.checker import ExprChecker


@dataclass(frozen=True)
class _Outcome:
    """What a kind-specific check found (internal)."""

    correct: bool
    shown: str
    """The student's answer, in feedback form."""
    answer_text: str
    interpreted: str | None = None
    detail: str | None = None
    """Extra feedback ("shape (3, 2), expected (2, 3)")."""
    note: str | None = None
    """A reading note from the parser."""
    internal: bool = False
    """The `error` below is the grader's."""
    error: str | None = None
    """unreadable: why."""
    near_figures: int | None = None
    """A rounded number: the significant figures it needs."""
    readings: tuple[str, ...] = ()
    """How the answer was read beyond the plain form."""
    exact_count: bool = False
    """An exact-count question answered with a rounded SI count."""
    right_items: str | None = None
    """A long list: how many of its items are right."""
    readings_replace_shown: bool = False
    """A number's reading note already says what was read."""


def grade_written(
    question: WrittenQuestion,
    sheet: AnswerSheet,
    variant: Mapping[str, Any],
    checker: ExprChecker | None,
) -> WrittenResult:
    """Grade the answer under `question.key` against `question.expected(variant)`."""
    answer = sheet.get(question.key)
    hidden = question.visibility == "hidden"

    def result(status: Status, feedback: str, **kw: Any) -> WrittenResult:
        passed = status == "correct"
        return WrittenResult(question.id, question.points if passed else 0.0, question.points, passed,
                             feedback, status=status, **kw)  # fmt: skip

    if answer.status in ("no-file", "missing", "empty"):
        why = (
            answer.message
            if answer.status != "empty"
            else f"`{question.key}` is still blank in answers.toml"
        )
        return result("not-attempted", f"**Not attempted.** {why}", not_attempted=True)
    if answer.status == "error":
        return result("unreadable", f"**Could not read your answer.** {answer.message}\n\n"
                      f"{_expects_safely(question, variant)}")  # fmt: skip

    if question.answer_kind == "text":
        try:
            text = as_text(answer.value)
        except AnswerFormatError as err:
            return result("unreadable", f"**Could not read your answer.** {err}")
        return result("manual", "Recorded; this answer is graded by hand.", answer_text=text[:2000])

    expected = question.expected(variant)
    if question.answer_kind == "expression" and option(question, "steps"):
        from grader.written.derivation_grading import Words, grade_derivation

        return grade_derivation(
            question, answer.value, expected, variant, checker, result, Words(_code, _mistake_line)
        )
    try:
        outcome = _CHECKS[question.answer_kind](question, answer.value, expected, checker, hidden)
    except AnswerFormatError as err:
        return result("unreadable", f"**Could not read your answer.** {err}\n\n"
                      f"{expects(question, expected)}")  # fmt: skip
    if outcome.internal:
        return result("grader-error", "**This question could not be checked** (a grader error; "
                      "tell your instructor).", answer_text=outcome.answer_text)  # fmt: skip
    if outcome.error is not None:
        return result("unreadable", f"**Could not check your answer** {_code(outcome.shown)}: {outcome.error}"
                      f"\n\n{expects(question, expected)}", answer_text=outcome.answer_text)  # fmt: skip

    if outcome.correct:
        lines = ["**Correct.**", *_reading(outcome, question.answer_kind == "expression")]
        return result("correct", "\n\n".join(lines), answer_text=outcome.answer_text,
                      interpreted=outcome.interpreted)  # fmt: skip
    found = _wrong_forms(question, answer.value, variant, checker)
    lines = ["**Not correct.**", *_reading(outcome, True)]
    if outcome.detail:
        lines.append(outcome.detail)
    if not hidden:
        if outcome.exact_count:
            lines.append("Close: this is the count rounded; give the exact count, every digit "
                         "(thousands separators are fine: 1,234,567).")  # fmt: skip
        if outcome.right_items:
            lines.append(outcome.right_items)
        if outcome.near_figures is not None:
            lines.append("Close, but not within the tolerance: give at least "
                         f"{outcome.near_figures} significant figures.")  # fmt: skip
        lines.extend(_mistake_line(wf, question.answer_kind, expected) for wf in found)
    return result("wrong", "\n\n".join(lines), misconceptions=[wf.misconception for wf in found],
                  answer_text=outcome.answer_text, interpreted=outcome.interpreted)  # fmt: skip


def _expects_safely(question: WrittenQuestion, variant: Mapping[str, Any]) -> str:
    """The answer type's sentence; a key that cannot be computed costs only its example."""
    try:
        expected = question.expected(variant) if question.answer_kind != "text" else None
    except Exception:  # noqa: BLE001 - the sentence is a hint; the key is checked elsewhere
        expected = None
    return expects(question, expected)


def _reading(outcome: _Outcome, always: bool) -> list[str]:
    """How the answer was read (always for a wrong one), and the parser's note."""
    lines = []
    read = (
        outcome.interpreted
        if outcome.interpreted is not None
        else (outcome.shown if always and not outcome.readings_replace_shown else None)
    )
    if read is not None:
        lines.append(f"Your answer was read as {_code(read)}.")
    lines.extend(f"Note: {r}." for r in outcome.readings)
    if outcome.note:
        lines.append(f"Note: {outcome.note}.")
    return lines


def _mistake_line(wf: WrongForm, kind: str, expected: Any) -> str:
    """The known mistake, in the wrong form's words minus any clause that states the answer."""
    kept = [
        c for c in re.split(r"(?<=[.;:])\s+", wf.message.strip()) if not _states(c, kind, expected)
    ]
    if not kept:
        return f"This matches a known mistake (`{wf.misconception}`)."
    text = " ".join(kept).rstrip(";:, ")
    return f"This matches a known mistake: {text}" + ("" if text.endswith(".") else ".")


def _squash(text: str) -> str:
    return re.sub(r"[\s*`$]", "", str(text).replace("**", "^")).lower()


def _states(clause: str, kind: str, expected: Any) -> bool:
    """Does this clause spell out the expected answer (an expression, a number, a list)?"""
    if kind == "expression":
        answer, text = _squash(expected), _squash(clause)
        if len(answer) >= 6:
            return answer in text
        # A short answer (d_k, 1, f_t) occurs in any prose: only "= d_k", "is d_k." state it.
        return re.search(r"(=|is|equals|:)" + re.escape(answer) + r"($|[.;,)])", text) is not None
    if kind in ("number", "array", "list"):
        return any(_squash(t) in _squash(clause) for t in _number_texts(expected))
    return False


def _number_texts(expected: Any) -> list[str]:
    try:
        values = np.asarray(expected, dtype=np.float64).ravel()
    except (TypeError, ValueError):
        return []
    texts = []
    for x in values[:50]:
        if abs(x) >= 1e-12:
            texts += [_number(x), f"{x:.3g}", f"{x:.4g}"]
    return [t for t in texts if len(t.lstrip("-")) >= 3]  # "1" or "0.5" appear in any prose


# --------------------------------------------------------------------- per kind


def _check_expression(
    q: WrittenQuestion, value: Any, expected: Any, checker: ExprChecker | None, hidden: bool
) -> _Outcome:
    text = as_expression(value)
    readings: tuple[str, ...] = ()
    text, remark = _remark(text, q)
    if "=" in text:
        text, readings = _right_hand_side(text)
    readings += remark
    if checker is None:
        raise RuntimeError(f"question {q.id}: an expression question needs an ExprChecker")
    v = checker.check(
        text, str(expected), [*q.symbols, *q.relations] or None
    )  # relations: "h = tanh(z)"
    if v.error is not None:
        return _Outcome(False, text, text, error=v.error, internal=v.internal, readings=readings)
    return _Outcome(v.equivalent, text, v.canonical or text, interpreted=v.interpreted, note=v.note,
                    readings=readings)  # fmt: skip


# Words of maths the parser refuses with its own message, never read as a remark.
_MATHS_WORDS = frozenset({"softmax", "diag", "sum"})
# A remark may restate a definition: `(with h = tanh z)`, `(using 1 - tanh^2 z)`.
_REMARK = re.compile(
    r"(?P<answer>.*\S)\s*\((?P<remark>[A-Za-z][A-Za-z0-9 ,.;:'’=^*/+-]*)\)\s*", re.S
)


def _remark(text: str, q: WrittenQuestion) -> tuple[str, tuple[str, ...]]:
    """`d_k (the dimension)`: the expression, and a note that the remark in brackets after it was
    not graded. Only words that are none of the question's symbols or functions make a remark:
    `2 (h + z)` stays an expression."""
    from grader.written.expr.limits import MAX_LENGTH

    m = _REMARK.fullmatch(text) if len(text) <= MAX_LENGTH else None
    if m is None:
        return text, ()
    from grader.written.expr.parser import CONSTANTS, FUNCTIONS
    from grader.written.expr.relations import declarations
    from grader.written.expr.text import GREEK_NAMES

    words = re.findall(r"[A-Za-z]+", m.group("remark"))
    declared = declarations([*q.symbols, *q.relations])[0] or []
    names = {*declared, *FUNCTIONS, *CONSTANTS} | _MATHS_WORDS | GREEK_NAMES
    if not any(len(w) >= 3 and w.lower() not in names and w not in names for w in words):
        return text, ()
    return m.group("answer"), (f"the remark `({m.group('remark').strip()})` was not graded",)


def _right_hand_side(text: str) -> tuple[str, tuple[str, ...]]:
    """`label = answer`: the answer, and a note saying the left side was read as the label."""
    parts = split_equals(text)
    if len(parts) == 2 and is_label(parts[0]):
        return parts[1], (
            f"`{parts[0].strip()}` was read as the quantity asked for, and the right-hand side "
            "was graded",
        )
    if len(parts) == 2:
        raise AnswerFormatError(
            f"the left-hand side of `=`, `{parts[0].strip()}`, is not a name for the quantity "
            "(a single symbol or a derivative such as dh/dz): write only the answer, or "
            "`name = answer`"
        )
    if len(parts) == 1:  # the `=` is inside brackets
        raise AnswerFormatError(
            "an `=` inside brackets cannot be part of one expression: write only the final "
            "expression (or `name = expression`)"
        )
    raise AnswerFormatError(
        f"this question asks for one expression, and yours has {len(parts) - 1} `=` signs: "
        "write only the final expression (or `name = expression`)"
    )


def _close(got: Any, want: Any, tol: Tolerance) -> bool:
    g, w = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    return bool(np.all(np.abs(g - w) <= tol.atol + tol.rtol * np.abs(w)))


def _written_figures(x: float) -> tuple[int, int]:
    """(significant figures, exponent of the last one) of a number as the student wrote it."""
    digits = Decimal(repr(float(x))).normalize().as_tuple()
    return len(digits.digits), int(digits.exponent)


def _figures_needed(want: float, tol: Tolerance) -> int:
    """The fewest significant figures at which `want`, rounded, is within the tolerance."""
    for n in range(1, 17):
        if abs(float(f"{want:.{n - 1}e}") - want) <= tol.atol + tol.rtol * abs(want):
            return n
    return 17


def _near_figures(got: np.ndarray, want: np.ndarray, tol: Tolerance) -> int | None:
    """Significant figures needed when every wrong entry is the right value rounded too early.

    An entry is "rounded too early" when it has fewer figures than the tolerance needs and
    equals the expected value rounded (or cut off) at its own last figure.
    """
    if got.shape != want.shape or not np.all(np.isfinite(got)) or not np.all(np.isfinite(want)):
        return None
    needed = []
    for g, w in zip(got.ravel().tolist(), want.ravel().tolist()):
        if abs(g - w) <= tol.atol + tol.rtol * abs(w):
            continue
        figures, last = _written_figures(g)
        need = _figures_needed(w, tol)
        unit = 10.0**last
        rounded = (round(w / unit) * unit, math.trunc(w / unit) * unit)  # rounded or cut off there
        if figures >= need or all(abs(g - r) > 1e-9 * max(abs(w), unit) for r in rounded):
            return None
        needed.append(need)
    return max(needed) if needed else None


def _check_number(
    q: WrittenQuestion, value: Any, expected: Any, checker: object, hidden: bool
) -> _Outcome:
    want = float(expected)
    integer = _integer_question(q, want)
    reading = read_number(value, _example_number(q, want, integer))
    got = reading.value
    readings = (reading.note,) if reading.note else ()
    if integer and reading.how == "suffix":
        close = suffix_close(reading, want)
        return _Outcome(False, _number(got), _number(got), readings=readings,
                        exact_count=close and not hidden, readings_replace_shown=True)  # fmt: skip
    correct = _close(got, want, q.tolerance)
    near = None if correct else _near_figures(np.array([got]), np.array([want]), q.tolerance)
    return _Outcome(correct, _number(got), _number(got), near_figures=near, readings=readings,
                    readings_replace_shown=bool(readings))  # fmt: skip


def _integer_question(q: WrittenQuestion, want: float) -> bool:
    """An exact count: declared so, or an integer key whose tolerance is under one."""
    return integer_question(q, want)


def _example_number(q: WrittenQuestion, want: float, integer: bool) -> str:
    return example_number(q, want, integer)


def _check_array(
    q: WrittenQuestion, value: Any, expected: Any, checker: object, hidden: bool
) -> _Outcome:
    value, readings = read_array(value)
    got = as_array(value)
    want = np.asarray(expected, dtype=np.float64)
    text = _show("array", got)
    if got.shape != want.shape:
        detail = f"Your array has shape {_shape(got.shape)}, which is not the shape asked for."
        return _Outcome(False, text, text, detail=detail, readings=readings)
    correct = _close(got, want, q.tolerance)
    near = None if correct else _near_figures(got, want, q.tolerance)
    return _Outcome(correct, text, text, near_figures=near, readings=readings)


def _check_shape(
    q: WrittenQuestion, value: Any, expected: Any, checker: object, hidden: bool
) -> _Outcome:
    value, note = read_shape(value)
    got = as_shape(value)
    readings = (note,) if note else ()
    return _Outcome(got == _as_shape_trusted(expected), _shape(got), _shape(got), readings=readings)


def _check_choice(
    q: WrittenQuestion, value: Any, expected: Any, checker: object, hidden: bool
) -> _Outcome:
    got, rest = read_choice(value, q.choices)
    text = ",".join(sorted(got))
    readings = (f"the text after the letter (`{_clip(rest)}`) was not graded",) if rest else ()
    return _Outcome(got == _as_choice_trusted(expected), text, text, readings=readings)


def _clip(text: str, n: int = 60) -> str:
    text = text.replace("`", "'")
    return text if len(text) <= n else text[: n - 3] + "..."


def _check_list(
    q: WrittenQuestion, value: Any, expected: Any, checker: object, hidden: bool
) -> _Outcome:
    want = as_list(list(expected))
    ordered = bool(getattr(q, "ordered", False))
    fmt = list_format(q, want)
    value, note = read_list(value, fmt, all(isinstance(w, float) for w in want))
    got = as_list(value)
    bad = malformed_item(got, fmt)
    if bad is not None and not hidden:
        raise AnswerFormatError(bad)
    text = ", ".join(_item(x) for x in got)
    correct = _lists_match(got, want, ordered, q.tolerance)
    right = None
    threshold = int(option(q, "count_right_from"))
    if not correct and threshold and len(want) >= threshold:
        n = _items_right(got, want, ordered, q.tolerance)
        where = " (each in its place)" if ordered else ""
        right = f"{n} of the {len(want)} items asked for are right{where}."
    return _Outcome(correct, text, text, right_items=right, readings=(note,) if note else ())


def _items_right(
    got: Sequence[str | float], want: Sequence[str | float], ordered: bool, tol: Tolerance
) -> int:
    if ordered:
        return sum(_items_match(g, w, tol) for g, w in zip(got, want))
    unused = list(got)
    n = 0
    for w in want:
        for i, g in enumerate(unused):
            if _items_match(g, w, tol):
                del unused[i]
                n += 1
                break
    return n


_CHECKS: dict[str, Callable[..., _Outcome]] = {
    "expression": _check_expression,
    "number": _check_number,
    "array": _check_array,
    "shape": _check_shape,
    "choice": _check_choice,
    "list": _check_list,
}


def _wrong_forms(
    q: WrittenQuestion, value: Any, variant: Mapping[str, Any], checker: ExprChecker | None
) -> list[WrongForm]:
    """The known wrong answers this answer matches (the first match per misconception)."""
    if q.wrong_forms is None:
        return []
    found: list[WrongForm] = []
    for wf in q.wrong_forms(variant):
        if any(f.misconception == wf.misconception for f in found):
            continue
        try:
            matched = _CHECKS[q.answer_kind](q, value, wf.answer, checker, True)
        except AnswerFormatError:
            return []
        if matched.correct and matched.error is None:
            found.append(wf)
    return found


# ------------------------------------------------------------------- comparison


def _as_shape_trusted(expected: Any) -> tuple[int, ...]:
    return as_shape(expected) if isinstance(expected, str) else tuple(int(x) for x in expected)


def _as_choice_trusted(expected: Any) -> frozenset[str]:
    if isinstance(expected, (set, frozenset, tuple)):
        expected = list(expected)
    return as_choice(expected)


def _items_match(a: str | float, b: str | float, tol: Tolerance) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return _close(a, b, tol)
    if isinstance(a, float) or isinstance(b, float):
        try:
            return _close(as_number(a), as_number(b), tol)
        except AnswerFormatError:
            return False
    return " ".join(str(a).split()) == " ".join(str(b).split())


def _lists_match(
    got: Sequence[str | float], want: Sequence[str | float], ordered: bool, tol: Tolerance
) -> bool:
    if len(got) != len(want):
        return False
    if ordered:
        return all(_items_match(g, w, tol) for g, w in zip(got, want))
    unused = list(got)
    for w in want:
        for i, g in enumerate(unused):
            if _items_match(g, w, tol):
                del unused[i]
                break
        else:
            return False
    return True


# ---------------------------------------------------------------------- display


def _code(text: str) -> str:
    shown = text.replace("`", "'").replace("\n", " ")
    if len(shown) > 200:
        shown = shown[:197] + "..."
    return f"`{shown}`"


def _shape(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else "") + ")"


def _number(x: float) -> str:
    """A number as it can be typed back: integers as integers, others in their shortest form."""
    x = float(x)
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return repr(x)


def _array_text(a: np.ndarray, number: Callable[[float], str]) -> str:
    """Nested brackets as in answers.toml, each entry as `number` writes it: `[[0.5, 1], [2, -0.25]]`."""
    if a.ndim == 0:
        return number(float(a))
    return "[" + ", ".join(_array_text(row, number) for row in a) + "]"


def _item(x: str | float) -> str:
    return _number(x) if isinstance(x, float) else x


def _show(kind: str, value: Any) -> str:
    if kind == "number":
        return _number(value)
    if kind == "array":
        return _array_text(np.asarray(value, dtype=np.float64), _number)
    if kind == "shape":
        return _shape(_as_shape_trusted(value))
    if kind == "choice":
        return ", ".join(sorted(_as_choice_trusted(value)))
    if kind == "list":
        return ", ".join(_item(x) for x in as_list(list(value)))
    return str(value)


# ---------------------------------------------------------------------- the answer key


def answer_key(questions: Sequence[WrittenQuestion], variant: Mapping[str, Any]) -> str:
    """Markdown: the expected answer of every auto-graded written question, for one variant.

    This is the only place expected written answers are shown; the answer-key test that
    holds it gets the visibility the instructor chose (`Assignment.reveal_answers`).
    """
    lines = []
    for q in questions:
        if q.answer_kind == "text":
            continue
        try:
            expected = q.expected(variant)
            if q.answer_kind == "number":
                shown = _key_number(float(expected), q.tolerance)
            elif q.answer_kind == "array":
                shown = _array_text(
                    np.asarray(expected, dtype=np.float64),
                    lambda x, q=q: _key_number(x, q.tolerance),
                )
            else:
                shown = _show(q.answer_kind, expected)
        except Exception as err:  # noqa: BLE001 - one broken key entry must not hide the others
            shown = f"(could not be computed: {type(err).__name__})"
        suffix = " (or any equivalent form)" if q.answer_kind == "expression" else ""
        lines.append(f"- **{q.title}** (`{q.key}`): `{shown.replace('`', chr(39))}`{suffix}")
    return "\n".join(lines)


def _key_number(x: float, tol: Tolerance) -> str:
    if x.is_integer() and abs(x) < 1e16:
        return str(int(x))
    return f"{x:.{max(6, _figures_needed(x, tol))}g}"
