"""The Gradescope bundles: built, unpacked into a fake container root, set up, run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import jsonschema
import pytest

from grader.app.bundles import build_autograder, build_handout
from grader.course import registry
from grader.course.content import samples_dir, solution_dir
from grader.reports.results_json import SCHEMA

READY = [aid for aid in registry.available() if solution_dir(aid).is_dir()]


def _container(tmp_path: Path, aid: str, submission: Path | None, metadata: dict | None) -> Path:
    root = tmp_path / "autograder"
    (root / "source").mkdir(parents=True)
    z = build_autograder(aid, tmp_path / "autograder.zip")
    with zipfile.ZipFile(z) as zf:
        names = zf.namelist()
        assert "setup.sh" in names and "run_autograder" in names
        zf.extractall(root / "source")
    (root / "submission").mkdir()
    if submission is not None:
        for f in submission.iterdir():
            if f.is_file() and f.name != "answer_key.py":
                shutil.copy(f, root / "submission" / f.name)
        sid = ((metadata or {}).get("users") or [{}])[0].get("id")
        if sid and (submission / "answer_key.py").is_file():  # the student's own variant of the answers
            key = subprocess.run([sys.executable, "answer_key.py", str(sid)], cwd=submission, capture_output=True,
                                 text=True, check=True)
            (root / "submission" / "answers.toml").write_text(key.stdout)
    if metadata is not None:
        (root / "submission_metadata.json").write_text(json.dumps(metadata))
    env = {**os.environ, "SEQGRADE_GRADESCOPE_ROOT": str(root), "PYTHON": sys.executable}
    setup = subprocess.run(["bash", str(root / "source" / "setup.sh")], env=env, capture_output=True, text=True,
                           timeout=600)
    assert setup.returncode == 0, setup.stderr[-2000:]
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    run = subprocess.run(["bash", str(root / "run_autograder")], env=env, cwd=root, capture_output=True, text=True,
                         timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    return root


def _results(root: Path) -> dict:
    data = json.loads((root / "results" / "results.json").read_text())
    jsonschema.validate(data, SCHEMA)
    return data


@pytest.mark.parametrize("aid", READY)
def test_autograder_zip_holds_only_this_assignment(tmp_path, aid):
    with zipfile.ZipFile(build_autograder(aid, tmp_path / "a.zip")) as zf:
        names = zf.namelist()
    others = [a for a in registry.ASSIGNMENT_IDS if a != aid]
    assert f"grader/suites/{aid}.py" in names
    assert not any(f"suites/{o}" in n for o in others for n in names)
    assert not any(n.startswith("solutions/") or "/solutions/" in n for n in names)
    assert not any("samples/" in n for n in names)


@pytest.mark.parametrize("aid", READY[:1])
def test_container_run_gives_full_marks_for_the_solution(tmp_path, aid):
    meta = {"users": [{"id": "4242", "email": "ada@example.edu", "name": "Ada"}], "due_date": "2026-12-01T00:00:00"}
    data = _results(_container(tmp_path, aid, solution_dir(aid), meta))
    assert data["score"] == sum(t["max_score"] for t in data["tests"]) == 100
    assert data["extra_data"]["assignment"] == aid


@pytest.mark.parametrize("aid", [a for a in READY if (samples_dir() / a / "buggy").is_dir()][:1])
def test_container_run_buggy_submission_names_a_misconception(tmp_path, aid):
    data = _results(_container(tmp_path, aid, samples_dir() / aid / "buggy", {"users": [{"id": "7"}]}))
    assert data["score"] < 100
    assert any(t["extra_data"]["misconceptions"] for t in data["tests"])


@pytest.mark.parametrize("aid", READY[:1])
def test_container_run_empty_submission_scores_zero_with_messages(tmp_path, aid):
    data = _results(_container(tmp_path, aid, None, None))
    assert data["score"] == 0
    assert all(t["output"] for t in data["tests"])


def test_container_writes_valid_results_when_the_grader_fails(tmp_path):
    aid = READY[0] if READY else "a1_word_vectors"
    root = tmp_path / "autograder"
    if not READY:
        pytest.skip("no assignment installed")
    (root / "source").mkdir(parents=True)
    with zipfile.ZipFile(build_autograder(aid, tmp_path / "a.zip")) as zf:
        zf.extractall(root / "source")
    (root / "source" / "seqgrade_assignment.txt").write_text("no-such-assignment\n")
    env = {**os.environ, "SEQGRADE_GRADESCOPE_ROOT": str(root), "PYTHON": sys.executable}
    run = subprocess.run(["bash", str(root / "source" / "run_autograder")], env=env, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0
    data = _results(root)
    assert data["tests"][0]["extra_data"]["kind"] == "error"


@pytest.mark.parametrize("aid", READY)
def test_handout_has_no_hidden_material_and_grades_to_zero(tmp_path, aid):
    z = build_handout(aid, tmp_path / "handout.zip")
    with zipfile.ZipFile(z) as zf:
        names = zf.namelist()
        zf.extractall(tmp_path / "h")
    assert all(n.startswith(f"{aid}/") for n in names)
    assert not any("suites" in n or "solutions" in n or n.endswith("answer_key.py") for n in names)
    assert f"{aid}/answers.toml" in names and f"{aid}/variant.py" in names and f"{aid}/README.md" in names
    from grader.engine.grade import grade_submission

    report = grade_submission(tmp_path / "h" / aid, registry.load(aid))
    assert report.score == 0 and report.grader_error is None


@pytest.mark.parametrize("aid", READY[:2])
def test_handout_public_tests_run_with_pytest(tmp_path, aid):
    with zipfile.ZipFile(build_handout(aid, tmp_path / "handout.zip")) as zf:
        zf.extractall(tmp_path / "h")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=tmp_path / "h" / aid,
                         capture_output=True, text=True, timeout=300)
    # The stub fails its public tests (it raises NotImplementedError) but pytest runs them.
    assert run.returncode == 1 and "NotImplementedError" in run.stdout, run.stdout[-2000:]
