"""`seqgrade handout ID --notebook`: the student handout as one Jupyter notebook.

The notebook holds, in order: the handout's README as markdown cells; how grading runs the
notebook (its time limits); the check-as-you-go tool (`%%writefile check.py`, then
`from check import check, check_all`); the stub's header (docstring, imports) and one cell per
function, each followed by a `check("function")` cell; the written part: a cell that prints the
student's own numbers with `variant.py`'s own code, and the answers as a
`%%writefile answers.toml` code cell (read by the grader when no `answers.toml` is beside the
notebook; run in Jupyter or Colab, it writes the file); and a last cell that runs the public
tests. The tool, check, numbers and tests cells are tagged `skip-grading`: the grader does not
run them. It is valid nbformat v4 with no outputs, so it opens in Jupyter and in Colab.
`write` with a `.zip` name writes a zip of the notebook, `variant.py` and `check.py`.
"""

from __future__ import annotations

import ast
import zipfile
from pathlib import Path
from typing import Any

from grader import sandbox
from grader.app import check_tool
from grader.course import registry
from grader.course.content import assignment_dir
from grader.engine.notebook import ANSWERS_FILE, SKIP_TAG
from grader.engine.notebook_source import TimeShares

WRITEFILE_MARK = f"%%writefile {ANSWERS_FILE}"
# Collapsed in Jupyter (`source_hidden`) and shown as a form in Colab (`cellView`).
_HIDDEN = {"jupyter": {"source_hidden": True}, "cellView": "form"}

_KERNEL = {
    "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
    "language_info": {"name": "python"},
}

_TESTS_CELL = """\
# Public tests: they run the file's tests on the functions defined in this notebook.
# (Passing them is a good sign, not a guarantee: the grader also runs hidden cases.)
import pathlib
import sys
import tempfile
import types

import pytest

_public = types.ModuleType({stem!r})
_public.__dict__.update({{k: v for k, v in globals().items() if not k.startswith("_")}})
_saved = sys.modules.get({stem!r})
sys.modules[{stem!r}] = _public  # `import {stem}` in the tests finds this notebook's functions
_TESTS = {tests}
try:
    with tempfile.TemporaryDirectory() as _folder:
        pathlib.Path(_folder, "test_public.py").write_text(_TESTS)
        _status = pytest.main([_folder, "-q", "-p", "no:cacheprovider"])
finally:  # the module as it was (a grader importing this notebook keeps its own)
    if _saved is None:
        del sys.modules[{stem!r}]
    else:
        sys.modules[{stem!r}] = _saved
assert _status == 0, "some public tests failed: see above"
"""


def split_cells(source: str) -> list[str]:
    """A module's source as notebook cells: the header (docstring, imports, constants) up to the
    first function or class, then one cell per top-level function or class with the comments
    and decorators just above it. Joining the cells with newlines gives the source back."""
    tree = ast.parse(source)
    lines = source.split("\n")
    starts: list[int] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list]) - 1
            while first > 0 and lines[first - 1].lstrip().startswith("#"):
                first -= 1  # the comment block above belongs to the function
            starts.append(first)
    bounds = [0, *[s for s in starts if s > 0], len(lines)]
    cells = ["\n".join(lines[a:b]).strip("\n") for a, b in zip(bounds, bounds[1:])]
    return [c for c in cells if c.strip()]


def _markdown_cells(readme: str) -> list[str]:
    """The README split at its `## ` headings (one cell per section)."""
    cells: list[list[str]] = [[]]
    fenced = False
    for line in readme.split("\n"):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        if line.startswith("## ") and not fenced and any(x.strip() for x in cells[-1]):
            cells.append([])
        cells[-1].append(line)
    return ["\n".join(c).strip("\n") for c in cells if any(x.strip() for x in c)]


def _string_literal(text: str) -> str:
    """`text` as a readable Python literal (a raw triple-quoted string when that is exact)."""
    if "'''" not in text and not text.endswith("\\") and "\r" not in text:
        return "r'''" + text + "'''"
    return repr(text)


