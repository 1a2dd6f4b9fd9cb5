"""Feedback a student can act on (issue 18): labelled hidden cases, precise diagnoses, the
terminal table's reasons and rounded scores.

The texts asserted here are the ones a student reads; where a figure is asserted it comes from
the contract or the points of the question (never from the code under test).
"""

from __future__ import annotations

import re

import pytest

from grader.course.registry import ASSIGNMENT_IDS, load
from grader.questions import CodeQuestion

# ---------------------------------------------------------------- 1. every hidden case has a label

# A numbering prefix ("hidden case 2", "hidden corpus 1", "long stream 3") says nothing by itself.
_NUMBERING = re.compile(r"^(hidden\s+)?([\w-]+\s+){0,2}?\d+\s*[:,]?\s*")


def _description(name: str) -> str:
    """What a case name says beyond its numbering: "hidden case 2: h0 given" -> "h0 given"."""
    return _NUMBERING.sub("", name, count=1).strip(" :,()")


@pytest.mark.parametrize("aid", ASSIGNMENT_IDS)
def test_every_hidden_case_names_what_it_exercises(aid: str) -> None:
    unlabelled, repeated = [], []
    for q in load(aid).questions:
        if not isinstance(q, CodeQuestion):
            continue
        for seed in (0, 1, 7, 12345):
            names = [c.name for c in q.cases(seed) if not c.visible]
            for name in names:
                rest = _description(name)
                # a description holds words (sizes alone such as "(3, 5)" do not say what is tested)
                if not re.search(r"[A-Za-z_]", rest):
                    unlabelled.append(f"{q.id} (seed {seed}): {name!r}")
            if len(set(names)) != len(names):
                repeated.append(f"{q.id} (seed {seed}): {names}")
    assert not unlabelled, "hidden cases without a label:\n" + "\n".join(unlabelled)
    assert not repeated, "hidden cases of one question with the same label:\n" + "\n".join(repeated)


def test_the_label_check_rejects_a_bare_number() -> None:
    assert _description("hidden case 2") == ""
    assert _description("hidden corpus 3") == ""
    assert _description("hidden case 1: (3, 5)") == "3, 5"
    assert _description("hidden case 2: T=5, D=4, H=3, h0 given") == "T=5, D=4, H=3, h0 given"
    assert _description("long stream 1: N = 20000 tokens") == "N = 20000 tokens"
