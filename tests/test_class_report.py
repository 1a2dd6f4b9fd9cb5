"""The class report on a built a4 class: what to reteach, grouped written answers, copy signals,
people named from the metadata with links to their feedback, sorting, the statistics CSV.

The class is laid out as Gradescope exports it (one folder per submission, submission_900010 …,
and submission_metadata.yml naming each submitter; the variant key is the email) and graded
for real (the batch, the sandbox, the judge). Its students, by first name:
- ada: the solution, her own answers;
- bob: softmax over the wrong axis (one line, dragging down every attention-based question), and
  `1/d_k` as the attention scale (a known wrong form);
- cyd, dee, eve: the tanh GELU (a convention that costs little); cyd's Jacobian is the default
  variant's (graded without his key); dee's cost answer is unrecognised; eve's attention numbers
  are dee's variant's, not her own (a copy signal);
- dee's code is cyd's with other comments and blank lines (identical once normalised); eve wrote
  the same tanh GELU her own way (not identical);
- gus and hal: the untouched stub (identical, but to the handout: not a signal);
- ivy: a correct solution written apart (a held-out file); jon: ivy's code with every local
  name changed, its functions reordered and its comments replaced (similar code, not identical).
Expected answers come from the suite's trusted formulas for each student's variant.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import subprocess
import urllib.parse
from pathlib import Path

import numpy as np
import pytest
import similarity_class

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
from grader.reports.similarity import THRESHOLD, similar_pairs
from grader.reports.student_pages import markdown_html, page_name, person

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
IVY = (
    Path(__file__).parent / "heldout" / "a4_transformer" / "correct__einsum_float32.py"
).read_text()
FIRST = ["ada", "bob", "cyd", "dee", "eve", "gus", "hal", "ivy", "jon"]
FOLDER = {n: f"submission_9000{i + 10}" for i, n in enumerate(FIRST)}  # submission_900010 …
NAME = {
    "ada": "Ada Lovelace",
    "bob": "Bob Kahn",
    "cyd": "Cyd Charisse",
    "dee": "Dee Snider",
    "eve": "Eve Curie",
    "gus": "Gus Grissom",
    "hal": "Hal Abelson",
    "ivy": "Ivy Ng",
    "jon": "Jon Postel",
}


def email(first: str) -> str:
    return f"{first}@uni.edu"


def label(first: str) -> str:
    return f"{NAME[first]} <{email(first)}>"


def folders(*firsts: str) -> tuple[str, ...]:
    return tuple(FOLDER[f] for f in firsts)


def _metadata() -> str:
    """submission_metadata.yml as Gradescope's export writes it."""
    lines = []
    for i, first in enumerate(FIRST):
        lines += [
            f"{FOLDER[first]}:",
            "  :submitters:",
            f"  - :name: {NAME[first]}",
            f"    :sid: '{1000 + i}'",
            f"    :email: {email(first)}",
            "  :created_at: 2026-11-20 10:00:00.000000000 -08:00",
            "  :score: 0.0",
        ]
    return "\n".join(lines) + "\n"


def _toml(value) -> str:
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value) if isinstance(value, int) else repr(float(value))


def _answers(first: str | None, **overrides) -> str:
    numbers = variants.numbers(A.id, email(first) if first else None)
    lines = []
    for q in A.questions:
        if isinstance(q, WrittenQuestion):
            value = overrides.get(q.key, q.expected(numbers))
            lines.append(f"{q.key} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def _expected(qkey: str, student: str | None):
    q = next(q for q in A.questions if isinstance(q, WrittenQuestion) and q.key == qkey)
    key = email(student) if student else None
    return np.asarray(q.expected(variants.numbers(A.id, key))).tolist()


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
        "ivy": (IVY, _answers("ivy")),
        "jon": (similarity_class.disguised(IVY)["all"], _answers("jon")),
    }
    root = tmp_path_factory.mktemp("a4class")
    (root / "submission_metadata.yml").write_text(_metadata())
    for name, (code, answers) in students.items():
        (root / FOLDER[name]).mkdir()
        (root / FOLDER[name] / "transformer.py").write_text(code)
        (root / FOLDER[name] / "answers.toml").write_text(answers)
    graded = grade_all(root, A, jobs=2, results_dir=tmp_path_factory.mktemp("res"), progress=False)
    return root, graded


def _by(graded, first):
    return next(d for s, d in graded if s.name == FOLDER.get(first, first))


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
    assert axis.students == folders("bob") and gelu.students == folders("cyd", "dee", "eve")
    assert axis.share == pytest.approx(1 / 9) and gelu.share == pytest.approx(3 / 9)
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
    assert groups[("a4.w_scale", "attention-scale-by-dk")] == folders("bob")
    assert groups[("a4.w_softmax_jacobian", FORM_DEFAULT_VARIANT)] == folders("cyd")
    assert groups[("a4.w_cost_doubling", FORM_UNRECOGNISED)] == folders("dee")
    assert groups[("a4.w_attention_weights", FORM_OTHER_VARIANT)] == folders("eve")
    assert groups[("a4.w_attention_output", FORM_OTHER_VARIANT)] == folders("eve")
    blank_or_right = set(folders("gus", "hal", "ada", "ivy", "jon"))
    assert not any(blank_or_right & set(who) for who in groups.values())


