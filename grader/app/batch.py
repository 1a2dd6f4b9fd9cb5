"""`seqgrade batch`: grade every submission under a folder in parallel, write a gradebook."""

from __future__ import annotations

import hashlib
import json
import math
import multiprocessing
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.course import registry, variants
from grader.engine.grade import grade_submission
from grader.questions import Assignment
from grader.reports.results_json import error_results, to_gradescope, write_results
from grader.written.expr.judge import ExprJudge


@dataclass
class Submission:
    name: str  # the folder or zip's name under ROOT (bytes that are not UTF-8 shown as \xNN)
    path: Path
    student_id: str | None = None
    student_name: str | None = None
    submitters: tuple[dict[str, Any], ...] = ()  # the export's :submitters, for the variant key


def _gradescope_metadata(root: Path) -> dict[str, dict[str, Any]]:
    """Gradescope's "Export Submissions": submission_metadata.yml maps folders to submitters."""
    import yaml

    path = root / "submission_metadata.yml"
    if not path.is_file():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:  # the batch goes on without it
        print(f"seqgrade: warning: {path.name} could not be read ({type(err).__name__}: {str(err)[:200]}); "
              "every submission's variant comes from its folder or zip name", file=sys.stderr)
        return {}
    out = {}
    for folder, meta in data.items() if isinstance(data, dict) else []:
        if not isinstance(meta, dict):
            continue
        subs = meta.get(":submitters") or meta.get("submitters") or []
        first = subs[0] if subs and isinstance(subs[0], dict) else {}

        def pick(d: dict, *keys: str) -> str | None:
            for k in keys:
                if d.get(k) not in (None, ""):
                    return str(d[k])
            return None

        out[str(folder)] = {"id": pick(first, ":sid", "sid", ":email", "email", ":id", "id"),
                            "name": pick(first, ":name", "name"),
                            "submitters": tuple(s for s in subs if isinstance(s, dict))}
    return out


def find_submissions(root: Path) -> list[Submission]:
    """Every folder or .zip directly under ROOT (hidden entries and our own output skipped)."""
    meta = _gradescope_metadata(root)
    subs = []
    for path in sorted(root.iterdir()):
        if path.name.startswith((".", "_")) or path.name.endswith("_results"):
            continue
        if path.is_dir() or path.suffix == ".zip":
            key = path.name if path.is_dir() else path.stem
            m = meta.get(key) or meta.get(path.name) or {}
            subs.append(Submission(printable(path.name), path, m.get("id"), m.get("name"), m.get("submitters", ())))
    return subs


def printable(name: str) -> str:
    """A file name as text that can be written anywhere (CSV, JSON, a results file's name):
    bytes that are not UTF-8 (kept by Python as surrogates) become \\xNN."""
    return os.fsencode(name).decode("utf-8", errors="backslashreplace")


def fingerprint(path: Path) -> str:
    """A hash of the submission's content, to skip regrading an unchanged submission."""
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for f in files:
        h.update(os.fsencode(f.relative_to(path) if path.is_dir() else f.name))
        try:
            h.update(f.read_bytes())
        except OSError:
            h.update(b"<unreadable>")
    return h.hexdigest()


_BATCH_ASSIGNMENT: list[Assignment] = []  # set before the pool forks; the workers inherit it
_JUDGE: list[ExprJudge] = []  # one expression judge per pool process, reused across submissions


def _grade_in_worker(sub: Submission, results_dir: Path, force: bool, index: int) -> dict[str, Any]:
    marker = _running_dir(results_dir) / str(index)  # left behind if this process dies mid-grading
    marker.touch()
    if not _JUDGE:
        _JUDGE.append(ExprJudge())
    data = _grade_one(sub, _BATCH_ASSIGNMENT[0], results_dir, force, _JUDGE[0])
    marker.unlink(missing_ok=True)
    return data


def _running_dir(results_dir: Path) -> Path:
    return results_dir / ".running"


