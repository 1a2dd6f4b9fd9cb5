"""`seqgrade batch --cluster ADDRESS`: each submission is a task on a dask.distributed cluster.

ADDRESS is a running scheduler (`tcp://HOST:8786`) or `local:N` (a LocalCluster of N one-thread
worker processes started here). Each task grades a few submissions (up to CHUNK, fewer toward
the end of the batch) with `batch._grade_one`, in the sandbox as always (warm templates per worker
process), and returns the same results as the local pool; the batch writes the CSV, the report
and the results files the same way. The workers must see ROOT and the results folder at the
same paths (a shared file system) and run the same grader: a worker whose grader version or
suite fingerprints differ from this one's is refused before any task is sent. A worker lost
mid-batch costs nothing (the scheduler runs its task again elsewhere); a task that stops two
workers is split, each of its submissions sent again on its own, and a submission whose own
task stops two workers is recorded as failed.
dask is an optional extra: `pip install "seqgrade[cluster]"`.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from grader import __version__
from grader.course import fingerprint, registry
from grader.questions import Assignment
from grader.sandbox import runtime, zygote

INSTALL_HINT = (
    '--cluster needs dask.distributed, an optional extra: pip install "seqgrade[cluster]" '
    '(or pip install "dask[distributed]")'
)
ALLOWED_FAILURES = 1  # a task is run again after one lost worker; a second loss marks it failed
CHUNK = 8  # submissions per task at most (one per task: 0.68-0.83 of --jobs 2 on two cores)
CONFIG = {
    "distributed.scheduler.allowed-failures": ALLOWED_FAILURES,
    # One task at a time on a one-thread worker (Dask's default queues a second one there): a
    # worker's death then blames only the task it was running, not an innocent one queued behind.
    "distributed.scheduler.worker-saturation": 1.0,
    # The workers' sampling profiler takes the GIL every 10 ms: 40% of a grading task's time.
    "distributed.worker.profile.enabled": False,
    # Bookkeeping a batch never reads, run less often: the event loop's tick (every 20 ms), the
    # dashboard's system monitor (500 ms), the memory monitor (100 ms; the nanny still stops a
    # worker past its memory limit, a second later at most); work stealing has nothing to move
    # while each worker holds one task. Together: the workers' event loops use 40% less CPU.
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.scheduler.work-stealing": False,
}
# What a worker process needs, imported once in the fork server before the workers are forked.
WORKER_MODULES = [
    "distributed.nanny",
    "distributed.worker",
    "grader.app.batch",
    "grader.engine.grade",
    "grader.written.expr.checker",
]


class ClusterError(RuntimeError):
    """The cluster cannot be used (dask missing, bad address, refused workers); said in words."""


def available() -> bool:
    """dask.distributed is installed (found, not imported: that takes 0.3 s, see `connect`)."""
    return importlib.util.find_spec("distributed") is not None


def _start_forkserver() -> str:
    """Start multiprocessing's fork server now, importing WORKER_MODULES, so that it warms up
    while this process imports distributed and starts the scheduler (0.3 s each, side by side);
    a LocalCluster's nannies then fork their workers from it (a spawned worker would import
    distributed and the grader itself: 0.45 s before the first task). The server is a fresh
    single-threaded process, so forking from it is safe where forking this one (with the
    scheduler's threads) would not be. A server already running is reused. The start method
    for the workers: "forkserver", or "spawn" where there is no fork server to be had."""
    try:
        import multiprocessing.forkserver

        multiprocessing.forkserver.set_forkserver_preload(WORKER_MODULES)
        multiprocessing.forkserver.ensure_running()
    except (ImportError, OSError, ValueError):  # no fork server on this platform: spawn them
        return "spawn"
    return "forkserver"


def parse(address: str) -> int | str:
    """`local:N` -> N (workers to start here); `tcp://host:port` (any scheme) -> the address."""
    if address.startswith("local:"):
        count = address.partition(":")[2]
        if not count.isdigit() or int(count) < 1:
            raise ClusterError(f"--cluster {address}: write local:N with N a number of workers ≥ 1")
        return int(count)
    if "://" not in address:
        raise ClusterError(
            f"--cluster {address}: give a scheduler address such as tcp://HOST:8786 or local:N"
        )
    return address


@contextlib.contextmanager
def connect(address: str) -> Iterator[Any]:
    """A distributed.Client on `address` (a LocalCluster for local:N), closed afterwards."""
    if not available():
        raise ClusterError(INSTALL_HINT)
    where = parse(address)
    # First: the fork server warms up while distributed is imported here.
    start = _start_forkserver() if isinstance(where, int) else "spawn"
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError as exc:  # found but broken (a dependency missing)
        raise ClusterError(f"{INSTALL_HINT}; importing it failed: {exc}") from exc

    with dask.config.set({**CONFIG, "distributed.worker.multiprocessing-method": start}):
        if isinstance(where, int):
            cluster = LocalCluster(
                n_workers=where,
                threads_per_worker=1,
                processes=True,
                dashboard_address=None,
                silence_logs=logging.ERROR,
            )
            try:
                with Client(cluster) as client:
                    yield client
            finally:
                _close_local(cluster)
            return
        try:
            client = Client(where, timeout="20s")
        except OSError as exc:
            raise ClusterError(f"cannot reach the scheduler at {where}: {exc}") from exc
        with client:
            yield client


def _close_local(cluster: Any) -> None:
    """Close a local cluster. A failure inside distributed's own shutdown is said on stderr, not
    raised: the batch's results are in by then. (Seen on a loaded machine: a nanny whose worker
    had been killed and whose new process never started cannot be closed, "can only join a
    started process".) The workers are daemon processes of this one and end with it."""
    try:
        cluster.close()
    except Exception as exc:  # noqa: BLE001 - only the shutdown failed, whatever distributed raised
        print(
            f"seqgrade: warning: the local cluster did not shut down cleanly "
            f"({type(exc).__name__}: {exc}); its workers end with this process",
            file=sys.stderr,
        )


def worker_identity(assignment_id: str, limits: dict[str, float] | None = None) -> dict[str, Any]:
    """Run on each worker: its grader version and its own fingerprints of the assignment (with
    the batch's limits, as the batch's own fingerprints are taken)."""
    try:
        loaded = registry.load(assignment_id)
        prints = fingerprint.assignment_fingerprints(loaded, limits).as_dict()
    except Exception as exc:  # noqa: BLE001 - said back as the reason for refusing the worker
        return {"grader": __version__, "error": f"{type(exc).__name__}: {exc}"}
    return {"grader": __version__, "fingerprints": prints}


def check_workers(
    client: Any,
    assignment: Assignment,
    shared: fingerprint.Fingerprints,
    limits: dict[str, float] | None = None,
) -> int:
    """Refuse the cluster when a worker's grader differs from ours; the number of workers."""
    client.wait_for_workers(1, timeout=60)
    seen = client.run(worker_identity, assignment.id, limits)
    ours = {"grader": __version__, "fingerprints": shared.as_dict()}
    bad = []
    for worker, info in sorted(seen.items()):
        if info.get("error"):
            bad.append(f"{worker} cannot load {assignment.id} ({info['error']})")
            continue
        theirs = fingerprint.Fingerprints.from_dict(info.get("fingerprints"))
        changed = theirs.changed(shared) if theirs is not None else ["all"]
        if info.get("grader") != ours["grader"]:
            changed = ["grader version", *changed]
        if changed:
            bad.append(f"{worker} ({', '.join(dict.fromkeys(changed))} differ)")
    if bad:
        raise ClusterError(
            "refusing workers whose grader or suite differs from this one's: "
            + "; ".join(bad)
            + ". Install the same seqgrade on every worker."
        )
    return len(seen)


def prepare_worker(preload: list[str]) -> None:
    """Run on each worker before its first task: the engine imported, the warm template started
    (from the worker's main thread, which lives as long as the worker)."""
    import grader.engine.grade  # noqa: F401 - imported once here, not inside the first task

    zygote.enable_as_wanted()
    zygote.template_for(preload)


def grade_task(
    grade_one: Callable[..., Any], sub: Any, assignment: Assignment, results_dir: Path, plan: Any
) -> Any:
    """One submission, on a worker: exactly what a local pool process does with it
    (`grade_one` is `batch._grade_one`, passed in: this module does not import the batch)."""
    from grader.app import pool_process

    with pool_process.keeping() as checker:
        return grade_one(sub, assignment, results_dir, plan, checker)


def grade_chunk(
    grade_one: Callable[..., Any],
    subs: list[Any],
    assignment: Assignment,
    results_dir: Path,
    plan: Any,
) -> list[Any]:
    """A few submissions in one task (a task costs the scheduler, the client and the worker's
    event loop some milliseconds each): each one's result, or the exception it raised."""
    out: list[Any] = []
    for sub in subs:
        try:
            out.append(grade_task(grade_one, sub, assignment, results_dir, plan))
        except Exception as exc:  # noqa: BLE001 - that submission's row, not the chunk's
            out.append(exc)
    return out


def chunks(submissions: int, workers: int) -> list[tuple[int, int]]:
    """(first, count) per task: up to CHUNK submissions while plenty are left, fewer toward the
    end (each task at most a quarter of a worker's share of what is left), one at a time at
    the very end, so that the workers finish together."""
    out, first = [], 0
    while first < submissions:
        count = max(1, min(CHUNK, (submissions - first) // (4 * max(1, workers))))
        out.append((first, count))
        first += count
    return out


def grade_all_on(
    address: str,
    subs: list[Any],
    assignment: Assignment,
    results_dir: Path,
    plan: Any,
    grade_one: Callable[..., Any],
    record: Callable[[int, Any], None],
) -> None:
    """Send the submissions as tasks (`chunks`); `record(i, result)` as results stream back: what
    `grade_one` returned, the exception it raised, or None when its task stopped two workers."""
    with connect(address) as client:
        workers = check_workers(client, assignment, plan.shared, dict(plan.limits))
        client.run(prepare_worker, list(runtime.preload(assignment.preload_torch)))
        from distributed import KilledWorker, as_completed

        batch_id = uuid.uuid4().hex[:8]

        def send(first: int, count: int) -> Any:
            return client.submit(
                grade_chunk,
                grade_one,
                subs[first : first + count],
                assignment,  # by value: data scattered to workers is lost with them
                results_dir,
                plan,
                pure=False,
                key=f"seqgrade-{batch_id}-{first}-{count}",
            )

        futures = {send(i, n): (i, n) for i, n in chunks(len(subs), workers)}
        pending = as_completed(futures)
        for future in pending:
            first, count = futures[future]
            try:
                results = future.result()
            except KilledWorker:
                if count > 1:  # one of them stopped two workers: each goes again on its own
                    for i in range(first, first + count):
                        again = send(i, 1)
                        futures[again] = (i, 1)
                        pending.add(again)
                    continue
                results = [None]
            except Exception as exc:  # noqa: BLE001 - the chunk's rows, not the batch
                results = [exc] * count
            for offset, done in enumerate(results):
                record(first + offset, done)
