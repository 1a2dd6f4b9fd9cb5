"""Shared fixtures, and the test tiers.

`python -m pytest -m "not slow"` is the developer loop (about a minute on two cores); the
full suite (`python -m pytest`, what CI runs) adds the held-out collections, the container and
packaging tests, nested pytest runs, the demo, batches, `seqgrade check`, regrades, warm
workers, the Dask cluster and the validity benchmarks' targets.
"""

from __future__ import annotations

import dataclasses
import os
import sys
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
from grader.course import registry  # noqa: E402
from grader.engine.grade import grade_submission  # noqa: E402
from grader.questions import Assignment, CodeQuestion  # noqa: E402
from grader.report import GradeReport  # noqa: E402

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
        for rel, content in files.items():
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
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
