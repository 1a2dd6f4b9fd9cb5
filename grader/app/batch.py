"""`seqgrade batch`: grade every submission under a folder in parallel, write a gradebook.

Its size (over 800 lines) is one pipeline read top to bottom: finding the submissions, planning
what to regrade, grading in a pool, storing raw results, writing the gradebook.
"""

from __future__ import annotations

import dataclasses
import json
import math
import multiprocessing
import os
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import sandbox
from grader.app import pool_process, regrade
from grader.course import fingerprint, registry, variants
from grader.course.fingerprint import Fingerprints
from grader.engine.grade import grade_submission
from grader.questions import Assignment
from grader.reports.results_json import (
    error_results,
    remove_unfinished,
    set_fingerprints,
    stored_fingerprints,
    to_gradescope,
    write_results,
)
from grader.written.expr.checker import ExprChecker


@dataclass(frozen=True)
class Outcome:
    """What the batch did with one submission, for the summary."""

    kind: str
    """ "graded" (no stored result), "regraded" (whole), "reused", "updated" (--only), "failed"."""
    why: tuple[str, ...] = ()
    """regraded: what changed (fingerprint kinds); updated: the questions."""


@dataclass
class Submission:
    name: str
    """The folder or zip's name under ROOT (bytes that are not UTF-8 shown as \\xNN)."""
    path: Path
    student_id: str | None = None
    student_name: str | None = None
    submitters: tuple[dict[str, Any], ...] = ()
    """The export's :submitters, for the variant key."""
    outcome: Outcome | None = None
    """What this batch run did with it (set once it is done)."""
    created_at: str | None = None
    """When it was submitted (the export's :created_at), ISO 8601."""


MAX_METADATA_BYTES = 32 << 20  # an export's submission_metadata.yml (a large class: a few MB)
MAX_METADATA_NODES = 1_000_000  # its values counted as read, every alias (*name) expanded


class MetadataError(ValueError):
    """submission_metadata.yml cannot be used (too large, aliases expanding past the cap)."""


def _expanded_nodes(root: Any) -> int:
    """How many values a YAML node stands for once every alias is expanded (an alias bomb's
    nine anchors of nine aliases each stand for 9**9); past the cap, or in a cycle, the cap + 1."""
    import yaml

    sizes: dict[int, int] = {}
    over = MAX_METADATA_NODES + 1

    def size(node: Any) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        sizes[key] = over  # a node inside itself (`&a [*a]`) never ends
        if isinstance(node, yaml.SequenceNode):
            total = 1 + sum(size(child) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            total = 1 + sum(size(k) + size(v) for k, v in node.value)
        else:
            total = 1
        sizes[key] = min(total, over)
        return sizes[key]

    return size(root) if root is not None else 0


def read_metadata_yaml(path: Path) -> Any:
    """The parsed file, read safely (no Python objects) and refused when it is larger than
    MAX_METADATA_BYTES or its aliases expand to more than MAX_METADATA_NODES values."""
    import yaml

    if path.stat().st_size > MAX_METADATA_BYTES:
        raise MetadataError(f"larger than {MAX_METADATA_BYTES >> 20} MiB")
    loader = yaml.SafeLoader(path.read_text(encoding="utf-8"))
    try:
        node = loader.get_single_node()
        if _expanded_nodes(node) > MAX_METADATA_NODES:
            raise MetadataError(
                f"its aliases (*name) expand to more than {MAX_METADATA_NODES:,} values"
            )
        return loader.construct_document(node) if node is not None else None
    finally:
        loader.dispose()


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _gradescope_metadata(root: Path) -> dict[str, dict[str, Any]]:
    """Gradescope's "Export Submissions": submission_metadata.yml maps folders to submitters.

    A file that cannot be used is reported and skipped: every submission's variant then comes
    from its folder or zip name. Of each submitter only plain values (text, numbers) are kept.
    """
    import yaml

    path = root / "submission_metadata.yml"
    if not path.is_file():
        return {}
    try:
        data = read_metadata_yaml(path) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError, MetadataError, RecursionError) as err:
        print(
            f"seqgrade: warning: {path.name} could not be read ({type(err).__name__}: {str(err)[:200]}); "
            "every submission's variant comes from its folder or zip name",
            file=sys.stderr,
        )
        return {}
    out = {}
    for folder, meta in data.items() if isinstance(data, dict) else []:
        if not isinstance(meta, dict):
            continue
        listed = meta.get(":submitters") or meta.get("submitters") or []
        subs = tuple(
            {k: v for k, v in s.items() if isinstance(k, str) and _scalar(v)}
            for s in (listed if isinstance(listed, list) else [])
            if isinstance(s, dict)
        )
        first = subs[0] if subs else {}

        def pick(d: dict, *keys: str) -> str | None:
            for k in keys:
                if d.get(k) not in (None, ""):
                    return str(d[k])
            return None

        created = meta.get(":created_at") or meta.get("created_at")
        if hasattr(created, "isoformat"):  # YAML reads `2026-09-18 23:59:00 -04:00` as a datetime
            created = created.isoformat()
        out[str(folder)] = {
            "id": pick(first, ":sid", "sid", ":email", "email", ":id", "id"),
            "name": pick(first, ":name", "name"),
            "submitters": subs,
            "created_at": str(created) if _scalar(created) else None,
        }
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
            subs.append(
                Submission(
                    printable(path.name),
                    path,
                    m.get("id"),
                    m.get("name"),
                    m.get("submitters", ()),
                    created_at=m.get("created_at"),
                )
            )
    return subs


