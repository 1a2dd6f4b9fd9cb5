"""Notebook submissions: `<stem>.ipynb` graded as `<stem>.py` would be.

Every expected figure here comes from the .py grading of the same code (the solutions score
full marks, the bundled buggy samples get their misconception ids), from nbformat (the
format's own library), or from the notebook's own construction (which cell holds what).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from conftest import FAST, ROOT, answer_key
from nbformat import v4

from grader import sandbox
from grader.app import notebook_handout
from grader.course import registry
from grader.course.content import samples_dir
from grader.engine.grade import grade_submission
from grader.engine.notebook import ANSWERS_MARK, answers_cell
from grader.engine.notebook_source import drop_magics
from grader.records import GradeReport

ASSIGNMENTS = registry.available()
BUGGY = [a for a in ASSIGNMENTS if (samples_dir() / a / "buggy").is_dir()]
# Cells a real notebook carries besides the code: each must leave the grade alone.
MARKDOWN = v4.new_markdown_cell("# My notebook\n\nSome prose, and `code` in backticks.")
MAGIC = v4.new_code_cell("%matplotlib inline\n%time _warmup = sum(range(10))\n%load_ext autoreload")
SHELL = v4.new_code_cell("!pip install --quiet nothing-at-all\nfiles = !ls")
PLOT = v4.new_code_cell(
    "import matplotlib\nimport matplotlib.pyplot as plt\nplt.plot([0, 1], [1, 0])\nplt.show()\n"
    "assert matplotlib.get_backend().lower() == 'agg'"
)
ERROR = v4.new_code_cell("total = 1\nprint(undefined_variable + total)")


def _answers(toml: str) -> nbformat.NotebookNode:
    return v4.new_raw_cell(f"{ANSWERS_MARK}\n{toml}")


def _notebook(cells: list, validate: bool = True, **metadata) -> str:
    """A valid notebook of `cells` (checked against nbformat's schema unless `validate` is off:
    thousands of cells made as copies of one checked cell take seconds to check again)."""
    nb = v4.new_notebook(
        cells=cells,
        metadata=metadata
        or {"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3"}},
    )
    if not validate:
        return v4.writes(nb)  # nbformat.writes checks it again
    nbformat.validate(nb)
    return nbformat.writes(nb)


def _copies(cell: nbformat.NotebookNode, sources: list[str]) -> list:
    """`cell` (checked) with each of `sources` in turn, each with an id of its own."""
    nbformat.validate(v4.new_notebook(cells=[cell]))
    return [
        nbformat.from_dict({**cell, "id": f"copy-{i}", "source": source})
        for i, source in enumerate(sources)
    ]


def _code_cells(source: str) -> list:
    return [v4.new_code_cell(c) for c in notebook_handout.split_cells(source)]


def _grade(folder: Path, aid: str, student: str | None = None) -> GradeReport:
    return grade_submission(folder, registry.load(aid), student=student, limits=FAST)


def _write(folder: Path, files: dict[str, str | bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    return folder


def _solution_notebook(aid: str, extra_after: list | None = None) -> tuple[str, int]:
    """The solution as a notebook with prose, magics, a shell escape, a plot and a failing cell;
    returns the JSON and the failing cell's number."""
    a = registry.load(aid)
    code = _code_cells((ROOT / "solutions" / aid / a.code_file).read_text())
    cells = [
        MARKDOWN,
        MAGIC,
        code[0],
        SHELL,
        *code[1:2],
        ERROR,
        *code[2:],
        PLOT,
        *(extra_after or []),
        _answers(answer_key(aid).to_toml(None)),
    ]
    return _notebook(cells), _code_number(cells, ERROR)


def _code_number(cells: list, cell: nbformat.NotebookNode) -> int:
    """The cell's number as students count them: code cells only, from 1."""
    code = [c for c in cells if c.cell_type == "code"]
    return next(i for i, c in enumerate(code, start=1) if c is cell)


def _solution_folder(tmp_path: Path, aid: str, extra_after: list | None = None) -> tuple[Path, int]:
    a = registry.load(aid)
    text, error_cell = _solution_notebook(aid, extra_after)
    return _write(tmp_path / aid, {a.code_file.replace(".py", ".ipynb"): text}), error_cell


