"""Gradebook exports: seqgrade's grades.csv, Canvas's import columns, Gradescope's score upload.

The column sets are the documented ones: Canvas's gradebook import (Student, ID, SIS User ID,
SIS Login ID, Section, then one column per assignment, with the optional "Points Possible" row
of its own exports) and Gradescope's score upload (Email and the score).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import pytest
import toy_assignment as toy

from grader.reports import gradebook
from grader.reports.gradebook import Person, rounded, rows_of


@dataclass
class Sub:
    name: str
    student_id: str | None = None
    student_name: str | None = None


def _results(
    key: str | None, scores: dict[str, float], misconceptions: dict[str, list[str]] | None = None
) -> dict:
    misconceptions = misconceptions or {}
    tests = [
        {
            "score": s,
            "max_score": toy.ASSIGNMENT.question(q).points,
            "extra_data": {
                "question": q,
                "kind": "code",
                "function": None,
                "misconceptions": misconceptions.get(q, []),
            },
        }
        for q, s in scores.items()
    ]
    return {
        "score": sum(scores.values()),
        "tests": tests,
        "extra_data": {"assignment": "toy", "grader_version": "x", "student": key},
    }


FULL = {"toy.softmax": 4.0, "toy.linear": 3.0, "toy.quad": 2.0, "toy.norm": 1.0}
THIRDS = {"toy.softmax": 4 / 3, "toy.linear": 3.0, "toy.quad": 2.0, "toy.norm": 0.0}
GRADED = [
    (Sub("submission_1", "ada@uni.edu", "Ada Lovelace"), _results("ada@uni.edu", FULL)),
    (
        Sub("submission_2", "1002", "Alan Turing"),
        _results("1002", THIRDS, {"toy.softmax": ["softmax-wrong-axis"]}),
    ),
    (
        Sub("bob"),
        _results("bob", {"toy.softmax": 0.0, "toy.linear": 0.0, "toy.quad": 0.0, "toy.norm": 0.0}),
    ),
]
PEOPLE = {"submission_2": Person("Alan Turing", "alan@uni.edu", "1002")}


def _read(fmt: str, digits: int = 2) -> list[list[str]]:
    text = io.StringIO()
    csv.writer(text).writerows(
        gradebook.table(fmt, toy.ASSIGNMENT, rows_of(GRADED, PEOPLE), digits)
    )
    return list(csv.reader(io.StringIO(text.getvalue())))


@pytest.mark.parametrize(
    ("value", "digits", "text"),
    [
        (92.666666, 2, "92.67"),
        (10.0, 2, "10"),
        (4 / 3, 0, "1"),
        (0.125, 1, "0.1"),
        (-0.0001, 2, "0"),
        (7.5, 3, "7.5"),
    ],
)
def test_rounded(value, digits, text):
    assert rounded(value, digits) == text


def test_seqgrade_rows_carry_key_name_email_sid_rounded_total_and_scores():
    head, *rows = _read("seqgrade")
    assert head == [
        "submission",
        "variant_key",
        "student_name",
        "email",
        "sid",
        "total",
        "toy.softmax",
        "toy.linear",
        "toy.quad",
        "toy.norm",
        "misconceptions",
    ]
    by = {r[0]: dict(zip(head, r)) for r in rows}
    assert (
        by["submission_1"]["email"] == "ada@uni.edu"
    )  # the variant key is an email: it is the email
    assert by["submission_1"]["total"] == "10"
    alan = by["submission_2"]
    assert (alan["variant_key"], alan["student_name"], alan["email"], alan["sid"]) == (
        "1002",
        "Alan Turing",
        "alan@uni.edu",
        "1002",
    )
    assert alan["total"] == "6.33" and alan["toy.softmax"] == "1.33"
    assert alan["misconceptions"] == "softmax-wrong-axis"
    assert by["bob"]["email"] == "" and by["bob"]["variant_key"] == "bob"


def test_round_option_sets_the_decimals():
    _, *rows = _read("seqgrade", digits=0)
    assert {r[0]: r[5] for r in rows}["submission_2"] == "6"


def test_canvas_columns_and_matching_fields():
    head, points, *rows = _read("canvas")
    assert head[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert head[5:] == [toy.ASSIGNMENT.title]  # exactly one assignment column
    assert points[0].strip() == "Points Possible" and points[5] == "10"
    alan = dict(zip(head, rows[1]))
    assert alan == {
        "Student": "Alan Turing",
        "ID": "",
        "SIS User ID": "1002",
        "SIS Login ID": "alan@uni.edu",
        "Section": "",
        toy.ASSIGNMENT.title: "6.33",
    }
    assert all(len(r) == len(head) for r in rows)
    assert gradebook.unmatched("canvas", rows_of(GRADED, PEOPLE)) == ["bob"]


def test_gradescope_upload_is_email_and_score():
    head, *rows = _read("gradescope")
    assert head == ["Email", "Score"]
    assert rows[:2] == [["ada@uni.edu", "10"], ["alan@uni.edu", "6.33"]]
    assert gradebook.unmatched("gradescope", rows_of(GRADED, PEOPLE)) == ["bob"]


def test_people_from_a_gradescope_export(tmp_path: Path):
    from grader.app.batch import find_submissions

    (tmp_path / "submission_7").mkdir()
    (tmp_path / "submission_8").mkdir()
    (tmp_path / "submission_metadata.yml").write_text(
        "submission_7:\n  :submitters:\n  - :name: Grace Hopper\n    :sid: '1007'\n    :email: grace@uni.edu\n"
        "  - :name: Second Member\n    :email: second@uni.edu\n  :created_at: 2026-11-01\nsubmission_8: 3\n"
    )
    graded = [(s, _results(None, FULL)) for s in find_submissions(tmp_path)]
    by = {r.submission: r.person for r in rows_of(graded)}
    assert by["submission_7"] == Person("Grace Hopper", "grace@uni.edu", "1007")  # the first member
    assert by["submission_8"] == Person()


def test_write_to_a_file_and_to_stdout(tmp_path: Path, capsys):
    rows = rows_of(GRADED, PEOPLE)
    gradebook.write(tmp_path / "out" / "g.csv", "gradescope", toy.ASSIGNMENT, rows)
    assert (tmp_path / "out" / "g.csv").read_text().splitlines()[1] == "ada@uni.edu,10"
    gradebook.write("-", "gradescope", toy.ASSIGNMENT, rows)
    assert capsys.readouterr().out.splitlines()[0] == "Email,Score"
    assert not Path("-").exists()


def test_error_entries_are_not_questions():
    data = _results("x", FULL)
    data["tests"].append(
        {
            "score": 0.0,
            "extra_data": {"question": "grader-error", "kind": "error", "misconceptions": []},
        }
    )
    (row,) = rows_of([(Sub("x"), data)])
    assert "grader-error" not in row.scores and row.total == 10


def test_cli_batch_writes_the_gradebook_to_stdout_without_progress_frames(tmp_path: Path):
    """`seqgrade batch … --out - --gradebook gradescope`: only the CSV on stdout, no \\r frames in a log."""
    import shutil
    import subprocess
    import sys

    from grader.course import registry
    from grader.course.content import assignment_dir, solution_dir

    root = tmp_path / "class"
    shutil.copytree(
        solution_dir("a1_word_vectors"),
        root / "ada@uni.edu",
        ignore=shutil.ignore_patterns("answer_key.py"),
    )
    shutil.copytree(assignment_dir("a1_word_vectors"), root / "bob@uni.edu")  # the stub: zero
    key = subprocess.run(
        [sys.executable, str(solution_dir("a1_word_vectors") / "answer_key.py"), "ada@uni.edu"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (root / "ada@uni.edu" / "answers.toml").write_text(key.stdout)  # her own variant's answers
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "batch",
            str(root),
            "-a",
            "a1",
            "--jobs",
            "1",
            "--out",
            "-",
            "--gradebook",
            "gradescope",
            "--round",
            "1",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    rows = list(csv.reader(io.StringIO(run.stdout)))
    assert rows[0] == ["Email", "Score"] and rows[2] == ["bob@uni.edu", "0"]
    assert rows[1] == [
        "ada@uni.edu",
        rounded(registry.load("a1").total_points, 1),
    ]  # the solution: full marks
    assert "\r" not in run.stderr and "graded 2 submissions" in run.stderr
    assert (tmp_path / "grades_results" / "bob@uni.edu.json").is_file() and not (
        tmp_path / "-"
    ).exists()
    quiet = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "batch",
            str(root),
            "-a",
            "a1",
            "--out",
            str(tmp_path / "g.csv"),
            "--quiet",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    # --quiet drops the progress bar only: the one summary line stays, for the log
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert quiet.stdout.splitlines() == [
        f"graded 2 submissions (0 reused, 0 regraded, 2 graded for the first time): {tmp_path / 'g.csv'} "
        f"(results.json files in {tmp_path / 'g_results'}/)"
    ]
    assert (
        (tmp_path / "g.csv")
        .read_text()
        .splitlines()[0]
        .startswith("submission,variant_key,student_name")
    )
