"""Notebook submissions: `<stem>.ipynb` graded in place of `<stem>.py` (docs/notebooks.md).

The trusted side reads the notebook (plain JSON, outputs never looked at; nbformat's own schema
check when a quick check of keys and types has doubts, nbformat's upgrade for version 3), turns
its code cells into the source of `<stem>.py` (`notebook_source`), and
the worker imports that like any submission: no Jupyter kernel is started. Written answers come
from `answers.toml` beside the notebook or from a raw/markdown cell whose first line is
`# answers.toml`. Lines of the code are put in the notebook's terms as they are recorded
(`place`: "code cell 4 (`def f(…)`), line 3").

The hooks, called by `grader.engine.grade`: `use_notebook` (after locating the files), `place`
and `line_words` (for the code questions' records), `cell_notes` (once the worker is started:
what happened to the cells) and `relabel` (on the finished report: the notebook's notes).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from grader.engine.locate import Located
from grader.engine.notebook_source import ModuleSource, TimeShares, build_module
from grader.report import GradeReport, QuestionResult, SourceSpot
from grader.sandbox.session import Spot, WorkerSession

ANSWERS_FILE = "answers.toml"
ANSWERS_MARK = "# answers.toml"
SKIP_TAG = "skip-grading"  # a code cell with this tag is not run (the handout's public-tests cell)
MAX_CELLS = 10_000  # cells read; a notebook with more is cut there, with a note
MAX_CODE_CHARS = (
    2 << 20
)  # all code cells together: as much as a .py may hold (locate.MAX_FILE_BYTES)
REPORT_FUNCTION = "_seqgrade_notebook_cells"  # defined by the generated module
_FENCE = re.compile(r"^\s*```[\w-]*\s*$")


class NotebookError(Exception):
    """The notebook cannot be read at all (not JSON, not a notebook); costs its code questions."""


@dataclass
class Notebook:
    """The parts of a notebook that grading reads."""

    name: str
    code_cells: list[tuple[int, str]]  # (cell number, 1-based among all cells; source)
    answers: str | None  # the body of the `# answers.toml` cell, if any
    answers_cell: int | None
    notes: list[str] = field(default_factory=list)  # kernel, size
    validation: _Validation | None = None  # nbformat's schema check (when the quick one has doubts)


@dataclass
class NotebookRun:
    """A notebook being graded: its generated module and where each line came from."""

    notebook: str  # "transformer.ipynb"
    code_file: str  # "transformer.py", the name the worker imports
    source: ModuleSource
    limit: float  # the per-cell time limit, for the feedback
    validation: _Validation | None = None
    cell_problems: list[str] = field(default_factory=list)  # filled by cell_notes
    failed_cells: list[int] = field(
        default_factory=list
    )  # cells that raised, overran or did not run


# --------------------------------------------------------------------------- reading


def _text(value: Any) -> str:
    """A cell's source: a string or a list of strings (nbformat's multiline form)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return ""


def _parse_json(data: bytes, name: str) -> dict:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise NotebookError(
            f"`{name}` is not a notebook: it is not UTF-8 text (byte {err.start})"
        ) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise NotebookError(
            f"`{name}` is not a notebook: its JSON is malformed at line {err.lineno}, column "
            f"{err.colno} ({err.msg}); open it in Jupyter or Colab and save it again"
        ) from None
    except RecursionError:
        raise NotebookError(f"`{name}` is not a notebook: its JSON is nested too deeply") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("cells", doc.get("worksheets")), list):
        raise NotebookError(f"`{name}` is not a notebook: it has no list of cells")
    return doc


def _upgrade(doc: dict, name: str) -> dict:
    """Older notebooks (nbformat 3, with worksheets) become version 4, as Jupyter would read them."""
    version = doc.get("nbformat")
    if isinstance(doc.get("cells"), list) and not (isinstance(version, int) and version < 4):
        return (
            doc  # version 4, or a version field missing or newer: the cells are read as version 4
        )
    import nbformat

    try:
        return dict(nbformat.convert(nbformat.from_dict(doc), 4))
    except Exception as err:  # noqa: BLE001 - nbformat raises many kinds on malformed input
        raise NotebookError(
            f"`{name}` is a notebook of format {doc.get('nbformat')!r} that could not be "
            f"read as version 4 ({type(err).__name__})"
        ) from None


