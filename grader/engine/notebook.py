"""Notebook submissions: `<stem>.ipynb` graded in place of `<stem>.py` (docs/notebooks.md).

The trusted side reads the notebook (plain JSON, outputs never looked at; nbformat's own schema
check when a quick check of keys and types has doubts, nbformat's upgrade for version 3), turns
its code cells into the source of `<stem>.py` (`notebook_source`), and
the worker imports that like any submission: no Jupyter kernel is started. Written answers come
from `answers.toml` beside the notebook, else from its answers cell (`notebook_answers`: a cell
marked by its first line), else from the first unmarked cell that sets a written question's key
(`adopt_unmarked`). Lines of the code are put in the notebook's terms as they are recorded
(`place`: "code cell 4 (`def layer_norm(…)`), line 3", code cells counted from 1).

The hooks, called by `grader.engine.grade`: `use_notebook` (after locating the files), `place`
and `line_words` (for the code questions' records), `cell_notes` (once the worker is started:
what happened to the cells) and `relabel` (on the finished report: the notebook's notes).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Literal

from grader.engine.code import as_source_spot
from grader.engine.locate import Located
from grader.engine.notebook_answers import (
    ANSWERS_FILE,
    ANSWERS_FORMS,
    ANSWERS_MARK,
    MAX_UNMARKED,
    AnswersCell,
    answers_cell,
    assigned_key,
    cell_text,
    mention,
    near_miss,
    unmarked_candidate,
)
from grader.engine.notebook_source import (
    ModuleSource,
    TimeShares,
    build_module,
    cell_label,
    first_line,
    quote_head,
)
from grader.records import GradeReport, QuestionResult, SourceSpot
from grader.sandbox.session import Spot, WorkerSession

SKIP_TAG = "skip-grading"  # a code cell with this tag is not run (the handout's public-tests cell)
MAX_CELLS = 10_000  # cells read; a notebook with more is cut there, with a note
MAX_CODE_CHARS = (
    2 << 20
)  # all code cells together: as much as a .py may hold (locate.MAX_FILE_BYTES)
REPORT_FUNCTION = "_seqgrade_notebook_cells"  # defined by the generated module


class NotebookError(Exception):
    """The notebook cannot be read at all (not JSON, not a notebook); costs its code questions."""


@dataclass
class Notebook:
    """The parts of a notebook that grading reads."""

    name: str
    code_cells: list[tuple[int, str]]
    """(code cell number, counted from 1; source) to run."""
    answers: AnswersCell | None
    """The first answers cell, if any."""
    notes: list[str] = field(default_factory=list)
    """Notes on the notebook itself (its kernel, its size)."""
    validation: _Validation | None = None
    """nbformat's schema check (when the quick one has doubts)."""
    counts: dict[str, int] = field(default_factory=dict)
    """Cells by type, for "looked in …"."""
    mentions: list[str] = field(default_factory=list)
    """Cells naming answers.toml, not as a mark."""
    unmarked: list[AnswersCell] = field(default_factory=list)
    """Cells that may hold the answers without a mark on their first line (`adopt_unmarked`)."""


@dataclass
class NotebookRun:
    """A notebook being graded: its generated module and where each line came from."""

    notebook: str
    """The notebook's name ("transformer.ipynb")."""
    code_file: str
    """The code file it stands in for ("transformer.py"), the name the worker imports."""
    source: ModuleSource
    shares: TimeShares
    """The cells' time limits, for the feedback."""
    validation: _Validation | None = None
    cell_problems: list[str] = field(default_factory=list)
    """Filled by cell_notes."""
    failed_cells: list[int] = field(default_factory=list)
    """Code cells that raised, overran or did not run."""
    outcomes: list[CellOutcome] = field(default_factory=list)
    """Filled by use_notebook, cell_notes."""
    answers_from: str = ""
    """Where the answers came from: "file", an AnswersForm, or "" (not found)."""

    @property
    def limit(self) -> float:
        """The CPU seconds a cell that runs code may use."""
        return self.shares.cell_seconds

    def summary(self) -> dict[str, object]:
        """What the class report reads: where the answers came from and each cell that did not
        run as written (`results.json`'s `extra_data.notebook`)."""
        return {
            "file": self.notebook,
            "answers": self.answers_from or "not found",
            "failed_cells": list(self.failed_cells),
            "cells": [
                {"cell": o.cell, "label": o.label, "what": o.what, "detail": o.detail}
                for o in self.outcomes
            ],
        }


