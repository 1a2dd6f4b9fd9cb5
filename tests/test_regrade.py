"""Regrades that stay true (issue 21 item 1): a stored result is reused only while the submission,
the suite, the catalog, the reference and the grader version are unchanged; `--only` regrades
the named questions and keeps the rest of each stored result."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import toy_assignment as toy

from grader import sandbox
from grader.app import batch, cli, regrade
from grader.app.batch import grade_all, summary, write_csv
from grader.course import fingerprint, variants
from grader.questions import Case, CodeQuestion
from grader.reports.render import points
from grader.reports.results_json import SCHEMA

LIMITS = sandbox.Limits(call_seconds=2.0, submission_seconds=30.0)
WRONG_LINEAR = toy.NUMPY_SOLUTION.replace("x @ W.T + b", "x @ W + b")  # loses toy.linear (3 points)
WRONG_QUAD = toy.NUMPY_SOLUTION.replace("2 * x", "-2 * x")  # loses toy.quad (2 points)


@pytest.fixture(autouse=True)
def _limits(monkeypatch):
    real = batch.grade_submission
    monkeypatch.setattr(
        batch, "grade_submission", lambda p, a, **kw: real(p, a, **{**kw, "limits": LIMITS})
    )


@pytest.fixture
def steady(monkeypatch):
    """The catalog's and reference's fingerprints as they are when the test starts: in a shared
    checkout, someone else's edit between two runs would (rightly) regrade everything."""
    for name in ("catalog_fingerprint_of", "reference_fingerprint_of"):
        real = getattr(fingerprint, name)
        seen: dict[str, str] = {}
        monkeypatch.setattr(
            fingerprint, name, lambda a, real=real, seen=seen: seen.setdefault(a.id, real(a))
        )


@pytest.fixture
def root(tmp_path, steady) -> Path:
    """Three submissions: right, wrong in toy.linear, wrong in toy.quad."""
    for name, text in (("ada", toy.NUMPY_SOLUTION), ("bob", WRONG_LINEAR), ("cy", WRONG_QUAD)):
        (tmp_path / "class" / name).mkdir(parents=True)
        (tmp_path / "class" / name / "toy.py").write_text(text)
    return tmp_path / "class"


def _run(root: Path, assignment=toy.ASSIGNMENT, **kw):
    graded = grade_all(
        root, assignment, jobs=2, results_dir=root.parent / "res", progress=False, **kw
    )
    return {s.name: s.outcome for s, _ in graded}, graded


def _stored(root: Path) -> dict[str, dict]:
    return {p.stem: json.loads(p.read_text()) for p in sorted((root.parent / "res").glob("*.json"))}


def _tests(data: dict) -> dict[str, dict]:
    """The question tests by id (not the instructor view, which a merge builds anew)."""
    return {
        t["extra_data"]["question"]: t for t in data["tests"] if t["extra_data"]["kind"] != "detail"
    }


def _with_points(assignment, **points):
    """A copy of the assignment with some questions' points changed (a suite edit)."""
    qs = tuple(
        dataclasses.replace(q, points=points.get(q.id.split(".")[1], q.points))
        for q in assignment.questions
    )
    return dataclasses.replace(assignment, questions=qs)


def _double_cases(seed: int) -> list[Case]:
    return [Case("hidden case", (np.random.default_rng([3, seed]).normal(size=3),))]


def _with_new_question(assignment):
    """A copy of the assignment with a fifth question (its function is in no submission)."""
    new = CodeQuestion(
        id="toy.double",
        title="Double",
        points=5,
        file="toy.py",
        function="double",
        reference=lambda x: 2 * x,
        cases=_double_cases,
    )
    return dataclasses.replace(assignment, questions=(*assignment.questions, new))


# ---------------------------------------------------------------------------- plain re-runs


def test_a_rerun_with_nothing_changed_reuses_every_result(root):
    first, _ = _run(root)
    assert {o.kind for o in first.values()} == {"graded"}
    before = {p.name: p.stat().st_mtime_ns for p in (root.parent / "res").glob("*.json")}
    again, graded = _run(root)
    assert {o.kind for o in again.values()} == {"reused"}
    assert {p.name: p.stat().st_mtime_ns for p in (root.parent / "res").glob("*.json")} == before
    assert summary(graded) == "3 reused, 0 regraded"