def _validate(cells: list[dict], doc: dict, name: str) -> list[str]:
    """nbformat's schema check on the notebook without its outputs; problems become notes."""
    import nbformat

    slim = {k: v for k, v in doc.items() if k != "cells"}
    slim["cells"] = [{**c, "outputs": []} if c.get("cell_type") == "code" else c for c in cells]
    try:
        nbformat.validate(nbformat.from_dict(slim))
    except nbformat.ValidationError as err:
        return [
            f"`{name}` does not follow the notebook format exactly ({str(err.message)[:160]}); "
            "its cells were read anyway"
        ]
    except Exception as err:  # noqa: BLE001 - the validator on hostile input
        return [
            f"`{name}` could not be checked against the notebook format ({type(err).__name__}); "
            "its cells were read anyway"
        ]
    return []


_TOP_KEYS = {"cells", "metadata", "nbformat", "nbformat_minor"}
_CELL_KEYS = {
    "code": {"id", "cell_type", "metadata", "source", "outputs", "execution_count"},
    "markdown": {"id", "cell_type", "metadata", "source", "attachments"},
    "raw": {"id", "cell_type", "metadata", "source", "attachments"},
}


def _plainly_valid(doc: dict, cells: list) -> bool:
    """The common case, checked cheaply: v4 keys and types as Jupyter and Colab write them.

    Only a notebook that fails this is handed to nbformat's validator (whose import and schema
    compile cost 0.3-0.4 s), for its exact words on what is wrong.
    """
    if (
        set(doc) - _TOP_KEYS
        or not isinstance(doc.get("metadata"), dict)
        or doc.get("nbformat") != 4
    ):
        return False
    for cell in cells:
        if not isinstance(cell, dict):
            return False
        allowed = _CELL_KEYS.get(cell.get("cell_type"))  # type: ignore[arg-type]
        if allowed is None or set(cell) - allowed or not isinstance(cell.get("metadata", {}), dict):
            return False
        source = cell.get("source")
        if not (
            isinstance(source, str)
            or (isinstance(source, list) and all(isinstance(x, str) for x in source))
        ):
            return False
    return True


class _Validation:
    """`_validate` in a thread: nbformat's import and schema check (0.1-0.2 s) overlap the worker's start."""

    def __init__(self, cells: list[dict], doc: dict, name: str) -> None:
        self.name = name
        self.notes: list[str] | None = None
        self.thread = threading.Thread(
            target=self._run, args=(cells, doc), daemon=True, name="nbformat-validate"
        )
        self.thread.start()

    def _run(self, cells: list[dict], doc: dict) -> None:
        self.notes = _validate(cells, doc, self.name)

    def result(self, timeout: float = 30.0) -> list[str]:
        self.thread.join(timeout)
        if self.notes is None:
            return [f"`{self.name}` could not be checked against the notebook format in time"]
        return self.notes


def _kernel_note(doc: dict, name: str) -> list[str]:
    meta = doc.get("metadata") if isinstance(doc.get("metadata"), dict) else {}
    spec = meta.get("kernelspec") if isinstance(meta.get("kernelspec"), dict) else {}
    info = meta.get("language_info") if isinstance(meta.get("language_info"), dict) else {}
    language = str(spec.get("language") or info.get("name") or "python")[:40]
    if language.lower().startswith("python"):
        return []
    kernel = str(spec.get("name") or spec.get("display_name") or language)[:40]
    return [
        f"`{name}` names the kernel `{kernel}` ({language}); seqgrade runs its code cells as Python"
    ]


def _tags(cell: dict) -> list[str]:
    meta = cell.get("metadata")
    tags = meta.get("tags") if isinstance(meta, dict) else None
    return [t for t in tags if isinstance(t, str)] if isinstance(tags, list) else []


def answers_cell(cell: dict) -> str | None:
    """The TOML in a raw or markdown cell whose first line is `# answers.toml`, else None."""
    if cell.get("cell_type") not in ("raw", "markdown"):
        return None
    lines = _text(cell.get("source")).replace("\r\n", "\n").split("\n")
    if not lines or lines[0].strip().lower() != ANSWERS_MARK:
        return None
    # Blank lines for the mark and a markdown cell's fences: "line 3" in feedback is the cell's line 3.
    body = ["" if i == 0 or _FENCE.match(line) else line for i, line in enumerate(lines)]
    return "\n".join(body) + "\n"