# --------------------------------------------------------------------------- full marks


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_solution_notebook_scores_full_marks(aid: str, tmp_path: Path):
    folder, error_cell = _solution_folder(tmp_path, aid)
    report = _grade(folder, aid)
    assert report.score == report.max_score == 100, [
        (q.question_id, q.feedback) for q in report.questions if q.status == "failed"
    ]
    notes = " ".join(report.warnings)
    assert (
        f"code cell {error_cell} (`total = 1`) raised `NameError: name 'undefined_variable' is "
        "not defined` at line 2: `print(undefined_variable + total)`" in notes
    )
    assert "the functions defined before and after it were graded" in notes
    assert (
        "`!pip install --quiet nothing-at-all` in code cell 3 (`!pip install --quiet…`)" in notes
        and "`%matplotlib inline` in code cell 1 (`%matplotlib inline`)" in notes
    )


@pytest.mark.parametrize("aid", BUGGY)
def test_buggy_notebook_gets_the_same_ids_as_the_buggy_py(aid: str, tmp_path: Path):
    a = registry.load(aid)
    sample = samples_dir() / aid / "buggy"
    as_py = _grade(sample, aid)
    code = _code_cells((sample / a.code_file).read_text())
    text = _notebook([MARKDOWN, *code, _answers((sample / "answers.toml").read_text())])
    as_nb = _grade(_write(tmp_path / "nb", {a.code_file.replace(".py", ".ipynb"): text}), aid)
    assert [(q.question_id, q.score, q.misconceptions) for q in as_nb.questions] == [
        (q.question_id, q.score, q.misconceptions) for q in as_py.questions
    ]
    assert any(q.misconceptions for q in as_nb.questions)


def _with_solution(nb: nbformat.NotebookNode, aid: str) -> nbformat.NotebookNode:
    """The handout notebook with the solution pasted into its stub cells and the answers cell."""
    a = registry.load(aid)
    solution = {
        _defines(c): c
        for c in notebook_handout.split_cells((ROOT / "solutions" / aid / a.code_file).read_text())
    }
    used = set()
    for cell in nb.cells:
        if cell.cell_type == "code" and _defines(cell.source) in solution:
            used.add(_defines(cell.source))
            cell.source = solution[_defines(cell.source)]
        elif answers_cell(cell) is not None:
            cell.source = f"%%writefile answers.toml\n{answer_key(aid).to_toml(None)}\n"
    helpers = [
        v4.new_code_cell(c) for name, c in solution.items() if name not in used
    ]  # the student's own
    first_code = next(
        i
        for i, c in enumerate(nb.cells)
        if c.cell_type == "code" and notebook_handout.SKIP_TAG not in c.metadata.get("tags", [])
    )  # the header cell, with the imports
    nb.cells[first_code + 1 : first_code + 1] = helpers
    return nb


def _defines(source: str) -> str:
    """The function a stub cell defines ("" for the header cell)."""
    for line in source.split("\n"):
        if line.startswith(("def ", "class ")):
            return line.split()[1].split("(")[0].rstrip(":")
    return "" if "import" in source else source


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_handout_notebook_with_the_solution_pasted_in(aid: str, tmp_path: Path):
    a = registry.load(aid)
    out = notebook_handout.write(aid, tmp_path / "handout" / a.code_file.replace(".py", ".ipynb"))
    nb = nbformat.read(str(out), as_version=4)
    nbformat.validate(nb)
    assert all(c.get("outputs", []) == [] for c in nb.cells)
    assert nb.cells[-1].metadata["tags"] == [notebook_handout.SKIP_TAG]
    stub = _grade(out.parent, aid)
    assert stub.score == 0
    filled = _with_solution(nb, aid)
    folder = _write(tmp_path / "filled", {out.name: nbformat.writes(filled)})
    report = _grade(folder, aid)
    assert report.score == 100, [
        (q.question_id, q.feedback) for q in report.questions if q.status == "failed"
    ]
    # Run in a real kernel, its check() calls and public tests pass: test_notebook_handout.py


# --------------------------------------------------------------------------- reading the cells


def test_magics_and_shell_escapes_are_dropped_with_line_numbers_kept():
    code, dropped = drop_magics(
        "%matplotlib inline\nx = (1 +\n     2)\n!pip install y\nif x:\n    %time z = x\n"
        "s = '''\n%not a magic inside a string\n'''\nfiles = !ls\nnp.sum?"
    )
    assert code is not None
    lines = code.split("\n")
    assert lines[0] == "pass" and lines[3] == "pass" and lines[5] == "    z = x"
    assert lines[7] == "%not a magic inside a string"  # inside a string literal: left alone
    assert lines[9] == "files = None" and lines[10] == "pass"
    compile(code, "cell", "exec")
    assert "%matplotlib inline" in dropped and "!pip install y" in dropped