def test_every_result_records_its_six_fingerprints(root):
    _run(root)
    shared = fingerprint.assignment_fingerprints(toy.ASSIGNMENT)
    for name, data in _stored(root).items():
        fps = data["extra_data"]["fingerprints"]
        assert set(fps) == {"submission", "owner", "suite", "catalog", "reference", "grader"}
        assert fps["submission"] == fingerprint.submission_fingerprint(root / name)
        key = variants.variant_key(path=root / name)  # no metadata: the folder's name
        assert fps["owner"] == fingerprint.owner_fingerprint(key)
        assert {k: fps[k] for k in ("suite", "catalog", "reference", "grader")} == {
            k: getattr(shared, k) for k in ("suite", "catalog", "reference", "grader")
        }
        assert "fingerprint" not in data["extra_data"] and "regraded" not in data["extra_data"]
        jsonschema.validate(data, SCHEMA)


def test_a_suite_edit_regrades_every_submission_and_the_totals_follow(root, tmp_path):
    _run(root)
    edited = _with_points(toy.ASSIGNMENT, linear=6)  # toy.linear 3 -> 6 points: total 10 -> 13
    outcomes, graded = _run(root, edited)
    assert {n: (o.kind, o.why) for n, o in outcomes.items()} == {
        n: ("regraded", ("suite",)) for n in outcomes
    }
    stored = _stored(root)
    assert _tests(stored["ada"])["toy.linear"]["max_score"] == 6 and stored["ada"]["score"] == 13
    assert _tests(stored["bob"])["toy.linear"]["score"] == 0 and stored["bob"]["score"] == 7
    out = tmp_path / "grades.csv"
    write_csv(out, edited, graded)
    rows = {r["submission"]: r for r in csv.DictReader(io.StringIO(out.read_text()))}
    assert {n: r["total"] for n, r in rows.items()} == {"ada": "13", "bob": "7", "cy": "11"}
    assert {n: r["toy.linear"] for n, r in rows.items()} == {"ada": "6", "bob": "0", "cy": "6"}
    assert summary(graded) == "0 reused, 3 regraded (suite changed: 3)"


def test_a_new_question_is_graded_in_every_result(root, tmp_path):
    _run(root)
    added = _with_new_question(toy.ASSIGNMENT)
    outcomes, graded = _run(root, added)
    assert {o.kind for o in outcomes.values()} == {"regraded"}
    for data in _stored(root).values():
        assert (
            _tests(data)["toy.double"]["max_score"] == 5
            and _tests(data)["toy.double"]["score"] == 0
        )
    out = tmp_path / "grades.csv"
    write_csv(out, added, graded)
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert [r["toy.double"] for r in rows] == [
        "0",
        "0",
        "0",
    ]  # graded (0: not written), never blank


def test_one_changed_submission_is_the_only_one_regraded(root):
    _run(root)
    (root / "bob" / "toy.py").write_text(toy.NUMPY_SOLUTION)  # bob fixes his linear layer
    outcomes, graded = _run(root)
    assert {n: (o.kind, o.why) for n, o in outcomes.items()} == {
        "ada": ("reused", ()),
        "bob": ("regraded", ("submission",)),
        "cy": ("reused", ()),
    }
    assert _stored(root)["bob"]["score"] == 10


@pytest.mark.parametrize("kind", ["catalog", "reference", "grader"])
def test_a_result_graded_with_another_catalog_reference_or_grader_is_regraded(root, kind):
    _run(root)
    path = root.parent / "res" / "cy.json"
    data = json.loads(path.read_text())
    data["extra_data"]["fingerprints"][kind] = "0" * 64  # as if graded before that file changed
    path.write_text(json.dumps(data))
    outcomes, _ = _run(root)
    assert {n: (o.kind, o.why) for n, o in outcomes.items()} == {
        "ada": ("reused", ()),
        "bob": ("reused", ()),
        "cy": ("regraded", (kind,)),
    }


def test_a_result_of_an_earlier_version_without_fingerprints_is_regraded(root):
    _run(root)
    path = root.parent / "res" / "ada.json"
    data = json.loads(path.read_text())
    data["extra_data"].pop("fingerprints")
    data["extra_data"]["fingerprint"] = fingerprint.submission_fingerprint(
        root / "ada"
    )  # the old field
    path.write_text(json.dumps(data))
    outcomes, _ = _run(root)
    assert outcomes["ada"].kind == "regraded" and outcomes["bob"].kind == "reused"


def test_the_suite_fingerprint_is_the_same_in_another_process():
    """A re-run is another process: the fingerprints must not hold addresses or hash seeds."""
    code = (
        "import sys; sys.path.insert(0, 'tests'); from grader.course import registry, fingerprint as f; "
        "import toy_assignment as t; print(f.suite_fingerprint(registry.load('a4')), "
        "f.suite_fingerprint(t.ASSIGNMENT))"
    )
    root = Path(__file__).resolve().parents[1]
    runs = [
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            cwd=root,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
            check=True,
        ).stdout.split()
        for seed in ("1", "2")
    ]
    from grader.course import registry

    assert (
        runs[0]
        == runs[1]
        == [
            fingerprint.suite_fingerprint(registry.load("a4")),
            fingerprint.suite_fingerprint(toy.ASSIGNMENT),
        ]
    )


def test_the_suite_fingerprint_sees_points_ids_and_the_handouts_variant_tool(monkeypatch, tmp_path):
    from grader.course import registry

    a4 = registry.load("a4")
    base = fingerprint.suite_fingerprint(a4)
    assert fingerprint.suite_fingerprint(_with_points(a4, encoder_block=10)) != base
    renamed = dataclasses.replace(
        a4, questions=(dataclasses.replace(a4.questions[0], id="a4.attention"), *a4.questions[1:])
    )
    assert fingerprint.suite_fingerprint(renamed) != base
    variant = tmp_path / "assignments" / a4.id / "variant.py"
    variant.parent.mkdir(parents=True)
    variant.write_text("# another variant tool\n")
    monkeypatch.setattr(fingerprint, "assignment_dir", lambda aid: tmp_path / "assignments" / aid)
    assert fingerprint.suite_fingerprint(a4) != base