def test_copy_signals_name_the_answers_and_whose_variant(built_class):
    root, graded = built_class
    (pair,) = borrowed_answers(A, graded)
    assert (pair.student, pair.other) == folders("eve", "dee")
    assert set(pair.questions) == {"a4.w_attention_weights", "a4.w_attention_output"}
    assert identical_code(A, [s for s, _ in graded]) == [folders("cyd", "dee")]


def test_similar_code_pairs_a_disguised_copy_and_not_the_stub_or_an_independent_solution(
    built_class,
):
    _, graded = built_class
    pairs = {frozenset((p.left, p.right)): p for p in similar_pairs(A, [s for s, _ in graded])}
    ivy_jon = pairs[frozenset(folders("ivy", "jon"))]
    assert ivy_jon.overlap >= THRESHOLD and ivy_jon.passages
    assert pairs[frozenset(folders("cyd", "dee"))].overlap == pytest.approx(1.0)
    for first in ("gus", "hal"):  # the stub, whole: boilerplate, paired with no one
        assert not any(FOLDER[first] in pair for pair in pairs)
    for first in ("ada", "bob", "cyd", "dee", "eve"):  # the solution and its edits, written apart
        assert frozenset((FOLDER["ivy"], FOLDER[first])) not in pairs
    ranked = [p.overlap for p in similar_pairs(A, [s for s, _ in graded])]
    assert ranked == sorted(ranked, reverse=True)


def test_normalised_ignores_comments_and_whitespace_only():
    a = "def f(x):\n    return x + 1  # one\n"
    assert normalised(a) == normalised("# header\ndef f(x):\n\n    return x+1\n")
    assert normalised(a) != normalised("def f(x):\n    return x + 2\n")
    assert normalised("def f(:\n  'unterminated") == "deff(:'unterminated"


def _chromium(*args: str, profile: Path, timeout: int = 120) -> subprocess.CompletedProcess:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium)")
    return subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def written_report(built_class, tmp_path_factory):
    _, graded = built_class
    path = tmp_path_factory.mktemp("report") / "report.html"
    class_report.write_report(path, A, graded)
    return path


def test_report_html_shows_ranking_people_and_signals(written_report):
    text = written_report.read_text()
    assert text.index("softmax-wrong-axis") < text.index("gelu-tanh-approximation")
    assert "id='copy-written'" in text and "id='similar-code'" in text
    assert "±" not in text and text.count("data:image/png;base64,") == 2
    for first in FIRST:  # every person by name and email, linked to their page
        link = re.search(
            rf"<a class=student href='([^']+)'>{re.escape(label(first).replace('<', '&lt;').replace('>', '&gt;'))}</a>",
            text,
        )
        assert link is not None, first
    assert not re.search(r">submission_9000\d\d</a>", text)  # no folder name as a person
    gelu_row = re.search(r"<tr data-id='gelu-tanh-approximation'.*?</tr>", text, re.S).group(0)
    assert all(NAME[f] in gelu_row for f in ("cyd", "dee", "eve")) and NAME["bob"] not in gelu_row


def test_each_students_page_shows_their_own_full_feedback(written_report, built_class):
    _, graded = built_class
    text = written_report.read_text()
    bob = _by(graded, "bob")
    href = re.search(rf"<a class=student href='([^']+)'>{re.escape(NAME['bob'])} &lt;", text).group(
        1
    )
    page = (written_report.parent / href).read_text()
    assert f"<h1 id='student'>{NAME['bob']} &lt;{email('bob')}&gt;</h1>" in page
    shown = f"{round(bob['score'], 2):.2f}".rstrip("0").rstrip(".")  # at most two decimals
    assert f"<b>{shown} / {A.total_points:g}</b>" in page
    assert "Every case in full" in page and "(hidden)" in page  # the instructor view
    assert "softmax-wrong-axis" in page and NAME["ada"] not in page
    assert "href='../report.html'" in page


