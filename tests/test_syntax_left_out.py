"""A `.py` with a syntax error loses only the statements that hold it: each top-level statement
with an error is left out (its lines blanked, so every other line keeps its number), the rest of
the file is graded, and the feedback names the lines left out and the error
(grader/engine/syntax.py, `without_broken_statements`), as a notebook loses only the cell.

The files are the instructor's a1 solution with one function broken as students break them: a
bracket never closed, a colon missing, a decorator above the broken function. Expected scores
are the questions' points, and nothing for the broken function's question.
"""

from __future__ import annotations

import pytest
from conftest import ROOT, line_of

from grader.engine import syntax

A1 = (ROOT / "solutions" / "a1_word_vectors" / "word_vectors.py").read_text()
QUESTIONS = ("a1.softmax", "a1.analogy", "a1.cooccurrence", "a1.svd_embeddings")
SVD = "    U, S, _ = np.linalg.svd(np.asarray(X, dtype=np.float64), full_matrices=False)\n"


def _grade(grade_files, source: str):
    return grade_files("a1", {"word_vectors.py": source}, questions=QUESTIONS)


COOC = "def cooccurrence_matrix(corpus, vocab, window=1):\n"


@pytest.mark.parametrize(
    "old,new,broken",
    [
        ("def analogy(E, vocab, a, b, c):\n", "def analogy(E, vocab, a, b, c)\n", "analogy"),
        (SVD, SVD.replace("full_matrices=False)", "full_matrices=False"), "svd_embeddings"),
        (COOC, "@decorate\n" + COOC.replace(":\n", "\n"), "cooccurrence_matrix"),
    ],
    ids=["colon missing", "bracket never closed", "decorated"],
)
def test_a_syntax_error_costs_only_the_function_that_holds_it(grade_files, old, new, broken):
    assert A1.count(old) == 1
    report = _grade(grade_files, A1.replace(old, new))
    for q in report.questions:
        if q.function == broken:
            assert q.score == 0, q.feedback
            assert "was left out with the statements around the syntax error" in q.feedback
        else:
            assert q.score == q.max_score, (q.question_id, q.feedback)
    (note,) = [w for w in report.warnings if "does not parse as Python" in w]
    assert "were left out and the rest of the file graded" in note, note


def test_the_lines_left_out_are_named_and_every_other_line_keeps_its_number():
    source = (
        "import numpy as np\n\n@decorate\ndef f(x):\n    return (x\n\n\ndef g(x):\n    return x\n"
    )
    kept, (left,) = syntax.without_broken_statements(source)
    assert (left.first, left.last, left.line, left.defines) == (3, 7, 5, ("f",))
    assert left.message == "'(' was never closed" and left.text == "return (x"
    assert kept.split("\n")[7] == "def g(x):" and len(kept.split("\n")) == len(source.split("\n"))
    assert kept.split("\n")[2:7] == [""] * 5


def test_two_errors_two_statements_and_too_many_is_the_whole_file():
    two = "def f(:\n    pass\nx = 1\ndef g()\n    return 2\ny = (\n"
    kept, left = syntax.without_broken_statements(two)
    assert [(item.first, item.last) for item in left] == [(1, 2), (4, 5), (6, 7)]
    assert kept.split("\n")[2] == "x = 1"
    many = "".join(f"def f{i}(:\n    pass\n" for i in range(syntax.MAX_LEFT_OUT + 1))
    assert syntax.without_broken_statements(many) is None
    assert syntax.without_broken_statements("x = 1\n") is None  # nothing to leave out


def test_a_function_broken_once_and_written_again_further_down_is_graded(grade_files):
    """A student's first try left broken above a working one: the working one is graded."""
    source = A1 + "\n\ndef _draft():\n    return (\n\n\n" + A1[A1.index("def svd_embeddings") :]
    source = source.replace("def _draft():", "def svd_embeddings(X, k):")
    report = _grade(grade_files, source)
    assert all(q.score == q.max_score for q in report.questions), [
        q.feedback for q in report.questions
    ]


def test_a_file_that_cannot_be_saved_still_names_its_first_error(grade_files):
    many = "".join(f"def broken{i}(:\n    pass\n" for i in range(syntax.MAX_LEFT_OUT + 1))
    report = _grade(grade_files, A1 + "\n" + many)
    assert all(q.score == 0 for q in report.questions)
    first = line_of(A1 + "\n" + many, "def broken0(:")
    assert f"has a syntax error at line {first}: `def broken0(:`" in report.questions[0].feedback