def printable(name: str) -> str:
    """A file name as text that can be written anywhere (CSV, JSON, a results file's name):
    bytes that are not UTF-8 (kept by Python as surrogates) become \\xNN."""
    return os.fsencode(name).decode("utf-8", errors="backslashreplace")


@dataclass(frozen=True)
class Plan:
    """What a batch run does with stored results (the same for every submission)."""

    shared: Fingerprints
    """The assignment's, catalog's, reference's and grader's (submission left empty)."""
    force: bool = False
    """Regrade every submission whole, stored results or not."""
    only: tuple[str, ...] = ()
    """`--only`: regrade these question ids, keep the rest of stored results."""
    limits: Mapping[str, float] = dataclasses.field(default_factory=dict)
    """The term's `[limits]` (sandbox.Limits keyword arguments); empty: the defaults."""

    def sandbox_limits(self) -> sandbox.Limits:
        return sandbox.Limits(**self.limits)


_BATCH_ASSIGNMENT: list[Assignment] = []  # set before the pool forks; the workers inherit it
_BATCH_PLAN: list[Plan] = []


def _grade_in_worker(
    sub: Submission, results_dir: Path, index: int
) -> tuple[dict[str, Any], Outcome]:
    marker = _running_dir(results_dir) / str(index)  # left behind if this process dies mid-grading
    marker.touch()
    with pool_process.keeping() as checker:
        done = _grade_one(sub, _BATCH_ASSIGNMENT[0], results_dir, _BATCH_PLAN[0], checker)
    marker.unlink(missing_ok=True)
    return done


# How often a pool process looks whether its batch still runs (seconds).
PARENT_CHECK_SECONDS = 0.5


def end_with(batch: int) -> None:
    """A pool process's start: it ends itself as soon as the process `batch` has ended.

    A batch stopped by `kill` or a scheduler's time limit has no chance to stop its pool, and
    the pool's processes would wait forever on a task queue whose write end their own fork
    holds, each with its warm templates (which end with their pool process)."""

    def watch() -> None:
        while os.getppid() == batch:
            time.sleep(PARENT_CHECK_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="seqgrade-batch-watch", daemon=True).start()


def _running_dir(results_dir: Path) -> Path:
    return results_dir / ".running"


def _grade_one(
    sub: Submission,
    assignment: Assignment,
    results_dir: Path,
    plan: Plan,
    checker: ExprChecker | None = None,
) -> tuple[dict[str, Any], Outcome]:
    """Reuse the stored result while every fingerprint matches; else grade (or, with `--only`,
    regrade the named questions of the stored result)."""
    target = results_dir / f"{sub.name}.json"
    now = fingerprint.with_submission(plan.shared, sub.path, _key(sub, assignment), sub.submitters)
    stored = None if plan.force else _stored(target, assignment)
    stale = _stale(stored, now, assignment) if stored is not None else []
    # A change of owner regrades the whole result: every question used the old owner's numbers.
    partial = plan.only and "owner" not in stale
    if stored is not None and partial and regrade.stored_question_ids(stored):
        return _update(sub, assignment, stored, plan, now, checker, target)
    if stored is not None and not stale:
        return stored, Outcome("reused")
    kind = "regraded" if target.is_file() else "graded"
    data = _grade_whole(sub, assignment, checker, plan.sandbox_limits())
    clean = not _has_grader_error(data)
    set_fingerprints(data, now if clean else None)  # a failure of ours is tried again on a re-run
    write_results(target, finite_scores(data))
    return data, Outcome(kind, ("--force",) if plan.force and kind == "regraded" else tuple(stale))