def test_the_statistics_csv_beside_the_report(written_report, built_class):
    _, graded = built_class
    rows = list(csv.DictReader(class_report.stats_path(written_report).open()))
    assert [r["question"] for r in rows] == [q.id for q in A.questions]
    sdpa = next(r for r in rows if r["question"] == "a4.sdpa")
    scores = [
        next(t["score"] for t in d["tests"] if t["extra_data"]["question"] == "a4.sdpa")
        for _, d in graded
    ]
    q = next(q for q in A.questions if q.id == "a4.sdpa")
    assert float(sdpa["mean"]) == pytest.approx(sum(scores) / 9, abs=1e-4)
    assert float(sdpa["share_full_marks"]) == pytest.approx(
        sum(s >= q.points for s in scores) / 9, abs=1e-4
    )
    # gus and hal left the stub: 7 of 9 attempted; bob's mistake is the question's top one
    assert float(sdpa["share_attempted"]) == pytest.approx(7 / 9, abs=1e-4)
    assert sdpa["top_misconceptions"] == "softmax-wrong-axis (1)"
    ff = next(r for r in rows if r["question"] == "a4.feed_forward")
    assert ff["top_misconceptions"].startswith("gelu-tanh-approximation (3)")


def _mistake_order(dom: str) -> list[str]:
    table = re.search(r"<table id=\"misconceptions\".*?</table>", dom, re.S).group(0)
    return re.findall(r"data-id=\"([^\"]+)\"", table)


@pytest.mark.slow  # over 5 s on two cores: the full suite's, not the developer loop's
def test_the_report_in_chromium_names_links_and_sorts(written_report, tmp_path):
    by_points = _chromium(
        "--dump-dom",
        "--virtual-time-budget=5000",
        written_report.as_uri(),
        profile=tmp_path / "p1",
    ).stdout
    by_students = _chromium(
        "--dump-dom",
        "--virtual-time-budget=5000",
        written_report.as_uri() + "#sort=students",
        profile=tmp_path / "p2",
    ).stdout
    points_order, students_order = _mistake_order(by_points), _mistake_order(by_students)
    assert 'data-sorted="students"' in by_students and 'data-sorted="points"' in by_points
    assert points_order.index("softmax-wrong-axis") < points_order.index("gelu-tanh-approximation")
    assert students_order.index("gelu-tanh-approximation") < students_order.index(
        "softmax-wrong-axis"
    )
    assert sorted(points_order) == sorted(students_order)
    for first in FIRST:  # the names as the browser shows them, and the page each link names
        shown = label(first).replace("<", "&lt;").replace(">", "&gt;")
        hrefs = re.findall(rf'<a class="student" href="([^"]+)">{re.escape(shown)}</a>', by_points)
        assert hrefs, first
        linked = written_report.parent / urllib.parse.unquote(hrefs[0])
        assert f"<h1 id='student'>{shown}</h1>" in linked.read_text(), first
    # the last of those pages as the browser opens it from its link (they are built alike)
    page = _chromium(
        "--dump-dom", (written_report.parent / hrefs[0]).as_uri(), profile=tmp_path / "p3"
    ).stdout
    assert f'<h1 id="student">{shown}</h1>' in page
    shot = Path("/tmp") / "seqgrade_class_report.png"  # kept for a person to read in the review
    _chromium(
        f"--screenshot={shot}",
        "--window-size=1280,2000",
        written_report.as_uri(),
        profile=tmp_path / "p4",
    )
    assert shot.is_file() and shot.stat().st_size > 10_000


def test_report_without_matplotlib_or_copydetect_keeps_its_tables(
    built_class, tmp_path, monkeypatch
):
    import builtins

    real_import = builtins.__import__

    def no_libraries(name, *args, **kwargs):
        if name.startswith(("matplotlib", "copydetect")):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_libraries)
    _, graded = built_class
    path = tmp_path / "report.html"
    class_report.write_report(path, A, graded)
    text = path.read_text()
    assert "The charts need matplotlib" in text and "id='misconceptions'" in text
    assert "Code similarity needs copydetect" in text and "id='copy-written'" in text


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


def test_feedback_markdown_becomes_html_with_a_students_text_kept_as_text():
    text = "## 1. Q — 0/2\n\n**0/1 cases passed**.\n\n- ✘ case: `<script>alert(1)</script>`\n  - got: *x*\n"
    out = markdown_html(text)
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "<h3>1. Q — 0/2</h3>" in out and "<b>0/1 cases passed</b>" in out
    assert out.count("<ul>") == 2 and "<i>x</i>" in out


def test_a_person_is_named_by_the_metadata_and_a_group_by_all_its_members():
    from grader.app.batch import Submission

    group = Submission(
        "submission_1",
        Path("x"),
        submitters=(
            {":name": "Ada Lovelace", ":email": "ada@uni.edu"},
            {":name": "Bob Kahn", ":email": "bob@uni.edu"},
        ),
    )
    assert person(group).label == "Ada Lovelace <ada@uni.edu>, Bob Kahn <bob@uni.edu>"
    assert person(Submission("alice@uni.edu", Path("x"))).label == "alice@uni.edu"
    assert page_name("../../etc/passwd") == "_.._etc_passwd.html"
