"""How written answers are read as students write them, and what a refusal teaches.

Expected values come from the notes (GPT-2 small's 124,439,808 parameters) or from Python's
own arithmetic, never from the reader under test.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest

from grader.questions import Tolerance, WrittenQuestion, WrongForm
from grader.suites import a2_rnn_bptt
from grader.written.answers import parse_answers
from grader.written.expr.checker import ExprChecker
from grader.written.grading import WrittenResult, grade_written

GPT2_SMALL = 124_439_808  # notes (slides 002, "Parameter Count: Total")
EXACT = Tolerance(rtol=0.0, atol=0.5)


def question(key: str, kind: str, expected, cls=WrittenQuestion, **kw) -> WrittenQuestion:
    return cls(id=f"t.{key}", title=key, points=2.0, key=key, answer_kind=kind,
               expected=lambda v, e=expected: e, **kw)  # fmt: skip


def grade(q: WrittenQuestion, toml_value: str, checker: ExprChecker | None = None) -> WrittenResult:
    return grade_written(q, parse_answers(f"{q.key} = {toml_value}\n"), {}, checker)


@pytest.fixture(scope="module")
def checker() -> Iterator[ExprChecker]:
    with ExprChecker() as j:
        yield j


COUNT = question("total", "number", GPT2_SMALL, tolerance=EXACT)

# ------------------------------------------------------------------ numbers


@pytest.mark.parametrize(
    "typed",
    [
        '"124,439,808"',
        '"124 439 808"',
        '"124\u2009439\u2009808"',
        '"124\u202f439\u202f808"',
        '"124\u00a0439\u00a0808"',
        '"124_439_808"',
        "\"124'439'808\"",
    ],  # fmt: skip
)
def test_thousands_separators_are_read_and_said(typed: str) -> None:
    r = grade(COUNT, typed)
    assert r.status == "correct" and r.score == 2.0
    assert "was read as 124439808 (thousands separators dropped)" in r.feedback


@pytest.mark.parametrize("typed", ['"124,43,9808"', '"1,5"', '"124,439 808"'])
def test_separators_out_of_groups_of_three_are_refused(typed: str) -> None:
    r = grade(COUNT, typed)
    assert r.status == "unreadable" and r.score == 0


def test_a_decimal_comma_is_refused_with_the_point_form() -> None:
    r = grade(question("x", "number", 0.3), '"1,5"')
    assert r.status == "unreadable"
    assert "write a decimal with a point" in r.feedback


@pytest.mark.parametrize(
    ("typed", "value", "shown"),
    [
        ('"12*8*1024^2"', 12 * 8 * 1024**2, "100663296"),
        ('"2^20"', 2**20, "1048576"),
        ('"3/4 * 1024"', 768, "768"),
        ("'$e^{2.45}$'", math.exp(2.45), None),
        ('"exp(2.45)"', math.exp(2.45), None),
    ],
)
def test_arithmetic_in_a_number_question_is_evaluated(typed: str, value: float, shown) -> None:
    r = grade(question("x", "number", value), typed)
    assert r.status == "correct", r.feedback
    assert "(the arithmetic evaluated)" in r.feedback
    if shown:
        assert f"was read as {shown}" in r.feedback


def test_scientific_notation_is_a_plain_number() -> None:
    r = grade(question("x", "number", 1.5e8), '"1.5e8"')
    assert r.status == "correct" and "was read as" not in r.feedback


@pytest.mark.parametrize("typed", ['"9^9^9"', '"10^100000"', '"1/0"', '"12 x 8"'])
def test_hostile_or_foreign_arithmetic_is_refused_quickly(typed: str) -> None:
    r = grade(question("x", "number", 1.0), typed)
    assert r.status == "unreadable" and r.score == 0
    assert "This question asks for a number" in r.feedback


@pytest.mark.parametrize("typed", ['"4x"', '"x4"', '"×4"', '"4 times"', '"4-fold"', '"4 X"'])
def test_a_factor_is_read_as_its_number(typed: str) -> None:
    """ "By what factor": 4x, x4, ×4 are the number 4 (a number question has no symbol x)."""
    r = grade(question("factor", "number", 4.0), typed)
    assert r.status == "correct", r.feedback
    assert "was read as 4 (a factor)" in r.feedback
    assert grade(question("factor", "number", 4.0), '"2x"').status == "wrong"


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ('"p = 0.2500"', "`p =` set aside"),
        ('"P(like | I) = 1/4"', "`P(like | I) =` set aside"),
        ('"= 0.25"', "the `=` set aside"),
        ('"≈ 0.25"', "`≈` set aside"),
        ('"~0.25"', "the approximation sign set aside"),
        ('"about 0.25"', "the approximation sign set aside"),
        ('"0.25 (rounded)"', "`(rounded)` set aside"),
        ('"0.25."', "the full stop set aside"),
        ('"**0.25**"', "the markdown around it set aside"),
        ('"`p = 0.25`"', "`p =` set aside"),
    ],
)
def test_what_only_surrounds_a_number_is_set_aside_and_said(typed: str, said: str) -> None:
    r = grade(question("p", "number", 0.25), typed)
    assert r.status == "correct", r.feedback
    r = grade(question("p", "number", 0.5), typed)
    assert r.status == "wrong" and said in r.feedback and "was read as 0.25" in r.feedback


@pytest.mark.parametrize(
    ("typed", "expected", "said"),
    [
        ('"0.25 (1/4)"', 0.25, "`0.25` and `1/4` read as one number"),
        ('"1/3 (0.333)"', 1 / 3, "`1/3` and `0.333` read as one number"),
        ('"0.33 (1/3)"', 1 / 3, "read as 0.3333333333333333"),  # the exact form is graded
        ('"p = 0.5 (1/2)"', 0.5, "`p =` set aside; `0.5` and `1/2` read as one number"),
    ],
)
def test_one_number_written_two_ways_is_read_once(typed: str, expected: float, said: str) -> None:
    r = grade(question("p", "number", expected), typed)
    assert r.status == "correct" and said in r.feedback, r.feedback


def test_two_different_numbers_stay_arithmetic() -> None:
    """`2 (3)` is 2 · 3, as before; `0.25 (1/3)` is no number written twice."""
    assert grade(question("x", "number", 6.0), '"2 (3)"').status == "correct"
    r = grade(question("x", "number", 0.25), '"0.25 (1/3)"')
    assert r.status == "wrong" and "the arithmetic evaluated" in r.feedback


@pytest.mark.parametrize("typed", ['"p = "', '"p = q = "', '"(about)"'])
def test_nothing_or_a_number_in_the_remark_is_not_guessed(typed: str) -> None:
    assert grade(question("p", "number", 0.25), typed).status == "unreadable"


def test_an_si_count_for_an_exact_count_is_close_not_correct() -> None:
    r = grade(COUNT, '"124.4M"')
    assert r.status == "wrong" and r.score == 0
    assert "`124.4M` was read as 124400000" in r.feedback
    assert "Close: this is the count rounded; give the exact count" in r.feedback
    assert "124439808" not in r.feedback and "124,439,808" not in r.feedback


def test_an_si_count_that_is_not_the_count_rounded_is_just_wrong() -> None:
    r = grade(COUNT, '"100.7M"')
    assert r.status == "wrong" and "Close" not in r.feedback
    assert "was read as 100700000" in r.feedback


@pytest.mark.parametrize(
    ("typed", "value"), [('"1.5B"', 1.5e9), ('"3k"', 3000.0), ('"2.5 million"', 2.5e6)]
)
def test_an_si_count_is_a_number_where_a_tolerance_is_given(typed: str, value: float) -> None:
    r = grade(question("x", "number", value), typed)
    assert r.status == "correct"
    assert "(the suffix read as a power of ten)" in r.feedback


def test_exact_count_is_inferred_from_an_integer_key_and_a_tolerance_under_one() -> None:
    loose = question("x", "number", GPT2_SMALL)  # rtol 1e-3: 124.4M is within it
    assert grade(loose, '"124.4M"').status == "correct"
    declared = question("x", "number", GPT2_SMALL, cls=WrittenQuestion, integer=True)
    assert "Close: this is the count rounded" in grade(declared, '"124.4M"').feedback


# ------------------------------------------------------------------ equations


TANH = a2_rnn_bptt.ASSIGNMENT.question("a2.w_tanh_derivative")


@pytest.mark.parametrize(
    "typed",
    [
        "'$\\frac{dh}{dz} = 1 - h^2$'",
        '"dh/dz = 1 - h^2"',
        '"h\' = 1 - h^2"',
        '"tanh\'(z) = 1 - h^2"',
        '"∂h/∂z = 1 - h^2"',
    ],  # fmt: skip
)
def test_a_labelled_answer_is_graded_on_its_right_hand_side(
    checker: ExprChecker, typed: str
) -> None:
    r = grade(TANH, typed, checker)
    assert r.status == "correct", r.feedback
    assert "was read as the quantity asked for, and the right-hand side was graded" in r.feedback


def test_the_right_hand_side_shows_its_mistake(checker: ExprChecker) -> None:
    r = grade(TANH, "'$\\frac{dh}{dz} = 1 - h$'", checker)
    assert r.status == "wrong"
    assert r.misconceptions == ["bptt-tanh-prime-one-minus-tanh"]
    assert "Your answer was read as `1 - h`." in r.feedback
    assert "1 - h^2" not in r.feedback and "1 - tanh(z)^2" not in r.feedback


@pytest.mark.parametrize(
    "typed",
    [
        '"1 - h^2 (the derivative of tanh)"',
        '"dh/dz = 1 - h^2 (as in the notes, eq. 3)"',
        '"1 - h^2 (with h = tanh z)"',  # a remark restating the definition
    ],
)
def test_a_remark_in_brackets_after_an_expression_is_set_aside(
    checker: ExprChecker, typed: str
) -> None:
    r = grade(TANH, typed, checker)
    assert r.status == "correct", r.feedback
    r = grade(TANH, typed.replace("1 - h^2", "1 - h"), checker)
    assert r.status == "wrong" and "was not graded" in r.feedback
    assert r.misconceptions == ["bptt-tanh-prime-one-minus-tanh"]


@pytest.mark.parametrize("typed", ['"2 (h + z)"', '"(1 - h) (1 + h)"', '"1 - h^2 (alpha)"'])
def test_brackets_of_maths_or_a_greek_name_are_never_a_remark(
    checker: ExprChecker, typed: str
) -> None:
    r = grade(TANH, typed, checker)
    assert "was not graded" not in r.feedback


def test_an_equals_sign_only_inside_brackets_is_named_as_such(checker: ExprChecker) -> None:
    r = grade(TANH, '"1 - h^2 (h = tanh z)"', checker)  # maths in the brackets: no remark
    assert r.status != "correct"
    assert "an `=` inside brackets" in r.feedback and "0 `=` signs" not in r.feedback


def test_a_single_symbol_on_the_left_is_a_label(checker: ExprChecker) -> None:
    q = question("v", "expression", "d_k", symbols=("d_k",))
    assert grade(q, '"Var = d_k"', checker).status == "correct"


@pytest.mark.parametrize(
    ("typed", "says"),
    [
        ('"x + 1 = 1 - h^2"', "is not a name for the quantity"),
        ('"dh/dz = 1 - h^2 = 1 - tanh(z)^2"', "asks for one expression, and yours has 2 `=`"),
    ],
)
def test_an_equation_that_is_not_label_and_answer_is_refused(
    checker: ExprChecker, typed: str, says: str
) -> None:
    r = grade(TANH, typed, checker)
    assert r.status == "unreadable" and says in r.feedback
    assert "This question asks for one expression in h, z" in r.feedback


# ------------------------------------------------------------------ choices

CHOICE = question("norm", "choice", "C", choices=("A", "B", "C", "D"))


@pytest.mark.parametrize(
    ("typed", "rest"),
    [
        ('"C. RMSNorm drops the mean-centering"', "RMSNorm drops the mean-centering"),
        ('"(C) because it does not centre"', "because it does not centre"),
        ('"c - no mean"', "no mean"),
        ('"C: the mean is not subtracted"', "the mean is not subtracted"),
    ],
)
def test_a_letter_followed_by_a_reason_is_the_letter(typed: str, rest: str) -> None:
    r = grade(CHOICE, typed)
    assert r.status == "correct", r.feedback
    assert f"the text after the letter (`{rest}`) was not graded" in r.feedback


@pytest.mark.parametrize(
    "typed",
    [
        '"Option C"',
        '"answer: C"',
        '"The answer is (C)"',
        '"Choice C. no mean"',
        '"**C**"',  # markdown bold, copied from a notebook
        '"`C`"',
        '"[C]"',
    ],
)
def test_a_word_before_the_letter_that_only_announces_it_is_read_past(typed: str) -> None:
    assert grade(CHOICE, typed).status == "correct"
    assert grade(CHOICE, '"Option"').status == "unreadable"
    assert grade(CHOICE, '"Option D"').status == "wrong"


def test_several_letters_then_a_reason() -> None:
    q = question("two", "choice", "A, C", choices=("A", "B", "C", "D"))
    assert grade(q, '"A and C: both hold"').status == "correct"
    assert grade(q, '"A because C is wrong"').status == "wrong"


def test_a_reason_before_the_letter_is_refused_with_the_form(checker: ExprChecker) -> None:
    r = grade(CHOICE, '"I think C"')
    assert r.status == "unreadable"
    assert "a choice is written as its letter first" in r.feedback
    # the example letter is one of the choices, never the expected one
    assert 'such as "A"' in r.feedback and '"C"' not in r.feedback.split("This question")[1]


# ------------------------------------------------------------------ refusals teach


def test_a_number_refusal_names_the_type_with_an_example_that_is_not_the_answer() -> None:
    r = grade(question("x", "number", 0.25), '"twelve"')
    assert "This question asks for a number, such as 0.75" in r.feedback
    r = grade(COUNT, '"about a hundred million"')
    assert "This question asks for an exact count: an integer such as 1024" in r.feedback


def test_the_question_own_example_is_used() -> None:
    q = question("x", "number", GPT2_SMALL, cls=WrittenQuestion, integer=True, example="4718592")
    assert "an integer such as 4718592" in grade(q, "true").feedback


def test_an_expression_refusal_names_the_symbols(checker: ExprChecker) -> None:
    q = question("s", "expression", "1/sqrt(d_k)", symbols=("d_k", "d_model", "h"))
    r = grade(q, '"1/sqrt(dk"', checker)
    assert r.status == "unreadable"
    assert "This question asks for one expression in d_k, d_model, h, in quotes, such as" in (
        r.feedback
    )


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ('"torch.Size([2, 4, 8])"', "torch's `Size(…)` was read"),
        ('"x.shape = torch.Size([2, 4, 8])"', "the sizes after `=` were read"),
        ('"(B, T, d) = (2, 4, 8)"', "(`(B, T, d)` is their label)"),
        ('"2 4 8"', "sizes separated by spaces"),
        ('"(2 4 8)"', "sizes separated by spaces"),
    ],
)
def test_a_shape_as_torch_prints_it_or_labelled_is_read(typed: str, said: str) -> None:
    q = question("s", "shape", (2, 4, 8))
    r = grade(q, typed)
    assert r.status == "correct", r.feedback
    r = grade(question("s", "shape", (2, 4, 9)), typed)
    assert r.status == "wrong" and said in r.feedback


def test_one_whole_number_is_a_one_dimensional_shape() -> None:
    r = grade(question("s", "shape", (8,)), "8")
    assert r.status == "correct"
    r = grade(question("s", "shape", (9,)), "8")
    assert r.status == "wrong" and "`8` was read as the one-dimensional shape (8,)" in r.feedback
    assert grade(question("s", "shape", (2, 4)), '"2 4 x"').status == "unreadable"


def test_array_and_shape_refusals_teach() -> None:
    r = grade(question("a", "array", [[1.0, 0.0]]), '"one, zero"')
    assert "This question asks for an array of numbers, row by row" in r.feedback
    r = grade(question("s", "shape", (2, 3)), '"two by three"')
    assert 'This question asks for a shape: [2, 3] or "(2, 3)"' in r.feedback


def test_an_array_written_as_a_string_or_with_numbers_as_strings_is_read() -> None:
    q = question("a", "array", [[1000.0, 0.5]])
    for typed in (
        '"[[1000, 0.5]]"',
        "'[[1000, 0.5]]'",
        '[["1,000", "0.5"]]',
        "\"[['1,000', 0.5]]\"",
    ):
        r = grade(q, typed)
        assert r.status == "correct", (typed, r.feedback)
    r = grade(q, '"[[1000, 0.5]]"')
    assert "the array written as a string was read as an array" in r.feedback
    r = grade(q, '[["1,000", "0.5"]]')
    assert "`1,000` was read as 1000 (thousands separators dropped)" in r.feedback
    assert grade(q, '"[[900, 0.5]]"').status == "wrong"


@pytest.mark.parametrize(
    "typed",
    [
        "'''[[1000.   0.5]]'''",  # numpy's print: spaces, no commas
        "'''[[ 1.0e+03  5.0e-01]]'''",
        '"array([[1000., .5]])"',  # numpy's repr
        '"tensor([[1000.0000,    0.5000]])"',  # torch's
        '"np.array([[1000, 0.5]], dtype=np.float64)"',
    ],
)
def test_an_array_as_numpy_or_torch_prints_it_is_read(typed: str) -> None:
    r = grade(question("a", "array", [[1000.0, 0.5]]), typed)
    assert r.status == "correct", (typed, r.feedback)


def test_two_rows_printed_by_numpy_keep_their_shape() -> None:
    q = question("a", "array", [[0.2176, -0.1224], [-0.1224, 0.1476]])
    assert grade(q, "'''[[ 0.2176 -0.1224]\n [-0.1224  0.1476]]'''").status == "correct"
    r = grade(q, "'''[ 0.2176 -0.1224 -0.1224  0.1476]'''")
    assert r.status == "wrong" and "shape (4,)" in r.feedback
    assert grade(question("v", "array", [0.959, -1.959]), '"(0.959, -1.959)"').status == "correct"


@pytest.mark.parametrize("text", ["[[[[[1]]]]]", "[1, 2,]", "[" * 9000 + "]" * 9000])
def test_a_string_that_is_not_an_array_of_numbers_is_refused(text: str) -> None:
    r = grade(question("a", "array", [1.0]), f'"{text}"')
    assert r.status == "unreadable" and "This question asks for an array of numbers" in r.feedback


MERGES = ["s t", "e r", "st </w>", "l o", "lo w"]  # a BPE answer's form: two symbols, a space


@pytest.mark.parametrize(
    "typed",
    [
        '[["s", "t"], ["e", "r"], ["st", "</w>"], ["l", "o"], ["lo", "w"]]',  # as bpe_learn returns
        '["(s, t)", "(e, r)", "(st, </w>)", "(l, o)", "(lo, w)"]',
        """["('s', 't')", "('e', 'r')", "('st', '</w>')", "('l', 'o')", "('lo', 'w')"]""",
        '["s t -> st", "e r -> er", "st </w> -> st</w>", "l o -> lo", "lo w -> low"]',
        '"(s, t), (e, r), (st, </w>), (l, o), (lo, w)"',
    ],
)
def test_merges_written_as_tuples_or_with_their_result_are_read(typed: str) -> None:
    q = question("bpe", "list", MERGES, cls=WrittenQuestion, ordered=True)
    r = grade(q, typed)
    assert r.status == "correct", r.feedback


def test_a_tuple_form_is_still_graded_item_by_item_and_never_guessed() -> None:
    q = question("bpe", "list", MERGES, cls=WrittenQuestion, ordered=True)
    r = grade(q, '[["t", "s"], ["e", "r"], ["st", "</w>"], ["l", "o"], ["lo", "w"]]')
    assert r.status == "wrong" and "read as symbols separated by a space" in r.feedback
    assert "4 of the 5 items asked for are right" in r.feedback
    # an arrow whose right side is not the symbols joined is not a merge
    r = grade(q, '["s t -> ts", "e r", "st </w>", "l o", "lo w"]')
    assert r.status == "unreadable" and "item 1 of your list" in r.feedback


@pytest.mark.parametrize(
    ("typed", "said"),
    [
        ('"[2, 3, 1]"', "the list written as a string was read as a list"),
        ('"2 3 1"', "numbers separated by spaces were read as a list"),
    ],
)
def test_a_list_of_numbers_written_as_one_string_is_read(typed: str, said: str) -> None:
    """a3's beam search by hand: token ids. Before, "2 3 1" was one item, graded wrong."""
    q = question("beam", "list", [2, 3, 1], cls=WrittenQuestion, ordered=True)
    assert grade(q, typed).status == "correct"
    r = grade(q, typed.replace("3", "4"))
    assert r.status == "wrong" and said in r.feedback


