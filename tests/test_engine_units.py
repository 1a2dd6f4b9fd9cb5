"""The engine's small modules on their own: which of the student's functions a function calls
(grader/engine/calls.py), the words for what the sandbox reports
(grader/engine/sandbox_words.py), previews and the comparison's yes-or-no that the diagnosis asks
(grader/engine/checks.py). Each is pure; the gradings that use them are tested elsewhere, these
pin the rules themselves.
"""

from __future__ import annotations

import typing

import numpy as np
import pytest

from grader.engine import calls, sandbox_words
from grader.sandbox.session import Cause, Event, EventKind, Failure

STUDENT = """\
import numpy as np


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


def _scores(q, k):
    return q @ k.T


def attention(q, k, v):
    w = softmax(_scores(q, k))
    return w @ v


def block(x):
    def inner(y):
        return attention(y, y, y)
    return inner(x) + np.tanh(x)


def recursive(n):
    return 1 if n == 0 else recursive(n - 1)


class Layer:
    def forward(self, x):
        return softmax(x)


def method_call(x):
    return x.softmax()
"""


def test_a_function_reaches_the_students_functions_it_calls_directly_and_through_others():
    assert calls.reached(STUDENT, "attention") == {"softmax", "_scores"}
    # through a nested function, two levels down; library calls (np.tanh) are not the student's
    assert calls.reached(STUDENT, "block") == {"attention", "softmax", "_scores"}
    assert calls.reached(STUDENT, "softmax") == frozenset()


def test_what_a_function_calls_includes_the_names_the_file_lacks():
    """A helper left out with its syntax error, or never written, is still called by name: the
    follow-through reads it (`called`); `reached` stays the file's own functions."""
    source = STUDENT + "\n\ndef uses_missing(x):\n    return never_written(attention(x, x, x))\n"
    assert calls.reached(source, "uses_missing") == {"attention", "softmax", "_scores"}
    assert calls.called(source, "uses_missing") >= {"never_written", "attention", "softmax"}
    assert "uses_missing" not in calls.called(source, "uses_missing")
    assert calls.called(source, "recursive") == frozenset()


def test_a_function_does_not_reach_itself_methods_or_attribute_calls():
    assert calls.reached(STUDENT, "recursive") == frozenset()
    assert calls.reached(STUDENT, "method_call") == frozenset()  # `x.softmax()` is not theirs
    assert calls.reached(STUDENT, "no_such_function") == frozenset()


def test_unparsable_source_reaches_nothing_and_holds_no_line():
    assert calls.reached("def f(:\n", "f") == frozenset()
    assert calls.holding("def f(:\n", 1) is None


def test_the_function_holding_a_line():
    lines = STUDENT.splitlines()
    at = lines.index("    w = softmax(_scores(q, k))") + 1
    assert calls.holding(STUDENT, at) == "attention"
    assert calls.holding(STUDENT, 1) is None  # the import line
    assert calls.holding(STUDENT, lines.index("def block(x):") + 1) == "block"


FAILURES: dict[str, Failure] = {
    "protocol": Failure("protocol", cause="protocol", function="f", detail="bad frame"),
    "shortcut-refused": Failure(
        "exception", cause="shortcut-refused", function="f", detail="torch.softmax"
    ),
    "not-implemented": Failure("not-attempted", cause="not-implemented", function="f"),
    "missing-function": Failure("missing-function", cause="missing-function", function="f"),
    "bad-output": Failure("bad-output", cause="bad-output", function="f", detail="returned a set"),
    "exit-raised": Failure("exception", cause="exit-raised", function="f", detail="SystemExit"),
    "memory": Failure("exception", cause="memory", function="f", detail="used over 2 GiB"),
    "raised": Failure(
        "exception",
        cause="raised",
        function="f",
        exception="ValueError: shapes differ",
        exception_type="ValueError",
        detail="shapes differ",
    ),
    "import-timeout": Failure("import", cause="import-timeout", module="rnn", seconds=10.0),
    "import-ended": Failure("import", cause="import-ended", module="rnn", detail="killed"),
    "import-raised": Failure(
        "import",
        cause="import-raised",
        module="rnn",
        inner=Failure(
            "exception",
            cause="raised",
            exception="NameError: x",
            exception_type="NameError",
            detail="x",
        ),
    ),
    "budget": Failure("budget", cause="budget", function="f", seconds=300.0),
    "call-timeout": Failure("timeout", cause="call-timeout", function="f", seconds=1.0),
    "call-ended": Failure("crashed", cause="call-ended", function="f", detail="signal 9"),
    "unreadable-value": Failure(
        "bad-output", cause="unreadable-value", function="f", detail="truncated"
    ),
    "restarts-spent": Failure("crashed", cause="restarts-spent", function="f"),
}


def test_every_cause_the_sandbox_reports_has_a_sentence_of_its_own():
    causes = set(typing.get_args(Cause))
    assert causes == set(FAILURES), "a new cause needs its words and a line here"
    words = {cause: sandbox_words.failure_words(f) for cause, f in FAILURES.items()}
    for cause, text in words.items():
        assert text and text != FAILURES[cause].kind, (cause, text)  # not the fallback
    assert len(set(words.values())) == len(words)  # no two causes read the same


@pytest.mark.parametrize(
    ("cause", "must"),
    [
        ("import-raised", ["`rnn.py` could not be imported", "`NameError: x`"]),
        ("call-timeout", ["`f` did not return", "1 s"]),
        ("import-timeout", ["`rnn.py`", "10 s"]),
        ("budget", ["300 s"]),
        ("memory", ["used over 2 GiB", "`f`", "MemoryError"]),
        ("not-implemented", ["NotImplementedError"]),
    ],
)
def test_the_words_carry_the_facts_they_are_written_from(cause, must):
    text = sandbox_words.failure_words(FAILURES[cause])
    for part in must:
        assert part in text, (part, text)