def read_notebook(data: bytes, name: str) -> Notebook:
    """The code cells and the answers cell of a notebook file (outputs are never looked at)."""
    doc = _upgrade(_parse_json(data, name), name)
    raw_cells = doc.get("cells")
    if not isinstance(raw_cells, list):
        raise NotebookError(f"`{name}` is not a notebook: it has no list of cells")
    notes = _kernel_note(doc, name)
    if len(raw_cells) > MAX_CELLS:
        notes.append(
            f"`{name}` has {len(raw_cells):,} cells; only the first {MAX_CELLS:,} were read"
        )
    cells = [c for c in raw_cells[:MAX_CELLS] if isinstance(c, dict)]
    checked = None if _plainly_valid(doc, raw_cells) else _Validation(cells, doc, name)
    code: list[tuple[int, str]] = []
    answers, answers_at = None, None
    for number, cell in enumerate(raw_cells[:MAX_CELLS], start=1):
        if not isinstance(cell, dict):
            continue
        if cell.get("cell_type") == "code" and SKIP_TAG in _tags(cell):
            notes.append(f"cell {number} is tagged `{SKIP_TAG}` and was not run")
        elif cell.get("cell_type") == "code":
            code.append((number, _text(cell.get("source"))))
        elif answers is None and (found := answers_cell(cell)) is not None:
            answers, answers_at = found, number
    size = sum(len(text) for _, text in code)
    if size > MAX_CODE_CHARS:
        raise NotebookError(
            f"`{name}` holds {size:,} characters of code, more than a submission may "
            f"({MAX_CODE_CHARS:,})"
        )
    return Notebook(name, code, answers, answers_at, notes, checked)


# --------------------------------------------------------------------------- hooks


def notebook_name(code_file: str) -> str:
    """`transformer.py` -> `transformer.ipynb`."""
    return code_file.removesuffix(".py") + ".ipynb"


def _take_answers(located: Located, book: Notebook) -> None:
    if book.answers is None:
        located.problems.setdefault(
            ANSWERS_FILE,
            (
                f"`{ANSWERS_FILE}` was not found: put it beside `{book.name}`, or add a raw cell to the notebook "
                f"whose first line is `{ANSWERS_MARK}` followed by your answers"
            ),
        )
        return
    if ANSWERS_FILE in located.files:
        located.notes.append(
            f"the `{ANSWERS_MARK}` cell (cell {book.answers_cell}) of `{book.name}` was "
            f"ignored: `{ANSWERS_FILE}` beside the notebook is graded"
        )
        return
    located.files[ANSWERS_FILE] = book.answers.encode()
    located.sources[ANSWERS_FILE] = f"the answers cell (cell {book.answers_cell})"


def use_notebook(located: Located, code_file: str | None, import_seconds: float) -> None:
    """Put the notebook's cells in place of the missing `code_file` (and its answers cell).

    A no-op without a notebook. `import_seconds`: the worker's time limit for importing the
    module, shared among the cells (`TimeShares`).
    """
    if code_file is None or not code_file.endswith(".py"):
        return
    name = notebook_name(code_file)
    data = located.files.pop(name, None)
    if data is None:
        return
    if code_file in located.files:
        located.notes.append(
            f"`{name}` was ignored: `{code_file}` is graded when both are submitted"
        )
        return
    shares = TimeShares.for_import(import_seconds)
    try:
        book = read_notebook(data, name)
        source = build_module(book.code_cells, name, shares)
    except NotebookError as err:
        located.problems[code_file] = f"{err}; no function in it could be run."
        return
    except (RecursionError, MemoryError) as err:
        located.problems[code_file] = (
            f"`{name}` could not be read ({type(err).__name__}: nested too deeply or "
            "too large); no function in it could be run."
        )
        return
    finally:
        del data
    located.notes += book.notes
    located.files[code_file] = source.module.encode()
    located.read_as[code_file] = source.scan
    located.notebook = NotebookRun(name, code_file, source, shares.cell_seconds, book.validation)
    located.notes += _skipped_notes(source)
    _take_answers(located, book)


def _skipped_notes(source: ModuleSource) -> list[str]:
    notes = [
        f"cell {s.number} was skipped: {s.reason}; the functions defined before and after it were graded"
        for s in source.skipped[:20]
    ]
    if len(source.skipped) > 20:
        notes.append(f"{len(source.skipped) - 20} more cells were skipped")
    if source.dropped:
        shown = ", ".join(source.dropped[:6]) + (
            f" and {len(source.dropped) - 6} more" if len(source.dropped) > 6 else ""
        )
        notes.append(f"IPython magics and shell escapes are not run when grading: {shown}")
    return notes


