"""What every assignment must hold, checked the same way for each one in the registry."""

from __future__ import annotations

import ast
import dataclasses
import shutil
from pathlib import Path

import pytest
from conftest import FAST, ROOT, answer_key, code_questions, student_pytest

from grader import catalog
from grader.course import registry, variants
from grader.engine.grade import grade_submission
from grader.questions import WrittenQuestion

ASSIGNMENTS = registry.available()
STUDENTS = ("alice@example.edu", "s1234567")


def _solution(tmp_path: Path, aid: str, student: str | None) -> Path:
    a = registry.load(aid)
    folder = tmp_path / f"{aid}-{student}"
    folder.mkdir()
    shutil.copy(ROOT / "solutions" / aid / a.code_file, folder / a.code_file)
    (folder / "answers.toml").write_text(answer_key(aid).to_toml(student))
    return folder


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_points_ids_and_functions(aid: str):
    """100 points; unique question ids; every code question's function in the stub and the solution."""
    a = registry.load(aid)
    assert sum(q.points for q in a.questions) == pytest.approx(100)
    ids = [q.id for q in a.questions]
    assert len(ids) == len(set(ids))
    for folder in (ROOT / "assignments" / aid, ROOT / "solutions" / aid):
        tree = ast.parse((folder / a.code_file).read_text())
        defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        missing = {q.function for q in code_questions(a)} - defined
        assert not missing, (folder, missing)


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_every_id_the_assignment_names_is_in_the_catalog(aid: str):
    a = registry.load(aid)
    named = {m for q in code_questions(a) for m in q.mutants}
    if any(q.forbidden for q in code_questions(a)):
        named.add("uses-library-shortcut")
    for q in a.questions:
        if isinstance(q, WrittenQuestion) and q.wrong_forms is not None:
            named |= {f.misconception for f in q.wrong_forms(variants.numbers(aid, STUDENTS[0]))}
    for mid in named:
        catalog.get(mid)  # raises on an unknown id


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_two_students_get_their_own_hidden_cases(aid: str):
    """The same visible cases, different hidden ones, for two variant keys."""
    seeds = [variants.seed_for(aid, s) for s in STUDENTS]
    assert seeds[0] != seeds[1]
    differ = 0
    for q in code_questions(aid):
        a, b = q.cases(seeds[0]), q.cases(seeds[1])
        assert [repr(c.args) for c in a if c.visible] == [repr(c.args) for c in b if c.visible], (
            q.id
        )
        differ += any(repr(x.args) != repr(y.args) for x, y in zip(a, b) if not x.visible)
    assert differ >= len(code_questions(aid)) - 1  # every question but a purely fixed one


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_solution_scores_full_for_two_students(aid: str, tmp_path: Path):
    a = registry.load(aid)
    for student in STUDENTS:
        report = grade_submission(
            _solution(tmp_path, aid, student), a, student=student, limits=FAST
        )
        lost = [
            (q.question_id, q.feedback[:300])
            for q in report.questions
            if q.score < q.max_score - 1e-9
        ]
        assert not lost, lost
        assert not any(q.misconceptions for q in report.questions)
        assert report.grader_error is None


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_one_students_answers_do_not_fit_another(aid: str, tmp_path: Path):
    """Written answers computed for one key lose points when graded for another (per-student numbers)."""
    a = registry.load(aid)
    written = tuple(q for q in a.questions if isinstance(q, WrittenQuestion))
    folder = _solution(tmp_path, aid, STUDENTS[0])
    report = grade_submission(
        folder, dataclasses.replace(a, questions=written), student=STUDENTS[1], limits=FAST
    )
    if variants.numbers(aid, STUDENTS[0]) != variants.numbers(aid, STUDENTS[1]):
        assert report.score < report.max_score


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_stub_scores_zero_cleanly(aid: str):
    """The handout as given: every question "not attempted", no error, no mistake named."""
    report = grade_submission(ROOT / "assignments" / aid, registry.load(aid), limits=FAST)
    assert report.score == 0
    for q in report.questions:
        assert q.not_attempted, (q.question_id, q.feedback)
        assert q.error is None and "Traceback" not in q.feedback
        assert not q.misconceptions


@pytest.mark.slow
@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_public_tests_pass_on_the_solution_and_fail_on_the_stub(aid: str, tmp_path: Path):
    a = registry.load(aid)
    runs = {}
    for which in ("solutions", "assignments"):
        folder = tmp_path / which
        shutil.copytree(ROOT / "assignments" / aid, folder)  # the handout as students get it
        shutil.copy(ROOT / which / aid / a.code_file, folder / a.code_file)
        runs[which] = student_pytest(folder, "test_public.py")
    assert runs["solutions"].returncode == 0, runs["solutions"].stdout[-2000:]
    stub = runs["assignments"]
    assert stub.returncode == 1 and "NotImplementedError" in stub.stdout, stub.stdout[-2000:]


def test_a_misconception_typo_fails_when_the_assignment_loads(monkeypatch):
    """A suite naming an id the catalog lacks fails at load (`seqgrade list`), not at grading."""
    import grader.suites.a1_word_vectors as suite

    q = code_questions(suite.ASSIGNMENT)[0]
    typo = dataclasses.replace(q, mutants={**q.mutants, "softmax-unstabel": q.reference})
    broken = dataclasses.replace(
        suite.ASSIGNMENT, questions=(typo, *suite.ASSIGNMENT.questions[1:])
    )
    monkeypatch.setattr(suite, "ASSIGNMENT", broken)
    with pytest.raises(registry.AuthoringError, match="softmax-unstabel"):
        registry.load("a1")


def test_a_dependency_on_an_unknown_or_later_question_fails_at_load(monkeypatch):
    """Follow-through dependencies name earlier code questions; a typo fails `seqgrade list`."""
    import grader.suites.a1_word_vectors as suite

    first, *rest = suite.ASSIGNMENT.questions
    broken = dataclasses.replace(first, depends_on=("a1.softmaxx",))
    monkeypatch.setattr(
        suite, "ASSIGNMENT", dataclasses.replace(suite.ASSIGNMENT, questions=(broken, *rest))
    )
    with pytest.raises(registry.AuthoringError, match="softmaxx"):
        registry.load("a1")