def test_words_separated_by_spaces_stay_one_item_where_items_are_symbols() -> None:
    q = question("bpe", "list", MERGES, cls=WrittenQuestion, ordered=True)
    typed = "\"['s t', 'e r', 'st </w>', 'l o', 'lo w']\""  # one TOML string
    assert grade(q, typed).status == "correct"
    assert grade(q, '"s t e r"').status == "unreadable"  # never split into merges


def test_a_malformed_list_item_is_named() -> None:
    q = question("bpe", "list", MERGES, cls=WrittenQuestion, ordered=True)
    r = grade(q, '["s t", "e r", "st</w>", "l o", "lo w"]')
    assert r.status == "unreadable"
    assert "item 3 of your list (`st</w>`) is not written as an item is here" in r.feedback
    assert "two symbols separated by a space, such as `a b`" in r.feedback


def test_a_long_wrong_list_says_how_many_items_are_right() -> None:
    q = question("bpe", "list", MERGES, cls=WrittenQuestion, ordered=True)
    r = grade(q, '["s t", "e r", "st </w>", "o w", "l o"]')
    assert r.status == "wrong"
    assert "3 of the 5 items asked for are right (each in its place)." in r.feedback
    unordered = question("set", "list", MERGES)
    r = grade(unordered, '["l o", "s t", "x y", "e r", "a b"]')
    assert "3 of the 5 items asked for are right." in r.feedback