CellWhat = Literal["raised", "stopped", "not run", "skipped"]


@dataclass(frozen=True)
class CellOutcome:
    """A code cell that did not run as written, as a record (the words come from it)."""

    cell: int
    """Code cell number."""
    label: str
    """"code cell 4 (`def layer_norm(…)`)"."""
    what: CellWhat
    detail: str
    """The exception's type, the limit's kind ("cpu", "wall"), the skip's reason."""


# --------------------------------------------------------------------------- reading


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


def adopt_unmarked(book: Notebook, keys: Collection[str]) -> None:
    """A notebook without an answers cell: the first unmarked cell that assigns one of the
    written questions' `keys` becomes it. A code cell of TOML is then read, not run; a code cell
    that writes the file from a string still runs, as in Jupyter."""
    if book.answers is not None:
        return
    for found in book.unmarked:
        key = assigned_key(found.toml, keys)
        if key is None:
            continue
        book.answers = found
        if found.form != "string" and found.number is not None:
            book.code_cells = [(n, text) for n, text in book.code_cells if n != found.number]
            how = "it was read, not run"
        elif found.form == "string":
            how = f"the string it writes to `{ANSWERS_FILE}` was read"
        else:
            how = "it was read"
        book.notes.append(
            f"{found.where} was taken as your written answers ({how}): it sets `{key}`, although "
            f"its first line is not `{ANSWERS_MARK}`, the mark of an answers cell"
        )
        return


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
    answers: AnswersCell | None = None
    counts = {"code": 0, "markdown": 0, "raw": 0}
    mentions: list[str] = []
    unmarked: list[AnswersCell] = []
    for cell in cells:
        kind = cell.get("cell_type")
        if kind in counts:
            counts[kind] += 1
        number = counts["code"] if kind == "code" else None
        found = answers_cell(cell, number) if answers is None else None
        if found is not None:
            answers = found
            if kind == "code":
                notes.append(f"{found.where} holds your written answers: it was read, not run")
            continue
        if kind == "code" and number is not None and SKIP_TAG in _tags(cell):
            label = cell_label(number, first_line(cell_text(cell.get("source"))))
            notes.append(f"{label} is tagged `{SKIP_TAG}` and was not run")
        elif kind == "code" and number is not None:
            code.append((number, cell_text(cell.get("source"))))
        if near_miss(cell, kind):
            mentions.append(mention(cell, number))
        if answers is None and len(unmarked) < MAX_UNMARKED:
            candidate = unmarked_candidate(cell, number)
            if candidate is not None:
                unmarked.append(candidate)
    size = sum(len(text) for _, text in code)
    if size > MAX_CODE_CHARS:
        raise NotebookError(
            f"`{name}` holds {size:,} characters of code, more than a submission may "
            f"({MAX_CODE_CHARS:,})"
        )
    return Notebook(name, code, answers, notes, checked, counts, mentions[:3], unmarked)


# --------------------------------------------------------------------------- hooks


def notebook_name(code_file: str) -> str:
    """`transformer.py` -> `transformer.ipynb`."""
    return code_file.removesuffix(".py") + ".ipynb"


def answers_not_found(book: Notebook) -> str:
    """Where the written answers were looked for, for a notebook that has none."""
    counts = book.counts
    looked = (
        f"its {counts.get('code', 0)} code, {counts.get('markdown', 0)} markdown and "
        f"{counts.get('raw', 0)} raw cells"
    )
    near = ""
    if book.mentions:
        near = (
            f" ({', '.join(book.mentions)} names `{ANSWERS_FILE}`, but neither starts with an "
            "answers mark nor sets a key of this assignment's written questions, so it was not "
            "read as your answers)"
        )
    return (
        f"`{ANSWERS_FILE}` was not found: it is not beside `{book.name}`, and none of {looked} is "
        f"an answers cell{near}. Put your answers in {ANSWERS_FORMS}, or submit `{ANSWERS_FILE}` "
        "beside the notebook"
    )


def _take_answers(located: Located, book: Notebook, run: NotebookRun) -> None:
    if ANSWERS_FILE in located.files:
        run.answers_from = "file"
        if book.answers is not None:
            located.notes.append(
                f"the answers cell of `{book.name}` ({book.answers.where}) was ignored: "
                f"`{ANSWERS_FILE}` beside the notebook is graded"
            )
        return
    if book.answers is None:
        located.problems[ANSWERS_FILE] = answers_not_found(book)
        return
    run.answers_from = book.answers.form
    located.files[ANSWERS_FILE] = book.answers.toml.encode()
    located.sources[ANSWERS_FILE] = f"the answers cell ({book.answers.short})"