def test_a_bash_cell_is_not_python_and_a_capture_cell_keeps_its_body():
    assert drop_magics("%%bash\necho hi")[0] is None
    code, _ = drop_magics("%%capture\nimport math\nx = math.pi")
    assert code is not None and code.split("\n")[1:] == ["import math", "x = math.pi"]


def test_answers_cell_raw_or_markdown_with_a_fence():
    raw = v4.new_raw_cell("# answers.toml\nq1 = 3\n")
    md = v4.new_markdown_cell("# answers.toml\n```toml\nq1 = 3\n```")
    other = v4.new_markdown_cell("# Answers\nq1 = 3")
    assert answers_cell(raw).toml == "\nq1 = 3\n\n"  # cell lines kept
    assert answers_cell(md).toml == "\n\nq1 = 3\n\n"
    assert answers_cell(other) is None


def test_split_cells_gives_the_source_back():
    source = (ROOT / "solutions" / "a4_transformer" / "transformer.py").read_text()
    cells = notebook_handout.split_cells(source)
    assert len(cells) > 5 and cells[1].lstrip().startswith(("def ", "#", "@", "class "))
    assert "\n".join(cells).split() == source.split()


# --------------------------------------------------------------------------- feedback in cells


A1 = "a1_word_vectors"
A1_SOLUTION = (ROOT / "solutions" / A1 / "word_vectors.py").read_text()


def _a1_notebook(
    tmp_path: Path,
    cells: list,
    name: str = "nb",
    limits: sandbox.Limits = FAST,
    validate: bool = True,
    **extra: str | bytes,
) -> GradeReport:
    a1 = _code_cells(A1_SOLUTION)
    text = _notebook([*a1, *cells, _answers(answer_key(A1).to_toml(None))], validate=validate)
    folder = _write(tmp_path / name, {"word_vectors.ipynb": text, **extra})
    return grade_submission(folder, registry.load(A1), limits=limits)


def test_a_call_time_error_points_at_the_cell_and_line(tmp_path: Path):
    broken = v4.new_code_cell(
        "import numpy as np\n\ndef softmax(x, axis=-1):\n    z = np.asarray(x)\n"
        "    return z / undefined_scale\n"
    )
    report = _a1_notebook(tmp_path, [broken])
    cell = len(_code_cells(A1_SOLUTION)) + 1
    q = report.questions[0]
    assert q.function == "softmax" and q.score == 0
    assert f"raised at code cell {cell} (`" in q.feedback, q.feedback
    assert "), line 5: `return z / undefined_scale`" in q.feedback, q.feedback
    assert "word_vectors.py" not in q.feedback


def test_a_syntax_error_costs_only_its_cell(tmp_path: Path):
    report = _a1_notebook(tmp_path, [v4.new_code_cell("def broken(:\n    pass")])
    assert report.score == 100
    cell = len(_code_cells(A1_SOLUTION)) + 1
    assert any(
        f"code cell {cell} (`def broken(…)`) was skipped: line 1: `def broken(:` has a "
        "`SyntaxError`" in w
        for w in report.warnings
    )


def test_a_cell_that_never_ends_is_stopped_and_the_rest_is_graded(tmp_path: Path):
    loop = v4.new_code_cell("step = 0\nwhile True:\n    step += 1")
    after = v4.new_code_cell("def late_helper():\n    return 1")
    started = time.monotonic()
    report = _a1_notebook(tmp_path, [loop, after])
    assert report.score == 100
    assert any(
        f"code cell {len(_code_cells(A1_SOLUTION)) + 1} (`step = 0`) was stopped after" in w
        and "of CPU time, the most a cell that runs code may take" in w
        for w in report.warnings
    ), report.warnings
    assert time.monotonic() - started < 60