def test_every_event_kind_has_words_that_never_carry_its_detail():
    detail = "exit status -9 after 3,141 ms"
    for kind in typing.get_args(EventKind):
        text = sandbox_words.event_words(Event(kind, "attention", detail), "transformer.py")
        assert text != "the sandbox stopped your code", kind  # not the fallback
        assert "3,141" not in text and "-9" not in text, (kind, text)
    assert "`transformer.py`" in sandbox_words.event_words(
        Event("import-failed", "transformer", detail), "transformer.py"
    )
    assert "your file" in sandbox_words.event_words(Event("import-failed", "m", detail), None)


# ------------------------------------------------------ previews (grader/engine/checks.py)


def test_a_preview_of_nested_parameters_is_brief_plain_numbers() -> None:
    # a4's forward pass takes {"W_E": …, "blocks": [{"W_Q": …}, …]}: the nested arrays were
    # printed whole by numpy (its `array([...])`, every digit) before the cut at 120 characters
    import numpy as np

    from grader.engine.checks import _short, preview

    rng = np.random.default_rng(0)
    params = {"W_E": rng.normal(size=(64, 64)), "blocks": [{"W_Q": rng.normal(size=(64, 64))}] * 4}
    text = preview([params])
    assert "array(" not in text and len(text) <= 125
    assert text.startswith("[{'W_E': [[") and float(text[11:].split(",")[0]) == params["W_E"][0, 0]
    shown = preview(params)
    assert shown.startswith("{'W_E': shape (64, 64): [") and "'blocks': [{'W_Q': [[" in shown
    # what is not a dict reads as before: lists for tuples and arrays, numbers for numpy scalars
    assert _short((np.float64(1.5), np.array([1, 2]), np.array(3))) == "[1.5, [1, 2], 3]"
    assert _short({"a": np.int64(2)}) == "{'a': 2}"
    assert _short(list(range(200)), 20) == repr(list(range(200)))[:19] + "…"


def test_a_short_preview_is_the_first_characters_of_the_whole_repr() -> None:
    # only the first items of every level are converted: the text is still the whole value's
    # repr (as plain Python data) cut at the limit
    import numpy as np

    from grader.engine.checks import _short

    def plain(x):
        if isinstance(x, dict):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        if isinstance(x, (np.ndarray, np.generic)):
            return plain(x.tolist()) if isinstance(x, np.ndarray) else x.item()
        return x

    rng = np.random.default_rng(1)
    values = [
        list(range(500)), [[1] * 50] * 50, rng.normal(size=(30, 30)), ["", ""] * 100, [[]] * 100,
        {"a": rng.normal(size=(9, 9)), "b": [{"c": rng.integers(0, 9, size=100)}]},
        (np.float64(1.5),) * 100, "x" * 500, [np.int8(1)] * 300, rng.integers(0, 2, 200) > 0,
    ]  # fmt: skip
    for value in values:
        for limit in (20, 41, 120):
            whole = repr(plain(value))
            want = whole if len(whole) <= limit else whole[: limit - 1] + "…"
            assert _short(value, limit) == want, (value, limit)


# ---------------------------------------------- the diagnosis's yes/no (grader/engine/checks.py)


def _pairs() -> list[tuple[np.ndarray, np.ndarray]]:
    """Float arrays against expected ones of their shape: within, at and past the tolerance,
    NaN and inf in the same and in other places, float32 against float64."""
    rng = np.random.default_rng(7)
    w = rng.normal(size=(3, 4))
    out = [(w.copy(), w), (w + 1e-12, w), (w + 1e-3, w), (w.astype(np.float32), w)]
    out.append((w * (1 + 2e-7), w))  # near the relative tolerance
    for got_bad, want_bad in [
        (np.nan, np.nan),
        (np.inf, np.inf),
        (np.inf, -np.inf),
        (np.nan, np.inf),
        (np.nan, None),
    ]:
        g, e = w.copy(), w.copy()
        g[1, 2] = got_bad
        if want_bad is not None:
            e[1, 2] = want_bad
        out.append((g, e))
    g = w.copy()
    g[0, 0] = np.nan
    e = w.copy()
    e[2, 3] = np.nan  # NaN in another place
    out.append((g, e))
    return out


@pytest.mark.parametrize(("got", "want"), _pairs())
def test_matches_decides_as_numpy_isclose_and_as_compare(got: np.ndarray, want: np.ndarray) -> None:
    """`matches` (the diagnosis asks it of every mutant's output) answers what numpy's
    `allclose` answers with the grader's tolerance (NaN equal to NaN, inf to inf of its sign),
    and what `compare` finds, without writing the mismatch."""
    from grader.engine.checks import compare, matches
    from grader.questions import Tolerance

    tol = Tolerance()
    outside = bool(np.allclose(got, want, rtol=tol.rtol, atol=tol.atol, equal_nan=True))
    assert matches(got, want, tol) == outside
    assert (not compare(got, want, tol)) == outside


def test_matches_falls_back_to_compare_beyond_float_arrays() -> None:
    from grader.engine.checks import matches
    from grader.questions import Tolerance

    tol, w = Tolerance(), np.arange(6.0).reshape(2, 3)
    assert not matches(w.T, w, tol)  # another shape
    assert not matches(w.tolist()[0], w, tol)
    assert matches(w.tolist(), w, tol)  # a list of the right numbers
    assert matches(np.arange(6).reshape(2, 3), np.arange(6).reshape(2, 3), tol)
    assert not matches(w + 1e-9, w, tol, exact=True)
    assert matches((w, 1.0), (w, 1.0 + 1e-12), tol) and not matches((w, 1.0), (w, 2.0), tol)
