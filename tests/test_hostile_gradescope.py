"""The hostile submissions through the Gradescope path: the a1 autograder bundle installed with
its own setup.sh into a fake /autograder, each submission graded by run_autograder.

The same files as tests/test_hostile.py (tests/hostile/*.py appended to the solution), with
the container's own limits: the verdict is the honest one (only the questions a file touched
are lost), results.json is valid, nothing the submission started survives, nothing was
written outside the sandbox and nobody heard from it. Then the file attacks of
tests/test_hostile_files.py that reach a container (Gradescope unpacks a zip into the
submission folder): decoy notebooks cost the grader no memory.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from conftest import processes_with, wait_until
from test_gradescope import Container
from test_hostile import (
    EXPECTED,
    LIMITS,
    Listener,
    folder_digest,
    make_submission,
)

from grader import sandbox
from grader.course import registry
from grader.course.content import solution_dir

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not sandbox.can_isolate(), reason="hostile code is only run inside the namespace sandbox"
    ),
]

A1 = "a1_word_vectors"
MiB = 1 << 20
NO_METADATA = None  # the default variant: the numbers of the solution's own answers.toml
GRADER_PEAK_BOUND = 160 * MiB  # as in tests/test_hostile_files.py: the grader's own peak


@pytest.fixture(scope="module")
def container(tmp_path_factory) -> Container:
    """The bundle carries a term whose `[limits]` are tests/test_hostile.py's: the same verdicts,
    and a hanging call spins a core for 3 s instead of the default 10."""
    staff = tmp_path_factory.mktemp("staff")
    (staff / "term.toml").write_text(
        "[limits]\n"
        f"call_seconds = {LIMITS.call_seconds}\n"
        f"submission_seconds = {LIMITS.submission_seconds}\n"
        f"memory_mib = {LIMITS.memory_bytes >> 20}\n"
    )
    return Container(tmp_path_factory.mktemp("a1"), A1, staff / "term.toml")


@pytest.fixture
def listener():
    token = uuid.uuid4().hex
    lis = Listener(token)
    lis.token = token
    yield lis
    lis.close()


def scores(data: dict) -> dict[str, float]:
    ids = {q.id for q in registry.load(A1).questions}
    return {
        t["extra_data"]["question"]: t["score"]
        for t in data["tests"]
        if t["extra_data"].get("question") in ids
    }


@pytest.fixture(scope="module")
def honest(container, tmp_path_factory) -> dict[str, float]:
    """The solution's own verdict in the container: full marks."""
    tmp = tmp_path_factory.mktemp("honest")
    lis = Listener(uuid.uuid4().hex)
    try:
        folder = make_submission(tmp, None, lis, tmp / "marker")
        data, _ = container.run({p.name: p.read_text() for p in folder.iterdir()}, NO_METADATA)
    finally:
        lis.close()
    full = {q.id: float(q.points) for q in registry.load(A1).questions}
    assert scores(data) == full
    return scores(data)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_hostile_submission_is_contained_by_run_autograder(
    name, container, honest, listener, tmp_path
):
    marker = Path("/tmp") / f"seqgrade-hostile-{listener.token}"
    folder = make_submission(tmp_path, name, listener, marker)
    before = folder_digest(folder)
    lost, words = EXPECTED[name]
    data, _ = container.run({p.name: p.read_text() for p in folder.iterdir()}, NO_METADATA)
    assert scores(data) == {q: (0.0 if q in lost else s) for q, s in honest.items()}
    if name.startswith("hang"):  # stopped at the bundled term's limit, not the default
        assert all(word in json.dumps(data) for word in words), (words, data)
    assert wait_until(lambda: processes_with(listener.token) == [], 5.0), processes_with(
        listener.token
    )
    assert not marker.exists()
    assert folder_digest(folder) == before
    assert listener.heard == []


PEAK = textwrap.dedent("""
    import resource, subprocess, sys
    done = subprocess.run(sys.argv[1:], capture_output=True, text=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    print(f"{done.returncode} {peak}")
""")


def test_decoy_notebooks_in_the_submission_folder_cost_the_grader_no_memory(container):
    """Four 150 MiB notebooks beside the right code, as Gradescope unpacks a zip: the grader's
    peak (run_autograder's largest process) stays within the bound, and the code keeps its marks."""
    sub = container.root / "submission"
    files = {n: (solution_dir(A1) / n).read_text() for n in ("word_vectors.py", "answers.toml")}
    container.run(files, NO_METADATA)  # the folder in place, graded once
    for i in range(4):
        with open(sub / f"scratch_{i}.ipynb", "wb") as fh:
            fh.truncate(150 * MiB)  # a sparse file: 150 MiB of zeros that take no disk
    done = subprocess.run(
        [sys.executable, "-c", PEAK, "bash", str(container.root / "run_autograder")],
        env=container.env,
        cwd=container.root,
        capture_output=True,
        text=True,
        timeout=900,
    )
    status, peak = map(int, done.stdout.split())
    data = json.loads((container.root / "results" / "results.json").read_text())
    print(f"run_autograder's peak {peak / MiB:.0f} MiB")
    assert status == 0
    assert scores(data) == {q.id: float(q.points) for q in registry.load(A1).questions}
    assert peak < GRADER_PEAK_BOUND