def test_a_loop_that_swallows_every_exception_costs_the_code_not_the_answers(tmp_path: Path):
    """The one case the per-cell limit cannot stop (documented): the worker's import deadline does."""
    loop = v4.new_code_cell(
        "import time\nfor epoch in range(10**9):\n    try:\n        time.sleep(0.01)\n"
        "    except:\n        pass"
    )
    # 4 s per call: the cells get 80% of it (the solution's cells need a fraction of a second)
    report = _a1_notebook(tmp_path, [loop], limits=sandbox.Limits(call_seconds=4.0))
    code = [q for q in report.questions if q.kind == "code"]
    written = [q for q in report.questions if q.kind == "written"]
    assert all(
        q.score == 0 and "running the cells of `word_vectors.ipynb` did not finish" in q.feedback
        for q in code
    ), code[0].feedback
    assert sum(q.score for q in written) == sum(q.max_score for q in written)
    assert report.grader_error is None


def test_a_cell_that_forks_costs_only_itself(tmp_path: Path):
    fork = v4.new_code_cell("import os\nchild = os.fork()\nimport time\ntime.sleep(0.2)")
    report = _a1_notebook(tmp_path, [fork])
    assert report.score == 100, [
        (q.question_id, q.feedback) for q in report.questions if q.status == "failed"
    ]


def test_input_and_prints_never_stop_grading(tmp_path: Path):
    chatty = v4.new_code_cell(
        "name = input('your name? ')\nfor i in range(20000):\n    print('epoch', i)"
    )
    report = _a1_notebook(tmp_path, [chatty])
    assert report.score == 100 and not any("raised" in w for w in report.warnings)


def test_both_files_the_py_is_graded_and_the_notebook_ignored(tmp_path: Path):
    bad = _notebook([v4.new_code_cell("def softmax(x, axis=-1):\n    return x")])
    folder = _write(
        tmp_path / "both",
        {
            "word_vectors.py": A1_SOLUTION,
            "word_vectors.ipynb": bad,
            "answers.toml": answer_key(A1).to_toml(None),
        },
    )
    report = _grade(folder, A1)
    assert report.score == 100
    assert any(
        "`word_vectors.ipynb` was ignored: `word_vectors.py` is graded" in w
        for w in report.warnings
    )


def test_answers_toml_beside_the_notebook_wins_over_its_answers_cell(tmp_path: Path):
    a1 = _code_cells(A1_SOLUTION)
    text = _notebook([*a1, _answers("this is not toml = = =")])
    folder = _write(
        tmp_path / "beside",
        {"word_vectors.ipynb": text, "answers.toml": answer_key(A1).to_toml(None)},
    )
    report = _grade(folder, A1)
    assert report.score == 100 and any(
        "cell was ignored" in w or "was ignored" in w for w in report.warnings
    )


def test_library_shortcut_findings_name_the_cell(tmp_path: Path):
    aid = "a4_transformer"
    solution = _code_cells((ROOT / "solutions" / aid / "transformer.py").read_text())
    shortcut = v4.new_code_cell(
        "import torch\n\ndef scaled_dot_product_attention(Q, K, V, mask=None):\n"
        "    return torch.nn.functional.scaled_dot_product_attention(Q, K, V)\n"
    )
    text = _notebook([*solution, shortcut, _answers(answer_key(aid).to_toml(None))])
    report = _grade(_write(tmp_path / "a4", {"transformer.ipynb": text}), aid)
    flagged = [q for q in report.questions if "uses-library-shortcut" in q.misconceptions]
    assert flagged
    assert all(f"code cell {len(solution) + 1} (" in q.feedback for q in flagged), flagged[
        0
    ].feedback
    assert all("), line 4)" in q.feedback for q in flagged), flagged[0].feedback


# --------------------------------------------------------------------------- hostile notebooks


def test_malformed_json_costs_the_code_with_a_clear_message(tmp_path: Path):
    folder = _write(
        tmp_path / "bad",
        {"word_vectors.ipynb": '{"cells": [', "answers.toml": answer_key(A1).to_toml(None)},
    )
    report = _grade(folder, A1)
    code = [q for q in report.questions if q.kind == "code"]
    written = [q for q in report.questions if q.kind == "written"]
    assert all(
        q.score == 0
        and "`word_vectors.ipynb` is not a notebook: its JSON is malformed at line 1" in q.feedback
        for q in code
    ), code[0].feedback
    assert sum(q.score for q in written) == sum(q.max_score for q in written)
    assert report.grader_error is None


def test_a_100_mb_output_blob_is_never_read(tmp_path: Path):
    a1 = _code_cells(A1_SOLUTION)
    a1[1].outputs = [v4.new_output("stream", name="stdout", text="x" * (100 << 20))]
    text = _notebook([*a1, _answers(answer_key(A1).to_toml(None))])
    started = time.monotonic()
    report = _grade(_write(tmp_path / "blob", {"word_vectors.ipynb": text}), A1)
    assert report.score == 100
    assert time.monotonic() - started < 60