def tests_cell(stem: str, tests: str) -> str:
    """The last cell: the public tests run on the notebook's own functions."""
    return _TESTS_CELL.format(stem=stem, tests=_string_literal(tests))


def limits_text(limits: sandbox.Limits | None = None) -> str:
    """How grading runs a notebook, with its time limits in seconds (markdown)."""
    shares = TimeShares.for_import((limits or sandbox.Limits()).call_seconds)
    return (
        "## How this notebook is graded\n\n"
        "The grader runs your code cells once, top to bottom, in a fresh process (as *Restart "
        "and run all* would), then calls your functions on its own cases. Before you submit, "
        "run *Restart and run all* once: what works then is what gets graded.\n\n"
        "- A cell that only **imports and defines** (functions, classes, constants) has **no "
        "time limit of its own**.\n"
        f"- A cell that **runs code** (a training loop, a test, a plot) may compute for "
        f"**{shares.cell_seconds:g} s** of CPU time; past that it is stopped, and the functions "
        "defined before and after it are still graded.\n"
        f"- All cells together have **{shares.hard_stop:g} s**, the time a `.py` file gets "
        "to import.\n"
        "- A cell that raises is skipped (the feedback names it); `!pip`, `%` magics, plots, "
        "`print`, `display()` and `input()` never stop grading.\n"
        f"- Cells tagged `{SKIP_TAG}` (the check, numbers and tests cells) are not run when "
        'grading. Feedback names code cells as you see them: "code cell 4 '
        '(`def layer_norm(…)`), line 3", code cells counted from the top.'
    )


def check_cells(code_file: str) -> list[str]:
    """The check-as-you-go tool: `check.py` written by a cell, then imported."""
    aid_note = (
        "# Check as you go: run this cell once (it writes check.py beside the notebook), then\n"
        '# the next one. check("name") runs that question\'s visible cases on your current\n'
        "# functions with the grader's own comparison and tolerances. Works offline.\n"
    )
    return [
        aid_note,
        "import importlib\n\nimport check as _check_tool\n\n"
        "importlib.reload(_check_tool)  # the check.py the cell above wrote\n"
        "check, check_all = _check_tool.check, _check_tool.check_all",
    ]


def variant_cell(variant_source: str) -> str:
    """A cell that prints the student's own numbers with `variant.py`'s code (its
    `if __name__ == "__main__":` block run with the key as its argument)."""
    tree = ast.parse(variant_source)
    lines = variant_source.split("\n")
    main = next(
        (
            n
            for n in tree.body
            if isinstance(n, ast.If)
            and isinstance(n.test, ast.Compare)
            and isinstance(n.test.left, ast.Name)
            and n.test.left.id == "__name__"
        ),
        None,
    )
    if main is None:
        raise ValueError('variant.py has no `if __name__ == "__main__":` block to run')
    body = lines[main.body[0].lineno - 1 : (main.body[-1].end_lineno or main.lineno)]
    kept = lines[: main.lineno - 1]
    # `from __future__` must come before any statement of the cell (the key's line included).
    future = [ln for ln in kept if ln.startswith("from __future__ import")]
    kept = [ln for ln in kept if not ln.startswith("from __future__ import")]
    run = "\n".join("        " + line.strip() for line in body)
    return "\n".join(
        [
            "# Your numbers for the written questions: put your key below (the email of your",
            "# Gradescope account unless your instructor says otherwise) and run this cell. Its",
            "# code is variant.py's, the code the grader uses for your numbers.",
            *future,
            'YOUR_KEY = ""  # e.g. "ada.lovelace@uni.edu"',
            "",
            *kept,
            "",
            "def _show_your_numbers(key):",
            '    """variant.py\'s main block, run as `python variant.py KEY`."""',
            "    saved = sys.argv",
            '    sys.argv = ["variant.py", key] if key.strip() else ["variant.py"]',
            "    try:",
            run,
            "    except SystemExit:",
            "        pass",
            "    finally:",
            "        sys.argv = saved",
            "",
            "",
            "_show_your_numbers(YOUR_KEY)",
        ]
    )