def _key(sub: Submission, assignment: Assignment) -> variants.VariantKey:
    named = sub.path.with_name(printable(sub.path.name))  # a key that can be hashed and written
    return variants.variant_key(assignment.variant_key, users=sub.submitters, path=named)


def _grade_whole(
    sub: Submission,
    assignment: Assignment,
    checker: ExprChecker | None,
    limits: sandbox.Limits | None = None,
) -> dict[str, Any]:
    try:
        key = _key(sub, assignment)
        report = grade_submission(
            sub.path, assignment, student=key.value, checker=checker, limits=limits
        )
        data = to_gradescope(report, key, assignment)
    except Exception as exc:  # noqa: BLE001 - one bad submission never stops the batch
        data = error_results(assignment.id, f"{type(exc).__name__}: {exc}")
    data["extra_data"].update(
        {"submission": sub.name, "student_id": sub.student_id, "student_name": sub.student_name}
    )
    return data


def _update(
    sub: Submission,
    assignment: Assignment,
    stored: dict[str, Any],
    plan: Plan,
    now: Fingerprints,
    checker: ExprChecker | None,
    target: Path,
) -> tuple[dict[str, Any], Outcome]:
    """`--only`: the named questions (and any the stored result lacks) regraded, the rest kept; the
    fingerprints recorded for the regraded questions only."""
    have = regrade.stored_question_ids(stored)
    todo = [q.id for q in assignment.questions if q.id in plan.only or q.id not in have]
    try:
        key = _key(sub, assignment)
        report = regrade.regrade_report(
            sub.path,
            assignment,
            todo,
            grade_submission,
            student=key.value,
            checker=checker,
            limits=plan.sandbox_limits(),
        )
        fresh = to_gradescope(report, key, assignment)
    except Exception as exc:  # noqa: BLE001 - a bug of ours: the stored result stands, the error shows
        fresh = error_results(assignment.id, f"{type(exc).__name__}: {exc}")
        data = regrade.merge(stored, fresh, assignment, ())
        write_results(target, finite_scores(data))
        return data, Outcome("failed")
    data = regrade.merge(stored, fresh, assignment, todo)
    whole, per_question = stored_fingerprints(stored)
    per_question.update({qid: now for qid in todo})
    if all(per_question.get(q.id, whole) == now for q in assignment.questions):
        whole, per_question = now, {}  # every question graded as of now: the result is whole again
    set_fingerprints(data, whole, per_question)
    write_results(target, finite_scores(data))
    return data, Outcome("updated", tuple(todo))


def _stored(target: Path, assignment: Assignment) -> dict[str, Any] | None:
    """The stored result of this assignment at `target`, if one can be read."""
    try:
        data = json.loads(target.read_text())
    except (OSError, ValueError):
        return None
    ok = (
        isinstance(data, dict)
        and isinstance(data.get("extra_data"), dict)
        and isinstance(data.get("tests"), list)
    )
    return data if ok and data["extra_data"].get("assignment") == assignment.id else None


def _stale(stored: dict[str, Any], now: Fingerprints, assignment: Assignment) -> list[str]:
    """Why a stored result no longer holds (fingerprint kinds that changed); empty while it does."""
    whole, per_question = stored_fingerprints(stored)
    if _has_grader_error(stored):
        return ["grader error"]
    changed: set[str] = set()
    for q in assignment.questions:
        fp = per_question.get(q.id, whole)
        if fp is None:
            return ["no fingerprints"]
        changed.update(fp.changed(now))
    return [k for k in fingerprint.KINDS if k in changed]


