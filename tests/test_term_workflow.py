"""A term as the staff run it, on a1 laid out as Gradescope exports it (one folder per
submission, submission_metadata.yml at the root): the term file's late policy, the roster's
extensions and late days, an overrides file, re-runs, a suite edit with --diff, --only,
--anonymise, the Gradescope container's path, and the rough edges of the CLI."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import shlex
import shutil
import zipfile
from pathlib import Path

import pytest

from grader.app import cli
from grader.course import registry
from grader.course.content import assignment_dir, solution_dir

CODE_POINTS = 70  # a1's code questions (seqgrade list: 7 + 13 + 13 + 5 + 5 + 9 + 6 + 6 + 6)

METADATA = """\
submission_1001:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1001'
    :email: ada@uni.edu
  :created_at: 2026-09-18 20:00:00.000000000 -04:00
  :score: 0.0
submission_1002:
  :submitters:
  - :name: Alan Turing
    :sid: '1002'
    :email: alan@uni.edu
  :created_at: 2026-09-20 03:00:00.000000000 -04:00
submission_1003:
  :submitters:
  - :name: Grace Hopper
    :sid: '1003'
    :email: grace@uni.edu
  :created_at: 2026-09-20 03:00:00.000000000 -04:00
submission_1004:
  :submitters:
  - :name: Edsger Dijkstra
    :sid: '1004'
    :email: edsger@uni.edu
  :created_at: 2026-09-20 03:00:00.000000000 -04:00
"""

TERM = """\
roster = "roster.csv"
late_days_ledger = "late_days.csv"
overrides = "overrides"

[late]
kind = "percent_per_day"
percent = 10
cap = 50
grace = "15m"
late_days = 1

