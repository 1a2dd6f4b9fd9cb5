"""Reading answers.toml: missing files, syntax errors that cost only their keys, value forms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grader.written.answers import (
    NOT_FOUND,
    AnswerFormatError,
    as_array,
    as_choice,
    as_expression,
    as_list,
    as_number,
    as_shape,
    as_text,
    load_answers,
    load_answers_text,
    parse_answers,
)

GOOD = """\
# answers for a6
params_per_block = "12 d^2 + 13 d"
perplexity = 12.5
scores = [[1, 2],
          [3, 4]]
shape = "(2, 4, 8)"
choice = "b"
blank = ""
blank_list = []

[part2]
q1 = 3
"""


def test_missing_file_costs_every_key(tmp_path: Path) -> None:
    for sheet in (
        load_answers(None),
        load_answers(tmp_path / "answers.toml"),
        load_answers(tmp_path),
    ):
        a = sheet.get("anything")
        assert a.status == "no-file" and a.message == NOT_FOUND
        assert not sheet.found


def test_folder_and_file(tmp_path: Path) -> None:
    (tmp_path / "answers.toml").write_text(GOOD)
    for target in (tmp_path, tmp_path / "answers.toml"):
        sheet = load_answers(target)
        assert sheet.found and not sheet.problems
        assert sheet.get("params_per_block").value == "12 d^2 + 13 d"
        assert sheet.get("part2.q1").value == 3
        assert sheet.get("scores").value == [[1, 2], [3, 4]]
        assert sheet.get("scores").line == 4


def test_blank_template_values_are_not_attempted() -> None:
    sheet = parse_answers(GOOD)
    assert sheet.get("blank").status == "empty"
    assert sheet.get("blank_list").status == "empty"
    assert sheet.get("nope").status == "missing"
    assert "nope" in (sheet.get("nope").message or "")


def test_syntax_error_costs_only_the_affected_keys() -> None:
    text = GOOD.replace('choice = "b"', 'choice = "b\nbroken "x"')
    sheet = parse_answers(text)
    assert sheet.problems and "not valid TOML" in sheet.problems[0]
    assert sheet.get("params_per_block").status == "answered"
    assert sheet.get("scores").value == [[1, 2], [3, 4]]  # a multi-line array still joined
    assert sheet.get("part2.q1").value == 3  # tables still apply
    bad = sheet.get("choice")
    assert bad.status == "error"
    assert 'line 7: `choice = "b`' in (bad.message or "")
    broken = sheet.get("broken")
    assert (
        broken.status == "error"
        and "line 8" in (broken.message or "")
        and "key = value" in (broken.message or "")
    )


def test_line_by_line_reads_triple_quoted_strings_and_reports_unclosed_arrays() -> None:
    text = 'a = """\nmulti\nline"""\nb = [1, 2,\nc = 3\nd = oops\n'
    sheet = parse_answers(text)
    assert sheet.get("a").value == "multi\nline"
    assert sheet.get("b").status == "error" and "line 4" in (sheet.get("b").message or "")
    assert sheet.get("c").value == 3
    assert sheet.get("d").status == "error" and "`d = oops`" in (sheet.get("d").message or "")


def test_duplicate_keys_in_a_broken_file() -> None:
    sheet = parse_answers("a = 1\na = 2\nb = [\n")
    assert sheet.get("a").status == "error" and "twice" in (sheet.get("a").message or "")


def test_encoding_bom_and_size(tmp_path: Path) -> None:
    assert parse_answers("\ufeffa = 1".encode()).get("a").value == 1
    sheet = parse_answers(b'a = "\xff"\nb = 2\n')
    assert sheet.problems and "UTF-8" in sheet.problems[0]
    assert sheet.get("b").value == 2
    big = tmp_path / "answers.toml"
    big.write_bytes(b"#" * (2 << 20))
    assert "too large" in (load_answers(big).get("a").message or "")


def test_load_answers_text() -> None:
    assert load_answers_text(None, "custom missing").get("q").message == "custom missing"
    assert load_answers_text("q = 1").get("q").value == 1


# ------------------------------------------------------------------ conversions


def test_as_number() -> None:
    assert as_number(3) == 3.0
    assert as_number(0.25) == 0.25
    assert as_number(" 1e-3 ") == 0.001
    assert as_number("1/3") == pytest.approx(1 / 3)
    assert as_number("−2") == -2.0
    for bad in (True, "abc", "1/0", [1], float("nan"), "inf", "2 + 3"):
        with pytest.raises(AnswerFormatError):
            as_number(bad)


def test_as_array() -> None:
    np.testing.assert_array_equal(as_array([[1, 2], [3, 4]]), np.array([[1.0, 2.0], [3.0, 4.0]]))
    assert as_array([1, "0.5"]).shape == (2,)
    with pytest.raises(AnswerFormatError, match="different lengths"):
        as_array([[1, 2], [3]])
    with pytest.raises(AnswerFormatError, match="array"):
        as_array(3)


@pytest.mark.parametrize(
    ("value", "want"),
    [
        ([2, 4, 8], (2, 4, 8)),
        ("(2, 4, 8)", (2, 4, 8)),
        ("[2,4,8]", (2, 4, 8)),
        ("2x4x8", (2, 4, 8)),
        ("2 × 4", (2, 4)),
        ("(8,)", (8,)),
        ("()", ()),
        ([], ()),
    ],
)
def test_as_shape(value: object, want: tuple[int, ...]) -> None:
    assert as_shape(value) == want


def test_as_shape_rejects() -> None:
    for bad in ([2.5], "(B, T)", [True], 3, "(-1, 2)"):
        with pytest.raises(AnswerFormatError):
            as_shape(bad)


def test_as_choice() -> None:
    assert as_choice("b", "ABCD") == {"B"}
    assert as_choice("A,C", "ABCD") == {"A", "C"}
    assert as_choice("a and c", "ABCD") == {"A", "C"}
    assert as_choice(["A", "c"], "ABCD") == {"A", "C"}
    assert as_choice("(B)") == {"B"}
    assert as_choice("A.", "ABCD") == {"A"} and as_choice("C:", "ABCD") == {
        "C"
    }  # punctuation after a letter
    with pytest.raises(AnswerFormatError, match="not one of the choices"):
        as_choice("E", "ABCD")
    with pytest.raises(AnswerFormatError):
        as_choice(2)
    with pytest.raises(AnswerFormatError, match="no choice"):
        as_choice(" , ")


def test_as_list_expression_text() -> None:
    assert as_list(["e r", 3]) == ["e r", 3.0]
    assert as_list("a, b ,c") == ["a", "b", "c"]
    with pytest.raises(AnswerFormatError):
        as_list([[1]])
    assert as_expression(" 2 d ") == "2 d"
    assert as_expression(12) == "12"
    with pytest.raises(AnswerFormatError, match="in quotes"):
        as_expression([1])
    assert as_text("  why  ") == "why"
    with pytest.raises(AnswerFormatError):
        as_text(3)


def test_latex_with_single_backslashes_in_a_basic_string() -> None:
    # TOML rejects "\\sqrt" (no such escape); the line is re-read as a literal string
    sheet = parse_answers('a = "$\\frac{1}{\\sqrt{d_k}}$"\nb = 2\n')
    assert sheet.get("a").value == "$\\frac{1}{\\sqrt{d_k}}$"
    assert sheet.get("b").value == 2


# ------------------------------------------------------------------ bounded reading (issue 15 items 7, 9, 11)


@pytest.mark.parametrize(
    "text, words",
    [
        ("1/1e999999999", "exponent out of range"),
        ("1e10000000", "exponent out of range"),
        ("1" + "0" * 500, "501 digits"),
        ("1/" + "3" * 5000, "5000 digits"),
    ],
    ids=["1e999999999", "1e7", "501-digits", "5000-digit-fraction"],
)
def test_as_number_refuses_sizes_no_answer_needs_before_computing(text: str, words: str) -> None:
    import time

    started = time.perf_counter()
    with pytest.raises(AnswerFormatError, match=words):
        as_number(text)
    assert time.perf_counter() - started < 1.0  # Fraction("1e999999999") alone would never finish
    assert (
        as_number("1.5e-400") == 0.0 and as_number("2/" + "1" * 300) > 0
    )  # within the bounds: read


def test_huge_integers_are_read_as_not_finite_not_as_a_crash() -> None:
    with pytest.raises(AnswerFormatError, match="finite"):
        as_number(10**400)
    assert as_list([10**400]) == [float("inf")]
    with pytest.raises(AnswerFormatError, match="too large to be a size"):
        as_shape(["2", "9" * 5000])


def test_a_line_nested_too_deeply_costs_only_its_key() -> None:
    text = "a = 1\ndeep = " + "[" * 50_000 + "]" * 50_000 + "\nb = 2\n"
    sheet = parse_answers(text)
    assert sheet.get("a").value == 1 and sheet.get("b").value == 2 and sheet.get("b").line == 3
    assert sheet.get("deep").status == "error" and "nested too deeply" in sheet.get("deep").message
    sheet = parse_answers("a = 1\nb" + ".c" * 40 + " = 2\n")
    assert sheet.get("a").value == 1
    assert [
        e.line for e in sheet.entries.values() if "more than 32 dotted parts" in (e.error or "")
    ] == [2]


def test_tomllibs_own_limits_read_as_syntax_errors_costing_their_key() -> None:
    sheet = parse_answers(
        "a = 1\nbig = " + "7" * 5000 + "\n"
    )  # tomllib: ValueError past 4300 digits
    assert sheet.get("a").value == 1 and sheet.get("big").status == "error"
    sheet = parse_answers(
        "a = 1\ndeep = " + "[\n" * 3000 + "]\n" * 3000
    )  # RecursionError across lines
    assert sheet.get("a").value == 1 and sheet.get("deep").status == "error"


def test_each_keys_line_is_found_in_one_pass() -> None:
    text = 'x = 1\n[t]\n"q.r" = 2\ny . z = 3\n[u.v]\nw = 4\n'
    sheet = parse_answers(text)
    assert {k: e.line for k, e in sheet.entries.items()} == {
        "x": 1,
        "t.q.r": 3,
        "t.y.z": 4,
        "u.v.w": 6,
    }


def test_a_long_header_line_is_read_in_linear_time() -> None:
    import time

    started = time.perf_counter()
    sheet = parse_answers(
        "a = 1\n[" + " " * 200_000 + "x\nb = [\n"
    )  # was cubic: 15 s for 2,000 spaces
    assert time.perf_counter() - started < 5 and sheet.get("a").value == 1


def test_a_shape_with_a_long_run_of_spaces_is_read_in_linear_time() -> None:
    import time

    started = time.perf_counter()
    with pytest.raises(AnswerFormatError, match="whole numbers only"):
        as_shape("2" + " " * 200_000 + "3")  # was quadratic: 8 s for 20,000 spaces
    assert time.perf_counter() - started < 2
    assert as_shape(" ( 2 ,  4 x 8 ) ") == (2, 4, 8)


def test_curly_quotes_from_an_editor_are_read_as_straight_with_a_note() -> None:
    sheet = parse_answers('a = “d_k”\nb = ‘B’\nc = "the model’s output"\n')
    assert sheet.get("a").value == "d_k" and sheet.get("b").value == "B"
    assert sheet.get("c").value == "the model’s output"  # inside straight quotes: kept
    assert sum("curly quotes were read as straight quotes" in p for p in sheet.problems) == 2


def test_a_utf16_file_is_read_by_its_byte_order_mark() -> None:
    for encoding in ("utf-16", "utf-16-be"):
        raw = ("\ufeff" if encoding.endswith("be") else "") + 'a = "d_k"\nb = 2\n'
        sheet = parse_answers(raw.encode(encoding))
        assert sheet.get("a").value == "d_k" and sheet.get("b").value == 2
        assert any("UTF-16" in p for p in sheet.problems)


def test_how_the_file_was_read_reaches_the_report(tmp_path: Path) -> None:
    from conftest import FAST

    from grader.course import registry
    from grader.course.content import solution_dir
    from grader.engine.grade import grade_submission

    a1 = registry.load("a1_word_vectors")
    code = (solution_dir(a1.id) / "word_vectors.py").read_text()
    key = (solution_dir(a1.id) / "answers.toml").read_text()
    (tmp_path / "word_vectors.py").write_text(code)
    curly = key.replace('why_three_quarters = "C"', "why_three_quarters = “C”")
    (tmp_path / "answers.toml").write_text(curly)
    report = grade_submission(tmp_path, a1, limits=FAST)
    assert report.score == 100
    assert any("curly quotes were read as straight quotes" in w for w in report.warnings)
