"""Held-out single-mistake submissions for a5 (shapes, debugging) and a6 (pretraining, scale).

tests/heldout/<assignment>/<catalog id>__<style>.py holds a complete code file with ONE
mistake, first line `# question: <question id>`; correct__<style>.py files are fully correct
(`# question: all`). Every mistake file must be named with exactly its id and lose points on
its question; every correct file must get full marks on every code question with no id.

For speed, one assignment is ONE grading: each held-out file is copied into the submission
as its own module, the code file re-exports its functions under numbered names, and the
assignment's code questions are duplicated, one per file, each calling its file's function.
A check at the end grades one correct file the ordinary way, as the code file itself.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import shutil
from pathlib import Path

import pytest

from grader import sandbox
from grader.course import registry
from grader.engine.grade import grade_submission
from grader.questions import CodeQuestion
from grader.report import QuestionResult

ROOT = Path(__file__).resolve().parent.parent
HELDOUT = ROOT / "tests" / "heldout"
ASSIGNMENTS = ("a5_shapes_debugging", "a6_pretraining_scale")
LIMITS = sandbox.Limits(call_seconds=30.0, submission_seconds=900.0)
QUESTION_LINE = re.compile(r"^#\s*question:\s*(\S+)\s*$")


def _files(aid: str) -> list[Path]:
    return sorted((HELDOUT / aid).glob("*__*.py"))


def _expected(path: Path) -> str | None:
    mid = path.stem.split("__", 1)[0]
    return None if mid == "correct" else mid


def _question(path: Path) -> str:
    m = QUESTION_LINE.match(path.read_text().splitlines()[0].strip())
    assert m, f"{path.name}: the first line must be `# question: <question id>`"
    return m.group(1)


def _code_questions(aid: str) -> list[CodeQuestion]:
    return [q for q in registry.load(aid).questions if isinstance(q, CodeQuestion)]


@functools.cache
def _graded(aid: str, tmp: str) -> dict[str, list[QuestionResult]]:
    """Grade every held-out file of one assignment in one submission: file name -> its results."""
    assignment = registry.load(aid)
    code = {q.id: q for q in _code_questions(aid)}
    folder = Path(tmp) / aid
    folder.mkdir()
    exports, questions, owner = [], [], {}
    for i, path in enumerate(_files(aid)):
        module = f"heldout_{i:03d}"
        shutil.copy(path, folder / f"{module}.py")
        qid = _question(path)
        wanted = list(code.values()) if qid == "all" else [code[qid]]
        for q in wanted:
            alias = f"{q.function}__heldout_{i:03d}"
            exports.append(f"from {module} import {q.function} as {alias}")
            dup = dataclasses.replace(q, id=f"{q.id}#{i}", function=alias)
            questions.append(dup)
            owner[dup.id] = path.name
    (folder / assignment.code_file).write_text("\n".join(exports) + "\n")
    only = dataclasses.replace(assignment, questions=tuple(questions))
    report = grade_submission(folder, only, limits=LIMITS)
    assert report.grader_error is None, report.grader_error
    out: dict[str, list[QuestionResult]] = {}
    for r in report.questions:
        out.setdefault(owner[r.question_id], []).append(r)
    return out


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = str(tmp_path_factory.mktemp("heldout_a5a6"))
    return lambda aid: _graded(aid, tmp)


CASES = [pytest.param(aid, p.name, id=f"{aid.split('_')[0]}/{p.stem}") for aid in ASSIGNMENTS
         for p in _files(aid)]


@pytest.mark.parametrize(("aid", "name"), CASES)
def test_heldout_file(graded, aid: str, name: str):
    results = graded(aid)[name]
    expected = _expected(HELDOUT / aid / name)
    if expected is None:
        assert len(results) == len(_code_questions(aid))
        for r in results:
            assert r.misconceptions == [], (r.question_id, r.misconceptions, r.feedback)
            assert r.score == pytest.approx(r.max_score), (r.question_id, r.feedback)
    else:
        (r,) = results
        assert r.misconceptions == [expected], (r.misconceptions, r.feedback)
        assert r.score < r.max_score - 1e-9, r.feedback


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_heldout_covers_every_id_twice_and_has_correct_files(aid: str):
    ids = {m for q in _code_questions(aid) for m in q.mutants}
    counts: dict[str | None, int] = {}
    for path in _files(aid):
        counts[_expected(path)] = counts.get(_expected(path), 0) + 1
        qid = _question(path)
        if _expected(path) is not None:
            q = next(q for q in _code_questions(aid) if q.id == qid)
            assert _expected(path) in q.mutants, f"{path.name}: {qid} has no mutant {_expected(path)}"
    assert counts.get(None, 0) >= 3
    assert {m: counts.get(m, 0) for m in ids if counts.get(m, 0) < 2} == {}


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_a_correct_file_graded_as_the_code_file_itself(tmp_path, aid: str):
    """The re-export wrapper hides nothing: one correct file graded the ordinary way."""
    assignment = registry.load(aid)
    path = next(p for p in _files(aid) if _expected(p) is None)
    (tmp_path / "sub").mkdir()
    shutil.copy(path, tmp_path / "sub" / assignment.code_file)
    only = dataclasses.replace(assignment, questions=tuple(_code_questions(aid)))
    report = grade_submission(tmp_path / "sub", only, limits=LIMITS)
    assert report.score == pytest.approx(report.max_score)
    assert all(not q.misconceptions for q in report.questions)
