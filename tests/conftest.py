"""Shared fixtures, and the test tiers.

`python -m pytest -m "not slow"` is the developer loop (about a minute on two cores); the
full suite (`python -m pytest`, what CI runs) adds the held-out collections, the container and
packaging tests, nested pytest runs, the demo, batches, `seqgrade check`, regrades, warm
workers, the Dask cluster and the validity benchmarks' targets.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sys
import textwrap
import time
from collections.abc import Callable, Mapping
from pathlib import Path

# Bytecode caches for the tests and every process they start, as Python writes them by default.
# An environment that sets PYTHONDONTWRITEBYTECODE (some CI images do) makes each of the suite's
# hundreds of processes (CLI runs, batches, nested pytest, containers) compile the grader from
# source again, and pytest rewrite every test module in every worker. Student workers are
# unaffected: the sandbox gives them an environment of its own, which writes no caches.
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
    sys.dont_write_bytecode = False

import pytest  # noqa: E402

from grader import sandbox  # noqa: E402
from grader.course import content, registry  # noqa: E402
from grader.engine.grade import grade_submission  # noqa: E402
from grader.questions import Assignment, CodeQuestion  # noqa: E402
from grader.records import GradeReport  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
FAST = sandbox.Limits(call_seconds=10.0, submission_seconds=120.0)
# Modules that are slow as a whole: whole-collection gradings, bundles, nested runs, batches.
SLOW_MODULES = {
    "test_heldout",
    "test_packaging",
    "test_demo",
    "test_batch",
    "test_gradescope",
    "test_notebook",
    "test_public_tests",
    "test_validity_a1a3a6",
    "test_validity_a2a5",
    "test_validity_a4",
    "test_check",
    "test_regrade",
    "test_sandbox_containment",
    "test_warm",
    "test_cluster",
    "test_gradebook",
    "test_mutation_targets",
}


def pytest_configure(config: pytest.Config) -> None:
    """Warm sandbox templates for the tests' gradings, as a batch has them (each grading still
    gets its own forked, isolated worker; tests/test_warm.py holds warm to cold).
    `SEQGRADE_WARM=0 python -m pytest` runs every grading cold."""
    from grader.sandbox import zygote

    zygote.enable_as_wanted()


# The longest modules (measured on two cores), in the order they start: the files are shared
# out one at a time (pyproject: --dist loadfile --no-loadscope-reorder), so with the long ones
# first the workers finish together instead of one waiting on a long file dealt out last.
LONGEST_FIRST = (
    "test_packaging",
    "test_gradescope",
    "test_warm",
    "test_notebook",
    "test_mutation_targets",
    "test_heldout",
    "test_hostile",
    "test_sandbox_containment",
    "test_validity_a4",
    "test_sandbox_spawn",
    "test_batch",
    "test_validity_a2a5",
    "test_assignments",
    "test_security_shortcuts",
    "test_a4_transformer",
    "test_regrade",
    "test_public_tests",
    "test_cluster",
    "test_robustness",
    "test_engine",
    "test_check",
)


def _module(item: pytest.Item) -> str:
    return item.module.__name__.rsplit(".", 1)[-1] if item.module is not None else ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _module(item) in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
    first = {name: rank for rank, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: first.get(_module(item), len(first)))  # stable: files stay whole


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: unknown without it
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: one worker more than the cores, since many tests mostly wait (a sandbox's
    deadline, a nested grader, pip) and a core would otherwise sit idle meanwhile."""
    return len(os.sched_getaffinity(0)) + 1


def code_questions(assignment: Assignment | str) -> list[CodeQuestion]:
    """The code questions of an assignment (an Assignment or its id)."""
    a = registry.load(assignment) if isinstance(assignment, str) else assignment
    return [q for q in a.questions if isinstance(q, CodeQuestion)]


def only(assignment: Assignment, *qids: str) -> Assignment:
    """The assignment reduced to the named questions."""
    return dataclasses.replace(assignment, questions=tuple(assignment.question(q) for q in qids))