@pytest.mark.parametrize(
    ("package", "file", "kind"),
    [
        ("grader.suites", "a4_transformer.py", "suite"),
        ("grader.catalog", "a4.py", "catalog"),
        ("reference", "attention.py", "reference"),
    ],
)
def test_an_edited_source_file_changes_its_fingerprint_and_only_its_own(
    monkeypatch, tmp_path, package, file, kind
):
    """A copy of the package with one file edited (a question's points, a hint, a formula)."""
    from grader.course import registry

    a4 = registry.load("a4")
    base = fingerprint.assignment_fingerprints(a4)
    real = fingerprint._package_dir
    copy = tmp_path / real(package).name
    shutil.copytree(real(package), copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(
        fingerprint, "_package_dir", lambda name: copy if name == package else real(name)
    )
    if kind == "suite":  # the suite's own module is where its cases and mutants are defined
        monkeypatch.setattr(
            sys.modules["grader.suites.a4_transformer"], "__file__", str(copy / file)
        )
    assert (
        fingerprint.assignment_fingerprints(a4) == base
    )  # the same files elsewhere: the same digests
    (copy / file).write_text(
        (copy / file).read_text().replace("points=8", "points=10") + "\n# edited\n"
    )
    assert base.changed(fingerprint.assignment_fingerprints(a4)) == [kind]


# ---------------------------------------------------------------------------- --only


def test_only_changes_exactly_the_named_questions_and_keeps_the_others(root, tmp_path):
    _run(root)
    before = _stored(root)
    edited = _with_points(toy.ASSIGNMENT, linear=6, quad=4)  # both would change; only quad is asked
    outcomes, graded = _run(
        root, edited, only=("toy.quad",)
    )  # (linear, before it, is graded alongside)
    assert {n: (o.kind, o.why) for n, o in outcomes.items()} == {
        n: ("updated", ("toy.quad",)) for n in outcomes
    }
    after = _stored(root)
    for name in ("ada", "bob", "cy"):
        old, new = _tests(before[name]), _tests(after[name])
        assert {q: new[q] for q in new if q != "toy.quad"} == {
            q: old[q] for q in old if q != "toy.quad"
        }
        assert new["toy.quad"]["max_score"] == 4 and new["toy.quad"]["number"] == "3"
        assert new["toy.quad"]["score"] == (0 if name == "cy" else 4)
        assert list(new) == [q.id for q in toy.ASSIGNMENT.questions]  # in the assignment's order
        assert after[name]["score"] == sum(t["score"] for t in after[name]["tests"])
        assert after[name]["output"].startswith(f"**Score: {points(after[name]['score'])} / 12**")
        assert (
            after[name]["extra_data"]["fingerprints"] == before[name]["extra_data"]["fingerprints"]
        )
        assert set(after[name]["extra_data"]["regraded"]) == {"toy.quad"}
        jsonschema.validate(after[name], SCHEMA)
    assert [after[n]["score"] for n in ("ada", "bob", "cy")] == [12, 9, 8]
    out = tmp_path / "grades.csv"
    write_csv(out, edited, graded)
    rows = {r["submission"]: r for r in csv.DictReader(io.StringIO(out.read_text()))}
    assert {n: (r["total"], r["toy.linear"], r["toy.quad"]) for n, r in rows.items()} == {
        "ada": ("12", "3", "4"),
        "bob": ("9", "0", "4"),
        "cy": ("8", "3", "0"),
    }
    assert (
        summary(graded)
        == "3 updated: question toy.quad regraded, the rest of each stored result kept"
    )


def test_after_only_a_plain_rerun_still_regrades_what_is_stale(root):
    _run(root)
    edited = _with_points(toy.ASSIGNMENT, linear=6, quad=4)
    _run(root, edited, only=("toy.quad",))
    outcomes, _ = _run(root, edited)  # toy.linear was kept from the old suite: not true any more
    assert {o.kind for o in outcomes.values()} == {"regraded"}
    assert [d["score"] for d in _stored(root).values()] == [15, 9, 11]


def test_only_every_question_makes_a_result_whole_again(root):
    _run(root)
    edited = _with_points(toy.ASSIGNMENT, linear=6)
    _run(root, edited, only=tuple(q.id for q in edited.questions))
    for data in _stored(root).values():
        assert "regraded" not in data["extra_data"]
        assert data["extra_data"]["fingerprints"]["suite"] == fingerprint.suite_fingerprint(edited)
    outcomes, _ = _run(root, edited)
    assert {o.kind for o in outcomes.values()} == {"reused"}


def test_only_grades_a_submission_without_a_stored_result_whole(root):
    _run(root)
    (root / "dee").mkdir()
    (root / "dee" / "toy.py").write_text(WRONG_QUAD)
    outcomes, _ = _run(root, only=("toy.linear",))
    assert outcomes["dee"].kind == "graded" and outcomes["ada"].kind == "updated"
    assert _stored(root)["dee"]["score"] == 8 and len(_tests(_stored(root)["dee"])) == 4


def test_only_accepts_ids_short_ids_and_numbers():
    assert regrade.resolve_questions(toy.ASSIGNMENT, ["3", "toy.softmax", " linear"]) == (
        "toy.softmax",
        "toy.linear",
        "toy.quad",
    )
    for bad in (["5"], ["0"], ["toy.nope"], [""]):
        with pytest.raises(regrade.UnknownQuestion, match="not a question of toy"):
            regrade.resolve_questions(toy.ASSIGNMENT, bad)


def test_only_an_unknown_question_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "class" / "ada").mkdir(parents=True)
    code = cli.main(
        [
            "batch",
            str(tmp_path / "class"),
            "-a",
            "a4",
            "--out",
            str(tmp_path / "g.csv"),
            "--only",
            "encoder_block,attention_head",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert "'attention_head', not a question of a4_transformer" in err
    assert not (tmp_path / "g.csv").exists() and not (tmp_path / "g_results").exists()
    code = cli.main(
        [
            "batch",
            str(tmp_path / "class"),
            "-a",
            "a4",
            "--out",
            str(tmp_path / "g.csv"),
            "--only",
            "encoder_block",
            "--force",
        ]
    )
    assert code == 2 and "give one of them" in capsys.readouterr().err


def test_partial_grading_keeps_the_numbers_of_the_whole_assignment():
    from grader.course import registry

    a4 = registry.load("a4")
    ids = [q.id for q in a4.questions]
    only_written = regrade.partial_assignment(a4, {"a4.w_scale"})
    assert [q.id for q in only_written.questions] == ["a4.w_scale"]  # no code: no worker started
    mixed = regrade.partial_assignment(a4, {"a4.encoder_block", "a4.w_rope_offset"})
    assert [q.id for q in mixed.questions] == [
        *ids[: ids.index("a4.encoder_block") + 1],
        "a4.w_rope_offset",
    ]


def test_a4_through_the_cli_reused_then_two_questions_regraded_as_a_whole_grading_would(
    tmp_path, capsys, steady, monkeypatch
):
    """With nothing changed, the questions `--only` regrades come out exactly as the whole grading
    gave them (numbers, feedback, follow-through), the rest is untouched, the fingerprints stay whole."""
    from grader.course.content import solution_dir

    suite = {}  # a4's suite as the test found it (others may be editing it in a shared checkout)
    real = fingerprint.suite_fingerprint
    monkeypatch.setattr(fingerprint, "suite_fingerprint", lambda a: suite.setdefault(a.id, real(a)))

    shutil.copytree(solution_dir("a4_transformer"), tmp_path / "class" / "ada@uni.edu")
    args = [
        "batch",
        str(tmp_path / "class"),
        "-a",
        "a4",
        "--out",
        str(tmp_path / "g.csv"),
        "--jobs",
        "1",
    ]
    assert cli.main(args) == 0
    assert "(0 reused, 0 regraded, 1 graded for the first time)" in capsys.readouterr().out
    result = tmp_path / "g_results" / "ada@uni.edu.json"
    first = json.loads(result.read_text())
    assert cli.main(args) == 0
    assert "graded 1 submission (1 reused, 0 regraded)" in capsys.readouterr().out
    tampered = json.loads(
        result.read_text()
    )  # marks: regraded questions lose them, kept ones keep them
    for t in tampered["tests"]:
        if t["extra_data"]["question"] in ("a4.encoder_block", "a4.w_scale", "a4.sdpa"):
            t["output"], t["score"] = "(marked)", 0.0
    result.write_text(json.dumps(tampered))
    assert cli.main([*args, "--only", "encoder_block,15"]) == 0
    assert (
        "(1 updated: questions a4.encoder_block, a4.w_scale regraded, the rest of each stored result kept)"
        in capsys.readouterr().out
    )
    after = json.loads(result.read_text())
    assert [t for t in after["tests"] if t["extra_data"]["question"] != "a4.sdpa"] == [
        t for t in first["tests"] if t["extra_data"]["question"] != "a4.sdpa"
    ]
    assert _tests(after)["a4.sdpa"]["output"] == "(marked)"
    assert after["score"] == first["score"] - _tests(first)["a4.sdpa"]["score"]
    assert [
        t["number"]
        for t in after["tests"]
        if t["extra_data"]["question"] in ("a4.encoder_block", "a4.w_scale")
    ] == ["12", "15"]
    assert after["extra_data"]["fingerprints"] == first["extra_data"]["fingerprints"]
    assert "regraded" not in after["extra_data"]


def test_a_result_holding_a_grader_error_is_tried_again(root):
    _run(root)
    path = root.parent / "res" / "bob.json"
    data = json.loads(path.read_text())
    data["tests"].append(
        {
            "name": "Grader error",
            "number": "0",
            "score": 0.0,
            "max_score": 0.0,
            "status": "failed",
            "output": "",
            "visibility": "visible",
            "extra_data": {
                "question": "grader-error",
                "kind": "error",
                "function": None,
                "misconceptions": [],
            },
        }
    )
    path.write_text(json.dumps(data))
    outcomes, graded = _run(root)
    assert {n: (o.kind, o.why) for n, o in outcomes.items()} == {
        "ada": ("reused", ()),
        "bob": ("regraded", ("grader error",)),
        "cy": ("reused", ()),
    }
    assert summary(graded) == "2 reused, 1 regraded (grader error: 1)"
    assert "grader-error" not in _tests(_stored(root)["bob"])


def test_only_a_failure_of_ours_keeps_the_stored_result_and_says_so(root, monkeypatch):
    _run(root)
    before = _stored(root)

    def broken(*args, **kw):
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(batch, "grade_submission", broken)
    outcomes, graded = _run(root, only=("toy.quad",))
    assert {o.kind for o in outcomes.values()} == {"failed"} and summary(graded).endswith(
        "3 failed"
    )
    for name, data in _stored(root).items():
        code = [t for t in before[name]["tests"] if t["extra_data"]["kind"] == "code"]
        assert [t for t in data["tests"] if t["extra_data"]["kind"] == "code"] == code
        assert "RuntimeError: a bug of ours" in _tests(data)["grader-error"]["output"]
        assert data["score"] == before[name]["score"]


@pytest.mark.parametrize(
    ("package", "file", "kind"),
    [
        ("grader.catalog", "a2.py", "catalog"),
        ("reference", "rnn.py", "reference"),  # a2's formulas; a1 never imports them
    ],
)
def test_an_edit_to_another_assignment_leaves_this_ones_fingerprints(
    monkeypatch, tmp_path, package, file, kind
):
    """An edit to a2's catalog entries or a2's own reference module regrades a2, never a1."""
    from grader.course import registry

    a1, a2 = registry.load("a1"), registry.load("a2")
    base1, base2 = (fingerprint.assignment_fingerprints(a) for a in (a1, a2))
    real = fingerprint._package_dir
    copy = tmp_path / real(package).name
    shutil.copytree(real(package), copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(
        fingerprint, "_package_dir", lambda name: copy if name == package else real(name)
    )
    (copy / file).write_text((copy / file).read_text() + "\n# edited\n")
    assert base1.changed(fingerprint.assignment_fingerprints(a1)) == []
    assert base2.changed(fingerprint.assignment_fingerprints(a2)) == [kind]
