"""The public tests agree with the grader (issue 18, item 5).

A submission the grader gives full marks must pass every public test a student runs. The
README allows float32 work, so each assignment's solution in float32 (tests/float32_solutions.py)
must pass its public tests AND get full marks from the grader. Each public suite runs as a
student runs it: `pytest test_public.py` in a folder holding only it and the code file.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import float32_solutions as f32
import numpy as np
import pytest
from conftest import ROOT, student_pytest

from grader.course.registry import ASSIGNMENT_IDS, load
from grader.engine.grade import grade_submission

pytestmark = pytest.mark.slow


def _run_public_tests(aid: str, folder: Path) -> subprocess.CompletedProcess[str]:
    shutil.copy(ROOT / "assignments" / aid / "test_public.py", folder / "test_public.py")
    return student_pytest(folder, "test_public.py")


def test_the_float32_version_computes_in_float32(tmp_path: Path) -> None:
    name, source = f32.float32_source("a2_rnn_bptt")
    path = tmp_path / name
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("rnn_float32", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    Z, Hs = module.rnn_forward(np.ones((3, 2)), np.eye(2), np.eye(2), np.zeros(2))
    assert Z.dtype == np.float32 and Hs.dtype == np.float32
    loss, grads = module.bptt_sequence_ce(
        np.ones((3, 2)),
        np.eye(2),
        np.eye(2),
        np.zeros(2),
        np.eye(2),
        np.zeros(2),
        np.array([0, 1, 0]),
    )
    assert float(loss) == float(np.float32(loss)) and grads["W_h"].dtype == np.float32


@pytest.mark.parametrize("aid", ASSIGNMENT_IDS)
def test_a_float32_solution_passes_the_public_tests(aid: str, tmp_path: Path) -> None:
    name, source = f32.float32_source(aid)
    (tmp_path / name).write_text(source)
    run = _run_public_tests(aid, tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert " passed" in run.stdout and "failed" not in run.stdout


@pytest.mark.parametrize("aid", ASSIGNMENT_IDS)
def test_a_float32_solution_gets_full_marks(aid: str, tmp_path: Path) -> None:
    report = grade_submission(f32.write_submission(aid, tmp_path / "submission"), load(aid))
    lost = {q.question_id: q.feedback[:400] for q in report.questions if q.status != "passed"}
    assert not lost, lost
    assert report.score == pytest.approx(report.max_score)
