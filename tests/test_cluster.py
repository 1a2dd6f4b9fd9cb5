"""`seqgrade batch --cluster` (issue 22 item 2): the same gradebook as the local pool, a lost
worker costs nothing, workers with another grader are refused, no dask says how to install it.
The local pool's CSV is the authority the cluster's is compared with."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import heldout_harness
import pytest
from conftest import ROOT

from grader.app import batch, cluster
from grader.course import fingerprint, registry

HELDOUT = heldout_harness.folder("a1_word_vectors")  # the cases as files, edits generated
needs_dask = pytest.mark.skipif(not cluster.available(), reason="needs dask[distributed]")


def make_class(tmp_path: Path, n: int) -> Path:
    """n submissions of a1: held-out files, each with one mistake or none."""
    root = tmp_path / "class"
    files = sorted(HELDOUT.glob("*.py"))
    step = max(1, len(files) // n)
    for i, source in enumerate(files[::step][:n]):
        (root / f"s{i:02d}").mkdir(parents=True)
        shutil.copy(source, root / f"s{i:02d}" / "word_vectors.py")
    return root


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_without_dask_cluster_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cluster, "available", lambda: False)
    root = make_class(tmp_path, 1)
    code = batch.run(
        root,
        "a1",
        jobs=1,
        out=tmp_path / "g.csv",
        report=None,
        force=True,
        quiet=True,
        cluster="local:1",
    )
    assert code == 2
    err = capsys.readouterr().err
    assert 'pip install "seqgrade[cluster]"' in err and "--cluster" in err


@pytest.mark.parametrize("address", ["local:0", "local:two", "myhost:8786"])
def test_a_bad_address_is_a_usage_error(address):
    with pytest.raises(cluster.ClusterError, match="--cluster"):
        cluster.parse(address)


def test_addresses_are_read():
    assert cluster.parse("local:3") == 3
    assert cluster.parse("tcp://10.0.0.5:8786") == "tcp://10.0.0.5:8786"


class FakeClient:
    def __init__(self, seen: dict) -> None:
        self.seen = seen

    def wait_for_workers(self, n: int, timeout: float) -> None:
        pass

    def run(self, fn, *args):
        return self.seen


def test_workers_with_another_grader_or_suite_are_refused():
    assignment = registry.load("a1")
    ours = fingerprint.assignment_fingerprints(assignment)
    good = cluster.worker_identity(assignment.id)
    assert cluster.check_workers(FakeClient({"tcp://a:1": good}), assignment, ours) == 1
    other_suite = {**good, "fingerprints": {**good["fingerprints"], "suite": "0" * 64}}
    old_grader = {**good, "grader": "0.0.1"}
    for bad, words in ((other_suite, "suite"), (old_grader, "grader version")):
        with pytest.raises(cluster.ClusterError, match=f"tcp://b:2 .*{words}"):
            cluster.check_workers(
                FakeClient({"tcp://a:1": good, "tcp://b:2": bad}), assignment, ours
            )
    missing = {"grader": good["grader"], "error": "KeyError: 'a1'"}
    with pytest.raises(cluster.ClusterError, match="cannot load"):
        cluster.check_workers(FakeClient({"tcp://c:3": missing}), assignment, ours)


def dask_workers() -> list[int]:
    """The dask worker processes of this process's LocalCluster: its nannies run here and fork
    each worker from multiprocessing's fork server, a child of this process."""
    children: dict[int, list[int]] = {}
    commands: dict[int, bytes] = {}
    for pid in map(int, filter(str.isdigit, os.listdir("/proc"))):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            commands[pid] = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        children.setdefault(int(stat.rpartition(")")[2].split()[1]), []).append(pid)
    servers = [p for p in children.get(os.getpid(), []) if b"forkserver" in commands.get(p, b"")]
    return [w for server in servers for w in children.get(server, [])]


@needs_dask
@pytest.mark.slow
def test_a_local_cluster_batch_with_a_worker_killed_matches_the_local_pool(tmp_path):
    root = make_class(tmp_path, 10)
    assert (
        batch.run(
            root, "a1", jobs=2, out=tmp_path / "pool.csv", report=None, force=True, quiet=True
        )
        == 0
    )
    killed: list[int] = []

    def kill_one_mid_run() -> None:
        results = tmp_path / "dask_results"
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            done = list(results.glob("*.json")) if results.is_dir() else []
            workers = dask_workers()
            if len(done) >= 2 and workers:
                os.kill(workers[0], signal.SIGKILL)
                killed.append(workers[0])
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_one_mid_run, daemon=True)
    killer.start()
    assert (
        batch.run(
            root,
            "a1",
            jobs=2,
            out=tmp_path / "dask.csv",
            report=None,
            force=True,
            quiet=True,
            cluster="local:2",
        )
        == 0
    )
    killer.join(timeout=5)
    assert killed, "no worker was killed: the test did not test anything"
    pool, dask = rows(tmp_path / "pool.csv"), rows(tmp_path / "dask.csv")
    assert len(dask) == 10 and dask == pool  # every submission once, the same numbers
    assert sorted(p.name for p in (tmp_path / "dask_results").glob("*.json")) == sorted(
        p.name for p in (tmp_path / "pool_results").glob("*.json")
    )


