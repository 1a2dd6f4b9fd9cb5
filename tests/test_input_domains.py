"""Hidden cases at the edges of an argument's domain, each killing the slip it is drawn for.

Token ids: CPython shares one int object per value only for -5 … 256, so `w is eos` stops at
eos exactly when the ids are small. Greedy decoding's hidden cases hold one whose ids are all
above 256 for every student; without it the slip passes.
"""

from __future__ import annotations

import dataclasses
import re

import pytest
from conftest import ROOT, grade_question

from grader.questions import TableLM
from grader.suites import a3_gated_seq2seq as a3

SOLUTION = (ROOT / "solutions" / "a3_gated_seq2seq" / "gated_seq2seq.py").read_text()
IDENTITY = SOLUTION.replace("        if w == eos:\n", "        if w is eos:\n")
A3 = a3.ASSIGNMENT.id
GREEDY = a3.ASSIGNMENT.question("a3.greedy")


@pytest.mark.parametrize("seed", range(6))
def test_every_student_gets_a_greedy_case_with_ids_above_256(seed):
    large = [c for c in GREEDY.cases(seed) if c.args[1] > 256 and c.args[2] > 256]
    assert large and not any(c.visible for c in large)
    for c in large:
        lm = c.args[0]
        assert isinstance(lm, TableLM)
        assert all(t > 256 for prefix in lm.table for t in prefix)
        # the reference stops at eos there, one step before max_len would
        out = GREEDY.reference(*c.args)
        assert out[-1] == c.args[2] and len(out) < c.args[3]


@pytest.mark.parametrize("student", ["ann@uni.edu", "bob@uni.edu", "cy@uni.edu"])
def test_eos_compared_with_is_loses_points_and_is_named(tmp_path, student):
    assert IDENTITY != SOLUTION
    q = grade_question(A3, tmp_path, IDENTITY, GREEDY, student)
    assert q.score < q.max_score
    assert q.misconceptions == ["eos-compared-by-identity"]


def test_without_the_large_id_case_the_is_slip_passes(tmp_path):
    # the control: the slip survives every other case, so the large ids are what kill it
    def cases(seed: int):
        return [c for c in GREEDY.cases(seed) if c.args[2] <= 256]

    q = grade_question(
        A3, tmp_path, IDENTITY, dataclasses.replace(GREEDY, cases=cases), "ann@uni.edu"
    )
    assert q.score == q.max_score


def test_the_solution_keeps_full_marks(tmp_path):
    q = grade_question(A3, tmp_path, SOLUTION, GREEDY, "ann@uni.edu")
    assert q.score == q.max_score and q.misconceptions == []


BEAM = a3.ASSIGNMENT.question("a3.beam_search")
# The beam search's domain edges these slips need: no step, ids above 256, eos the highest id.
EDGE_NAMES = r"max_len=0 with|ids above 256|eos the highest id"


@pytest.mark.parametrize(
    "old, new, key",
    [
        (
            "            if tokens[-1] == eos:\n",
            "            if tokens[-1] is eos:\n",
            "ann@uni.edu",
        ),
        ("length_normalize and n > 0 else", "length_normalize and n >= 0 else", "ann@uni.edu"),
        # A wide beam over few words keeps a candidate ending in bos (id 0) on some keys' trees.
        (
            "            if tokens[-1] == eos:\n",
            "            if tokens[-1] <= eos:\n",
            "bob@uni.edu",
        ),
    ],
    ids=["is-eos", "divides-an-empty-hypothesis", "eos-by-order"],
)
def test_beam_search_domain_edges_kill_their_slip(tmp_path, old, new, key):
    assert SOLUTION.count(old) == 1, old
    q = grade_question(A3, tmp_path, SOLUTION.replace(old, new), BEAM, key)
    assert q.score < q.max_score
    # the control: the tree cases alone let the slip through
    edges = {c.name for c in BEAM.cases(0) if re.search(EDGE_NAMES, c.name)}
    assert len(edges) == 3

    def trees(seed: int):
        return [c for c in BEAM.cases(seed) if c.name not in edges]

    control = grade_question(
        A3,
        tmp_path / "control",
        SOLUTION.replace(old, new),
        dataclasses.replace(BEAM, cases=trees),
        key,
    )
    assert control.score == control.max_score


def test_beam_search_solution_keeps_full_marks(tmp_path):
    q = grade_question(A3, tmp_path, SOLUTION, BEAM, "ann@uni.edu")
    assert q.score == q.max_score
