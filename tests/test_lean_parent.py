"""Speed by construction: the grader process itself never imports torch or sympy.

The student's worker imports torch when the submission (or a5) needs it, and the expression
judge evaluates answers without sympy on the common path; the grader only compares plain
arrays. (Timings live in benchmarks/bench.py; this checks the property that makes them.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.course import registry
from grader.sandbox.runtime import ONE_THREAD

# Every assignment graded in one process, in turn: a module once imported stays in
# `sys.modules`, so what holds after each grade holds for that grade alone (one interpreter and
# one grader start instead of seven).
CODE = """
import json, sys
from grader.course import registry
from grader.course.content import solution_dir
from grader.engine.grade import grade_submission
for aid in sys.argv[1:]:
    a = registry.load(aid)
    report = grade_submission(solution_dir(a.id), a)
    print(json.dumps({"aid": aid, "score": report.score, "torch": "torch" in sys.modules, "sympy": "sympy" in sys.modules}))
"""


@pytest.fixture(scope="module")
def graded_in_turn() -> dict[str, dict]:
    out = subprocess.run(
        [sys.executable, "-c", CODE, *registry.ASSIGNMENT_IDS],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {line.pop("aid"): line for line in lines}


@pytest.mark.parametrize("aid", registry.ASSIGNMENT_IDS)
def test_grading_a_solution_imports_neither_torch_nor_sympy_in_the_grader(graded_in_turn, aid):
    assert graded_in_turn[aid] == {"score": 100.0, "torch": False, "sympy": False}


CODE_ONLY = """
import json, shutil, sys, tempfile
from pathlib import Path
from grader.course import registry
from grader.course.content import solution_dir
from grader.engine.grade import grade_submission
a = registry.load(sys.argv[1])
sub = Path(tempfile.mkdtemp())
shutil.copy(solution_dir(a.id) / a.code_file, sub / a.code_file)
report = grade_submission(sub, a)
names = ("unittest", "grader.written.derivation", "grader.written.expr.parser", "grader.engine.notebook")
print(json.dumps({n: n in sys.modules for n in names}))
"""


@pytest.mark.parametrize("aid", ["a2_rnn_bptt", "a6_pretraining_scale"])
def test_a_code_only_grade_without_instructor_modules_imports_no_unittest_nor_derivations(aid):
    """Issue 37: what a grade does not use it does not import (the derivation checker and its
    expression parser are for answers.toml's derivations; unittest for instructor modules; the
    notebook module for a submission that holds a notebook)."""
    out = subprocess.run(
        [sys.executable, "-c", CODE_ONLY, aid], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    imported = json.loads(out.stdout.strip().splitlines()[-1])
    assert not any(imported.values()), imported


WRITTEN_STACK = """
import importlib, json, sys
from grader.engine import grade
for name in grade._WRITTEN_MODULES:
    before = set(sys.modules)
    importlib.import_module(name)
    assert name not in before, name  # each one loads something of its own
before = set(sys.modules)
grade._written_stack()
print(json.dumps(sorted(m for m in set(sys.modules) - before if m.startswith("grader"))))
"""


def test_the_written_modules_loaded_one_by_one_are_the_whole_written_stack():
    """The grade loads the written part module by module while the sandbox is built, asking for
    the student's module as soon as the sandbox is up (`grade._WRITTEN_MODULES`): the list
    holds everything the written part's reader and grader import of the grader, in an order
    where each still has something of its own to load."""
    out = subprocess.run(
        [sys.executable, "-c", WRITTEN_STACK], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


THREADS = """
import json, os, sys
from grader.app import cli, gradescope
from grader.sandbox.runtime import ONE_THREAD

def main():
    import numpy  # noqa: F401 - what a grade loads, with the environment the entry left
    print(json.dumps({"threads": len(os.listdir("/proc/self/task")),
                      "env": {n: os.environ.get(n) for n in ONE_THREAD}}))
    return 0

cli.main = gradescope.main = main
sys.argv = ["seqgrade", "grade"]
sys.exit(cli.run() if "{entry}" == "seqgrade" else gradescope.run())
"""
ENTRIES = ("seqgrade", "gradescope")  # `seqgrade` (cli.run) and the container's entry point

PLAIN = "import os, numpy; print(len(os.listdir('/proc/self/task')))"


def _run(code: str, **extra_env: str) -> str:
    """`code` in a fresh interpreter whose environment sets no thread counts but `extra_env`."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_NUM_THREADS")}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, **extra_env},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


def _openblas() -> bool:
    import numpy

    try:
        return "openblas" in numpy.__config__.CONFIG["Build Dependencies"]["blas"]["name"]
    except (AttributeError, KeyError, TypeError):
        return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc")
@pytest.mark.parametrize("entry", ENTRIES)
def test_the_grading_process_loads_numpy_on_one_thread(entry):
    """`seqgrade` and the Gradescope entry point run BLAS and OpenMP on one thread
    (runtime.ONE_THREAD) unless their caller chose: OpenBLAS's pool, one spinning thread per
    core, made the grader's numpy import and its warm template's, side by side on two cores,
    take about twice as long."""
    got = json.loads(_run(THREADS.replace("{entry}", entry)))
    assert got == {"threads": 1, "env": ONE_THREAD}
    if (os.cpu_count() or 1) > 1 and _openblas():  # the control: without it, a pool starts
        assert int(_run(PLAIN)) > 1


@pytest.mark.parametrize("entry", ENTRIES)
def test_a_callers_own_thread_setting_is_kept(entry):
    env = json.loads(_run(THREADS.replace("{entry}", entry), OPENBLAS_NUM_THREADS="2"))["env"]
    assert env == {**ONE_THREAD, "OPENBLAS_NUM_THREADS": "2"}