def _grade_one(sub: Submission, assignment: Assignment, results_dir: Path, force: bool,
               judge: ExprJudge | None = None) -> dict[str, Any]:
    target = results_dir / f"{sub.name}.json"
    digest = fingerprint(sub.path)
    if not force and target.is_file():
        try:
            old = json.loads(target.read_text())
            if old.get("extra_data", {}).get("fingerprint") == digest:
                return old
        except (OSError, ValueError):
            pass
    try:
        named = sub.path.with_name(printable(sub.path.name))  # a key that can be hashed and written
        key = variants.variant_key(assignment.variant_key, users=sub.submitters, path=named)
        data = to_gradescope(grade_submission(sub.path, assignment, student=key.value, judge=judge), key)
    except Exception as exc:  # noqa: BLE001 - one bad submission never stops the batch
        data = error_results(assignment.id, f"{type(exc).__name__}: {exc}")
    data["extra_data"].update({"submission": sub.name, "student_id": sub.student_id, "student_name": sub.student_name,
                               "fingerprint": digest})
    write_results(target, finite_scores(data))
    return data


def finite_scores(data: dict[str, Any]) -> dict[str, Any]:
    """Scores that are not finite numbers (an instructor test scoring NaN) count as 0; the total
    is the sum of the tests' scores (Gradescope's own rule when no total is given)."""
    def number(x: Any) -> float:
        return float(x) if isinstance(x, (int, float)) and math.isfinite(x) else 0.0

    tests = data.get("tests") if isinstance(data.get("tests"), list) else []
    for t in tests:
        if isinstance(t, dict):
            t["score"], t["max_score"] = number(t.get("score")), number(t.get("max_score"))
    if not isinstance(data.get("score"), (int, float)) or not math.isfinite(data["score"]):
        data["score"] = round(sum(t["score"] for t in tests if isinstance(t, dict)), 6)
    return data


def _failed_twice(sub: Submission, assignment: Assignment, results_dir: Path) -> dict[str, Any]:
    """The record of a submission whose grading stopped the grading process twice."""
    data = error_results(assignment.id, "grading this submission stopped the grading process twice (out of "
                         "memory, or killed); it was recorded as failed and every other submission was graded")
    data["extra_data"].update({"submission": sub.name, "student_id": sub.student_id,
                               "student_name": sub.student_name, "fingerprint": None})
    write_results(results_dir / f"{sub.name}.json", data)
    return data


class Progress:
    """A one-line progress bar on stderr: the count, the rate and the time left."""

    def __init__(self, total: int, stream=sys.stderr) -> None:
        self.total, self.done, self.start, self.stream = total, 0, time.monotonic(), stream

    def step(self) -> None:
        self.done += 1
        elapsed = time.monotonic() - self.start
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = (self.total - self.done) / rate if rate > 0 else 0.0
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        bar = "#" * filled + "-" * (width - filled)
        end = "\n" if self.done == self.total else ""
        self.stream.write(f"\r[{bar}] {self.done}/{self.total}  {rate:.2f}/s  {int(left) // 60}:{int(left) % 60:02d} left{end}")
        self.stream.flush()


def grade_all(root: Path, assignment: Assignment, *, jobs: int | None = None, results_dir: Path,
              force: bool = False, progress: bool = True) -> list[tuple[Submission, dict[str, Any]]]:
    """Grade every submission under ROOT, `jobs` at a time; one row per submission whatever happens.

    A grading process that dies (out of memory, killed) breaks the pool: the submissions it was
    grading are retried alone, then recorded as failed; the others are graded in a fresh pool.
    """
    subs = find_submissions(root)
    results_dir.mkdir(parents=True, exist_ok=True)
    jobs = max(1, jobs or os.cpu_count() or 1)
    bar = Progress(len(subs)) if progress and subs else None
    out: dict[int, dict[str, Any]] = {}
    # Processes, not threads: the trusted side's own work (references, mutants, parsing) runs in
    # parallel too, and nothing in it has to be thread-safe. Forked, so that an assignment
    # defined in code (not only by id) reaches the workers; no thread runs here before the fork.
    _BATCH_ASSIGNMENT[:] = [assignment]
    pending = list(range(len(subs)))
    while pending:
        left = _pool_round(subs, pending, jobs, results_dir, force, out, bar)
        suspects = _in_flight(results_dir, left) or set(left)
        for i in sorted(suspects):  # each alone: a second crash is that submission's own
            if _pool_round(subs, [i], 1, results_dir, force, out, bar):
                out[i] = _failed_twice(subs[i], assignment, results_dir)
                if bar:
                    bar.step()
        pending = [i for i in left if i not in suspects]
    shutil.rmtree(_running_dir(results_dir), ignore_errors=True)
    return [(s, out[i]) for i, s in enumerate(subs)]