@needs_dask
@pytest.mark.slow
def test_the_cli_grades_on_a_local_cluster(tmp_path):
    root = make_class(tmp_path, 3)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "grader",
            "batch",
            str(root),
            "-a",
            "a1",
            "--cluster",
            "local:1",
            "--out",
            str(tmp_path / "g.csv"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert "graded 3 submissions" in done.stdout
    assert len(rows(tmp_path / "g.csv")) == 3


def test_a_submission_whose_task_stopped_two_workers_is_recorded_as_failed(tmp_path, monkeypatch):
    """What the cluster reports (KilledWorker becomes None) lands in the gradebook as the pool's
    `failed twice` row; the other submissions keep their grades."""
    root = make_class(tmp_path, 2)

    def fake_grade_all_on(address, subs, assignment, results_dir, plan, grade_one, record):
        record(0, None)
        record(1, grade_one(subs[1], assignment, results_dir, plan))

    monkeypatch.setattr(cluster, "grade_all_on", fake_grade_all_on)
    out = tmp_path / "g.csv"
    assert (
        batch.run(
            root, "a1", jobs=1, out=out, report=None, force=True, quiet=True, cluster="local:1"
        )
        == 0
    )
    first, second = rows(out)
    pool = tmp_path / "pool.csv"
    assert batch.run(root, "a1", jobs=1, out=pool, report=None, force=True, quiet=True) == 0
    assert second == rows(pool)[1]
    assert float(first["total"]) == 0.0
    stored = (tmp_path / "g_results" / "s00.json").read_text()
    assert "stopped the grading process twice" in stored


def test_submissions_go_in_chunks_that_shrink_toward_the_end():
    assert cluster.chunks(3, 2) == [(0, 1), (1, 1), (2, 1)]  # a small batch: one per task
    plan = cluster.chunks(2000, 2)
    assert [first for first, _ in plan] == [sum(n for _, n in plan[:i]) for i in range(len(plan))]
    assert sum(n for _, n in plan) == 2000  # each submission once, in order
    sizes = [n for _, n in plan]
    assert (
        sizes[0] == cluster.CHUNK and sizes[-8:] == [1] * 8 and sizes == sorted(sizes, reverse=True)
    )


@needs_dask
@pytest.mark.slow
def test_a_chunk_that_stops_two_workers_is_split_and_only_its_killer_fails(tmp_path):
    """Sixteen submissions in chunks of two (then one) on two workers; s01's grading kills its worker
    process every time. Its chunk (with s00) stops two workers, is split, and s01 alone stops
    two more: s01 is recorded as failed (None), every other submission gets its result once."""
    import types

    assignment = registry.load("a1")
    plan = types.SimpleNamespace(shared=fingerprint.assignment_fingerprints(assignment), limits={})
    subs = [types.SimpleNamespace(name=f"s{i:02d}") for i in range(16)]

    def grade_one(sub, assignment, results_dir, plan, judge=None):
        if sub.name == "s01":
            os._exit(1)
        return {"graded": sub.name}

    got: dict[int, list] = {}
    cluster.grade_all_on(
        "local:2",
        subs,
        assignment,
        tmp_path,
        plan,
        grade_one,
        lambda i, r: got.setdefault(i, []).append(r),
    )
    assert sorted(got) == list(range(16)) and all(len(v) == 1 for v in got.values())
    assert cluster.chunks(16, 2)[0] == (0, 2)  # s00 and s01 share the first task
    assert got[1] == [None]
    assert all(got[i] == [{"graded": f"s{i:02d}"}] for i in got if i != 1)


@needs_dask
def test_a_local_cluster_that_fails_to_shut_down_does_not_fail_the_batch(monkeypatch, capsys):
    """distributed's own close can fail after every result is in (on a loaded machine: a nanny
    whose killed worker's new process never started, "can only join a started process"): the
    batch goes on, and stderr says so. An error of the batch itself still propagates."""
    import distributed

    closed = []

    class Cluster:
        def __init__(self, **kwargs):
            pass

        def close(self):
            closed.append(True)
            raise AssertionError("can only join a started process")

        def __enter__(self):
            return self

        def __exit__(self, *exc):  # as distributed's: it closes
            self.close()

    class Client:
        def __init__(self, cluster):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    monkeypatch.setattr(distributed, "LocalCluster", Cluster)
    monkeypatch.setattr(distributed, "Client", Client)
    monkeypatch.setattr(cluster, "_start_forkserver", lambda: "spawn")
    with cluster.connect("local:2") as client:
        assert isinstance(client, Client)
    assert closed == [True]
    err = capsys.readouterr().err
    assert "did not shut down cleanly" in err and "can only join a started process" in err
    with pytest.raises(KeyError), cluster.connect("local:2"):
        raise KeyError("the batch's own error")
    assert closed == [True, True]


@needs_dask
@pytest.mark.slow
def test_without_a_fork_server_the_local_workers_are_spawned(tmp_path, monkeypatch):
    """local:N forks its workers from multiprocessing's fork server; where none can be started
    the workers are spawned as before, and the gradebook is the same."""
    import multiprocessing.forkserver

    def no_server() -> None:
        raise OSError("no fork server here")

    monkeypatch.setattr(multiprocessing.forkserver, "ensure_running", no_server)
    assert cluster._start_forkserver() == "spawn"
    root = make_class(tmp_path, 2)
    common = {"report": None, "force": True, "quiet": True}
    assert batch.run(root, "a1", jobs=1, out=tmp_path / "pool.csv", **common) == 0
    assert batch.run(root, "a1", jobs=1, out=tmp_path / "d.csv", cluster="local:1", **common) == 0
    assert rows(tmp_path / "d.csv") == rows(tmp_path / "pool.csv")
