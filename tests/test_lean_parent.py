"""Speed by construction: the grader process itself never imports torch or sympy.

The student's worker imports torch when the submission (or a5) needs it, and the expression
judge evaluates answers without sympy on the common path; the grader only compares plain
arrays. (Timings live in benchmarks/bench.py; this checks the property that makes them.)
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from grader.course import registry

CODE = """
import json, sys
from grader.course import registry
from grader.course.content import solution_dir
from grader.engine.grade import grade_submission
a = registry.load(sys.argv[1])
report = grade_submission(solution_dir(a.id), a)
print(json.dumps({"score": report.score, "torch": "torch" in sys.modules, "sympy": "sympy" in sys.modules}))
"""


@pytest.mark.parametrize("aid", registry.ASSIGNMENT_IDS)
def test_grading_a_solution_imports_neither_torch_nor_sympy_in_the_grader(aid):
    out = subprocess.run(
        [sys.executable, "-c", CODE, aid], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"score": 100.0, "torch": False, "sympy": False}


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
names = ("unittest", "grader.written.derivation", "grader.written.expr.parser")
print(json.dumps({n: n in sys.modules for n in names}))
"""


@pytest.mark.parametrize("aid", ["a2_rnn_bptt", "a6_pretraining_scale"])
def test_a_code_only_grade_without_instructor_modules_imports_no_unittest_nor_derivations(aid):
    """Issue 37: what a grade does not use it does not import (the derivation checker and its
    expression parser are for answers.toml's derivations; unittest for instructor modules)."""
    out = subprocess.run(
        [sys.executable, "-c", CODE_ONLY, aid], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-2000:]
    imported = json.loads(out.stdout.strip().splitlines()[-1])
    assert not any(imported.values()), imported
