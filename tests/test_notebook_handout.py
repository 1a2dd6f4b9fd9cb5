"""Notebooks as students write them: answers cells, time limits, cell numbers, the notebook
handout's numbers and check-as-you-go, and `check.py` for the `.py` handout.

Expected figures come from the grader itself (the same code graded as a `.py`, the grader's own
feedback line for a visible case), from `variant.py` run as students run it, or from a real
Jupyter kernel (nbclient + ipykernel) running the handout notebook.
"""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import FAST, ROOT, answer_key
from nbformat import v4

from grader.app import bundles, check_tool, notebook_handout
from grader.course import registry
from grader.course.content import assignment_dir
from grader.engine.grade import grade_submission
from grader.engine.notebook import read_notebook
from grader.engine.notebook_source import TimeShares, build_module, quote_head
from grader.records import GradeReport

A1, A4 = "a1_word_vectors", "a4_transformer"
ASSIGNMENTS = registry.available()
EMAIL = "ada.lovelace@uni.edu"


def _solution(aid: str) -> str:
    return (ROOT / "solutions" / aid / registry.load(aid).code_file).read_text()


def _cells(aid: str) -> list:
    return [v4.new_code_cell(c) for c in notebook_handout.split_cells(_solution(aid))]


def _grade(folder: Path, aid: str, **files: str) -> GradeReport:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name.replace("__", ".")).write_text(text)
    return grade_submission(folder, registry.load(aid), limits=FAST)


def _written(report: GradeReport) -> tuple[float, float]:
    qs = [q for q in report.questions if q.kind == "written"]
    return sum(q.score for q in qs), sum(q.max_score for q in qs)


# --------------------------------------------------------------------------- answers cells

TOML = answer_key(A1).to_toml(None)
FORMS = {
    "writefile": v4.new_code_cell(f"%%writefile answers.toml\n{TOML}"),
    "comment": v4.new_code_cell(f"# answers.toml\n{TOML}"),
    "markdown": v4.new_markdown_cell(f"## answers.toml\n\nMy answers:\n\n```toml\n{TOML}\n```\n"),
    "raw": v4.new_raw_cell(f"# answers.toml\n{TOML}"),
}


@pytest.mark.parametrize("form", FORMS)
def test_every_answers_cell_form_is_read(form: str, tmp_path: Path):
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("# A1"), *_cells(A1), FORMS[form]])
    report = _grade(tmp_path / form, A1, word_vectors__ipynb=nbformat.writes(nb))
    got, full = _written(report)
    assert got == full > 0, [q.feedback for q in report.questions if q.status == "failed"]
    assert report.score == 100
    assert report.notebook is not None


def test_the_mark_below_a_title_line_is_still_read_with_a_note(tmp_path: Path):
    """Not an answers cell by its first line, but it sets the written questions' keys: read
    (docs/notebooks.md, "Without the mark"), and the note says how to make it certain."""
    near = v4.new_code_cell(f"# my written part\n# answers.toml\n{TOML}")
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("# A1"), *_cells(A1), near])
    report = _grade(tmp_path / "below", A1, word_vectors__ipynb=nbformat.writes(nb))
    got, full = _written(report)
    assert got == full > 0 and report.score == 100
    n_code = len(_cells(A1)) + 1
    assert any(
        f"code cell {n_code} (`# my written part`) was taken as your written answers" in w
        and "`# answers.toml`" in w
        for w in report.warnings
    ), report.warnings


def test_no_answers_cell_says_where_it_looked(tmp_path: Path):
    # the answers as a Python dict saved by a library: no line sets a key, so nothing is read
    near = v4.new_code_cell(
        "# my written part, saved to answers.toml\nimport toml\n"
        'answers = {"why_three_quarters": "B"}\ntoml.dump(answers, open("answers.toml", "w"))\n'
    )
    nb = v4.new_notebook(cells=[v4.new_markdown_cell("# A1"), *_cells(A1), near])
    report = _grade(tmp_path / "none", A1, word_vectors__ipynb=nbformat.writes(nb))
    got, full = _written(report)
    assert got == 0 < full
    feedback = next(q.feedback for q in report.questions if q.kind == "written")
    n_code = len(_cells(A1)) + 1
    assert f"none of its {n_code} code, 1 markdown and 0 raw cells is an answers cell" in feedback
    assert f"code cell {n_code} (`# my written part, saved to…`) names `answers.toml`" in feedback
    assert "sets a key of this assignment's written questions" in feedback
    assert "`%%writefile answers.toml`" in feedback  # the forms that are read
    assert report.score == pytest.approx(100 - full)  # the code is graded all the same


