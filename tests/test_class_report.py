"""The class report on a built a4 class: what to reteach, grouped written answers, copy signals.

The class is graded for real (the batch, the sandbox, the judge). Its students:
- ada: the solution, her own answers;
- bob: softmax over the wrong axis (one line, dragging down every attention-based question), and
  `1/d_k` as the attention scale (a known wrong form);
- cyd, dee, eve: the tanh GELU (a convention that costs little); cyd's Jacobian is the default
  variant's (graded without his key); dee's cost answer is unrecognised; eve's attention numbers
  are dee's variant's, not her own (a copy signal);
- dee's code is cyd's with other comments and blank lines (identical once normalised); eve wrote
  the same tanh GELU her own way (not identical);
- gus and hal: the untouched stub (identical, but to the handout: not a signal).
Expected answers come from the suite's trusted formulas for each student's variant.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from grader import sandbox
from grader.app.batch import grade_all
from grader.course import registry, variants
from grader.course.content import assignment_dir, solution_dir
from grader.questions import WrittenQuestion
from grader.reports import class_report
from grader.reports.class_report import (
    FORM_DEFAULT_VARIANT,
    FORM_OTHER_VARIANT,
    FORM_UNRECOGNISED,
    rank_mistakes,
)
from grader.reports.copy_signals import Expected, borrowed_answers, identical_code, normalised

A = registry.load("a4")
SOLUTION = (solution_dir(A.id) / "transformer.py").read_text()
STUB = (assignment_dir(A.id) / "transformer.py").read_text()
ERF_GELU = (
    "    erf = np.vectorize(math.erf)\n    return 0.5 * z * (1.0 + erf(z / math.sqrt(2.0)))\n"
)
TANH_GELU = (
    "    return 0.5 * z * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (z + 0.044715 * z**3)))\n"
)
TANH_GELU_OWN_WAY = (
    "    c = math.sqrt(2 / math.pi)\n    inner = c * (z + 0.044715 * np.power(z, 3))\n"
    "    return z * (1 + np.tanh(inner)) / 2\n"
)
WRONG_AXIS = SOLUTION.replace(
    "e / np.sum(e, axis=-1, keepdims=True)", "e / np.sum(e, axis=-2, keepdims=True)"
).replace("x - np.max(x, axis=-1, keepdims=True)", "x - np.max(x, axis=-2, keepdims=True)")
LIMITS = sandbox.Limits(call_seconds=5.0, submission_seconds=60.0)


def _toml(value) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value) if isinstance(value, int) else repr(float(value))


def _answers(key: str | None, **overrides) -> str:
    numbers = variants.numbers(A.id, key)
    lines = []
    for q in A.questions:
        if isinstance(q, WrittenQuestion):
            value = overrides.get(q.key, q.expected(numbers))
            lines.append(f"{q.key} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def _expected(qkey: str, student: str | None):
    q = next(q for q in A.questions if isinstance(q, WrittenQuestion) and q.key == qkey)
    return np.asarray(q.expected(variants.numbers(A.id, student))).tolist()


@pytest.fixture(scope="module")
def built_class(tmp_path_factory):
    assert ERF_GELU in SOLUTION and WRONG_AXIS != SOLUTION
    tanh = SOLUTION.replace(ERF_GELU, TANH_GELU)
    commented = tanh.replace(
        "def _gelu(z):\n", "def _gelu(z):\n    # the fast approximation   \n\n"
    )
    students = {
        "ada": (SOLUTION, _answers("ada")),
        "bob": (WRONG_AXIS, _answers("bob", score_scale="1/d_k")),
        "cyd": (tanh, _answers("cyd", softmax_jacobian=_expected("softmax_jacobian", None))),
        "dee": ("# my own work\n" + commented, _answers("dee", cost_doubling=7)),
        "eve": (
            SOLUTION.replace(ERF_GELU, TANH_GELU_OWN_WAY),
            _answers(
                "eve",
                attention_weights=_expected("attention_weights", "dee"),
                attention_output=_expected("attention_output", "dee"),
            ),
        ),
        "gus": (STUB, ""),
        "hal": (STUB, ""),
    }
    root = tmp_path_factory.mktemp("a4class")
    for name, (code, answers) in students.items():
        (root / name).mkdir()
        (root / name / "transformer.py").write_text(code)
        (root / name / "answers.toml").write_text(answers)
    graded = grade_all(root, A, jobs=2, results_dir=tmp_path_factory.mktemp("res"), progress=False)
    return root, graded


def _by(graded, name):
    return next(d for s, d in graded if s.name == name)


def _lost(data, qid):
    t = next(t for t in data["tests"] if t["extra_data"]["question"] == qid)
    return t["max_score"] - t["score"]


def test_mistakes_ranked_by_points_lost_and_counted_at_their_root(built_class):
    _, graded = built_class
    assert _by(graded, "ada")["score"] == A.total_points
    mistakes = {m.id: m for m in rank_mistakes(A, graded)}
    axis, gelu = mistakes["softmax-wrong-axis"], mistakes["gelu-tanh-approximation"]
    order = [m.id for m in rank_mistakes(A, graded)]
    assert order.index("softmax-wrong-axis") < order.index("gelu-tanh-approximation")
    assert len(axis.students) < len(gelu.students)  # ranked by points, not by head count
    assert axis.students == ("bob",) and gelu.students == ("cyd", "dee", "eve")
    assert axis.share == pytest.approx(1 / 7) and gelu.share == pytest.approx(3 / 7)
    bob = _by(graded, "bob")
    assert axis.root == "a4.sdpa" and axis.root_points == pytest.approx(_lost(bob, "a4.sdpa"))
    # Follow-through: the questions built on bob's attention are right given it, so the mistake
    # is charged once, at its root, and the report says how much credit came back.
    assert axis.dragged == () and _lost(bob, "a4.mha") == 0
    assert axis.points_lost == pytest.approx(axis.root_points)
    mha = next(t for t in bob["tests"] if t["extra_data"]["question"] == "a4.mha")
    assert mha["extra_data"]["carried"] == [
        {"from": "a4.sdpa", "misconception": "softmax-wrong-axis"}
    ]
    assert axis.returned >= mha["max_score"]  # MHA's points at least, given back
    assert gelu.root == "a4.feed_forward" and gelu.dragged == ()
    assert gelu.points_lost == pytest.approx(
        sum(_lost(_by(graded, s), "a4.feed_forward") for s in gelu.students)
    )


def test_wrong_written_answers_grouped_by_what_they_show(built_class):
    _, graded = built_class
    expected = Expected(A)
    borrowed = borrowed_answers(A, graded, expected)
    groups = {
        (g.question, g.form): g.students
        for g in class_report.group_wrong_answers(A, graded, borrowed, expected)
    }
    assert groups[("a4.w_scale", "attention-scale-by-dk")] == ("bob",)
    assert groups[("a4.w_softmax_jacobian", FORM_DEFAULT_VARIANT)] == ("cyd",)
    assert groups[("a4.w_cost_doubling", FORM_UNRECOGNISED)] == ("dee",)
    assert groups[("a4.w_attention_weights", FORM_OTHER_VARIANT)] == ("eve",)
    assert groups[("a4.w_attention_output", FORM_OTHER_VARIANT)] == ("eve",)
    assert not any(
        "gus" in who or "hal" in who or "ada" in who for who in groups.values()
    )  # blank / right


def test_copy_signals_name_the_answers_and_whose_variant(built_class):
    root, graded = built_class
    (pair,) = borrowed_answers(A, graded)
    assert (pair.student, pair.other) == ("eve", "dee")
    assert set(pair.questions) == {"a4.w_attention_weights", "a4.w_attention_output"}
    assert identical_code(A, [s for s, _ in graded]) == [("cyd", "dee")]


def test_normalised_ignores_comments_and_whitespace_only():
    a = "def f(x):\n    return x + 1  # one\n"
    assert normalised(a) == normalised("# header\ndef f(x):\n\n    return x+1\n")
    assert normalised(a) != normalised("def f(x):\n    return x + 2\n")
    assert normalised("def f(:\n  'unterminated") == "deff(:'unterminated"


def test_report_html_shows_ranking_students_and_signals(built_class, tmp_path):
    _, graded = built_class
    path = tmp_path / "report.html"
    class_report.write_report(path, A, graded)
    text = path.read_text()
    assert text.index("softmax-wrong-axis") < text.index("gelu-tanh-approximation")
    assert "<details><summary>3 students</summary>cyd, dee, eve</details>" in text
    assert "id='copy-written'" in text and "id='copy-code'" in text and "<td>cyd, dee</td>" in text
    assert "±" not in text and text.count("data:image/png;base64,") == 2
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    shot = Path("/tmp") / "seqgrade_class_report.png"  # kept for a person to read in the review
    subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            f"--screenshot={shot}",
            "--window-size=1100,3000",
            path.as_uri(),
        ],
        capture_output=True,
        timeout=120,
    )
    assert shot.is_file() and shot.stat().st_size > 10_000


def test_report_without_matplotlib_keeps_its_tables(built_class, tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    _, graded = built_class
    path = tmp_path / "report.html"
    class_report.write_report(path, A, graded)
    text = path.read_text()
    assert "The charts need matplotlib" in text and "id='misconceptions'" in text


def test_the_report_shows_which_submissions_were_notebooks_and_which_cells_failed():
    from grader.reports.class_report import notebook_summary

    graded = [
        (
            "ann",
            {"extra_data": {"notebook": {"file": "transformer.ipynb", "failed_cells": [4, 7]}}},
        ),
        ("bob", {"extra_data": {"notebook": {"file": "transformer.ipynb", "failed_cells": [7]}}}),
        ("cat", {"extra_data": {}}),
    ]
    names, cells = notebook_summary(graded)
    assert names == ["ann", "bob"]
    assert cells.most_common(1) == [(7, 2)] and cells[4] == 1


def test_the_report_says_what_notebook_submissions_lost_and_why(tmp_path):
    from grader.reports.class_report import _notebooks_html, notebook_losses, notebook_summary

    def written(score, max_score):
        return {"score": score, "max_score": max_score, "extra_data": {"kind": "written"}}

    def code(score, max_score):
        return {"score": score, "max_score": max_score, "extra_data": {"kind": "code"}}

    nb = {"file": "transformer.ipynb", "failed_cells": [3], "answers": "not found"}
    nb["cells"] = [
        {"cell": 3, "label": "code cell 3 (`import torch`)", "what": "stopped", "detail": "cpu"}
    ]
    graded = [
        (
            "ann",
            {"score": 70, "tests": [code(70, 70), written(0, 30)], "extra_data": {"notebook": nb}},
        ),
        ("bob", {"score": 100, "tests": [code(70, 70), written(30, 30)], "extra_data": {}}),
    ]
    (loss,) = notebook_losses(graded)
    assert loss.student == "ann" and loss.written_lost == 30 and loss.answers == "not found"
    assert loss.cells == ("code cell 3 (`import torch`): stopped (cpu)",)
    text = "\n".join(_notebooks_html(notebook_summary(graded), [loss], 100.0))
    assert "1 had no answers cell and no answers.toml" in text
    assert "Mean score of the notebooks: 70.00; the .py submissions' mean: 100.00" in text
    assert "stopped (cpu)" in text


def test_the_report_lists_what_needs_review():
    from grader.reports.class_report import needs_review

    t = {
        "score": 0,
        "max_score": 4,
        "extra_data": {
            "question": "a2.bptt_final_state",
            "kind": "code",
            "needs_review": ["importlib.import_module (line 3)"],
        },
    }
    graded = [
        ("ann", {"tests": [t]}),
        ("bob", {"tests": [{**t, "extra_data": {**t["extra_data"], "needs_review": []}}]}),
    ]
    assert needs_review(graded) == [
        ("ann", "a2.bptt_final_state", ("importlib.import_module (line 3)",))
    ]