def _has_grader_error(data: dict[str, Any]) -> bool:
    return any(
        isinstance(t, dict) and t.get("extra_data", {}).get("kind") == "error"
        for t in data.get("tests", [])
    )


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
    sub.outcome = Outcome("failed")
    data = error_results(
        assignment.id,
        "grading this submission stopped the grading process twice (out of "
        "memory, or killed); it was recorded as failed and every other submission was graded",
    )
    data["extra_data"].update(
        {"submission": sub.name, "student_id": sub.student_id, "student_name": sub.student_name}
    )
    write_results(results_dir / f"{sub.name}.json", set_fingerprints(data, None))
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
        self.stream.write(
            f"\r[{bar}] {self.done}/{self.total}  {rate:.2f}/s  {int(left) // 60}:{int(left) % 60:02d} left{end}"
        )
        self.stream.flush()


def grade_all(
    root: Path,
    assignment: Assignment,
    *,
    jobs: int | None = None,
    results_dir: Path,
    force: bool = False,
    progress: bool = True,
    only: Sequence[str] = (),
    cluster: str | None = None,
    limits: Mapping[str, float] | None = None,
) -> list[tuple[Submission, dict[str, Any]]]:
    """Grade every submission under ROOT, `jobs` at a time; one row per submission whatever happens.

    A stored result in `results_dir` is reused while its fingerprints (submission, suite, catalog,
    reference, grader) all match; `force` regrades every one. `only` (question ids): regrade
    those questions of each stored result and keep the rest (a submission without one is graded
    whole). Each submission's `outcome` says which happened. `limits`: the term's `[limits]`
    (sandbox.Limits keyword arguments; a result graded under other limits is stale).

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
    if force and only:
        raise ValueError(
            "--force regrades whole submissions and --only some questions: give one of them"
        )
    _BATCH_ASSIGNMENT[:] = [assignment]
    limits = dict(limits or {})
    shared = fingerprint.assignment_fingerprints(assignment, limits)
    _BATCH_PLAN[:] = [Plan(shared, force, tuple(only), limits)]
    pending = list(range(len(subs)))
    if cluster is not None:
        _cluster_round(cluster, subs, results_dir, out, bar)
        pending = []
    while pending:
        left = _pool_round(subs, pending, jobs, results_dir, out, bar)
        suspects = _in_flight(results_dir, left) or set(left)
        for i in sorted(suspects):  # each alone: a second crash is that submission's own
            if _pool_round(subs, [i], 1, results_dir, out, bar):
                out[i] = _failed_twice(subs[i], assignment, results_dir)
                if bar:
                    bar.step()
        pending = [i for i in left if i not in suspects]
    shutil.rmtree(_running_dir(results_dir), ignore_errors=True)
    remove_unfinished(results_dir)  # a pool process stopped mid-write (the pool broke)
    return [(s, out[i]) for i, s in enumerate(subs)]


def _cluster_round(
    address: str,
    subs: list[Submission],
    results_dir: Path,
    out: dict[int, dict[str, Any]],
    bar: Progress | None,
) -> None:
    """Every submission as a task on a dask cluster (grader/app/cluster.py); rows as the pool's."""
    from grader.app import cluster

    assignment = _BATCH_ASSIGNMENT[0]

    def record(i: int, done: Any) -> None:
        if done is None:  # its task stopped two workers
            out[i] = _failed_twice(subs[i], assignment, results_dir)
        elif isinstance(done, BaseException):
            out[i] = error_results(assignment.id, f"{type(done).__name__}: {done}")
            out[i]["extra_data"].update({"submission": subs[i].name})
            subs[i].outcome = Outcome("failed")
        else:
            out[i], subs[i].outcome = done
        if bar:
            bar.step()

    cluster.grade_all_on(address, subs, assignment, results_dir, _BATCH_PLAN[0], _grade_one, record)


def _pool_round(
    subs: list[Submission],
    indices: list[int],
    jobs: int,
    results_dir: Path,
    out: dict[int, dict[str, Any]],
    bar: Progress | None,
) -> list[int]:
    """Grade `indices` in one pool; the indices left ungraded because the pool broke."""
    running = _running_dir(results_dir)
    running.mkdir(parents=True, exist_ok=True)
    for stale in running.iterdir():
        stale.unlink(missing_ok=True)
    broken: list[int] = []
    with (
        pool_process.forking(),
        ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=multiprocessing.get_context("fork"),
            initializer=end_with,
            initargs=(os.getpid(),),
        ) as pool,
    ):
        futures = {pool.submit(_grade_in_worker, subs[i], results_dir, i): i for i in indices}
        for fut in as_completed(futures):
            i = futures[fut]
            try:
                out[i], subs[i].outcome = fut.result()
            except BrokenProcessPool:
                broken.append(i)
                continue
            except Exception as exc:  # noqa: BLE001 - a bug of ours in one submission's row, not the batch
                out[i] = error_results(_BATCH_ASSIGNMENT[0].id, f"{type(exc).__name__}: {exc}")
                out[i]["extra_data"].update({"submission": subs[i].name})
                subs[i].outcome = Outcome("failed")
            if bar:
                bar.step()
    return sorted(broken)


