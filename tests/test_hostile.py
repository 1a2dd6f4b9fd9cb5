"""Hostile submissions are contained, end to end: the engine, the sandbox, a1_word_vectors.

Each file in tests/hostile/ is appended to the instructor's solution, so the functions it
does not touch are right. For each, grading must give the honest verdict (the hostile
functions lose what they touched, every other question keeps its marks), finish within the
time budget plus a margin, leave no process behind, write nothing outside the scratch folder
(the marker path, the results file, the submission folder) and make no connection.
"""

from __future__ import annotations

import hashlib
import json
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from conftest import processes_with, wait_until

from grader import sandbox
from grader.course import registry
from grader.course.content import solution_dir
from grader.engine.grade import grade_submission
from grader.records import GradeReport

pytestmark = pytest.mark.skipif(
    not sandbox.can_isolate(), reason="hostile code is only run inside the namespace sandbox (root)"
)

HOSTILE = Path(__file__).parent / "hostile"
ASSIGNMENT_ID = "a1_word_vectors"
CODE_QUESTIONS = tuple(q.id for q in registry.load(ASSIGNMENT_ID).questions if q.kind == "code")
LIMITS = sandbox.Limits(call_seconds=3.0, submission_seconds=60.0, memory_bytes=1 << 30)
MARGIN = 15.0  # seconds on top of the submission budget (spawns, preloads, the written part)

# file -> (the questions it must lose, the words the report must show)
EXPECTED: dict[str, tuple[set[str], tuple[str, ...]]] = {
    "forge.py": (set(), ()),
    "snoop.py": ({"a1.glove_loss", "a1.analogy"}, ("hostile: found 0 hidden things",)),
    "hang.py": ({"a1.noise", "a1.glove_loss", "a1.analogy"}, ("stopped after 3 s",)),
    "hang_at_import.py": (
        set(CODE_QUESTIONS),
        ("did not finish within 3 s", "one top-level statement at a time with time limits"),
    ),
    "leave_exit.py": (
        {"a1.naive_softmax", "a1.noise", "a1.glove_loss", "a1.analogy"},
        ("SystemExit", "KeyboardInterrupt", "exited with status 0", "SIGSEGV (segmentation fault)"),
    ),
    "leave_signal.py": ({"a1.neg_sampling", "a1.glove_loss"}, ("killed by signal SIGKILL",)),
    "exhaust.py": (
        {"a1.naive_softmax", "a1.neg_sampling", "a1.glove_loss", "a1.analogy"},
        ("memory limit", "can't start new thread", "File too large", "more output dropped"),
    ),
    "outlive.py": (set(), ()),
    "lie.py": (
        {"a1.naive_softmax", "a1.neg_sampling", "a1.noise", "a1.glove_loss", "a1.analogy"},
        (),
    ),
    "talk.py": (set(), ()),
}


def test_every_hostile_file_has_an_expected_verdict():
    assert {p.name for p in HOSTILE.glob("*.py")} == set(EXPECTED)


# --------------------------------------------------------------------------- fixtures


class Listener:
    """TCP and UDP on one localhost port, and an abstract unix socket; records anything received."""

    def __init__(self, token: str) -> None:
        self.tcp = socket.socket()
        self.tcp.bind(("127.0.0.1", 0))
        self.tcp.listen()
        self.tcp.settimeout(0.1)
        self.port = self.tcp.getsockname()[1]
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("127.0.0.1", self.port))
        self.udp.settimeout(0.1)
        self.unix = socket.socket(socket.AF_UNIX)
        self.unix.bind(f"\0seqgrade-{token}")
        self.unix.listen()
        self.unix.settimeout(0.1)
        self.heard: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            for name, sock in (("tcp", self.tcp), ("udp", self.udp), ("unix", self.unix)):
                try:
                    if name == "udp":
                        self.heard.append(f"udp: {sock.recv(100)!r}")
                    else:
                        conn, _ = sock.accept()
                        self.heard.append(f"{name} connection")
                        conn.close()
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join()
        for sock in (self.tcp, self.udp, self.unix):
            sock.close()


@pytest.fixture
def listener():
    token = uuid.uuid4().hex
    lis = Listener(token)
    lis.token = token
    yield lis
    lis.close()


def folder_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        h.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


