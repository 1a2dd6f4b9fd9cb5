"""Issue 15 item 1: grading from inside a submission folder never runs the submission's files.

A submission folder holding `mpmath.py`, `numpy.py` and `sympy.py` (each writes a marker file
when imported) is graded from inside itself, as an instructor would type it: `python -m grader
grade . -a a1` and the `seqgrade` script. The grader, its expression checker and the sandboxed
worker must all use the real libraries: no marker, and the honest score (the solution: 100).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.course.content import solution_dir
from grader.written.expr.checker import ExprChecker

IMPOSTOR = """
import os
with open({marker!r}, "a") as fh:
    fh.write({name!r} + " imported from " + os.getcwd() + "\\n")
raise ImportError("an impostor")
"""


def _submission(folder: Path, marker: Path) -> None:
    folder.mkdir()
    for name in ("word_vectors.py", "answers.toml"):
        shutil.copyfile(solution_dir("a1_word_vectors") / name, folder / name)
    for name in ("mpmath", "numpy", "sympy"):
        (folder / f"{name}.py").write_text(IMPOSTOR.format(marker=str(marker), name=name))


def _command(kind: str) -> list[str]:
    if kind == "module":
        return [sys.executable, "-m", "grader"]
    script = shutil.which("seqgrade") or str(Path(sys.executable).parent / "seqgrade")
    return [script]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["module", "script"])
def test_grading_from_inside_a_folder_with_impostor_libraries(tmp_path, kind):
    if kind == "script" and shutil.which("seqgrade") is None:
        pytest.skip("the seqgrade script is not installed")
    marker = tmp_path / "marker.txt"
    folder = tmp_path / "submission"
    _submission(folder, marker)
    results = tmp_path / "results.json"
    done = subprocess.run(
        [*_command(kind), "grade", ".", "-a", "a1", "--results", str(results)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert not marker.exists(), marker.read_text()
    data = json.loads(results.read_text())
    assert data["score"] == 100, [
        (t["name"], t["score"], t["output"][:300])
        for t in data["tests"]
        if t["score"] < t["max_score"]
    ]


def test_the_expression_checker_ignores_the_callers_folder(tmp_path, monkeypatch):
    """The checker alone, started from a folder with an impostor `mpmath.py` and PYTHONPATH=.."""
    marker = tmp_path / "marker.txt"
    (tmp_path / "mpmath.py").write_text(IMPOSTOR.format(marker=str(marker), name="mpmath"))
    (tmp_path / "sympy.py").write_text(IMPOSTOR.format(marker=str(marker), name="sympy"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("PYTHONSTARTUP", str(tmp_path / "mpmath.py"))
    with ExprChecker() as checker:
        assert checker.check("2 x^2", "x (2 x)").equivalent
        # the sympy fallback path too: an identity the numeric test alone may leave to sympy
        checker.check("sqrt(x^2)", "abs(x)")
    assert not marker.exists(), marker.read_text()


def test_control_the_impostors_do_run_when_a_process_is_not_isolated(tmp_path):
    """The attack is real: a plain `python -c` started in the folder imports the impostor."""
    marker = tmp_path / "marker.txt"
    _submission(tmp_path / "submission", marker)
    subprocess.run(
        [sys.executable, "-c", "import mpmath"],
        cwd=tmp_path / "submission",
        capture_output=True,
        timeout=60,
    )
    assert marker.exists()


def test_python_m_grader_drops_the_working_directory_from_sys_path(tmp_path):
    """`python -m grader` puts the working directory first; the grader removes it before any import."""
    (tmp_path / "numpy.py").write_text(IMPOSTOR.format(marker=str(tmp_path / "m"), name="numpy"))
    code = (
        "import runpy, sys; sys.argv = ['grader', '--version']\n"
        "try:\n    runpy.run_module('grader', run_name='__main__', alter_sys=True)\n"
        "except SystemExit:\n    pass\n"
        "import numpy; print(numpy.__file__)"
    )
    root = str(Path(__file__).resolve().parents[1])
    done = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path[:0] = ['', {root!r}]\n" + code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert str(tmp_path) not in done.stdout and not (tmp_path / "m").exists()


def test_the_expression_checker_leaves_no_folder_however_its_process_ends(tmp_path):
    """A batch's pool process ends with `os._exit` (no exit handlers, no finalizers): the
    checker's private working folder must not outlive it in the temporary folder."""
    code = (
        "import os, sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
        "from grader.written.expr.checker import ExprChecker\n"
        "checker = ExprChecker()\n"
        "assert checker.check('2 x^2', 'x (2 x)').equivalent\n"
        "os._exit(0)\n"
    )
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []
