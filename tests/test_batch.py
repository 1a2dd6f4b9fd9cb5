"""Batch grading and the class report, on the tests' toy assignment."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest
import toy_assignment as toy
from conftest import wait_until

from grader import sandbox
from grader.app.batch import find_submissions, grade_all, write_csv
from grader.engine.grade import grade_submission
from grader.reports.class_report import write_report

LIMITS = sandbox.Limits(call_seconds=2.0, submission_seconds=30.0)


@pytest.fixture(scope="module")
def class_folder(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("class")

    def put(name: str, files: dict[str, str]) -> None:
        for rel, text in files.items():
            p = root / name / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(text)

    put("submission_1", {"toy.py": toy.NUMPY_SOLUTION})
    put("submission_2", {"toy.py": toy.NUMPY_SOLUTION.replace("x @ W.T + b", "x @ W + b")})
    put("submission_3", {"toy.py": "import os\nos._exit(3)\n" + toy.NUMPY_SOLUTION})
    put("submission_4", {"work/toy.py": toy.TORCH_SOLUTION})  # nested folder
    (root / "submission_5").mkdir()  # empty
    with zipfile.ZipFile(root / "submission_6.zip", "w") as zf:
        zf.writestr("toy.py", toy.LISTS_SOLUTION.replace("2 * v for v in x", "-2 * v for v in x"))
    (root / "submission_metadata.yml").write_text(
        "submission_1:\n  :submitters:\n  - :name: Ada Lovelace\n    :sid: '1001'\n"
        "submission_2:\n  :submitters:\n  - :name: Alan Turing\n    :sid: '1002'\n"
    )
    return root


def _class_of_solutions(tmp_path: Path, *names: str) -> Path:
    """A class folder with one submission per name, each the toy's numpy solution."""
    root = tmp_path / "class"
    for name in names:
        (root / name).mkdir(parents=True)
        (root / name / "toy.py").write_text(toy.NUMPY_SOLUTION)
    return root


def _patch_limits(monkeypatch):
    import grader.app.batch as batch

    real = batch.grade_submission
    monkeypatch.setattr(
        batch, "grade_submission", lambda p, a, **kw: real(p, a, **{**kw, "limits": LIMITS})
    )


def test_batch_one_row_per_submission_and_totals_match_single_grading(
    class_folder, tmp_path, monkeypatch
):
    _patch_limits(monkeypatch)
    subs = find_submissions(class_folder)
    assert [s.name for s in subs] == [f"submission_{i}" for i in range(1, 6)] + ["submission_6.zip"]
    assert subs[0].student_name == "Ada Lovelace" and subs[0].student_id == "1001"
    graded = grade_all(
        class_folder, toy.ASSIGNMENT, jobs=2, results_dir=tmp_path / "res", progress=False
    )
    out = tmp_path / "grades.csv"
    write_csv(out, toy.ASSIGNMENT, graded)
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == 6
    for sub, data in graded:
        alone = grade_submission(
            sub.path, toy.ASSIGNMENT, student=sub.student_id or sub.name, limits=LIMITS
        )
        assert data["score"] == alone.score, sub.name
    by_name = {r["submission"]: r for r in rows}
    assert (
        by_name["submission_1"]["total"] == "10"
        and by_name["submission_1"]["student_name"] == "Ada Lovelace"
    )
    assert "toy-weights-transposed" in by_name["submission_2"]["misconceptions"]
    assert by_name["submission_3"]["total"] == "0"
    assert by_name["submission_4"]["total"] == "10"
    assert by_name["submission_5"]["total"] == "0"
    assert "toy-grad-sign" in by_name["submission_6.zip"]["misconceptions"]


def test_rerun_skips_unchanged_unless_forced(class_folder, tmp_path, monkeypatch):
    from grader.course import fingerprint

    _patch_limits(monkeypatch)
    shared = fingerprint.assignment_fingerprints(
        toy.ASSIGNMENT
    )  # steady while others edit the checkout
    monkeypatch.setattr(fingerprint, "assignment_fingerprints", lambda a, limits=None: shared)
    res = tmp_path / "res"
    grade_all(class_folder, toy.ASSIGNMENT, jobs=2, results_dir=res, progress=False)
    stamp = (res / "submission_1.json").stat().st_mtime_ns
    again = grade_all(class_folder, toy.ASSIGNMENT, jobs=2, results_dir=res, progress=False)
    assert (res / "submission_1.json").stat().st_mtime_ns == stamp
    assert {s.outcome.kind for s, _ in again} == {"reused"}
    forced = grade_all(
        class_folder, toy.ASSIGNMENT, jobs=2, results_dir=res, progress=False, force=True
    )
    assert (res / "submission_1.json").stat().st_mtime_ns != stamp
    assert {(s.outcome.kind, s.outcome.why) for s, _ in forced} == {("regraded", ("--force",))}


def test_report_names_misconceptions_and_failures(class_folder, tmp_path, monkeypatch):
    _patch_limits(monkeypatch)
    graded = grade_all(
        class_folder, toy.ASSIGNMENT, jobs=2, results_dir=tmp_path / "res", progress=False
    )
    report = tmp_path / "report.html"
    write_report(report, toy.ASSIGNMENT, graded)
    text = report.read_text()
    assert "toy-weights-transposed" in text and "toy-grad-sign" in text
    assert "submission_3" in text and "submission_5" in text  # failed to run
    assert text.count("data:image/png;base64,") == 2
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    shot = tmp_path / "shot.png"
    dom = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--dump-dom",
            report.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 'id="misconceptions"' in dom.stdout and "data:image/png;base64," in dom.stdout
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile2'}",
            f"--screenshot={shot}",
            "--window-size=1000,1400",
            report.as_uri(),
        ],
        capture_output=True,
        timeout=120,
    )
    assert shot.is_file() and shot.stat().st_size > 10_000


# ---------------------------------------------------------------------------- one bad submission never costs the others


def _crash_on(student: str):
    """The toy assignment, except that grading `student` kills the grading process (as an OOM kill would)."""
    import dataclasses
    import os
    import signal

    from grader.course import variants

    doomed = variants.seed_for(toy.ASSIGNMENT.id, student)
    q = toy.ASSIGNMENT.questions[0]

    def cases(seed: int):
        if seed == doomed:
            os.kill(os.getpid(), signal.SIGKILL)
        return q.cases(seed)

    return dataclasses.replace(toy.ASSIGNMENT, questions=(dataclasses.replace(q, cases=cases),))


def test_a_crashed_pool_process_costs_only_its_submission(tmp_path, monkeypatch):
    _patch_limits(monkeypatch)
    root = _class_of_solutions(tmp_path, "alice", "crasher", "carol", "dave")
    graded = grade_all(
        root, _crash_on("crasher"), jobs=2, results_dir=tmp_path / "res", progress=False
    )
    by = {sub.name: data for sub, data in graded}
    assert set(by) == {"alice", "crasher", "carol", "dave"}
    assert all(by[n]["score"] == 4 for n in ("alice", "carol", "dave")), by
    assert (
        by["crasher"]["score"] == 0
        and "stopped the grading process twice" in by["crasher"]["output"]
    )
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == [f"{n}.json" for n in sorted(by)]
    stored = json.loads((tmp_path / "res" / "crasher.json").read_text())
    assert stored["extra_data"]["fingerprints"] is None  # never reused: a re-run tries it again
    out = tmp_path / "grades.csv"
    write_csv(out, toy.ASSIGNMENT, graded)
    assert len(list(csv.DictReader(io.StringIO(out.read_text())))) == 4


def test_a_pool_process_killed_while_it_writes_a_result_leaves_no_partial_file(
    tmp_path, monkeypatch
):
    """Killed between the temporary file and its rename (as the pool's other processes are when
    one dies): the batch still records every submission, and the results folder holds results
    only."""
    import os
    import signal
    import types

    import grader.reports.results_json as results_json

    _patch_limits(monkeypatch)
    batch_pid = os.getpid()

    def dump(data, fh, **kw):
        if os.getpid() != batch_pid and '"crasher"' in json.dumps(data, default=str):
            os.kill(os.getpid(), signal.SIGKILL)
        return json.dump(data, fh, **kw)

    monkeypatch.setattr(results_json, "json", types.SimpleNamespace(dump=dump, dumps=json.dumps))
    root = _class_of_solutions(tmp_path, "alice", "crasher", "carol")
    graded = grade_all(root, toy.ASSIGNMENT, jobs=2, results_dir=tmp_path / "res", progress=False)
    by = {sub.name: data for sub, data in graded}
    full = sum(q.points for q in toy.ASSIGNMENT.questions)
    assert by["alice"]["score"] == by["carol"]["score"] == full
    assert "stopped the grading process twice" in by["crasher"]["output"]
    assert sorted(p.name for p in (tmp_path / "res").iterdir()) == [
        "alice.json",
        "carol.json",
        "crasher.json",
    ]


def test_pool_processes_collect_none_of_what_they_inherit_and_the_batch_thaws_what_it_froze(
    tmp_path, monkeypatch
):
    """A pool process is forked with the batch's objects frozen: its collector never walks (and
    so never copies, page by page) the heap it inherits. A process that froze nothing of its
    own gets its collector back afterwards; one that did keeps its frozen objects."""
    import gc

    import grader.app.batch as batch

    real = batch.grade_submission

    def grading(p, a, **kw):
        (tmp_path / f"frozen-{p.name}").write_text(str(gc.get_freeze_count()))
        return real(p, a, **{**kw, "limits": LIMITS})

    monkeypatch.setattr(batch, "grade_submission", grading)
    root = _class_of_solutions(tmp_path, "ada", "bob")
    full = sum(q.points for q in toy.ASSIGNMENT.questions)
    kept = gc.get_freeze_count()  # the test process froze its imports (conftest)
    gc.unfreeze()
    try:
        for run in ("fresh", "kept"):
            if run == "kept":
                gc.freeze()
            graded = grade_all(
                root, toy.ASSIGNMENT, jobs=2, results_dir=tmp_path / run, progress=False
            )
            assert [data["score"] for _, data in graded] == [full, full]
            inherited = [int((tmp_path / f"frozen-{n}").read_text()) for n in ("ada", "bob")]
            assert min(inherited) >= 1000, inherited  # the modules and caches, at least
            after = gc.get_freeze_count()  # (a frozen object freed since has left the count)
            assert after == 0 if run == "fresh" else after >= 1000, (run, after)
    finally:
        gc.unfreeze()
        if kept:
            gc.freeze()


def _ppid_if_alive(pid: int | str) -> int | None:
    """The parent of a running process (None once it has ended, reaped or not)."""
    try:
        state, ppid = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[:2]
    except (OSError, ValueError):
        return None
    return None if state == "Z" else int(ppid)


def _children(pid: int) -> list[int]:
    return [int(e.name) for e in Path("/proc").iterdir() if _ppid_if_alive(e.name) == pid]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_killed_batch_leaves_no_pool_process_or_template_behind(tmp_path):
    """`kill -9` of a batch mid-run: its pool processes (and the warm templates each started)
    end within seconds instead of waiting forever on the pool's task queue."""
    import os
    import signal
    import sys

    from grader.course.content import solution_dir

    solution = (solution_dir("a1_word_vectors") / "word_vectors.py").read_text()
    root = tmp_path / "class"
    for i in range(300):  # many more than two processes grade before the kill
        (root / f"s{i:03d}").mkdir(parents=True)
        (root / f"s{i:03d}" / "word_vectors.py").write_text(solution)
    cmd = [sys.executable, "-m", "grader", "batch", str(root), "-a", "a1", "--jobs", "2"]
    batch = subprocess.Popen(
        [*cmd, "--out", str(tmp_path / "g.csv"), "--quiet"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def pool_up() -> bool:  # two pool processes, each with its template
        pool = _children(batch.pid)
        return len(pool) >= 2 and all(_children(p) for p in pool)

    try:
        wait_until(lambda: batch.poll() is not None or pool_up(), timeout=120)
        assert batch.poll() is None, "the batch ended before its pool was seen"
        pool = _children(batch.pid)
        left = pool + [t for p in pool for t in _children(p)]
        os.kill(batch.pid, signal.SIGKILL)
        batch.wait()
        assert wait_until(lambda: all(_ppid_if_alive(p) is None for p in left), timeout=15), [
            p for p in left if _ppid_if_alive(p) is not None
        ]
    finally:
        if batch.poll() is None:
            batch.kill()


def test_a_folder_name_that_is_not_utf8_does_not_stop_the_batch(tmp_path, monkeypatch):
    import os

    _patch_limits(monkeypatch)
    root = tmp_path / "class"
    root.mkdir()
    odd = root / os.fsdecode(b"stud\xffent")
    (odd / "sub\xe9dir".encode("latin-1").decode("utf-8", "surrogateescape")).mkdir(parents=True)
    (odd / "toy.py").write_text(toy.NUMPY_SOLUTION)
    (root / "plain").mkdir()
    (root / "plain" / "toy.py").write_text(toy.NUMPY_SOLUTION)
    graded = grade_all(root, toy.ASSIGNMENT, jobs=2, results_dir=tmp_path / "res", progress=False)
    assert sorted(s.name for s, _ in graded) == ["plain", "stud\\xffent"]
    assert all(d["score"] == 10 for _, d in graded)
    out = tmp_path / "grades.csv"
    write_csv(out, toy.ASSIGNMENT, graded)
    assert "stud\\xffent" in out.read_text(encoding="utf-8")


def test_a_score_that_is_not_a_number_leaves_every_total_finite(tmp_path, monkeypatch):
    import math

    import grader.app.batch as batch
    from grader.records import QuestionResult

    real = batch.grade_submission

    def with_nan_test(p, a, **kw):
        report = real(p, a, **{**kw, "limits": LIMITS})
        report.questions.append(
            QuestionResult(
                question_id="unittest:t",
                title="t",
                number="9",
                kind="instructor",
                function=None,
                score=float("nan"),
                max_score=1.0,
                visibility="visible",
            )
        )
        return report

    monkeypatch.setattr(batch, "grade_submission", with_nan_test)
    root = tmp_path / "class"
    (root / "a").mkdir(parents=True)
    (root / "a" / "toy.py").write_text(toy.NUMPY_SOLUTION)
    graded = grade_all(root, toy.ASSIGNMENT, jobs=1, results_dir=tmp_path / "res", progress=False)
    ((_, data),) = graded
    assert math.isfinite(data["score"]) and data["score"] == 10
    out = tmp_path / "grades.csv"
    write_csv(out, toy.ASSIGNMENT, graded)
    (row,) = csv.DictReader(io.StringIO(out.read_text()))
    assert math.isfinite(float(row["total"]))


def test_a_broken_metadata_file_warns_once_and_the_batch_goes_on(tmp_path, capsys):
    root = tmp_path / "class"
    (root / "a").mkdir(parents=True)
    (root / "submission_metadata.yml").write_text("a: [unclosed\n  :submitters: {\n")
    subs = find_submissions(root)
    assert [s.name for s in subs] == ["a"] and subs[0].student_id is None
    assert capsys.readouterr().err.count("submission_metadata.yml could not be read") == 1