def _failure_words(run: NotebookRun, failure: dict) -> str | None:
    cell = failure.get("cell")
    kind = str(failure.get("type", ""))[:80]
    if not isinstance(cell, int):
        return None
    if kind == "NotRun":
        return f"cell {cell} was not run: the notebook's cells used up their time"
    lines = [n for n in failure.get("lines", []) if isinstance(n, int)]
    spots = [run.source.where(n) for n in lines]
    spot = next((s for s in reversed(spots) if s is not None), None)
    at = ""
    if spot is not None:
        text = _cell_line(run, *spot)
        at = f" at cell {spot[0]}, line {spot[1]}" + (f": `{text[:160]}`" if text else "")
    if kind == "TimeLimit":
        return (
            f"cell {cell} ran past its time limit ({run.limit:g} s) and was stopped{at}; "
            "the functions defined before and after it were graded"
        )
    message = str(failure.get("message", ""))[:300]
    raised = f"`{kind}: {message}`" if message else f"`{kind}`"
    return f"cell {cell} raised {raised}{at}; the functions defined before and after it were graded"


def _cell_line(run: NotebookRun, cell: int, line: int) -> str:
    for span in run.source.spans:
        if span.number == cell and 0 < line <= len(span.lines):
            return span.lines[line - 1].strip()
    return ""


def cell_notes(session: WorkerSession | None, located: Located) -> list[str]:
    """What happened to the notebook's cells in the worker, in words (asks the worker once)."""
    run = located.notebook
    if session is None or not isinstance(run, NotebookRun):
        return []
    outcome = session.call(REPORT_FUNCTION, (), {})
    if not outcome.ok or not isinstance(outcome.value, list):
        return []
    failures = [f for f in outcome.value[:50] if isinstance(f, dict)]
    run.failed_cells = sorted({f["cell"] for f in failures if isinstance(f.get("cell"), int)})
    words = [_failure_words(run, f) for f in failures]
    run.cell_problems = [w for w in words if w]
    return list(run.cell_problems)


def place(located: Located) -> Callable[[Spot], SourceSpot]:
    """A line the worker reported, in the student's terms: the notebook's code cell and its line
    there (with the cell's first line quoted) for a notebook, the file and line otherwise."""
    run = located.notebook

    def plain(spot: Spot) -> SourceSpot:
        return SourceSpot(file=spot.file, line=spot.line, text=spot.text)

    if not isinstance(run, NotebookRun):
        return plain

    def in_cells(spot: Spot) -> SourceSpot:
        where = run.source.where(spot.line) if spot.file == run.code_file else None
        if where is None:
            return plain(spot)
        cell, line = where
        head = next(
            (s.lines[0].strip() for s in run.source.spans if s.number == cell and s.lines), ""
        )
        return SourceSpot(
            file=run.notebook,
            line=line,
            text=spot.text,
            cell=cell,
            cell_head=head[:60] + ("…" if len(head) > 60 else ""),
        )

    return in_cells


def line_words(located: Located) -> Callable[[int], str]:
    """A line of the code file in the student's terms ("line 12", "code cell 4 (…), line 3")."""
    to = place(located)
    name = located.notebook.code_file if isinstance(located.notebook, NotebookRun) else ""
    return lambda line: to(Spot(name, line)).words()


_CELL_EXPLAINS = ("missing-function", "import")


def _may_come_from_a_cell(q: QuestionResult) -> bool:
    """A failure a skipped cell can explain: a missing function, a failed import, a NameError."""
    return (
        bool(q.error)
        or any(k in _CELL_EXPLAINS for k in q.failure_kinds)
        or any(r.summary.exception == "NameError" for r in q.cases)
    )


def relabel(report: GradeReport, located: Located) -> GradeReport:
    """The finished report with the notebook's own notes: which cells failed, where the answers
    were read from (the code questions' lines are already in the notebook's terms: `place`)."""
    run = located.notebook
    if not isinstance(run, NotebookRun):
        return report
    answers_from = located.sources.get(ANSWERS_FILE)
    for q in report.questions:
        if q.kind == "written" and answers_from:
            # the written answers' own words name answers.toml and its lines: say which cell
            q.lead = re.sub(r"\b(?<!, )line (\d+): `", rf"{answers_from}, line \1: `", q.lead)
            q.lead = q.lead.replace("`answers.toml`", answers_from).replace(
                "answers.toml", answers_from
            )
        if q.kind != "code":
            continue
        if run.cell_problems and q.status == "failed" and _may_come_from_a_cell(q):
            shown = "; ".join(run.cell_problems[:3])
            q.notes.append(f"**Your notebook:** {shown}.")
    if run.validation is not None:
        report.warnings += run.validation.result()
    report.notebook = {"file": run.notebook, "failed_cells": list(run.failed_cells)}
    return report  # the warnings are already in the notebook's terms (use_notebook, cell_notes)