def make_submission(tmp_path: Path, name: str | None, listener: Listener, marker: Path) -> Path:
    """The solution with the hostile part appended (placeholders filled), and honest written answers."""
    folder = tmp_path / "submission"
    folder.mkdir()
    source = (solution_dir(ASSIGNMENT_ID) / "word_vectors.py").read_text()
    if name is not None:
        hostile = (HOSTILE / name).read_text()
        hostile = (
            hostile.replace("__TOKEN__", listener.token)
            .replace("__PORT__", str(listener.port))
            .replace("__MARKER__", str(marker))
        )
        source += "\n\n" + hostile
    (folder / "word_vectors.py").write_text(source)
    (folder / "answers.toml").write_bytes(
        (solution_dir(ASSIGNMENT_ID) / "answers.toml").read_bytes()
    )
    return folder


def scores(report: GradeReport) -> dict[str, float]:
    return {q.question_id: q.score for q in report.questions}


def report_words(report: GradeReport) -> str:
    return "\n".join(
        [*(q.feedback for q in report.questions), *report.events, report.student_output]
    )


@pytest.fixture(scope="module")
def honest(tmp_path_factory) -> dict[str, float]:
    """The verdict of the solution itself, graded the same way."""
    tmp = tmp_path_factory.mktemp("honest")
    lis = Listener(uuid.uuid4().hex)
    lis.token = "unused"
    try:
        folder = make_submission(tmp, None, lis, tmp / "marker")
        report = grade_submission(folder, registry.load(ASSIGNMENT_ID), limits=LIMITS)
    finally:
        lis.close()
    result = scores(report)
    assert report.score == report.max_score, [
        q.feedback for q in report.questions if q.score < q.max_score
    ]
    return result


# --------------------------------------------------------------------------- the tests


# The developer loop keeps one (snoop.py: it looks for the hidden material and the grader's
# trees, and finds none); the full suite grades every one.
QUICK_HOSTILE = "snoop.py"


@pytest.mark.parametrize(
    "name",
    [
        n if n == QUICK_HOSTILE else pytest.param(n, marks=pytest.mark.slow)
        for n in sorted(EXPECTED)
    ],
)
def test_hostile_submission_is_contained(name, tmp_path, listener, honest):
    marker = Path("/tmp") / f"seqgrade-hostile-{listener.token}"
    folder = make_submission(tmp_path, name, listener, marker)
    before = folder_digest(folder)
    lost, words = EXPECTED[name]

    started = time.monotonic()
    report = grade_submission(folder, registry.load(ASSIGNMENT_ID), limits=LIMITS)
    elapsed = time.monotonic() - started

    assert report.isolated and not report.grader_error
    expected = {qid: (0.0 if qid in lost else score) for qid, score in honest.items()}
    assert scores(report) == expected, report_words(report)
    text = report_words(report)
    for word in words:
        assert word in text, (word, text[-3000:])
    assert elapsed < LIMITS.submission_seconds + MARGIN
    # nothing outlives grading, nothing was written outside the scratch folder, nobody heard a thing
    assert wait_until(lambda: processes_with(listener.token) == [], 3.0), processes_with(
        listener.token
    )
    time.sleep(0.5)  # give anything that survived a chance to act
    assert not marker.exists()
    assert folder_digest(folder) == before
    assert listener.heard == []
    assert len(report.student_output) < 2 * LIMITS.output_bytes


@pytest.mark.slow
def test_forged_results_never_reach_the_results_file(tmp_path, listener):
    """Through the CLI, so that --results is on the grader's command line for the submission to find."""
    marker = Path("/tmp") / f"seqgrade-hostile-{listener.token}"
    outcomes = {}
    for label, name in (("honest", None), ("hostile", "forge.py")):
        run = tmp_path / label
        run.mkdir()
        folder = make_submission(run, name, listener, marker)
        results = run / "results" / "results.json"
        results.parent.mkdir()
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "grader",
                "grade",
                str(folder),
                "-a",
                "a1",
                "--results",
                str(results),
                "--format",
                "json",
            ],
            cwd=run,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        time.sleep(1.5)  # the detached forger had its chance to write after grading
        data = json.loads(results.read_text())
        outcomes[label] = (data["score"], [(t["name"], t["score"]) for t in data["tests"]])
        assert sorted(p.name for p in results.parent.iterdir()) == ["results.json"]
        assert not (run / "results.json").exists() and not (folder / "results.json").exists()
    assert outcomes["hostile"] == outcomes["honest"]
    assert outcomes["honest"][0] == 100
    assert not marker.exists()
    assert processes_with(listener.token) == []
    assert listener.heard == []