def use_notebook(
    located: Located,
    code_file: str | None,
    import_seconds: float,
    answer_keys: Collection[str] = (),
) -> None:
    """Put the notebook's cells in place of the missing `code_file` (and its answers cell).

    A no-op without a notebook. `import_seconds`: the worker's time limit for importing the
    module, shared among the cells (`TimeShares`). `answer_keys`: the written questions' keys,
    by which a cell without an answers mark may still be found to hold the answers.
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
        if ANSWERS_FILE not in located.files:
            adopt_unmarked(book, frozenset(answer_keys))
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
    run = NotebookRun(name, code_file, source, shares, book.validation)
    run.outcomes = [
        CellOutcome(c.number, source.label(c.number), "skipped", c.reason) for c in source.skipped
    ]
    located.notebook = run
    located.notes += _skipped_notes(source)
    _take_answers(located, book, run)


def _skipped_notes(source: ModuleSource) -> list[str]:
    notes = [
        f"{source.label(s.number)} was skipped: {s.reason}; the functions defined before and after "
        "it were graded"
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


def _failure_words(run: NotebookRun, failure: dict) -> tuple[CellOutcome, str] | None:
    cell = failure.get("cell")
    kind = str(failure.get("type", ""))[:80]
    if not isinstance(cell, int) or isinstance(cell, bool):
        return None
    label = run.source.label(cell)
    seconds = failure.get("seconds")
    took = f"{seconds:g} s" if isinstance(seconds, (int, float)) else "its time"
    if kind == "NotRun":
        outcome = CellOutcome(cell, label, "not run", "budget")
        return outcome, (
            f"{label} was not run: the cells before it had used {took} of the "
            f"{run.shares.budget:g} s after which a cell that runs code is no longer started"
        )
    lines = [n for n in failure.get("lines", []) if isinstance(n, int)]
    spots = [run.source.where(n) for n in lines]
    spot = next((s for s in reversed(spots) if s is not None), None)
    at = ""
    if spot is not None:
        text = _cell_line(run, *spot)
        where = "" if spot[0] == cell else f"{run.source.label(spot[0])}, "
        at = f" at {where}line {spot[1]}" + (f": `{text[:160]}`" if text else "")
    graded = "the functions defined before and after it were graded"
    if kind == "TimeLimit":
        limit = str(failure.get("limit", ""))
        if limit == "cpu":
            why = (
                f"it computed for {run.shares.cell_seconds:g} s of CPU time, the most a cell that "
                "runs code may take (cells that only import and define have no limit of their own)"
            )
        else:
            why = (
                f"all the cells together may take {run.shares.hard_stop:g} s, the time a `.py` gets "
                "to import"
            )
        return CellOutcome(cell, label, "stopped", limit or "wall"), (
            f"{label} was stopped after {took}{at}: {why}; {graded}"
        )
    message = str(failure.get("message", ""))[:300]
    raised = f"`{kind}: {message}`" if message else f"`{kind}`"
    return CellOutcome(cell, label, "raised", kind), f"{label} raised {raised}{at}; {graded}"


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
    found = [w for w in (_failure_words(run, f) for f in failures) if w is not None]
    run.failed_cells = sorted({o.cell for o, _ in found})
    run.outcomes += [o for o, _ in found]
    run.cell_problems = [words for _, words in found]
    return list(run.cell_problems)


def place(located: Located) -> Callable[[Spot], SourceSpot]:
    """A line the worker reported, in the student's terms: the notebook's code cell and its line
    there (with the cell's first line quoted) for a notebook, the file and line otherwise."""
    run = located.notebook
    if not isinstance(run, NotebookRun):
        return as_source_spot

    def in_cells(spot: Spot) -> SourceSpot:
        where = run.source.where(spot.line) if spot.file == run.code_file else None
        if where is None:
            return as_source_spot(spot)
        cell, line = where
        head = quote_head(run.source.heads.get(cell, "")).replace("`", "'")
        return SourceSpot(file=run.notebook, line=line, text=spot.text, cell=cell, cell_head=head)

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
    report.notebook = run.summary()
    return report  # the warnings are already in the notebook's terms (use_notebook, cell_notes)
