"""A library the student's module imports and the grading environment lacks (`import seaborn`
left over from a notebook) costs only the functions that use it, not every code question: the
worker gives the missing name a stand-in on a second import, and the report says so.

Expected: the solution's own marks for every question whose function does not touch the
missing library (the solution gets 100 without the import), a `ModuleNotFoundError` naming the
library where one does, and the student's own `except ImportError` fallback taken as before.
"""

from __future__ import annotations

from pathlib import Path

from conftest import FAST

from grader.course import registry
from grader.course.content import solution_dir
from grader.engine.grade import grade_submission

A1 = "a1_word_vectors"
HEADER = (
    "import seaborn_is_not_installed as sns\n"
    "from plotting_is_not_installed.extras import plot_losses\n"
)


def _grade(tmp_path: Path, code: str):
    a1 = registry.load(A1)
    (tmp_path / "word_vectors.py").write_text(code)
    (tmp_path / "answers.toml").write_text((solution_dir(A1) / "answers.toml").read_text())
    return grade_submission(tmp_path, a1, limits=FAST)


def test_an_unused_missing_import_costs_nothing_and_is_named(tmp_path: Path) -> None:
    solution = (solution_dir(A1) / "word_vectors.py").read_text()
    report = _grade(tmp_path, HEADER + solution)
    assert report.score == report.max_score == 100
    notes = " ".join(report.warnings)
    assert "`plotting_is_not_installed`, `seaborn_is_not_installed` are not installed" in notes
    assert "only a function that uses them fails" in notes


def test_a_function_that_uses_it_fails_alone_with_the_library_named(tmp_path: Path) -> None:
    solution = (solution_dir(A1) / "word_vectors.py").read_text()
    code = HEADER + solution.replace(
        "def glove_weight(X, x_max=100.0, alpha=0.75):\n",
        "def glove_weight(X, x_max=100.0, alpha=0.75):\n    sns.set_theme()\n",
    )
    assert code != HEADER + solution
    report = _grade(tmp_path, code)
    failed = {q.question_id for q in report.questions if q.status == "failed"}
    assert "a1.glove_weight" in failed
    assert "a1.softmax" not in failed and "a1.analogy" not in failed
    weight = next(q for q in report.questions if q.question_id == "a1.glove_weight")
    assert "ModuleNotFoundError" in weight.feedback
    assert "seaborn_is_not_installed" in weight.feedback


def test_the_students_own_import_fallback_is_taken_as_before(tmp_path: Path) -> None:
    solution = (solution_dir(A1) / "word_vectors.py").read_text()
    fallback = (
        "try:\n    import fast_softmax_is_not_installed as fast\nexcept ImportError:\n"
        "    fast = None\nassert fast is None, 'the fallback must be taken'\n"
    )
    report = _grade(tmp_path, fallback + solution)
    assert report.score == 100
    assert not any("not installed" in w for w in report.warnings)


def test_an_import_error_of_another_kind_gets_no_stand_in(tmp_path: Path) -> None:
    """A name numpy does not have is not a missing library: no stand-in is made for it, the
    line is skipped as any top-level line that raises (docs/conventions.md, "Code"), and a
    function that used the name would raise NameError."""
    solution = (solution_dir(A1) / "word_vectors.py").read_text()
    report = _grade(tmp_path, "from numpy import no_such_name\n" + solution)
    assert report.score == 100
    assert not any("not installed" in w for w in report.warnings)
    (note,) = [w for w in report.warnings if "was imported" in w]
    assert "line 1 (`from numpy import no_such_name`) raised `ImportError" in note, note
