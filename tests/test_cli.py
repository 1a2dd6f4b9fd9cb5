"""The `seqgrade` command as an instructor uses it: exit codes, formats, results files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from grader.app import cli
from grader.course import registry
from grader.course.content import solution_dir
from grader.reports.results_json import SCHEMA

READY = [a for a in registry.available() if solution_dir(a).is_dir()]


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *args], capture_output=True, text=True, cwd=cwd,
                          timeout=300)


def test_help_lists_every_command():
    out = run("--help")
    assert out.returncode == 0
    for command in ("list", "grade", "batch", "expr-equal", "handout", "autograder", "demo"):
        assert command in out.stdout


def test_help_does_not_import_numpy_or_torch():
    code = "import sys; from grader.app import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit: pass\n" \
           "print('numpy' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip().endswith("False False")


def test_unknown_assignment_exits_2(tmp_path):
    assert cli.main(["grade", str(tmp_path), "-a", "a9"]) == 2


def test_bad_arguments_exit_2():
    with pytest.raises(SystemExit) as exc:
        cli.main(["grade"])
    assert exc.value.code == 2


def test_missing_submission_exits_2_and_still_writes_results(tmp_path):
    res = tmp_path / "r.json"
    assert cli.main(["grade", str(tmp_path / "nope"), "-a", "a1", "--results", str(res)]) == 2
    jsonschema.validate(json.loads(res.read_text()), SCHEMA)


@pytest.mark.skipif(not READY, reason="no assignment installed yet")
def test_grade_writes_results_and_prints_json(tmp_path):
    aid = READY[0]
    res = tmp_path / "out" / "results.json"
    out = run("grade", str(solution_dir(aid)), "-a", aid.split("_")[0], "--results", str(res), "--format", "json")
    assert out.returncode == 0, out.stderr
    printed = json.loads(out.stdout)
    on_disk = json.loads(res.read_text())
    jsonschema.validate(on_disk, SCHEMA)
    assert printed["score"] == on_disk["score"] == 100


@pytest.mark.skipif(not READY, reason="no assignment installed yet")
def test_list_shows_questions_and_points():
    out = run("list")
    assert out.returncode == 0 and READY[0] in out.stdout and "points" in out.stdout


def test_expr_equal_prints_one_json_line():
    out = run("expr-equal", "d(12d+13)", "12 d^2 + 13 d")
    assert out.returncode == 0
    line = json.loads(out.stdout.strip())
    assert line["equivalent"] is True and line["error"] is None


def test_expr_equal_accepts_an_answer_starting_with_minus():
    out = run("expr-equal", "-u_o + p_o u_o", "p_o u_o - u_o")
    assert out.returncode == 0 and json.loads(out.stdout)["equivalent"] is True


def test_unknown_assignment_still_writes_a_valid_results_file(tmp_path):
    res = tmp_path / "r.json"
    assert cli.main(["grade", str(tmp_path), "-a", "a9", "--results", str(res)]) == 2
    jsonschema.validate(json.loads(res.read_text()), SCHEMA)


@pytest.mark.parametrize("command", [["handout", "a9", "--out", "x.zip"], ["autograder", "zz", "--out", "x.zip"],
                                     ["demo", "-a", "a0"], ["batch", ".", "-a", "nope"]])
def test_every_command_rejects_an_unknown_assignment_with_2(command):
    assert cli.main(command) == 2