# --------------------------------------------------------------------------- time limits

SLOW_IMPORT = "import time\n\ntime.sleep(3.5)\n"  # longer than a quarter of the import time


@pytest.mark.slow  # over 5 s on two cores: the full suite's, not the developer loop's
def test_an_imports_cell_slowed_past_the_cell_limit_is_not_cut_off(tmp_path: Path):
    """An imports cell that takes longer than a cell that runs code may (3.5 s > 2.5 s) runs to
    its end: the notebook gets the grade of the same code as a `.py`."""
    shares = TimeShares.for_import(FAST.call_seconds)
    assert shares.cell_seconds < 3.5 < shares.hard_stop
    imports = v4.new_code_cell(
        "import slow_library\nimport numpy as np\nimport matplotlib.pyplot as plt"
    )
    cells = [imports, *_cells(A1), v4.new_code_cell(f"%%writefile answers.toml\n{TOML}")]
    nb_report = _grade(
        tmp_path / "nb",
        A1,
        word_vectors__ipynb=nbformat.writes(v4.new_notebook(cells=cells)),
        slow_library__py=SLOW_IMPORT,
    )
    py = "import slow_library\nimport numpy as np\nimport matplotlib.pyplot as plt\n" + _solution(
        A1
    )
    py_report = _grade(
        tmp_path / "py", A1, word_vectors__py=py, slow_library__py=SLOW_IMPORT, answers__toml=TOML
    )
    assert [(q.question_id, q.score) for q in nb_report.questions] == [
        (q.question_id, q.score) for q in py_report.questions
    ]
    assert nb_report.score == 100
    assert not any("stopped" in w or "not run:" in w for w in nb_report.warnings)


def test_a_cell_that_waits_is_not_stopped_by_the_cpu_limit(tmp_path: Path):
    """A cell that runs code is limited in CPU time: waiting (a slow disk, a loaded machine) is
    not computing."""
    wait = v4.new_code_cell("import time\ntime.sleep(3.0)\nwaited = True")
    check = v4.new_code_cell("assert waited")
    cells = [*_cells(A1), wait, check, FORMS["writefile"]]
    report = _grade(
        tmp_path / "w", A1, word_vectors__ipynb=nbformat.writes(v4.new_notebook(cells=cells))
    )
    assert report.score == 100 and not any("raised" in w or "stopped" in w for w in report.warnings)


def test_which_cells_count_as_only_importing_and_defining():
    shares = TimeShares.for_import(10.0)
    cells = [
        (1, "import numpy as np\nfrom math import pi\nD = 4\nEPS: float = 1e-5\n"),
        (2, "try:\n    import torch\nexcept ImportError:\n    torch = None\n"),
        (3, "@dataclass\nclass Config:\n    d: int = 4\n\ndef f(x=np.zeros(3)):\n    return x\n"),
        (4, "W = np.random.randn(3, 3)"),
        (5, "for epoch in range(3):\n    pass"),
        (6, "print(f(1))"),
    ]
    source = build_module(cells, "t.ipynb", shares)
    assert [s.defines_only for s in source.spans] == [True, True, True, False, False, False]


# --------------------------------------------------------------------------- cell numbers


def test_cells_are_numbered_as_students_see_them():
    nb = v4.new_notebook(
        cells=[
            v4.new_markdown_cell("# Title"),
            v4.new_code_cell("import numpy as np"),
            v4.new_markdown_cell("Prose"),
            v4.new_raw_cell("raw"),
            v4.new_code_cell("def layer_norm(x, gamma, beta, eps=1e-5):\n    return x"),
        ]
    )
    book = read_notebook(nbformat.writes(nb).encode(), "t.ipynb")
    assert [n for n, _ in book.code_cells] == [1, 2]
    source = build_module(book.code_cells, "t.ipynb", TimeShares.for_import(10.0))
    assert source.label(2) == "code cell 2 (`def layer_norm(…)`)"
    line = source.spans[1].first_line + 1
    assert source.where(line) == (2, 2)
    assert quote_head("import matplotlib.pyplot as plt; import numpy as np") == (
        "import matplotlib.pyplot as…"
    )