def _in_flight(results_dir: Path, left: list[int]) -> set[int]:
    """The submissions whose grading had started when the pool broke (their markers remain)."""
    running = _running_dir(results_dir)
    found = (
        {int(p.name) for p in running.iterdir() if p.name.isdigit()} if running.is_dir() else set()
    )
    return found & set(left)


def write_csv(
    path: Path | str,
    assignment: Assignment,
    graded: list[tuple[Submission, dict[str, Any]]],
    *,
    fmt: str = "seqgrade",
    digits: int = 2,
    people: dict | None = None,
) -> list[str]:
    """The gradebook export (seqgrade's grades.csv by default); returns the submissions it cannot match."""
    from grader.reports import gradebook

    rows = gradebook.rows_of(graded, people)
    gradebook.write(path, fmt, assignment, rows, digits)
    return gradebook.unmatched(fmt, rows)


def summary(graded: list[tuple[Submission, dict[str, Any]]]) -> str:
    """What the batch did: "12 reused, 0 regraded", with what changed and which questions `--only` regraded."""
    outcomes = [s.outcome or Outcome("graded") for s, _ in graded]
    count = Counter(o.kind for o in outcomes)
    parts = [f"{count['reused']} reused", f"{count['regraded']} regraded"]
    changed = Counter(k for o in outcomes if o.kind == "regraded" for k in o.why)
    if changed:
        parts[-1] += (
            " ("
            + ", ".join(
                f"{k} changed: {n}" if k in fingerprint.KINDS else f"{k}: {n}"
                for k, n in changed.items()
            )
            + ")"
        )
    if count["graded"]:
        parts.append(f"{count['graded']} graded for the first time")
    updated = [o for o in outcomes if o.kind == "updated"]
    if updated and not count["reused"] and not count["regraded"]:
        parts = parts[2:]  # `--only`: what it did, without "0 reused, 0 regraded"
    if updated:
        questions = list(dict.fromkeys(q for o in updated for q in o.why))
        parts.append(
            f"{len(updated)} updated: question{'s' if len(questions) > 1 else ''} "
            f"{', '.join(questions)} regraded, the rest of each stored result kept"
        )
    if count["failed"]:
        parts.append(f"{count['failed']} failed")
    return ", ".join(parts)


def identities(sub: Submission, data: dict[str, Any] | None = None) -> set[str]:
    """Every key an overrides file or the roster may name this submission's student by: the
    folder or zip name, the variant key, each submitter's email and SID (lower-cased)."""
    keys = {sub.name, sub.path.stem if sub.path.suffix == ".zip" else sub.name}
    if data is not None:
        keys.add(str(data.get("extra_data", {}).get("student") or ""))
    for s in sub.submitters:
        keys.update(str(s.get(k) or "") for k in (":email", "email", ":sid", "sid"))
    return {k.strip().lower() for k in keys if k and k.strip()}


@dataclass(frozen=True)
class Adjustments:
    """What the staff declared for this batch: the term (late policy, roster) and the overrides."""

    term: Any = None
    """grader.course.term.Term, or None."""
    overrides: tuple[Any, ...] = ()
    """grader.course.overrides.Override entries."""
    ledger: dict[tuple[str, str], int] | None = None
    """Late days spent so far."""


def load_adjustments(
    assignment: Assignment,
    subs: list[Submission],
    term_path: Path | None,
    overrides_path: Path | None,
) -> Adjustments:
    """Read and check the term file and the overrides (an unknown student or question is an
    error); raises ValueError with a message for the staff."""
    from grader.course import late, overrides, term

    known = term.load(term_path) if term_path is not None else None
    path = overrides_path or (known.overrides_file(assignment.id) if known else None)
    found = overrides.load(path, assignment) if path is not None else ()
    if found:
        overrides.check_students(
            found, [identities(s) | {(_key(s, assignment).value or "").lower()} for s in subs]
        )
    ledger = late.read_ledger(known.ledger_path) if known and known.ledger_path else None
    return Adjustments(known, found, ledger)


