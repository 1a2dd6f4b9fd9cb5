"""Held-out a3 submissions (tests/heldout/a3_gated_seq2seq/): each mistake file is named with
exactly its catalog id and loses points; each correct file gets full marks with no id.

Each file is graded once (on its `# question:` line's question, or every code question for
`all`), two gradings at a time in worker processes (not threads: Python 3.11's ast.parse is not
thread-safe, cpython#106905), in a module-scoped fixture; the tests read the results.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import re
import shutil
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest

from grader import sandbox
from grader.course import registry
from grader.engine.grade import grade_submission
from grader.questions import CodeQuestion

ROOT = Path(__file__).resolve().parent.parent
FOLDER = ROOT / "tests" / "heldout" / "a3_gated_seq2seq"
FILES = sorted(FOLDER.glob("*__*.py"))
LIMITS = sandbox.Limits(call_seconds=10.0, submission_seconds=120.0)
QUESTION = re.compile(r"^#\s*question:\s*(\S+)\s*$")


def _question(path: Path) -> str:
    m = QUESTION.match(path.read_text().splitlines()[0].strip())
    assert m, f"{path.name}: first line must be `# question: <id>`"
    return m.group(1)


def _grade(path: Path):
    assignment = registry.load("a3_gated_seq2seq")
    question = _question(path)
    code = [q for q in assignment.questions if isinstance(q, CodeQuestion)]
    if question != "all":
        code = [q for q in code if q.id == question]
        assert code, f"{path.name}: no code question {question!r}"
    only = dataclasses.replace(assignment, questions=tuple(code))
    with tempfile.TemporaryDirectory(prefix="heldout-a3-") as tmp:
        folder = Path(tmp) / "sub"
        folder.mkdir()
        shutil.copy(path, folder / assignment.code_file)
        report = grade_submission(folder, only, limits=LIMITS)
    named = sorted({m for q in report.questions for m in q.misconceptions})
    short = [
        (q.question_id, q.score, q.max_score) for q in report.questions if q.score < q.max_score
    ]
    return report.grader_error, named, report.score, report.max_score, short


@pytest.fixture(scope="module")
def reports():
    with ProcessPoolExecutor(
        max_workers=2, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        return dict(zip((p.name for p in FILES), pool.map(_grade, FILES)))


def test_collection_covers_every_a3_id():
    """Every id an a3 code question can name has at least two files; three correct files."""
    questions = [
        q for q in registry.load("a3_gated_seq2seq").questions if isinstance(q, CodeQuestion)
    ]
    ids = {m for q in questions for m in q.mutants}
    if any(q.forbidden for q in questions):
        ids.add("uses-library-shortcut")
    stems = [p.stem.split("__", 1)[0] for p in FILES]
    assert stems.count("correct") >= 3
    for mid in sorted(ids):
        assert stems.count(mid) >= 2, mid


@pytest.mark.parametrize("name", [p.name for p in FILES])
def test_heldout_file(reports, name):
    error, named, score, max_score, short = reports[name]
    assert error is None, error
    expected = name.split("__", 1)[0]
    if expected == "correct":
        assert named == [], named
        assert score == pytest.approx(max_score), short
    else:
        assert named == [expected], named
        assert score < max_score - 1e-9
