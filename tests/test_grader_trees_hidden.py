"""A real grading hides the grader's own trees from student code: the checkout, the solutions,
and the copy an editable install puts into site-packages (grader/_content/solutions)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import FAST

from grader import sandbox
from grader.course import content, registry
from grader.engine.grade import grade_submission
from grader.sandbox.runtime import runtime_paths

SPY = """
import os, numpy as np
# an empty mount point shows nothing; a folder holding the interpreter (a venv inside the
# checkout) shows only the way to it
_SEEN = [p for p, way in {paths!r}.items()
         if os.path.exists(p) and (not os.path.isdir(p) or set(os.listdir(p)) - set(way))]

def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    if _SEEN:  # a leak: answer wrongly so the grade shows it
        return np.zeros_like(x)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)
"""


def _paths() -> dict[str, list[str]]:
    """Each path the student must not see, with the names in it that lead to what the
    worker's Python needs (bound on purpose)."""
    trees = [str(p) for p in content.grader_trees()]
    solutions = [os.path.join(t, "_content", "solutions") for t in trees if t.endswith("grader")]
    paths = {*trees, *solutions, str(content.content_root() / "solutions" / "a1_word_vectors")}
    runtime = runtime_paths()
    return {
        p: sorted(
            {r.relative_to(p).parts[0] for r in runtime if r.is_relative_to(p) and r != Path(p)}
        )
        for p in sorted(paths)
    }


def _grade(tmp_path: Path):
    folder = tmp_path / "sub"
    folder.mkdir()
    (folder / "word_vectors.py").write_text(SPY.format(paths=_paths()))
    a1 = registry.load("a1")
    import dataclasses

    only = dataclasses.replace(a1, questions=(a1.question("a1.softmax"),))
    return grade_submission(folder, only, limits=FAST)


@pytest.mark.skipif(not sandbox.can_isolate(), reason="needs root and namespaces")
def test_student_code_sees_none_of_the_graders_trees(tmp_path):
    report = _grade(tmp_path)
    assert report.score == report.max_score, report.questions[0].feedback


def test_control_without_the_sandbox_the_trees_are_seen(tmp_path, monkeypatch):
    monkeypatch.setenv("SEQGRADE_SANDBOX", "off")
    report = _grade(tmp_path)
    assert report.score < report.max_score
