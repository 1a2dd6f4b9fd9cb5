"""a7's cosine of two vectors whose lengths are far apart: a mix-up of the two norms is docked
and named by what it computes, never as a mistake it only resembles when the lengths are close.

A 1-D branch dividing by ‖a‖ // ‖b‖ returns the dot product whenever the lengths' quotient is
in [1, 2), as it is for random vectors of similar length: named `cosine-is-dot-product` on such
cases only. With one vector five times the other it is a fifth of the dot product, which no
catalogued mistake computes.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import grade_question, slipped

from grader.course import registry, variants

AID = "a7_classification_ngrams"
QID = "a7.cosine_similarity"
SOLUTION_LINE = "return float(A @ B / (np.linalg.norm(A) * np.linalg.norm(B)))"
STUDENTS = [f"s{i}@uni.example" for i in range(4)]


def _source(line: str) -> str:
    from conftest import ROOT

    text = (ROOT / "solutions" / AID / "classify.py").read_text()
    assert text.count(SOLUTION_LINE) == 1
    return text.replace(SOLUTION_LINE, line)


def test_every_student_has_two_vectors_five_times_apart_in_length():
    q = registry.load(AID).question(QID)
    for student in STUDENTS:
        (edge,) = [
            c for c in q.cases(variants.seed_for(AID, student)) if "five times as long" in c.name
        ]
        a, b = edge.args
        assert a.ndim == b.ndim == 1
        assert np.linalg.norm(a) / np.linalg.norm(b) == pytest.approx(5.0)


@pytest.mark.parametrize("student", STUDENTS)
def test_norms_floor_divided_are_docked_and_named_nothing(tmp_path, student):
    wrong = "return float(A @ B / (np.linalg.norm(A) // np.linalg.norm(B)))"
    # The outside check: on the edge this is a fifth of the dot product, not the cosine.
    f = slipped(AID, "cosine_similarity", wrong, SOLUTION_LINE)
    a, b = np.ones(3) * 5.0, np.ones(3)
    assert f(a, b) == pytest.approx(float(a @ b) / 5.0)
    r = grade_question(AID, tmp_path, _source(wrong), QID, student)
    assert r.score < r.max_score
    assert r.misconceptions == []


@pytest.mark.parametrize("student", STUDENTS[:2])
def test_control_a_dot_product_of_two_vectors_is_still_named(tmp_path, student):
    r = grade_question(AID, tmp_path, _source("return float(A @ B)"), QID, student)
    assert r.score < r.max_score
    assert r.misconceptions == ["cosine-is-dot-product"]


@pytest.mark.parametrize("student", STUDENTS[:2])
def test_control_the_solution_keeps_full_marks(tmp_path, student):
    r = grade_question(AID, tmp_path, _source(SOLUTION_LINE), QID, student)
    assert r.score == r.max_score and r.misconceptions == []