def _tagged(source: str, hidden: bool = False) -> Any:
    from nbformat import v4

    meta: dict[str, Any] = {"tags": [SKIP_TAG]}
    if hidden:
        meta.update(_HIDDEN)
    return v4.new_code_cell(source, metadata=meta)


def build(assignment_id: str, limits: sandbox.Limits | None = None) -> Any:
    """The handout notebook of an assignment (an nbformat v4 NotebookNode, validated); the time
    limits it states are `limits`' (a term's `[limits]`), or the defaults."""
    import nbformat
    from nbformat import v4

    aid = registry.resolve_id(assignment_id)
    code_file = registry.load(aid).code_file
    if code_file is None:
        raise ValueError(f"{aid} has no code file to put in a notebook")
    folder = assignment_dir(aid)
    stem = code_file.removesuffix(".py")
    cells = [
        v4.new_markdown_cell(text) for text in _markdown_cells((folder / "README.md").read_text())
    ]
    cells.append(v4.new_markdown_cell(limits_text(limits)))
    cells.append(
        v4.new_markdown_cell(
            f"## Your code\n\nFill in each function below (this notebook is graded as "
            f"`{code_file}` would be). Run the cells in order. First run the two check-as-you-go "
            'cells; then, after each function, its `check("…")` cell runs the grader\'s visible '
            "cases on it (`check_all()` runs them all)."
        )
    )
    tool, load = check_cells(code_file)
    cells.append(
        _tagged(f"%%writefile {check_tool.CHECK_FILE}\n" + tool + check_tool.source(aid), True)
    )
    cells.append(_tagged(load))
    functions = {q.function for q in registry.load(aid).questions if hasattr(q, "function")}
    for text in split_cells((folder / code_file).read_text()):
        cells.append(v4.new_code_cell(text))
        name = _defined(text)
        if name in functions:
            cells.append(_tagged(f"check({name!r})"))
    cells.append(_tagged("check_all()"))
    answers = (folder / ANSWERS_FILE).read_text()
    cells.append(
        v4.new_markdown_cell(
            "## Written answers\n\nYour own numbers first: put your key in the cell below and run "
            "it (it prints what `python variant.py YOUR_KEY` prints). Then edit the answers cell "
            f"after it: its first line must stay `{WRITEFILE_MARK}`; the rest is your "
            f"`{ANSWERS_FILE}` (running the cell writes that file too)."
        )
    )
    cells.append(_tagged(variant_cell((folder / "variant.py").read_text())))
    cells.append(v4.new_code_cell(f"{WRITEFILE_MARK}\n{answers.rstrip()}\n"))
    tests = (folder / "test_public.py").read_text()
    cells.append(v4.new_code_cell(tests_cell(stem, tests), metadata={"tags": [SKIP_TAG]}))
    nb = v4.new_notebook(cells=cells, metadata=dict(_KERNEL))
    nbformat.validate(nb)
    return nb


def _defined(source: str) -> str | None:
    """The name of the one top-level function a cell defines, if it defines one."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    return names[0] if len(names) == 1 else None


def write(
    assignment_id: str, out: Path | None = None, limits: sandbox.Limits | None = None
) -> Path:
    """Write the handout notebook (`<stem>.ipynb` in the current folder unless `out` is given);
    an `out` ending in `.zip` gets a zip of the notebook, `variant.py` and `check.py`."""
    import nbformat

    aid = registry.resolve_id(assignment_id)
    code_file = registry.load(aid).code_file or "handout.py"
    nb = build(aid, limits)
    if out is None:
        out = Path(code_file).with_suffix(".ipynb")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix.lower() == ".zip":
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr(Path(code_file).with_suffix(".ipynb").name, nbformat.writes(nb))
            zf.write(assignment_dir(aid) / "variant.py", "variant.py")
            zf.writestr(check_tool.CHECK_FILE, check_tool.source(aid))
        return out
    nbformat.write(nb, str(out))
    return out
