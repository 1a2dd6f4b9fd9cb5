"""Held-out student-style files (tests/heldout/): each mistake named with exactly its id, each
correct file at full marks. The grading is tests/heldout_harness.py's, once per session."""

from __future__ import annotations

import heldout_harness as harness
import pytest

from grader import catalog
from grader.course import registry

pytestmark = pytest.mark.slow
ITEMS = harness.discover()
ASSIGNMENTS = sorted({i.assignment for i in ITEMS})


def _key(item: harness.Item) -> str:
    return f"{item.assignment.split('_')[0]}/{item.path.name}"


@pytest.fixture(scope="session")
def outcomes() -> dict[str, harness.Outcome]:
    return {_key(o.item): o for o in harness.grade_all(ITEMS, jobs=2)}


@pytest.mark.parametrize("item", ITEMS, ids=_key)
def test_heldout_file(item: harness.Item, outcomes):
    o = outcomes[_key(item)]
    assert o.error is None, o.error
    if item.expected is None:
        assert not o.named and o.score >= o.max_score - 1e-9, o.detail
    else:
        assert o.named == (item.expected,), o.detail
        assert o.score < o.max_score - 1e-9, o.detail


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_collection_covers_every_id_the_code_questions_can_name(aid: str):
    """At least two files for every id a code question can name, three correct files, and every
    file names a real catalog id on a question that can name it."""
    questions = harness.code_questions(registry.load(aid))
    ids = {m for q in questions for m in q.mutants}
    if any(q.forbidden for q in questions):
        ids.add("uses-library-shortcut")
    mine = [i for i in ITEMS if i.assignment == aid]
    counts: dict[str | None, int] = {}
    for i in mine:
        counts[i.expected] = counts.get(i.expected, 0) + 1
        if i.expected is not None:
            catalog.get(i.expected)
    assert counts.get(None, 0) >= 3
    assert {m: counts.get(m, 0) for m in ids if counts.get(m, 0) < 2} == {}
