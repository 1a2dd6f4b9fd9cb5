"""Held-out a4_transformer submissions: each mistake is named with exactly its catalog id.

tests/heldout/a4_transformer/ holds single-mistake student files written independently of the
suite's mutants, in several styles (numpy, torch float32, loops, lists), and fully correct
files. `<catalog id>__<style>.py` is a code file graded on the question named by its first
line `# question: <id>`; `<catalog id>__<style>.toml` is an answers.toml graded on one written
question; `correct__<style>.py` (`# question: all`) is graded on every code question.

A mistake file must lose points and be named with exactly its id; a correct file must get full
marks with no id. The gradings run two at a time, once per session (a module fixture).
"""

from __future__ import annotations

import dataclasses
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from grader import catalog, sandbox
from grader.course import registry
from grader.engine.grade import grade_submission
from grader.questions import CodeQuestion
from grader.report import GradeReport

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT / "tests" / "heldout" / "a4_transformer"
A = registry.load("a4_transformer")
LIMITS = sandbox.Limits(call_seconds=10.0, submission_seconds=120.0)
QUESTION_LINE = re.compile(r"^#\s*question:\s*(\S+)\s*$")
FILES = sorted(p for p in HELDOUT.iterdir() if p.suffix in (".py", ".toml") and "__" in p.stem)


def _question_of(path: Path) -> str:
    m = QUESTION_LINE.match(path.read_text().splitlines()[0].strip())
    assert m, f"{path.name}: the first line must be `# question: <question id>`"
    return m.group(1)


def _expected(path: Path) -> str | None:
    mid = path.stem.split("__", 1)[0]
    return None if mid == "correct" else mid


def _grade(path: Path, tmp: Path) -> GradeReport:
    qid = _question_of(path)
    if qid == "all":
        questions = tuple(q for q in A.questions if isinstance(q, CodeQuestion))
    else:
        questions = (A.question(qid),)
    folder = tmp / path.stem
    folder.mkdir()
    target = "answers.toml" if path.suffix == ".toml" else A.code_file
    shutil.copy(path, folder / target)
    return grade_submission(folder, dataclasses.replace(A, questions=questions), limits=LIMITS)


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> dict[str, GradeReport]:
    tmp = tmp_path_factory.mktemp("heldout_a4")
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda p: _grade(p, tmp), FILES))
    return {p.name: r for p, r in zip(FILES, done)}


def test_heldout_a4_collection_covers_the_catalog():
    """At least two files for every a4 catalog id (code and written) and three correct files."""
    import grader.catalog.a4 as mod

    ids = set(re.findall(r'id="([a-z0-9-]+)"', Path(mod.__file__).read_text()))
    ids |= {m for q in A.questions if isinstance(q, CodeQuestion) for m in q.mutants}
    ids.add("uses-library-shortcut")
    counts: dict[str | None, int] = {}
    for p in FILES:
        counts[_expected(p)] = counts.get(_expected(p), 0) + 1
    assert counts.get(None, 0) >= 3
    missing = sorted(i for i in ids if counts.get(i, 0) < 2)
    assert not missing, missing
    for mid in counts:
        if mid is not None:
            catalog.get(mid)  # every file names a real catalog id


@pytest.mark.parametrize("name", [p.name for p in FILES])
def test_heldout_a4_file(name, reports):
    path = HELDOUT / name
    report = reports[name]
    assert report.grader_error is None, report.grader_error
    named = sorted({m for q in report.questions for m in q.misconceptions})
    expected = _expected(path)
    detail = "; ".join(f"{q.question_id} {q.score:g}/{q.max_score:g} {q.misconceptions}" for q in report.questions)
    if expected is None:
        assert named == [] and report.score >= report.max_score - 1e-9, detail
    else:
        assert named == [expected], detail
        assert report.score < report.max_score - 1e-9, detail
