"""A submission whose code lives in the student's own package beside the code file.

Students who build on minbpe or their own library submit `word_vectors.py` with a folder such as
`minbpe/` or `mylib/` next to it. The package's modules are read with the code file, shipped to
the worker and imported there as the student's own code; the shortcut scan reads the module a
graded function is imported from, inside a package too, and names that file.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

import pytest
from test_security_shortcuts import CLIP_IN_A_HELPER_MODULE

from grader import sandbox
from grader.course import registry
from grader.course.content import solution_dir
from grader.engine.grade import grade_submission
from grader.engine.locate import locate
from grader.questions import CodeQuestion

LIMITS = sandbox.Limits(call_seconds=20.0, submission_seconds=180.0)

CLIP_WITH_TORCH = CLIP_IN_A_HELPER_MODULE  # the same module, here inside a package


def _code_only(aid: str):
    a = registry.load(aid)
    return dataclasses.replace(
        a, questions=tuple(q for q in a.questions if isinstance(q, CodeQuestion))
    )


def _package(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return folder


def _clip_graded(tmp_path: Path, code: Callable[[str], str], module: str):
    """a2's clipping question graded on the solution's code file (as `code` rewrites it) with
    `module` as `mylib/clip.py`: its one result."""
    a = registry.load("a2")
    q = a.question("a2.clip_by_global_norm")
    solution = (solution_dir(a.id) / a.code_file).read_text()
    sub = _package(
        tmp_path / "sub",
        {a.code_file: code(solution), "mylib/__init__.py": "", "mylib/clip.py": module},
    )
    report = grade_submission(sub, dataclasses.replace(a, questions=(q,)), limits=LIMITS)
    (r,) = report.questions
    return r


def test_the_packages_modules_are_read_with_the_code_file_and_nothing_else_below(tmp_path):
    sub = _package(
        tmp_path / "sub",
        {
            "word_vectors.py": "from mylib.core import *\n",
            "mylib/__init__.py": "",
            "mylib/core.py": "X = 1\n",
            "mylib/notes.txt": "not code\n",
            "mylib/answers.toml": "# not the submission's answers\n",
            "helpers.py": "Y = 2\n",
        },
    )
    located = locate(sub, ("word_vectors.py", "answers.toml"))
    assert set(located.files) == {
        "word_vectors.py",
        "helpers.py",
        "mylib/__init__.py",
        "mylib/core.py",
    }


@pytest.mark.parametrize("star", [True, False], ids=["star-import", "named-import"])
def test_code_in_a_package_beside_the_code_file_gets_full_marks(tmp_path, star):
    a = _code_only("a1")
    solution = (solution_dir(a.id) / a.code_file).read_text()
    names = sorted(q.function for q in a.questions)
    head = (
        "from mylib.core import *\n"
        if star
        else "".join(f"from mylib.core import {n}\n" for n in names)
    )
    sub = _package(
        tmp_path / "sub",
        {a.code_file: head, "mylib/__init__.py": "", "mylib/core.py": solution},
    )
    report = grade_submission(sub, a, limits=LIMITS)
    lost = [
        (r.question_id, r.score, r.max_score, r.error)
        for r in report.questions
        if r.score < r.max_score
    ]
    assert not lost and report.grader_error is None, lost
    assert not any(r.misconceptions for r in report.questions)


@pytest.mark.parametrize(
    "head",
    ["from mylib.clip import clip_by_global_norm\n", "from mylib.clip import *\n"],
    ids=["named-import", "star-import"],
)
def test_a_shortcut_in_a_package_module_is_charged_where_it_is_written(tmp_path, head):
    r = _clip_graded(tmp_path, lambda solution: solution + "\n\n" + head, CLIP_WITH_TORCH)
    assert r.score == 0 and r.misconceptions == ["uses-library-shortcut"], r.feedback
    line = CLIP_WITH_TORCH.splitlines().index(
        "    torch.nn.utils.clip_grad_norm_([p for _, p in params], max_norm)"
    )
    assert f"(`mylib/clip.py` line {line + 1})" in r.feedback, r.feedback


def test_a_code_file_that_defines_the_function_itself_is_read_not_the_star_module(tmp_path):
    """Control: the star-imported package module has the shortcut, but the code file defines
    the graded function itself afterwards, so the student's own (clean) function is graded."""
    r = _clip_graded(
        tmp_path,
        lambda solution: solution.replace(
            "from __future__ import annotations\n",
            "from __future__ import annotations\n\nfrom mylib.clip import *\n",
        ),
        CLIP_WITH_TORCH,
    )
    assert r.score == r.max_score and not r.misconceptions, r.feedback


# The same module reaching torch and its clip by computed names, which no source scan reads.
CLIP_BY_COMPUTED_NAME = "import importlib as _importlib\n" + CLIP_IN_A_HELPER_MODULE.replace(
    "import torch\n", '_t = _importlib.import_module("to" + "rch")\n'
).replace(
    "torch.nn.utils.clip_grad_norm_(", 'getattr(_t.nn.utils, "".join(reversed("_mron_darg_pilc")))('
).replace("torch.", "_t.")


def test_a_shortcut_refused_while_a_package_module_runs_names_that_file(tmp_path):
    """The scan cannot read a computed name; the worker refuses the call on the first (visible)
    case and the feedback places it in the package's module, not at a line of the code file."""
    r = _clip_graded(
        tmp_path,
        lambda solution: solution + "\n\nfrom mylib.clip import clip_by_global_norm\n",
        CLIP_BY_COMPUTED_NAME,
    )
    assert r.score == 0 and r.misconceptions == ["uses-library-shortcut"], r.feedback
    line = CLIP_BY_COMPUTED_NAME.splitlines().index(
        '    getattr(_t.nn.utils, "".join(reversed("_mron_darg_pilc")))([p for _, p in params], max_norm)'
    )
    refused = f"uses `torch.nn.utils.clip_grad_norm_` (`mylib/clip.py` line {line + 1})"
    assert refused in r.feedback, r.feedback
    assert r.feedback.count("write") <= 1, r.feedback  # one sentence says it, not two
