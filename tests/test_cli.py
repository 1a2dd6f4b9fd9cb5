"""The `seqgrade` command as an instructor uses it: exit codes, formats, results files.

Every test runs the installed console script (`seqgrade` on PATH), as an instructor does;
`python -m grader` is checked once. An import that only runpy happens to provide cannot
hide behind either.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest
from conftest import processes_with

from grader.course import registry
from grader.course.content import solution_dir
from grader.reports.results_json import SCHEMA

READY = [a for a in registry.available() if solution_dir(a).is_dir()]


SEQGRADE = shutil.which("seqgrade")


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    assert SEQGRADE, (
        "the seqgrade console script is not on PATH: install the package (pip install -e .)"
    )
    return subprocess.run([SEQGRADE, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def test_python_m_grader_is_the_same_command(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "grader", "list"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert out.returncode == 0 and out.stdout == run("list", cwd=tmp_path).stdout


def test_help_lists_every_command():
    out = run("--help")
    assert out.returncode == 0
    for command in ("list", "grade", "batch", "expr-equal", "handout", "autograder", "demo"):
        assert command in out.stdout


def test_help_does_not_import_numpy_or_torch():
    code = (
        "import sys; from grader.app import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit: pass\n"
        "print('numpy' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.stdout.strip().endswith("False False")


def test_unknown_assignment_exits_2(tmp_path):
    assert run("grade", str(tmp_path), "-a", "a9").returncode == 2


def test_bad_arguments_exit_2():
    out = run("grade")
    assert out.returncode == 2 and "usage" in out.stderr


def test_missing_submission_exits_2_and_still_writes_results(tmp_path):
    res = tmp_path / "r.json"
    assert run("grade", str(tmp_path / "nope"), "-a", "a1", "--results", str(res)).returncode == 2
    jsonschema.validate(json.loads(res.read_text()), SCHEMA)


@pytest.mark.skipif(not READY, reason="no assignment installed yet")
def test_grade_writes_results_and_prints_json(tmp_path):
    aid = READY[0]
    res = tmp_path / "out" / "results.json"
    out = run(
        "grade",
        str(solution_dir(aid)),
        "-a",
        aid.split("_")[0],
        "--results",
        str(res),
        "--format",
        "json",
    )
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
    assert run("grade", str(tmp_path), "-a", "a9", "--results", str(res)).returncode == 2
    jsonschema.validate(json.loads(res.read_text()), SCHEMA)


@pytest.mark.parametrize(
    "command",
    [
        ["handout", "a9", "--out", "x.zip"],
        ["autograder", "zz", "--out", "x.zip"],
        ["demo", "-a", "a0"],
        ["batch", ".", "-a", "nope"],
    ],
)
def test_every_command_rejects_an_unknown_assignment_with_2(command, tmp_path):
    assert run(*command, cwd=tmp_path).returncode == 2


def _a2_for(key: str | None, folder: Path) -> Path:
    """a2's solution with the written answers of `key`'s variant (from the instructor's answer_key.py)."""
    folder.mkdir(parents=True)
    shutil.copy(solution_dir("a2_rnn_bptt") / "rnn.py", folder / "rnn.py")
    answers = subprocess.run(
        [sys.executable, "answer_key.py", *([key] if key else [])],
        cwd=solution_dir("a2_rnn_bptt"),
        capture_output=True,
        text=True,
        check=True,
    )
    (folder / "answers.toml").write_text(answers.stdout)
    return folder


@pytest.mark.skipif("a2_rnn_bptt" not in READY, reason="a2 not installed")
def test_student_selects_the_variant_by_email_trimmed_and_lower_cased(tmp_path):
    sub = _a2_for("ada@example.edu", tmp_path / "sub")
    out = run("grade", str(sub), "-a", "a2", "--student", "  Ada@Example.EDU ", "--format", "json")
    data = json.loads(out.stdout)
    assert (
        out.returncode == 0
        and data["score"] == 100
        and data["extra_data"]["student"] == "ada@example.edu"
    )
    assert any("`ada@example.edu`" in t["output"] for t in data["tests"])
    # The same submission without the key is graded with the default variant, and says so.
    out = run("grade", str(sub), "-a", "a2", "--format", "json")
    data = json.loads(out.stdout)
    assert data["score"] < 100 and "default variant" in out.stderr
    assert "the default variant was used" in data["output"]


def test_the_table_shows_notes_about_the_submission_even_when_isolated():
    """A note such as "the notebook was ignored" is shown in the table and the markdown whatever
    the isolation (the isolation note itself only when the run was not isolated)."""
    from grader.records import GradeReport, QuestionResult
    from grader.reports import render

    q = QuestionResult(
        question_id="a1.softmax",
        title="Stable softmax",
        number="1",
        kind="code",
        function="softmax",
        score=8.0,
        max_score=8.0,
        lead="ok",
        visibility="visible",
    )
    report = GradeReport(
        assignment_id="a1_word_vectors",
        student=None,
        seed=0,
        questions=[q],
        execution_time=0.1,
        isolated=True,
        warnings=["`word_vectors.ipynb` was ignored: `word_vectors.py` was graded"],
    )
    assert "word_vectors.ipynb` was ignored" in render.table(report)
    assert "word_vectors.ipynb` was ignored" in render.markdown(report)
    assert "not isolated" not in render.table(report)
    # the full-feedback command is pasted into a shell: a folder or key with spaces or quotes
    # comes back as it went in
    report.student = "o'hara@example.edu"
    hint = render.table(report, submission="work/Ada Lovelace 1", options=["--term", "t m.toml"])
    words = shlex.split(hint.rsplit("full feedback: ", 1)[1])
    assert words == [
        *("seqgrade", "grade", "work/Ada Lovelace 1", "-a", "a1_word_vectors"),
        *("--student", "o'hara@example.edu", "--term", "t m.toml", "--format", "md"),
    ]


def test_a_checkout_run_from_its_own_folder_keeps_its_reference_before_another_install(
    tmp_path: Path,
) -> None:
    """Two checkouts: this one's install entry comes first, another's (a system-wide editable
    install) later. Run from this checkout's folder, `python -m grader` must keep its own entry
    where the install put it; moving it last made the other copy's `reference` win, and the
    mixed-install guard then refused every command."""
    root = Path(__file__).resolve().parents[1]
    other = tmp_path / "other"
    (other / "reference").mkdir(parents=True)
    (other / "reference" / "__init__.py").write_text("raise ImportError('the other copy')\n")
    program = (
        "import runpy, sys\n"
        f"sys.path[:] = ['', {str(root)!r}, {str(other)!r}] + "
        f"[p for p in sys.path[1:] if p not in ({str(root)!r}, '')]\n"
        "sys.argv = ['seqgrade', 'list']\n"
        "runpy.run_module('grader', run_name='__main__')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=root, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert "a1_word_vectors" in done.stdout


@pytest.mark.parametrize(
    "body,status,said",
    [
        ("return 0", 0, ""),
        ("return 2", 2, ""),
        ("sys.exit(3)", 3, ""),
        ("sys.exit('the grader says no')", 1, "the grader says no"),
        ("raise RuntimeError('a bug of ours')", 1, "RuntimeError: a bug of ours"),
    ],
)
def test_the_command_ends_without_teardown_but_with_its_status_handlers_and_output(
    body, status, said
):
    """`cli.run` skips the interpreter's teardown (a third of a single grade's peer): the exit
    status is main's, every exit handler the command registered still runs, and what was printed
    reaches the pipe."""
    code = (
        "import atexit, sys\n"
        "from grader.app import cli\n"
        "def main():\n"
        "    atexit.register(lambda: print('handler ran', file=sys.stderr))\n"
        "    print('x' * 200_000)\n"  # more than a pipe holds: flushed before the exit
        f"    {body}\n"
        "cli.main = main\n"
        "cli.run()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == status, out.stderr
    assert out.stdout == "x" * 200_000 + "\n"
    assert "handler ran" in out.stderr and said in out.stderr


def test_a_grade_leaves_no_temporary_folder_behind(tmp_path):
    """The command skips the interpreter's teardown: the sandbox's scratch folder and the
    expression checker's folder (an answers.toml starts it) are removed all the same."""
    aid = "a2_rnn_bptt"
    sub = tmp_path / "sub"
    shutil.copytree(solution_dir(aid), sub)
    temp = tmp_path / "temp"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp)}
    done = subprocess.run(
        [SEQGRADE, "grade", str(sub), "-a", aid, "--results", str(tmp_path / "r.json")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "r.json").read_text())["score"] == 100
    assert list(temp.iterdir()) == []


def _templates_of(pid: int) -> list[int]:
    """The warm templates the process `pid` started that still run (`--zygote FD PARENT ...` in
    their command line, which is empty once a process has died, reaped or not)."""
    mine = []
    for found in processes_with("--zygote"):
        try:
            argv = Path(f"/proc/{found}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile
        at = argv.index(b"--zygote") if b"--zygote" in argv else -1
        if at >= 0 and argv[at + 2 : at + 3] == [str(pid).encode()]:
            mine.append(found)
    return mine


def test_the_warm_template_of_a_grade_does_not_outlive_it(tmp_path):
    """The command kills its warm template as it exits, without waiting for it to die (the
    kernel finishes it): nothing of the grade stays running after the command returns."""
    aid = "a7_classification_ngrams"
    sub = tmp_path / "sub"
    shutil.copytree(solution_dir(aid), sub)
    proc = subprocess.Popen(
        [SEQGRADE, "grade", str(sub), "-a", aid, "--student", "s@uni.edu"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "SEQGRADE_WARM": "1"},
    )
    seen: list[int] = []
    while proc.poll() is None and not seen:
        seen = _templates_of(proc.pid)
        time.sleep(0.01)
    assert proc.wait(timeout=300) == 0
    assert seen, "the grade started no warm template (nothing to check)"
    deadline = time.monotonic() + 5.0
    while _templates_of(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _templates_of(proc.pid) == []
