"""grade_written: every answer kind, wrong forms, hidden questions, unanswered keys."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from grader.questions import Tolerance, WrittenQuestion, WrongForm
from grader.written.answers import NOT_FOUND, AnswerSheet, parse_answers
from grader.written.expr.checker import ExprChecker
from grader.written.grading import grade_written

VARIANT = {"d": 64, "ppl": 12.5}

SHEET = parse_answers(
    """\
params = "d(12d+13)"
params_no_bias = "12 d^2"
params_bad = "12 d^2 +"
grad = "u_o - p_a u_a - p_b u_b"
ppl = 12.5004
ppl_base2 = 3.6439
ppl_text = "12.5"
ppl_bad = "twelve"
weights = [[0.5, 0.5], [1.0, 0.0]]
weights_wrong_shape = [0.5, 0.5, 1.0, 0.0]
scores_shape = "(2, 8, 16, 16)"
scores_shape_no_heads = [2, 16, 16]
choice = "b"
choices = "c, a"
merges = ["e r", "t h"]
explain = "Because the variance is computed per token."
blank = ""
broken = "oops
"""
)


def wq(key: str, kind: str, expected, **kw) -> WrittenQuestion:
    return WrittenQuestion(
        id=f"t.{key}", title=key, points=2.0, key=key, answer_kind=kind, expected=expected, **kw
    )


def PARAMS_WRONG(v: object) -> list[WrongForm]:
    return [WrongForm("12 d^2", "params-missing-biases", "The biases are parameters too.")]


@pytest.fixture(scope="module")
def checker() -> Iterator[ExprChecker]:
    with ExprChecker() as j:
        yield j


# ------------------------------------------------------------------ expressions


def test_expression_correct(checker: ExprChecker) -> None:
    r = grade_written(
        wq("params", "expression", lambda v: "12 d^2 + 13 d", symbols=("d",)),
        SHEET,
        VARIANT,
        checker,
    )
    assert r.passed and r.score == 2.0 and r.max_score == 2.0 and r.status == "correct"
    assert "d*(12*d + 13)" in r.feedback and r.misconceptions == []
    assert r.answer_text == "d*(12*d + 13)" and r.interpreted == "d*(12*d + 13)"


def test_expression_wrong_names_the_misconception(checker: ExprChecker) -> None:
    q = wq(
        "params_no_bias",
        "expression",
        lambda v: "12 d^2 + 13 d",
        symbols=("d",),
        wrong_forms=PARAMS_WRONG,
    )
    r = grade_written(q, SHEET, VARIANT, checker)
    assert not r.passed and r.score == 0.0 and r.status == "wrong"
    assert r.misconceptions == ["params-missing-biases"]
    assert "The biases are parameters too." in r.feedback
    # how the answer was read, the mistake, never the expected expression.
    assert "read as `12*d^2`" in r.feedback
    assert "13" not in r.feedback and "Expected" not in r.feedback


def test_hidden_question_says_only_right_or_wrong(checker: ExprChecker) -> None:
    q = wq(
        "params_no_bias",
        "expression",
        lambda v: "12 d^2 + 13 d",
        symbols=("d",),
        wrong_forms=PARAMS_WRONG,
        visibility="hidden",
    )
    r = grade_written(q, SHEET, VARIANT, checker)
    assert r.misconceptions == ["params-missing-biases"]  # recorded for the instructor
    assert "13" not in r.feedback and "biases" not in r.feedback and "Expected" not in r.feedback
    assert "Not correct" in r.feedback


def test_unreadable_expression_costs_the_points_with_a_reason(checker: ExprChecker) -> None:
    r = grade_written(
        wq("params_bad", "expression", lambda v: "12 d^2 + 13 d", symbols=("d",)),
        SHEET,
        VARIANT,
        checker,
    )
    assert r.status == "unreadable" and r.score == 0.0 and "ends too early" in r.feedback


def test_skipgram_sign_flip(checker: ExprChecker) -> None:
    syms = ("u_o", "u_a", "u_b", "p_a", "p_b")
    q = wq(
        "grad",
        "expression",
        lambda v: "-u_o + p_a u_a + p_b u_b",
        symbols=syms,
        wrong_forms=lambda v: [
            WrongForm("u_o - p_a u_a - p_b u_b", "skipgram-grad-sign", "observed minus expected"),
            WrongForm("-u_o", "skipgram-grad-no-expectation", "no expectation"),
        ],
    )
    r = grade_written(q, SHEET, VARIANT, checker)
    assert r.misconceptions == ["skipgram-grad-sign"]


def test_checker_timeout_is_reported(checker: ExprChecker) -> None:
    """A check that overran the checker's limit costs the points with the checker's own words.

    The checker is asked for a reply within 0 s (its read loop gives up before waiting), so
    the outcome does not depend on how fast this machine answers.
    """
    with ExprChecker(timeout=0.0) as slow:
        r = grade_written(
            wq("params", "expression", lambda v: "12 d^2 + 13 d", symbols=("d",)),
            SHEET,
            VARIANT,
            slow,
        )
    assert r.score == 0.0 and "took too long to check" in r.feedback


def test_bad_expected_is_a_grader_error(checker: ExprChecker) -> None:
    r = grade_written(
        wq("params", "expression", lambda v: "12 d^2 +", symbols=("d",)), SHEET, VARIANT, checker
    )
    assert r.status == "grader-error" and r.score == 0.0


# ---------------------------------------------------------------------- numbers


def test_number_from_the_variant_with_tolerance() -> None:
    q = wq("ppl", "number", lambda v: v["ppl"], tolerance=Tolerance(rtol=1e-3, atol=1e-4))
    assert grade_written(q, SHEET, VARIANT, None).passed
    assert not grade_written(q, SHEET, {"ppl": 13.0}, None).passed
    assert grade_written(wq("ppl_text", "number", lambda v: 12.5), SHEET, VARIANT, None).passed


def test_number_wrong_form_by_tolerance() -> None:
    q = wq(
        "ppl_base2",
        "number",
        lambda v: v["ppl"],
        wrong_forms=lambda v: [
            WrongForm(3.64386, "perplexity-base-2", "Perplexity is exp of the loss in nats.")
        ],
    )
    r = grade_written(q, SHEET, VARIANT, None)
    assert r.misconceptions == ["perplexity-base-2"] and "exp of the loss" in r.feedback
    assert "12.5" not in r.feedback and "Expected" not in r.feedback
    assert "read as `3.6439`" in r.feedback


def test_number_not_a_number() -> None:
    r = grade_written(wq("ppl_bad", "number", lambda v: 12.5), SHEET, VARIANT, None)
    assert r.status == "unreadable" and '"twelve"' in r.feedback


# ----------------------------------------------------------------------- arrays


def test_array_values_and_shape_first() -> None:
    want = [[0.5, 0.5], [1.0, 0.0]]
    assert grade_written(wq("weights", "array", lambda v: want), SHEET, VARIANT, None).passed
    assert not grade_written(
        wq("weights", "array", lambda v: [[0.5, 0.5], [0.0, 1.0]]), SHEET, VARIANT, None
    ).passed
    r = grade_written(wq("weights_wrong_shape", "array", lambda v: want), SHEET, VARIANT, None)
    assert "shape (4,)" in r.feedback and "not the shape asked for" in r.feedback
    assert "(2, 2)" not in r.feedback
    r = grade_written(
        wq("weights_wrong_shape", "array", lambda v: want, visibility="hidden"),
        SHEET,
        VARIANT,
        None,
    )
    assert "(2, 2)" not in r.feedback and "not the shape asked for" in r.feedback


def test_shape_answers() -> None:
    q = wq("scores_shape", "shape", lambda v: (2, 8, 16, 16))
    assert grade_written(q, SHEET, VARIANT, None).passed
    q = wq(
        "scores_shape_no_heads",
        "shape",
        lambda v: (2, 8, 16, 16),
        wrong_forms=lambda v: [
            WrongForm((2, 16, 16), "shape-scores-missing-heads", "Each head has its own scores.")
        ],
    )
    r = grade_written(q, SHEET, VARIANT, None)
    assert r.misconceptions == ["shape-scores-missing-heads"] and r.answer_text == "(2, 16, 16)"


def test_choices() -> None:
    assert grade_written(
        wq("choice", "choice", lambda v: "B", choices=("A", "B", "C")), SHEET, VARIANT, None
    ).passed
    assert grade_written(
        wq("choices", "choice", lambda v: ["A", "C"], choices=("A", "B", "C")), SHEET, VARIANT, None
    ).passed
    assert not grade_written(
        wq("choices", "choice", lambda v: "A", choices=("A", "B", "C")), SHEET, VARIANT, None
    ).passed


@dataclass(frozen=True)
class OrderedQuestion(WrittenQuestion):
    ordered: bool = True  # the field this module reads with getattr (see the notes)


def test_lists_ordered_or_not() -> None:
    assert grade_written(
        wq("merges", "list", lambda v: ["t h", "e r"]), SHEET, VARIANT, None
    ).passed
    oq = OrderedQuestion(
        id="t.m",
        title="m",
        points=1.0,
        key="merges",
        answer_kind="list",
        expected=lambda v: ["t h", "e r"],
    )
    assert not grade_written(oq, SHEET, VARIANT, None).passed


def test_text_is_recorded_not_graded() -> None:
    r = grade_written(wq("explain", "text", lambda v: None), SHEET, VARIANT, None)
    assert (
        r.status == "manual"
        and r.score == 0.0
        and r.answer_text
        and r.answer_text.startswith("Because")
    )


# ------------------------------------------------------------------- unanswered


def test_not_attempted_and_unreadable_keys() -> None:
    blank = grade_written(wq("blank", "number", lambda v: 1), SHEET, VARIANT, None)
    assert blank.not_attempted and blank.score == 0.0 and "Not attempted" in blank.feedback
    absent = grade_written(wq("absent", "number", lambda v: 1), SHEET, VARIANT, None)
    assert absent.not_attempted and "`absent`" in absent.feedback
    broken = grade_written(
        wq("broken", "expression", lambda v: "x", symbols=("x",)), SHEET, VARIANT, None
    )
    assert (
        broken.status == "unreadable"
        and "line 18" in broken.feedback
        and '`broken = "oops`' in broken.feedback
    )


def test_missing_file() -> None:
    sheet = AnswerSheet(None, False, file_error=NOT_FOUND)
    r = grade_written(
        wq("params", "expression", lambda v: "x", symbols=("x",)), sheet, VARIANT, None
    )
    assert r.not_attempted and NOT_FOUND in r.feedback and r.answer_text is None


# ------------------------------------------------- near misses and how numbers are shown


@pytest.mark.parametrize(
    ("typed", "figures"), [("0.123", 4), ("0.12", 4), ("1.2e-1", 4), ("0.1", 4)]
)
def test_a_rounded_number_is_close_but_not_within_the_tolerance(typed: str, figures: int) -> None:
    # 0.123456 within rtol 1e-3 + atol 1e-4 needs 4 figures: 0.1235 is 4.4e-5 off (bound 2.2e-4),
    # 0.123 is 4.6e-4 off. The expected value itself is never shown.
    q = wq("x", "number", lambda v: 0.123456, tolerance=Tolerance(rtol=1e-3, atol=1e-4))
    r = grade_written(q, parse_answers(f"x = {typed}"), {}, None)
    assert not r.passed
    assert (
        f"close, but not within the tolerance: give at least {figures} significant figures"
        in r.feedback.lower()
    )
    assert "0.123456" not in r.feedback and "0.1235" not in r.feedback


@pytest.mark.parametrize("typed", ["0.2", "0.125", "0.1239", "-0.123", "0.13"])
def test_a_wrong_number_is_not_called_close(typed: str) -> None:
    q = wq("x", "number", lambda v: 0.123456, tolerance=Tolerance(rtol=1e-3, atol=1e-4))
    r = grade_written(q, parse_answers(f"x = {typed}"), {}, None)
    assert not r.passed and "close" not in r.feedback.lower()


def test_a_rounded_array_is_close() -> None:
    q = wq(
        "w",
        "array",
        lambda v: [[0.123456, 2.0], [0.5, 1.0]],
        tolerance=Tolerance(rtol=1e-3, atol=1e-4),
    )
    r = grade_written(q, parse_answers("w = [[0.12, 2.0], [0.5, 1.0]]"), {}, None)
    assert "give at least 4 significant figures" in r.feedback
    r = grade_written(q, parse_answers("w = [[0.12, 3.0], [0.5, 1.0]]"), {}, None)
    assert "close" not in r.feedback.lower()


def test_counts_are_shown_as_integers() -> None:
    q = wq("n", "number", lambda v: 4718592, tolerance=Tolerance(rtol=0.0, atol=0.5))
    r = grade_written(q, parse_answers("n = 4718000"), {}, None)
    assert (
        "read as `4718000`" in r.feedback
        and "e+06" not in r.feedback
        and "4718592" not in r.feedback
    )


def test_choice_feedback_never_names_the_letter() -> None:
    q = wq(
        "c",
        "choice",
        lambda v: "A",
        choices=("A", "B", "C"),
        wrong_forms=lambda v: [
            WrongForm("B", "skipgram-grad-sign", "B is observed minus expected.")
        ],
    )
    r = grade_written(q, parse_answers('c = "B"'), {}, None)
    assert r.misconceptions == ["skipgram-grad-sign"] and "read as `B`" in r.feedback
    assert "`A`" not in r.feedback and "Expected" not in r.feedback


def test_a_mistake_text_that_states_the_answer_loses_that_clause(checker: ExprChecker) -> None:
    q = wq(
        "t",
        "expression",
        lambda v: "1 - h^2",
        symbols=("h", "z"),
        wrong_forms=lambda v: [
            WrongForm(
                "1 - z^2",
                "bptt-derivative-of-preactivation",
                "1 - z^2 squares the preactivation; tanh'(z) = 1 - tanh(z)^2 = 1 - h^2.",
            )
        ],
    )
    r = grade_written(q, parse_answers('t = "1 - z^2"'), {}, checker)
    assert r.misconceptions == ["bptt-derivative-of-preactivation"]
    assert "squares the preactivation" in r.feedback and "1 - h^2" not in r.feedback


def test_the_answer_key_holds_every_expected_answer() -> None:
    from grader.written.grading import answer_key

    qs = [
        wq("n", "number", lambda v: 4718592),
        wq("p", "number", lambda v: v["ppl"]),
        wq("c", "choice", lambda v: "C", choices=("A", "B", "C")),
        wq("e", "expression", lambda v: "1 - h^2"),
        wq("essay", "text", lambda v: None),
    ]
    key = answer_key(qs, VARIANT)
    assert "`4718592`" in key and "`12.5`" in key and "`C`" in key and "`1 - h^2`" in key
    assert "essay" not in key