def test_ten_thousand_cells(tmp_path: Path):
    a1 = _code_cells(A1_SOLUTION)
    filler = _copies(v4.new_code_cell(), [f"value_{i} = {i}" for i in range(10_000 - len(a1) - 1)])
    report = _a1_notebook(tmp_path, filler, validate=False)  # every cell checked: _copies
    assert report.score == 100, [
        (q.question_id, q.feedback) for q in report.questions if q.status == "failed"
    ]


def test_more_cells_than_read_says_so(tmp_path: Path):
    text = _notebook(_copies(v4.new_markdown_cell(), ["x"] * 10_005), validate=False)
    report = _grade(_write(tmp_path / "many", {"word_vectors.ipynb": text}), A1)
    assert any("has 10,005 cells; only the first 10,000 were read" in w for w in report.warnings)


def test_another_kernel_in_the_metadata_is_named(tmp_path: Path):
    a1 = _code_cells(A1_SOLUTION)
    text = _notebook(
        [*a1, _answers(answer_key(A1).to_toml(None))],
        kernelspec={"name": "ir", "display_name": "R", "language": "R"},
    )
    report = _grade(_write(tmp_path / "r", {"word_vectors.ipynb": text}), A1)
    assert report.score == 100
    assert any(
        "names the kernel `ir` (R); seqgrade runs its code cells as Python" in w
        for w in report.warnings
    )


def test_not_a_notebook_format_is_read_leniently(tmp_path: Path):
    a1 = _code_cells(A1_SOLUTION)
    doc = json.loads(_notebook([*a1, _answers(answer_key(A1).to_toml(None))]))
    doc["cells"][0]["unexpected_key"] = (
        1  # nbformat's schema refuses it; Jupyter would warn and open it
    )
    report = _grade(_write(tmp_path / "odd", {"word_vectors.ipynb": json.dumps(doc)}), A1)
    assert report.score == 100
    assert any("does not follow the notebook format exactly" in w for w in report.warnings)


def test_a_zipped_notebook_in_one_folder_and_a_lone_notebook_file(tmp_path: Path):
    import zipfile

    a1 = _code_cells(A1_SOLUTION)
    text = _notebook([*a1, _answers(answer_key(A1).to_toml(None))])
    archive = tmp_path / "alice.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("my work/word_vectors.ipynb", text)
        zf.writestr("my work/.ipynb_checkpoints/word_vectors-checkpoint.ipynb", "{}")
    assert _grade(archive, A1).score == 100
    lone = tmp_path / "word_vectors.ipynb"
    lone.write_text(text)
    assert _grade(lone, A1).score == 100


def test_written_feedback_names_the_answers_cell_and_its_line(tmp_path: Path):
    key = answer_key(A1).to_toml(None).split("\n")
    first = next(i for i, line in enumerate(key) if "=" in line and not line.startswith("#"))
    name = key[first].split("=")[0].strip()
    key[first] = f"{name} = = broken"
    a1 = _code_cells(A1_SOLUTION)
    cells = [*a1, v4.new_markdown_cell("# answers.toml\n```toml\n" + "\n".join(key) + "\n```")]
    report = _grade(_write(tmp_path / "w", {"word_vectors.ipynb": _notebook(cells)}), A1)
    hit = [q for q in report.questions if q.kind == "written" and q.status == "failed"]
    # The mark and the fence come first in the cell: the key's line is first + 3 there.
    assert (
        hit
        and f"the answers cell (the markdown cell), line {first + 3}: `{name} = = broken`"
        in hit[0].feedback
    )


