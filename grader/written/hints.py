"""What a question's answer looks like, for messages that cannot read one.

Every refusal ends with the question's answer type and an example in that type, taken from
the question itself (its `example`, its symbols, its letters, the form of its list items),
never its expected answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grader.questions import WrittenQuestion
from grader.written.question import option

# a derivation's syntax, on no question's quantity
DERIVATION_EXAMPLE = "d/dx (x^3 + x) = 3 x^2 + 1"


def example_number(q: WrittenQuestion, want: float | None, integer: bool) -> str:
    """A number in the question's type that is not its answer."""
    own = option(q, "example")
    if own is not None:
        return str(own)
    for text in ("1024", "4096") if integer else ("0.25", "0.75"):
        if want is None or float(text) != want:
            return text
    return "2"  # unreachable: two different candidates


def _choice_example(q: WrittenQuestion, expected: Any) -> str:
    letters = [c.upper() for c in q.choices] or ["A", "B", "C", "D"]
    wanted = {str(x).upper() for x in (expected if isinstance(expected, (list, tuple, set,
                                                                          frozenset)) else
                                        [expected])}  # fmt: skip
    if isinstance(expected, str):
        wanted = {p.strip().upper() for p in expected.replace(",", " ").split()}
    return next((c for c in letters if c not in wanted), letters[0])


def _expression_example(q: WrittenQuestion, expected: Any) -> str:
    own = option(q, "example")
    if own is not None:
        return str(own)
    symbols = [s for s in q.symbols if "=" not in s]
    if not symbols:
        return "2 + 1"
    a = symbols[0]
    text = f"2 {a} + 1" if len(symbols) == 1 else f"2 {a} + {symbols[1]}^2"
    return text if text.replace(" ", "") != str(expected).replace(" ", "") else f"3 {a}"


def list_format(q: WrittenQuestion, want: Sequence[Any]) -> int | None:
    """How many space-separated symbols every item of the answer has (None: no fixed form)."""
    counts = {len(w.split()) for w in want if isinstance(w, str)}
    if len(counts) == 1 and all(isinstance(w, str) for w in want):
        n = counts.pop()
        return n if n >= 2 else None
    return None


def _list_example(q: WrittenQuestion, parts: int | None) -> str:
    own = option(q, "example")
    if own is not None:
        return str(own)
    if parts:
        return " ".join("abcdefgh"[:parts])
    return "a"


def malformed_item(got: Sequence[Any], parts: int | None) -> str | None:
    """The first item of `got` not written in the form every item needs, described."""
    if parts is None:
        return None
    for i, item in enumerate(got, start=1):
        if isinstance(item, str) and len(item.split()) != parts:
            shown = item.replace("`", "'")
            return (
                f"item {i} of your list (`{shown}`) is not written as an item is here: "
                f"{_count(parts)} symbols separated by a space, such as "
                f"`{' '.join('abcdefgh'[:parts])}`"
            )
        if not isinstance(item, str):
            return (
                f"item {i} of your list is a number, and every item here is {_count(parts)} symbols"
            )
    return None


def _count(n: int) -> str:
    return {2: "two", 3: "three", 4: "four"}.get(n, str(n))


def expects(q: WrittenQuestion, expected: Any) -> str:
    """One sentence: the answer's type here, with an example in that type."""
    kind = q.answer_kind
    if kind == "number":
        try:
            want = float(expected)
        except (TypeError, ValueError):
            want = None
        integer = integer_question(q, want)
        if integer:
            return (f"This question asks for an exact count: an integer such as "
                    f"{example_number(q, want, True)} (1,234,567 and 12*8*1024^2 are read too).")  # fmt: skip
        return (f"This question asks for a number, such as {example_number(q, want, False)} "
                "(a fraction 1/3, 1.5e-3 and arithmetic such as exp(2.45) are read too).")  # fmt: skip
    if kind == "expression":
        names = ", ".join(s for s in q.symbols if "=" not in s) or "no symbols"
        if option(q, "steps"):
            return (
                f"This question asks for an expression in {names}, or a derivation: steps joined "
                f"by `=` in one string, or a TOML array of steps, such as `{DERIVATION_EXAMPLE}`."
            )
        return (f"This question asks for one expression in {names}, in quotes, such as "
                f"`{_expression_example(q, expected)}`.")  # fmt: skip
    if kind == "choice":
        letters = ", ".join(c.upper() for c in q.choices) or "A, B, C, D"
        return (f"This question asks for a letter ({letters}), such as \"{_choice_example(q, expected)}\"; "
                f"a reason may follow it: \"{_choice_example(q, expected)}. because …\".")  # fmt: skip
    if kind == "array":
        return "This question asks for an array of numbers, row by row: [[0.5, -1.0], [2.0, 0.25]]."
    if kind == "shape":
        return 'This question asks for a shape: [2, 3] or "(2, 3)".'
    if kind == "list":
        try:
            parts = list_format(q, list(expected))
        except TypeError:
            parts = None
        if parts:
            return (f"This question asks for a list whose items are each {_count(parts)} symbols "
                    f'separated by a space: ["{_list_example(q, parts)}", …].')  # fmt: skip
        return f'This question asks for a list: ["{_list_example(q, None)}", …] or "a, b".'
    return "This question asks for text in quotes."


def integer_question(q: WrittenQuestion, want: float | None) -> bool:
    """An exact count: declared so, or an integer key checked to an absolute tolerance under one
    (and no relative one), as parameter counts are."""
    declared = option(q, "integer")
    if declared is not None:
        return bool(declared)
    if want is None:
        return False
    tol = q.tolerance
    return float(want).is_integer() and tol.rtol == 0 and tol.atol < 1.0