def _pool_round(subs: list[Submission], indices: list[int], jobs: int, results_dir: Path, force: bool,
                out: dict[int, dict[str, Any]], bar: Progress | None) -> list[int]:
    """Grade `indices` in one pool; the indices left ungraded because the pool broke."""
    running = _running_dir(results_dir)
    running.mkdir(parents=True, exist_ok=True)
    for stale in running.iterdir():
        stale.unlink(missing_ok=True)
    broken: list[int] = []
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork")) as pool:
        futures = {pool.submit(_grade_in_worker, subs[i], results_dir, force, i): i for i in indices}
        for fut in as_completed(futures):
            i = futures[fut]
            try:
                out[i] = fut.result()
            except BrokenProcessPool:
                broken.append(i)
                continue
            except Exception as exc:  # noqa: BLE001 - a bug of ours in one submission's row, not the batch
                out[i] = error_results(_BATCH_ASSIGNMENT[0].id, f"{type(exc).__name__}: {exc}")
                out[i]["extra_data"].update({"submission": subs[i].name})
            if bar:
                bar.step()
    return sorted(broken)


def _in_flight(results_dir: Path, left: list[int]) -> set[int]:
    """The submissions whose grading had started when the pool broke (their markers remain)."""
    running = _running_dir(results_dir)
    found = {int(p.name) for p in running.iterdir() if p.name.isdigit()} if running.is_dir() else set()
    return found & set(left)


def write_csv(path: Path | str, assignment: Assignment, graded: list[tuple[Submission, dict[str, Any]]], *,
              fmt: str = "seqgrade", digits: int = 2, people: dict | None = None) -> list[str]:
    """The gradebook export (seqgrade's grades.csv by default); returns the submissions it cannot match."""
    from grader.reports import gradebook

    rows = gradebook.rows_of(graded, people)
    gradebook.write(path, fmt, assignment, rows, digits)
    return gradebook.unmatched(fmt, rows)


def run(root: Path, assignment_id: str, *, jobs: int | None, out: Path, report: Path | None, force: bool,
        gradebook: str = "seqgrade", digits: int = 2, quiet: bool = False) -> int:
    assignment = registry.load(assignment_id)
    to_stdout = str(out) == "-"  # `--out -`: the gradebook on stdout, messages on stderr
    results_dir = Path("grades_results") if to_stdout else out.with_name(out.stem + "_results")
    graded = grade_all(root, assignment, jobs=jobs, results_dir=results_dir, force=force,
                       progress=not quiet and sys.stderr.isatty())  # no \r frames in logs
    lost = write_csv(out, assignment, graded, fmt=gradebook, digits=digits)
    if lost:
        print(f"seqgrade: {len(lost)} submissions have no email or SIS id for the {gradebook} gradebook: "
              f"{', '.join(lost[:10])}{' …' if len(lost) > 10 else ''}", file=sys.stderr)
    say = sys.stderr if to_stdout else sys.stdout
    if not quiet:
        print(f"graded {len(graded)} submissions: {out} (results.json files in {results_dir}/)", file=say)
    if report is not None:
        from grader.reports.class_report import write_report

        write_report(report, assignment, graded)
        if not quiet:
            print(f"class report: {report}", file=say)
    return 0