def test_answers_a_code_cell_writes_from_a_string_are_graded_with_their_lines(tmp_path: Path):
    """A Colab student without the mark: a code cell that writes answers.toml from a string.
    Full marks as with the mark; a broken key is named at its line of that cell."""
    key = answer_key(A1).to_toml(None)
    write = (
        f'answers = """\n{key}"""\nwith open("answers.toml", "w") as fh:\n    fh.write(answers)\n'
    )
    a1 = _code_cells(A1_SOLUTION)
    cells = [*a1, v4.new_markdown_cell("## Written answers"), v4.new_code_cell(write)]
    report = _grade(_write(tmp_path / "ok", {"word_vectors.ipynb": _notebook(cells)}), A1)
    assert report.score == report.max_score == 100
    number = len(a1) + 1
    assert any(
        f'code cell {number} (`answers = """`) was taken as your written answers' in w
        for w in report.warnings
    ), report.warnings
    lines = key.split("\n")
    first = next(i for i, line in enumerate(lines) if "=" in line and not line.startswith("#"))
    name = lines[first].split("=")[0].strip()
    lines[first] = f"{name} = = broken"
    broken = write.replace(key, "\n".join(lines))
    cells[-1] = v4.new_code_cell(broken)
    report = _grade(_write(tmp_path / "broken", {"word_vectors.ipynb": _notebook(cells)}), A1)
    hit = [q for q in report.questions if q.kind == "written" and q.status == "failed"]
    # The string opens at the end of the cell's line 1: the key's line is first + 2 there.
    assert (
        hit and f"code cell {number}), line {first + 2}: `{name} = = broken`" in hit[0].feedback
    ), [q.feedback for q in hit]


def test_too_much_code_and_an_old_format(tmp_path: Path):
    huge = _notebook([v4.new_code_cell("x = 1\n" * 400_000)])
    report = _grade(_write(tmp_path / "huge", {"word_vectors.ipynb": huge}), A1)
    code = [q for q in report.questions if q.kind == "code"]
    assert all(
        q.score == 0 and "characters of code, more than a submission may" in q.feedback
        for q in code
    )
    v3 = {
        "nbformat": 3,
        "nbformat_minor": 0,
        "metadata": {},
        "worksheets": [
            {
                "cells": [
                    {
                        "cell_type": "code",
                        "input": A1_SOLUTION,
                        "language": "python",
                        "outputs": [],
                        "metadata": {},
                    }
                ],
                "metadata": {},
            }
        ],
    }
    report = _grade(_write(tmp_path / "v3", {"word_vectors.ipynb": json.dumps(v3)}), A1)
    assert all(q.score == q.max_score for q in report.questions if q.kind == "code")


def test_cli_handout_notebook(tmp_path: Path):
    run = subprocess.run(
        [sys.executable, "-m", "grader", "handout", "a2", "--notebook"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    nb = nbformat.read(str(tmp_path / "rnn.ipynb"), as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.kernelspec.language == "python"
    assert [c.cell_type for c in nb.cells].count("code") >= 2
    assert "NotImplementedError" in "".join(c.source for c in nb.cells if c.cell_type == "code")
    missing = subprocess.run(
        [sys.executable, "-m", "grader", "handout", "a2"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert missing.returncode == 2 and "--out" in missing.stderr


def test_the_generated_module_keeps_string_literals_and_runs_cells_in_one_namespace(tmp_path: Path):
    """Cells are indented into their runner: multi-line strings (f-strings too) must not change."""
    from grader.engine.notebook_source import TimeShares, build_module

    cells = [
        (1, 'x = 3\ns = f"""a\n  {x}\nb"""\nt = """p\n%q\n"""\n%time v = 1\n'),
        (2, "def f(a):\n\treturn a + x\n!ls"),
        (3, "%%capture\nw = f(1)"),
        (4, "raise KeyError('k')"),
    ]
    source = build_module(cells, "t.ipynb", TimeShares.for_import(4.0))
    (tmp_path / "tmod.py").write_text(source.module)
    # The sandbox may give the worker its own deadline with alarm() (modes without an init process):
    # the cells' timers must leave it armed, with the default action, once they are done.
    check = (
        "import json, signal; signal.alarm(60); import tmod; left = signal.getitimer(signal.ITIMER_REAL)[0]; "
        "print(json.dumps([tmod.s, tmod.t, tmod.v, tmod.w, tmod._seqgrade_notebook_cells(), left, "
        "signal.getsignal(signal.SIGALRM) == signal.SIG_DFL]))"
    )
    run = subprocess.run(
        [sys.executable, "-c", check], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    s, t, v, w, failures, left, default = json.loads(run.stdout)
    assert (s, t, v, w) == ("a\n  3\nb", "p\n%q\n", 1, 4)
    assert 50 < left <= 60 and default
    assert [(f["cell"], f["type"]) for f in failures] == [(4, "KeyError")]
    assert source.where(failures[0]["lines"][-1]) == (4, 1)
    assert len(source.module.split("\n")) == len(source.scan.split("\n"))  # one line map for both