def adjusted(
    graded: list[tuple[Submission, dict[str, Any]]], assignment: Assignment, adj: Adjustments
) -> list[tuple[Submission, dict[str, Any]]]:
    """Each result with its overrides and late penalty applied (a copy: the stored results stay
    raw); the late days each spends recorded in the term's ledger."""
    from grader.course import adjust, late

    if adj.term is None and not adj.overrides:
        return graded
    ledger = dict(adj.ledger or {})
    out = []
    for sub, data in graded:
        try:
            submitted = late.parse_date(sub.created_at, f"{sub.name}: :created_at")
        except late.LateError as err:
            print(f"seqgrade: warning: {err}; its lateness is not judged", file=sys.stderr)
            submitted = None
        decision = adjust.decide(
            adj.term, adj.overrides, assignment.id, identities(sub, data), submitted, ledger=ledger
        )
        if decision.verdict is not None and decision.ledger_key and adj.term.policy.late_days:
            ledger[(decision.ledger_key, assignment.id)] = decision.verdict.late_days_used
        out.append((sub, adjust.apply(data, decision)))
    if adj.term is not None and adj.term.ledger_path is not None and adj.term.policy.late_days:
        late.write_ledger(adj.term.ledger_path, ledger)
    return out


def roster_people(graded: list[tuple[Submission, dict[str, Any]]], adj: Adjustments) -> dict | None:
    """The roster's entry for each submission (name, email, SID, Canvas id, section), by name."""
    from grader.reports.gradebook import Person

    if adj.term is None or not adj.term.roster.students:
        return None
    out = {}
    for sub, data in graded:
        st = adj.term.roster.find(identities(sub, data))
        if st is not None:
            out[sub.name] = Person(
                st.name or None, st.email, st.sid or None, st.canvas_id or None, st.section or None
            )
    return out


def anonymised(
    graded: list[tuple[Submission, dict[str, Any]]], mapping_path: Path
) -> tuple[list[tuple[Submission, dict[str, Any]]], dict[str, str]]:
    """The rows with every student's name, email, SID, key and folder replaced by their stable
    pseudonym, and each submission's pseudonym by its name; the private mapping written to
    `mapping_path`."""
    from grader.course import pseudonyms

    def identity(sub: Submission, data: dict[str, Any]) -> str:
        return str(data.get("extra_data", {}).get("student") or sub.name)

    names = pseudonyms.assign(
        [identity(s, d) for s, d in graded], pseudonyms.read_mapping(mapping_path)
    )
    out, rows = [], []
    for sub, data in graded:
        alias = names[identity(sub, data)]
        first = sub.submitters[0] if sub.submitters else {}
        email = str(first.get(":email") or first.get("email") or "")
        sid = str(first.get(":sid") or first.get("sid") or sub.student_id or "")
        real = {sub.name, sub.path.stem, identity(sub, data), sub.student_name or "", email, sid}
        real |= {str(m.get(k) or "") for m in sub.submitters for k in (":name", ":email", ":sid")}
        swap = {r: alias for r in real if len(r) >= 3}
        rows.append(
            {
                "pseudonym": alias,
                "identity": identity(sub, data),
                "submission": sub.name,
                "name": sub.student_name or "",
                "email": email,
                "sid": sid,
            }
        )
        blind = dataclasses.replace(
            sub, name=alias, student_id=alias, student_name=alias, submitters=({":name": alias},)
        )
        out.append((blind, pseudonyms.scrub(data, swap)))
    pseudonyms.write_mapping(mapping_path, rows)
    aliases = {r["submission"]: r["pseudonym"] for r in rows}
    return sorted(out, key=lambda row: row[0].name), aliases  # by pseudonym: the order says nothing