def test_a_short_list_or_a_question_that_says_never_gives_no_count() -> None:
    short = question("three", "list", ["a b", "c d", "e f"])
    assert "items asked for are right" not in grade(short, '["a b", "c d", "x y"]').feedback
    never = question("bpe", "list", MERGES, cls=WrittenQuestion, count_right_from=0)
    assert "items asked for are right" not in grade(never, '["s t", "x y"]').feedback


def test_hidden_lists_say_only_right_or_wrong() -> None:
    q = question("bpe", "list", MERGES, visibility="hidden")
    r = grade(q, '["s t", "e r", "st</w>", "l o", "lo w"]')
    assert r.status == "wrong" and "item 3" not in r.feedback and "right" not in r.feedback


def test_the_wrong_form_still_names_a_long_list_mistake() -> None:
    wrong = ["s t", "e r", "l o", "st </w>", "lo w"]
    q = question("bpe", "list", MERGES, cls=WrittenQuestion, ordered=True,
                 wrong_forms=lambda v: [WrongForm(wrong, "bpe-x", "these are that mistake's.")])  # fmt: skip
    r = grade(q, '["s t", "e r", "l o", "st </w>", "lo w"]')
    assert r.misconceptions == ["bpe-x"]


def test_a_toml_line_that_cannot_be_read_still_teaches_the_type() -> None:
    sheet = parse_answers("total = 124,439,808\n")  # unquoted: not TOML
    r = grade_written(COUNT, sheet, {}, None)
    assert r.status == "unreadable" and "line 1" in r.feedback
    assert "This question asks for an exact count: an integer such as 1024" in r.feedback


def test_a_list_item_of_the_wrong_type_is_numbered() -> None:
    r = grade(question("l", "list", ["a b", "c d"]), '["a b", true]')
    assert r.status == "unreadable"
    assert "item 2 of your list must be a string or a number, got the boolean true" in r.feedback