[assignments.a1]
due = 2026-09-18T23:59:00-04:00
late_due = 2026-09-22T23:59:00-04:00
"""

ROSTER = """\
email,name,sid,canvas_id,section,late_days,extension:a1
ada@uni.edu,Ada Lovelace,1001,501,L01,,
alan@uni.edu,Alan Turing,1002,502,L01,,
grace@uni.edu,Grace Hopper,1003,503,L02,,2d
edsger@uni.edu,Edsger Dijkstra,1004,504,L02,0,
"""

OVERRIDES = """\
[[override]]
student = "alan@uni.edu"
question = "softmax"
score = 4
comment = "Regrade request upheld: your softmax is right in your notebook."
who = "TA Bob"
when = 2026-09-25
"""


@pytest.fixture
def term(tmp_path: Path) -> dict[str, Path]:
    """The export (Ada and Grace and Edsger: the solution; Alan: the handout's stub) and the term."""
    export = tmp_path / "export"
    for folder, source in (
        ("submission_1001", solution_dir("a1_word_vectors")),
        ("submission_1002", assignment_dir("a1_word_vectors")),
        ("submission_1003", solution_dir("a1_word_vectors")),
        ("submission_1004", solution_dir("a1_word_vectors")),
    ):
        (export / folder).mkdir(parents=True)
        shutil.copy(source / "word_vectors.py", export / folder / "word_vectors.py")
    (export / "submission_metadata.yml").write_text(METADATA)
    staff = tmp_path / "staff"
    (staff / "overrides").mkdir(parents=True)
    (staff / "term.toml").write_text(TERM)
    (staff / "roster.csv").write_text(ROSTER)
    (staff / "overrides" / "a1.toml").write_text(OVERRIDES)
    return {"export": export, "term": staff / "term.toml", "out": tmp_path / "out" / "grades.csv"}


def _batch(term: dict[str, Path], *extra: str) -> int:
    args = ["batch", str(term["export"]), "-a", "a1", "--term", str(term["term"]), "--jobs", "2"]
    return cli.main([*args, "--out", str(term["out"]), *extra])


def _rows(path: Path) -> dict[str, dict[str, str]]:
    return {r["submission"]: r for r in csv.DictReader(io.StringIO(path.read_text()))}


def test_late_policy_extensions_late_days_and_an_override_in_one_batch(term, capsys):
    assert _batch(term) == 0
    said = capsys.readouterr().out
    assert "adjusted: 1 override applied, 2 late penalties" in said
    rows = _rows(term["out"])
    cells = {
        k: (r["raw_total"], r["late"], r["late_penalty_percent"], r["total"])
        for k, r in rows.items()
    }
    assert cells == {
        "submission_1001": (str(CODE_POINTS), "on time", "0", str(CODE_POINTS)),
        # 27 h 1 min late, one late day spent, the 3 h 1 min left start a day: −10 % of the 4 points
        "submission_1002": ("0", "1 day 3 h", "10", "3.6"),
        "submission_1003": (
            str(CODE_POINTS),
            "on time",
            "0",
            str(CODE_POINTS),
        ),  # a 2-day extension
        # no late days on the roster: two started days, −20 % of 70
        "submission_1004": (str(CODE_POINTS), "1 day 3 h", "20", "56"),
    }
    assert rows["submission_1002"]["overrides"] == "a1.softmax 0→4"
    assert rows["submission_1002"]["a1.softmax"] == "4"
    # the late days spent, for the assignments after this one
    assert (term["term"].parent / "late_days.csv").read_text() == (
        "student,assignment,days\nalan@uni.edu,a1_word_vectors,1\n"
    )
    # the stored result stays the raw grade; the adjusted one sits beside it
    results = term["out"].with_name("grades_results")
    assert json.loads((results / "submission_1002.json").read_text())["score"] == 0
    final = json.loads((results / "adjusted" / "submission_1002.json").read_text())
    assert final["score"] == 3.6
    assert final["output"].startswith(
        "**Late submission.** Submitted 1 day 3 h late (1 late day used, 0 left): −10% (−0.4 points)."
    )
    softmax = next(t for t in final["tests"] if t["extra_data"]["question"] == "a1.softmax")
    assert softmax["output"].endswith(
        "**Adjusted by the course staff:** 0 → 4 points. Regrade request upheld: your softmax is "
        "right in your notebook."
    )
    assert final["extra_data"]["adjustments"]["late"]["percent"] == 10


def test_canvas_columns_come_from_the_roster(term):
    assert _batch(term, "--gradebook", "canvas") == 0
    rows = list(csv.reader(io.StringIO(term["out"].read_text())))
    assert rows[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert rows[2] == ["Ada Lovelace", "501", "1001", "ada@uni.edu", "L01", str(CODE_POINTS)]
    assert rows[3] == ["Alan Turing", "502", "1002", "alan@uni.edu", "L01", "3.6"]


def test_the_override_survives_a_rerun_a_suite_edit_and_only(term, capsys, monkeypatch):
    assert _batch(term) == 0
    capsys.readouterr()
    assert _batch(term, "--diff") == 0
    said = capsys.readouterr().out
    assert "4 reused, 0 regraded" in said and "scores changed for 0 submissions" in said
    assert _rows(term["out"])["submission_1002"]["total"] == "3.6"

    # a suite fix: softmax is worth 8 points instead of 7
    real = registry.load

    def edited(name: str):
        a = real(name)
        return dataclasses.replace(
            a,
            questions=tuple(
                dataclasses.replace(q, points=8) if q.id == "a1.softmax" else q for q in a.questions
            ),
        )

    monkeypatch.setattr(registry, "load", edited)
    assert _batch(term, "--diff") == 0
    said = capsys.readouterr().out
    assert "4 regraded (suite changed: 4)" in said
    assert "scores changed for 3 submissions" in said
    assert "  submission_1001 (Ada Lovelace): a1.softmax 7 → 8; total 70 → 71" in said.splitlines()
    diff = list(csv.reader(io.StringIO(term["out"].with_name("grades_diff.csv").read_text())))
    assert diff[0] == ["submission", "student", "question", "old", "new"]
    assert ["submission_1004", "Edsger Dijkstra", "total", "70", "71"] in diff
    assert not [r for r in diff if r[0] == "submission_1002"]  # the stub's raw scores did not move
    rows = _rows(term["out"])
    assert rows["submission_1002"]["total"] == "3.6"  # the override applied to the new raw result
    assert rows["submission_1001"]["total"] == "71" and rows["submission_1004"]["total"] == "56.8"

    assert _batch(term, "--only", "softmax") == 0
    assert "4 updated" in capsys.readouterr().out
    assert _rows(term["out"])["submission_1002"]["total"] == "3.6"


def test_an_override_of_an_unknown_student_or_question_stops_the_batch_with_a_message(term, capsys):
    path = term["term"].parent / "overrides" / "a1.toml"
    path.write_text(OVERRIDES.replace("alan@uni.edu", "alan.t@uni.edu"))
    assert _batch(term) == 2
    err = capsys.readouterr().err
    assert "a1.toml, override 1: student 'alan.t@uni.edu' has no submission in this batch" in err
    assert "Traceback" not in err and not term["out"].exists()
    path.write_text(OVERRIDES.replace('"softmax"', '"sofmax"'))
    assert _batch(term) == 2
    assert "question 'sofmax' is not a question of a1_word_vectors" in capsys.readouterr().err
    term["term"].write_text(TERM.replace("2026-09-18T23:59:00-04:00", "2026-09-18T23:59:00"))
    assert _batch(term) == 2
    assert "[assignments.a1] due: '2026-09-18T23:59:00' has no time zone" in capsys.readouterr().err


def test_without_a_term_or_overrides_nothing_changes(term):
    plain = term["out"].with_name("plain.csv")
    assert (
        cli.main(["batch", str(term["export"]), "-a", "a1", "--out", str(plain), "--jobs", "2"])
        == 0
    )
    rows = list(csv.DictReader(io.StringIO(plain.read_text())))
    assert "raw_total" not in rows[0]
    assert [r["total"] for r in rows] == [str(CODE_POINTS), "0", str(CODE_POINTS), str(CODE_POINTS)]


def test_anonymise_gives_stable_pseudonyms_and_a_private_mapping(term, capsys):
    report = term["out"].with_name("report.html")
    assert _batch(term, "--anonymise", "--report", str(report)) == 0
    text = term["out"].read_text()
    for real in ("Ada", "Lovelace", "ada@uni.edu", "1001", "submission_1001", "Turing"):
        assert real not in text
        assert real not in report.read_text()
    mapping = list(
        csv.DictReader(io.StringIO(term["out"].with_name("grades_pseudonyms.csv").read_text()))
    )
    by_person = {m["email"]: m["pseudonym"] for m in mapping}
    assert set(by_person) == {"ada@uni.edu", "alan@uni.edu", "grace@uni.edu", "edsger@uni.edu"}
    assert len(set(by_person.values())) == 4
    rows = _rows(term["out"])
    assert rows[by_person["alan@uni.edu"]]["total"] == "3.6"  # the adjustments still apply
    assert (term["out"].with_name("grades_pseudonyms.csv").stat().st_mode & 0o077) == 0
    capsys.readouterr()
    assert _batch(term, "--anonymise", "--diff") == 0  # a second run: the same pseudonyms
    assert set(_rows(term["out"])) == set(by_person.values())
    said = capsys.readouterr().out + term["out"].with_name("grades_diff.csv").read_text()
    assert "scores changed for 0 submissions" in said
    assert not any(real in said for real in ("Ada", "Turing", "submission_100", "uni.edu"))
    capsys.readouterr()
    assert _batch(term, "--anonymise", "--gradebook", "gradescope") == 2
    assert "--anonymise is for blind review" in capsys.readouterr().err


def test_grade_applies_the_term_to_one_submission(term, capsys):
    args = [
        "grade",
        str(term["export"] / "submission_1002"),
        "-a",
        "a1",
        "--student",
        "alan@uni.edu",
    ]
    assert (
        cli.main([*args, "--term", str(term["term"]), "--submitted", "2026-09-20T03:00:00-04:00"])
        == 0
    )
    out = capsys.readouterr().out
    assert "adjusted score: 3.6 (graded 0)" in out
    assert "Submitted 1 day 3 h late (1 late day used, 0 left): −10% (−0.4 points)." in out
    # the full feedback, by the command the table ends with, reads as the student's results
    # do: the override's 0 → 4 on softmax, then 10% off for the one day not covered
    hint = out.split("full feedback: ", 1)[1].splitlines()[0]
    command = shlex.split(hint)
    assert command[:2] == ["seqgrade", "grade"] and command[-2:] == ["--format", "md"], hint
    assert cli.main(command[1:]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# a1_word_vectors: 3.6 / 100 (graded 0; adjusted)\n"), out[:200]
    assert (
        "> **Late submission.** Submitted 1 day 3 h late (1 late day used, 0 left): −10% "
        "(−0.4 points)."
    ) in out
    assert "## 1. Stable softmax — 4/7\n\n**Adjusted by the course staff:** 0 → 4 points." in out
    assert cli.main([*args, "--term", str(term["term"]), "--submitted", "tuesday"]) == 2
    assert "--submitted: 'tuesday' is not a date" in capsys.readouterr().err


def test_the_container_applies_the_same_term_from_the_bundle(term, tmp_path, capsys):
    """`seqgrade autograder --term` carries the files; the container reads Gradescope's dates."""
    from grader.app import gradescope

    bundle = tmp_path / "a1.zip"
    assert cli.main(["autograder", "a1", "--out", str(bundle), "--term", str(term["term"])]) == 0
    source = tmp_path / "source"
    with zipfile.ZipFile(bundle) as zf:
        names = set(zf.namelist())
        assert {
            "seqgrade_term/term.toml",
            "seqgrade_term/roster.csv",
            "seqgrade_term/overrides/a1.toml",
        } <= names
        zf.extractall(source, [n for n in names if n.startswith("seqgrade_term/")])
    assert _batch(term) == 0  # Alan's raw result, as the container would grade it
    raw = json.loads(
        term["out"].with_name("grades_results").joinpath("submission_1002.json").read_text()
    )
    metadata = {  # submission_metadata.json's fields, as Gradescope documents them
        "created_at": "2026-09-20T03:00:00.000000-04:00",
        "assignment": {
            "due_date": "2026-09-18T23:59:00.000000-04:00",
            "late_due_date": "2026-09-22T23:59:00.000000-04:00",
        },
        "users": [{"email": "Alan@uni.edu", "id": 1234, "name": "Alan Turing", "sid": "1002"}],
    }
    a1 = registry.load("a1")

    def adjusted() -> dict:  # as run_autograder does: the bundled term read, then applied
        return gradescope.staff_adjusted(
            raw, a1, metadata, gradescope.bundled_term(source), "alan@uni.edu"
        )

    assert adjusted()["score"] == 3.6  # as in the batch: the same policy, roster, ledger, override
    metadata["assignment"]["due_date"] = (
        "2026-09-21T23:59:00.000000-04:00"  # Gradescope's date wins
    )
    assert adjusted()["score"] == 4
    shutil.rmtree(source / "seqgrade_term")
    assert adjusted() == raw


def test_list_shows_question_ids(capsys):
    assert cli.main(["list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.split()[:2] == ["1.", "a1.softmax"] for line in lines)


def test_a_mixed_install_is_refused(monkeypatch, tmp_path, capsys):
    import importlib.machinery
    import importlib.util

    other = tmp_path / "site-packages" / "reference" / "__init__.py"
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: (
            importlib.machinery.ModuleSpec("reference", None, origin=str(other))
            if name == "reference"
            else real(name, *a)
        ),
    )
    assert cli.main(["list"]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path / "site-packages" / "reference") in err and "pip install -e ." in err


def test_check_says_when_pytest_is_missing(monkeypatch):
    from grader.app import check

    monkeypatch.setattr(check, "pytest_available", lambda: False)
    found = check.check_public_tests(
        assignment_dir("a1_word_vectors"), solution_dir("a1_word_vectors")
    )
    assert not found.ok and found.summary == "test_public.py not run"
    assert "pytest is not installed" in found.problems[0]