@pytest.fixture
def submit(tmp_path: Path) -> Callable[..., Path]:
    """submit({"rnn.py": source, "answers.toml": text}, name="sub") -> a submission folder."""
    counter = iter(range(10_000))

    def make(files: Mapping[str, str | bytes], name: str | None = None) -> Path:
        folder = tmp_path / (name or f"sub{next(counter)}")
        folder.mkdir()
        for rel, data in files.items():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(data, bytes):
                target.write_bytes(data)
            else:
                target.write_text(data)
        return folder

    return make


@pytest.fixture
def grade_files(submit) -> Callable[..., GradeReport]:
    """grade_files("a2", {"rnn.py": src}, student=None, questions=None) -> GradeReport."""

    def grade(
        assignment_id: str,
        files: Mapping[str, str | bytes],
        *,
        student: str | None = None,
        questions: tuple[str, ...] | None = None,
    ) -> GradeReport:
        a = registry.load(assignment_id)
        if questions:
            a = only(a, *questions)
        return grade_submission(submit(files), a, student=student, limits=FAST)

    return grade


# ------------------------------------------------------------------ the in-sandbox echo worker
# One script for every spawn-level test (test_sandbox_spawn, test_sandbox_containment, test_warm):
# it runs each line's {"code": ...} in one namespace and replies {"ok", "result": repr(result)}
# or {"ok": False, "error"}. It holds only the wire (fds 0-2) and its two protocol descriptors:
# test_warm counts a worker's descriptors, so nothing else stays open (the /dev/null it reads is
# dup'ed onto fd 0 and closed). `warm_numpy` says whether numpy was there before it ran (a warm
# template's import, not its own); the submission's folder (the cwd) is importable, as -I leaves
# the script's folder out.
ECHO_WORKER = textwrap.dedent("""
    import json, os, sys
    warm_numpy = "numpy" in sys.modules
    proto_in = os.fdopen(os.dup(0), "rb", buffering=0)
    proto_out = os.fdopen(os.dup(1), "wb", buffering=0)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.dup2(2, 1)
    sys.stdin = os.fdopen(0, "r", closefd=False)
    sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
    sys.path.insert(0, os.getcwd())
    buf, ns = b"", {"warm_numpy": warm_numpy}
    while True:
        chunk = proto_in.read(1 << 16)
        if not chunk:
            break
        buf += chunk
        while b"\\n" in buf:
            line, buf = buf.split(b"\\n", 1)
            try:
                ns["result"] = None
                exec(json.loads(line)["code"], ns)
                reply = {"ok": True, "result": repr(ns.get("result"))}
            except BaseException as exc:
                reply = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            proto_out.write(json.dumps(reply).encode() + b"\\n")
""")


@pytest.fixture
def worker_program(tmp_path: Path) -> Path:
    """The echo worker written to a file (its name, echo_worker.py, shows in the worker's argv)."""
    path = tmp_path / "echo_worker.py"
    path.write_text(ECHO_WORKER)
    return path


class Worker:
    """A spawned echo worker with `ask(code)`; killed at the end of the test."""

    def __init__(self, program: Path, **kw) -> None:
        files = kw.pop("files", {"student.py": b"x = 1\n"})
        hide = [*content.grader_trees(), *kw.pop("hide", [])]  # as the engine passes them
        self.proc = sandbox.spawn(program, files, hide=hide, **kw)

    def send(self, code: str) -> None:
        self.proc.stdin.write(json.dumps({"code": textwrap.dedent(code)}).encode() + b"\n")
        self.proc.stdin.flush()

    def ask(self, code: str, timeout: float = 20.0) -> dict:
        self.send(code)
        return json.loads(self.proc.readline(timeout))

    def value(self, code: str, timeout: float = 20.0):
        reply = self.ask(code, timeout)
        assert reply["ok"], reply
        return eval(reply["result"])  # our own worker's repr of plain data


@pytest.fixture
def spawn(worker_program):
    """spawn(**sandbox.spawn's keywords) -> a Worker; every one is killed at the end."""
    started: list[Worker] = []

    def start(**kw) -> Worker:
        started.append(Worker(worker_program, **kw))
        return started[-1]

    yield start
    for w in started:
        w.proc.kill()


def processes_with(token: str) -> list[int]:
    """Host pids whose command line holds `token`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if token.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
    return found


def wait_until(predicate, timeout: float = 5.0) -> bool:
    """Poll `predicate` every 50 ms until it holds or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
