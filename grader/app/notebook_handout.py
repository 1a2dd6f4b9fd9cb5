"""`seqgrade handout ID --notebook`: the student handout as one Jupyter notebook (contract §7).

The notebook holds the handout's README as markdown cells, the stub's header (docstring,
imports) and one cell per function, the written answers as a `# answers.toml` markdown cell
(the grader reads it when no `answers.toml` file is beside the notebook), and a last cell
that runs the public tests on the notebook's own functions. It is valid nbformat v4 with no
outputs, so it opens in Jupyter and in Colab. The last cell is tagged `skip-grading`: the
grader does not run it (the hidden tests are the grader's own).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from grader.course import registry
from grader.course.content import assignment_dir
from grader.engine.notebook import ANSWERS_MARK, SKIP_TAG

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
sys.modules[{stem!r}] = _public  # `import {stem}` in the tests finds this notebook's functions
_TESTS = {tests}
with tempfile.TemporaryDirectory() as _folder:
    pathlib.Path(_folder, "test_public.py").write_text(_TESTS)
    _status = pytest.main([_folder, "-q", "-p", "no:cacheprovider"])
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


def build(assignment_id: str) -> Any:
    """The handout notebook of an assignment (an nbformat v4 NotebookNode, validated)."""
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
    cells.append(
        v4.new_markdown_cell(
            f"## Your code\n\nFill in each function below (this notebook is graded as "
            f"`{code_file}` would be). Run the cells in order."
        )
    )
    cells += [v4.new_code_cell(text) for text in split_cells((folder / code_file).read_text())]
    answers = (folder / "answers.toml").read_text()
    cells.append(
        v4.new_markdown_cell(
            "## Written answers\n\nEdit the cell below (double-click it): its first line "
            f"must stay `{ANSWERS_MARK}`; the rest is your `answers.toml`."
        )
    )
    cells.append(v4.new_markdown_cell(f"{ANSWERS_MARK}\n```toml\n{answers.rstrip()}\n```"))
    tests = (folder / "test_public.py").read_text()
    cells.append(v4.new_code_cell(tests_cell(stem, tests), metadata={"tags": [SKIP_TAG]}))
    nb = v4.new_notebook(cells=cells, metadata=dict(_KERNEL))
    nbformat.validate(nb)
    return nb


def write(assignment_id: str, out: Path | None = None) -> Path:
    """Write the handout notebook (`<stem>.ipynb` in the current folder unless `out` is given)."""
    import nbformat

    nb = build(assignment_id)
    if out is None:
        out = Path(
            registry.load(registry.resolve_id(assignment_id)).code_file or "handout.py"
        ).with_suffix(".ipynb")
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(out))
    return out