def run(
    root: Path,
    assignment_id: str,
    *,
    jobs: int | None,
    out: Path,
    report: Path | None,
    force: bool,
    gradebook: str = "seqgrade",
    digits: int = 2,
    quiet: bool = False,
    only: str | None = None,
    cluster: str | None = None,
    term: Path | None = None,
    overrides: Path | None = None,
    diff: bool = False,
    anonymise: bool = False,
) -> int:
    from grader.course import changes, late
    from grader.course.overrides import OverrideError
    from grader.course.term import TermError

    assignment = registry.load(assignment_id)
    try:
        questions = (
            regrade.resolve_questions(assignment, only.split(",")) if only is not None else ()
        )
    except regrade.UnknownQuestion as err:
        print(f"seqgrade: {err}", file=sys.stderr)
        return 2
    if force and questions:
        print(
            "seqgrade: --force regrades whole submissions and --only some questions: give one of them",
            file=sys.stderr,
        )
        return 2
    if anonymise and gradebook != "seqgrade":
        print(
            f"seqgrade: --anonymise is for blind review; a {gradebook} gradebook needs the real "
            "students to import: use --gradebook seqgrade",
            file=sys.stderr,
        )
        return 2
    to_stdout = str(out) == "-"  # `--out -`: the gradebook on stdout, messages on stderr
    results_dir = Path("grades_results") if to_stdout else out.with_name(out.stem + "_results")
    beside = results_dir.parent / ("grades" if to_stdout else out.stem)
    try:
        adj = load_adjustments(assignment, find_submissions(root), term, overrides)
    except (TermError, OverrideError, late.LateError) as err:
        print(f"seqgrade: {err}", file=sys.stderr)
        return 2
    before = changes.snapshot(results_dir) if diff else {}
    from grader.app.cluster import ClusterError

    try:
        graded = grade_all(
            root,
            assignment,
            jobs=jobs,
            results_dir=results_dir,
            force=force,
            only=questions,
            progress=not quiet and sys.stderr.isatty(),
            cluster=cluster,
            limits=adj.term.limits if adj.term is not None else None,
        )  # no \r frames in logs
    except ClusterError as err:
        print(f"seqgrade: {err}", file=sys.stderr)
        return 2
    say = sys.stderr if to_stdout else sys.stdout
    moved = (
        changes.compare(
            before, [(s.name, s.student_name or "", changes.scores_of(d)) for s, d in graded]
        )
        if diff
        else []
    )
    graded = adjusted(graded, assignment, adj)
    if adj.term is not None or adj.overrides:  # the final results beside the raw ones
        for sub, data in graded:
            write_results(results_dir / "adjusted" / f"{sub.name}.json", data)
    if anonymise:
        graded, aliases = anonymised(graded, Path(f"{beside}_pseudonyms.csv"))
        moved = [
            dataclasses.replace(c, submission=aliases[c.submission], who="") for c in moved
        ]  # blind review: what moved, by pseudonym
    if diff:
        diff_path = Path(f"{beside}_diff.csv")
        changes.write(diff_path, moved)
        shown = changes.lines(moved)
        print(
            f"scores changed for {len(shown)} submission{'' if len(shown) == 1 else 's'} "
            f"(old → new; {diff_path}):",
            file=say,
        )
        for line in shown:
            print(f"  {line}", file=say)
    people = None if anonymise else roster_people(graded, adj)
    lost = write_csv(out, assignment, graded, fmt=gradebook, digits=digits, people=people)
    if lost:
        print(
            f"seqgrade: {len(lost)} submissions have no email or SIS id for the {gradebook} gradebook: "
            f"{', '.join(lost[:10])}{' …' if len(lost) > 10 else ''}",
            file=sys.stderr,
        )
    n = len(graded)
    print(  # --quiet hides the progress bar only: this line is what a log needs
        f"graded {n} submission{'' if n == 1 else 's'} ({summary(graded)}): {out} (results.json files in "
        f"{results_dir}/)",
        file=say,
    )
    if adj.overrides or adj.term is not None:
        applied = sum(
            len(d["extra_data"].get("adjustments", {}).get("overrides", [])) for _, d in graded
        )
        late_n = sum(
            1
            for _, d in graded
            if ((d["extra_data"].get("adjustments") or {}).get("late") or {}).get("percent")
        )
        print(
            f"adjusted: {applied} override{'' if applied == 1 else 's'} applied, "
            f"{late_n} late penalt{'y' if late_n == 1 else 'ies'}",
            file=say,
        )
    if anonymise:
        print(f"pseudonyms: {beside}_pseudonyms.csv (private: it names every student)", file=say)
    if report is not None:
        from grader.reports.class_report import write_report

        write_report(report, assignment, graded)
        if not quiet:
            from grader.reports.class_report import pages_dir, stats_path

            print(
                f"class report: {report} (students' feedback pages in {pages_dir(report)}/, "
                f"per-question statistics in {stats_path(report)})",
                file=say,
            )
    return 0