# --------------------------------------------------------------------------- the handout


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_the_numbers_cell_prints_what_variant_py_prints(aid: str, tmp_path: Path):
    nb = notebook_handout.build(aid)
    cell = next(c.source for c in nb.cells if c.source.startswith("# Your numbers"))
    assert 'YOUR_KEY = ""' in cell
    (tmp_path / "cell.py").write_text(cell.replace('YOUR_KEY = ""', f"YOUR_KEY = {EMAIL!r}", 1))
    ours = subprocess.run(
        [sys.executable, "cell.py"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    theirs = subprocess.run(
        [sys.executable, "variant.py", EMAIL],
        cwd=assignment_dir(aid),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout and EMAIL.split("@")[0] in ours.stdout


def test_a_zip_name_writes_the_notebook_variant_py_and_check_py(tmp_path: Path):
    out = notebook_handout.write("a3", tmp_path / "nb.zip")
    with zipfile.ZipFile(out) as zf:
        names = sorted(zf.namelist())
        assert names == ["check.py", "gated_seq2seq.ipynb", "variant.py"]
        nbformat.validate(nbformat.reads(zf.read("gated_seq2seq.ipynb").decode(), as_version=4))
        assert (
            zf.read("variant.py")
            == (assignment_dir("a3_gated_seq2seq") / "variant.py").read_bytes()
        )
    plain = notebook_handout.write("a3", tmp_path / "nb.ipynb")
    assert plain.read_text().lstrip().startswith("{")


def test_the_handout_states_the_time_limits():
    shares = TimeShares.for_import(FAST.call_seconds)
    nb = notebook_handout.build(A4)
    text = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert f"**{shares.cell_seconds:g} s** of CPU time" in text
    assert f"**{shares.hard_stop:g} s**" in text and "no time limit of its own" in text
    assert "%%writefile answers.toml" in text


def test_check_py_ships_no_hidden_case_or_reference(tmp_path: Path):
    for aid in ASSIGNMENTS:
        payload = check_tool.source(aid).split("_PAYLOAD = ", 1)[1].split("\n", 1)[0]
        assert "hidden case" not in payload
        for q in check_tool.cases_payload(aid):
            a = registry.load(aid)
            question = next(x for x in a.questions if x.id == q["id"])
            visible = {c.name for c in question.cases(0) if c.visible}
            assert {c["name"] for c in q["cases"]} <= visible and q["cases"]


# --------------------------------------------------------------------------- check as you go

PLANTED = (
    "var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)",
    "var = x.var(axis=-1, ddof=1, keepdims=True)",
)


def _grader_line(report: GradeReport, function: str) -> str:
    """The grader's feedback lines for the question's first visible case (✘ line and got/expected)."""
    q = next(q for q in report.questions if q.function == function)
    lines = q.feedback.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("- ✘ slides microscope"))
    return "\n".join(lines[start : start + 3])


def test_check_py_on_the_py_handout(tmp_path: Path):
    with zipfile.ZipFile(bundles.build_handout(A4, tmp_path / "h.zip")) as zf:
        zf.extractall(tmp_path / "h")
    folder = tmp_path / "h" / A4
    assert (folder / "check.py").is_file()
    stub = subprocess.run(
        [sys.executable, "check.py", "layer_norm"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert stub.returncode == 1 and "NotImplementedError" in stub.stdout
    solution = _solution(A4)
    (folder / "transformer.py").write_text(solution)
    right = subprocess.run(
        [sys.executable, "check.py"], cwd=folder, capture_output=True, text=True, timeout=120
    )
    assert right.returncode == 0, right.stdout[-2000:]
    n = sum(1 for q in registry.load(A4).questions if hasattr(q, "function"))
    assert f"{n} of {n} questions pass" in right.stdout
    assert PLANTED[0] in solution
    (folder / "transformer.py").write_text(solution.replace(*PLANTED))
    wrong = subprocess.run(
        [sys.executable, "check.py", "a4.layer_norm"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert wrong.returncode == 1
    (folder / "answers.toml").write_text(answer_key(A4).to_toml(None))
    report = grade_submission(folder, registry.load(A4), limits=FAST)
    assert _grader_line(report, "layer_norm") in wrong.stdout, (wrong.stdout, report.questions)


def _filled_handout(tmp_path: Path, planted: bool) -> nbformat.NotebookNode:
    nb = notebook_handout.build(A4)
    solution = {
        notebook_handout._defined(c): c for c in notebook_handout.split_cells(_solution(A4))
    }
    used = set()
    for cell in nb.cells:
        tagged = notebook_handout.SKIP_TAG in cell.metadata.get("tags", [])
        name = notebook_handout._defined(cell.source) if cell.cell_type == "code" else "-"
        if name in solution and not tagged and not cell.source.startswith("%%"):
            used.add(name)
            text = solution[name]
            cell.source = text.replace(*PLANTED) if planted else text
        elif cell.source.startswith("%%writefile answers.toml"):
            cell.source = f"%%writefile answers.toml\n{answer_key(A4).to_toml(None)}"
    header = next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and notebook_handout.SKIP_TAG not in c.metadata.get("tags", [])
    )
    nb.cells[header + 1 : header + 1] = [
        v4.new_code_cell(c) for n, c in solution.items() if n not in used and n is not None
    ]
    return nb


def _outputs(cell: nbformat.NotebookNode) -> str:
    return "".join(
        o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"
    )


@pytest.mark.slow
@pytest.mark.parametrize("planted", [False, True], ids=["solution", "planted-mistake"])
def test_the_handout_notebook_checks_itself_in_a_real_kernel(planted: bool, tmp_path: Path):
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    nb = _filled_handout(tmp_path, planted)
    nb = nbclient.NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    checks = {
        re.match(r"check\('(\w+)'\)", c.source).group(1): _outputs(c)
        for c in nb.cells
        if c.cell_type == "code" and c.source.startswith("check(")
    }
    n = sum(1 for q in registry.load(A4).questions if hasattr(q, "function"))
    assert len(checks) == n and (tmp_path / "answers.toml").is_file()  # the cell wrote it
    folder = tmp_path / "graded"
    folder.mkdir()
    (folder / "transformer.ipynb").write_text(nbformat.writes(nb))
    report = grade_submission(folder, registry.load(A4), limits=FAST)
    wrong = {f for f, out in checks.items() if "✘" in out}
    if not planted:
        assert not wrong and all(out.startswith("✔") for out in checks.values()), checks
        assert report.score == 100
        tests = next(c for c in nb.cells if c.source.startswith("# Public tests"))
        assert " passed" in _outputs(tests) and "failed" not in _outputs(tests)
    else:
        assert "layer_norm" in wrong  # and whatever builds on it
        assert _grader_line(report, "layer_norm") in checks["layer_norm"]
        # The blocks call the student's layer_norm: their checks fail with it (the grader gives
        # them follow-through credit instead of a second charge).
        assert wrong <= {"layer_norm", "encoder_block", "decoder_block", "gpt_forward"}
        assert report.score < 100


def test_the_handout_notebook_without_its_tags_grades_the_same(tmp_path: Path):
    """An editor that drops cell tags: the check, numbers and tests cells then run when grading,
    and cost nothing (check() does nothing while grading; their errors are named)."""
    nb = _filled_handout(tmp_path, planted=False)
    for cell in nb.cells:
        cell.metadata.pop("tags", None)
    folder = tmp_path / "untagged"
    folder.mkdir()
    (folder / "transformer.ipynb").write_text(nbformat.writes(nb))
    report = grade_submission(folder, registry.load(A4), limits=FAST)
    assert report.score == 100, [
        (q.question_id, q.feedback) for q in report.questions if q.score < q.max_score
    ]
    notes = " ".join(report.warnings)
    assert "(`%%writefile check.py`) was skipped" in notes
    assert "raised `ModuleNotFoundError: No module named 'check'`" in notes


def test_the_run_summary_holds_what_the_class_report_needs():
    """Where the answers came from and each cell that did not run as written, as records."""
    from grader.engine import notebook
    from grader.engine.locate import Located

    cells = [v4.new_code_cell("def broken(:\n    pass"), *_cells(A1), FORMS["comment"]]
    located = Located(
        files={"word_vectors.ipynb": nbformat.writes(v4.new_notebook(cells=cells)).encode()}
    )
    notebook.use_notebook(located, "word_vectors.py", FAST.call_seconds)
    summary = located.notebook.summary()
    assert summary["answers"] == "comment" and summary["file"] == "word_vectors.ipynb"
    assert summary["cells"] == [
        {
            "cell": 1,
            "label": "code cell 1 (`def broken(…)`)",
            "what": "skipped",
            "detail": "line 1: `def broken(:` has a `SyntaxError` (invalid syntax), so it was not run",
        }
    ]
    missing = Located(
        files={"word_vectors.ipynb": nbformat.writes(v4.new_notebook(cells=_cells(A1))).encode()}
    )
    notebook.use_notebook(missing, "word_vectors.py", FAST.call_seconds)
    assert missing.notebook.summary()["answers"] == "not found"
    assert "none of its" in missing.problems["answers.toml"]


def test_check_py_beside_a_submission_does_not_make_it_a_torch_submission():
    """Students submit the folder they worked in, check.py included: the grader preloads torch
    only for code that imports it, and check.py's torch is looked up by name."""
    from grader.engine import grade

    for aid in ASSIGNMENTS:
        assert grade._TORCH_IMPORT.search(check_tool.source(aid)) is None
