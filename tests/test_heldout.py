"""Held-out student-style files (tests/heldout/): each mistake named with exactly its id, each
correct file at full marks. The grading is tests/heldout_harness.py's, once per session; a
sample graded one file per submission agrees with the packed grading. The edits that store
most files (tests/heldout_edits.py) are checked for what makes them safe to read."""

from __future__ import annotations

import ast

import heldout_edits as edits
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
    return {_key(o.item): o for o in harness.grade_all(ITEMS, jobs=2, single=False)}


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


def _sample() -> list[harness.Item]:
    """Per assignment, the first packed mistake file graded on a question without a ban and the
    first on a question with one (preferably a shortcut, whose scan must read the packed file's
    own module): the files whose grading packing changes."""
    out = []
    for aid in ASSIGNMENTS:
        assignment = registry.load(aid)
        mine = [i for i in ITEMS if i.assignment == aid and i.expected is not None]
        mine = [i for i in mine if harness._packable(i)]
        out += [i for i in mine if not harness.banned(i, assignment)][:1]
        banned = [i for i in mine if harness.banned(i, assignment)]
        shortcut = [i for i in banned if i.expected == "uses-library-shortcut"]
        out += (shortcut or banned)[:1]
    return out


def test_one_file_per_submission_agrees_with_the_packed_grading(outcomes):
    sample = _sample()
    alone = harness.grade_all(sample, jobs=2, single=True)
    assert len(alone) == len(sample) >= len(ASSIGNMENTS) + 2  # a4: bans on every question
    for o in alone:
        packed = outcomes[_key(o.item)]
        assert (o.named, o.score, o.max_score, o.error, o.detail) == (
            packed.named,
            packed.score,
            packed.max_score,
            packed.error,
            packed.detail,
        ), _key(o.item)


EDITS = sorted(harness.HELDOUT.glob(f"*/*{edits.EDIT_SUFFIX}"))


@pytest.mark.parametrize("path", EDITS, ids=lambda p: f"{p.parent.name.split('_')[0]}/{p.name}")
def test_an_edit_is_shorter_than_its_file_and_built_on_a_whole_file(path):
    text = path.read_text()
    first, base, ops = edits.parse_edit(text)
    assert (path.parent / base).is_file(), f"{base} is not a whole file of {path.parent.name}"
    assert not (path.parent / base).with_suffix(edits.EDIT_SUFFIX).exists()
    assert not path.with_suffix(".py").exists(), "the case is stored twice"
    generated = harness.case_text(path)
    ast.parse(generated)
    assert generated.startswith(first) and ops
    assert len(text.splitlines()) < len(generated.splitlines())
    # the tool writes this edit back from the generated file and its base
    assert edits.make(generated, base, (path.parent / base).read_text()) == text


def test_the_edit_format_by_hand():
    base = (
        '# question: all\n"""doc"""\n\nimport math\n\n\n'
        "def f(x):\n    return x\n\n\ndef g(x):\n    return 2 * x\n"
    )
    target = '# question: q.f\n"""doc"""\n\nimport math\n\nK = 3\n\n\ndef f(x):\n    return -x\n'
    assert [k for k, _ in edits.pieces(base.split("\n", 1)[1])] == [
        "__doc__",
        "importmath",
        "f",
        "g",
        "__end__",
    ]
    edit = edits.make(target, "b.py", base)
    assert edit == (
        "# question: q.f\n# @base b.py\n"
        "# @replace f\n\nK = 3\n\n\ndef f(x):\n    return -x\n"
        "# @delete g\n"
    )
    assert edits.apply(edit, base) == target
    with pytest.raises(ValueError, match="does not have"):
        edits.apply("# question: all\n# @base b.py\n# @delete h\n", base)
