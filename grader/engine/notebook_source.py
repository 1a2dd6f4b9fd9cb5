"""A notebook's code cells as one Python module that runs them the way Jupyter would.

No kernel is started: the trusted side turns the cells into the source of `<stem>.py`, which the
sandboxed worker imports like any submission. Each cell's body sits at module level inside

    if _sg_begin(4, False):   # code cell 4's turn: its time limits are armed (or it is not run)
        with _sg_cell:        # an exception or an overrun stops this cell only
            <the cell's code, indented by tabs>

so every cell runs in the one module namespace, in order. Cells are numbered as students see
them: code cells only, from 1. Time limits (docs/notebooks.md, "Time limits"): a cell that only
imports and defines (`defines_only`) has no limit of its own, as the top of a `.py` has none; a
cell that runs code may compute for `cell_seconds` of CPU time (machine load does not count);
all cells together have the import time a `.py` gets. IPython magics and shell escapes are
dropped first (`%time stmt` keeps its statement; `%%capture`/`%%time` cells keep their body;
`%%bash`-like cells are not Python and are not run). The same lines, unindented and without the
wrapper, form the "scan source": a plain module whose line numbers equal the generated
module's, which the shortcut scan and the syntax check read.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass, field

# Cell magics whose body is Python run once; any other cell magic makes the cell not Python.
PYTHON_CELL_MAGICS = frozenset({"capture", "time", "timeit", "prun", "debug"})
_LINE_MAGIC = re.compile(r"^(\s*)(?:%|!|\?)")  # `%matplotlib inline`, `!pip install x`, `?np.sum`
_ASSIGNED_MAGIC = re.compile(r"^(\s*)([A-Za-z_][\w.,\s]*?)\s*=\s*[%!]")  # `files = !ls`
_TIME_MAGIC = re.compile(r"^(\s*)%time\s+(.*)$")  # `%time x = f()`: Jupyter runs the statement
_HELP = re.compile(r"^(\s*)[\w.]+\?{1,2}\s*$")  # `np.sum?`
_INDENT = (
    "\t"  # a tab prefix shifts every indentation level alike (tab size 8 and 1), unlike spaces
)
_HEAD_LINES = 2  # the `if` and `with` lines before each cell's body
_FSTRING_START = getattr(tokenize, "FSTRING_START", -1)  # Python 3.12+
_FSTRING_END = getattr(tokenize, "FSTRING_END", -1)


@dataclass
class SkippedCell:
    """A code cell that is not run, and why (found on the trusted side, before running)."""

    number: int
    """1-based among the code cells, as a student counts them in Jupyter or Colab."""
    reason: str
    """Markdown."""


@dataclass
class CellSpan:
    """Where a code cell's lines sit in the generated module (and the scan source)."""

    number: int
    """1-based among the code cells."""
    first_line: int
    """The module line of the cell's line 1."""
    n_lines: int
    lines: list[str] = field(repr=False, default_factory=list)
    """The cell's code as run."""
    defines_only: bool = False
    """Imports and definitions only: no time limit of its own."""


@dataclass
class ModuleSource:
    """The generated module, the scan source, and the map back to cells."""

    module: str
    scan: str
    spans: list[CellSpan]
    skipped: list[SkippedCell]
    # magics and shell escapes removed, for the notes ("`!pip install x` (code cell 2 (`…`))")
    dropped: list[str]
    heads: dict[int, str] = field(default_factory=dict)
    """Code cell number -> its first line."""

    def where(self, line: int) -> tuple[int, int] | None:
        """Module line -> (code cell number, line in the cell), or None for the generated lines."""
        for span in self.spans:
            if span.first_line <= line < span.first_line + span.n_lines:
                return span.number, line - span.first_line + 1
        return None

    def label(self, number: int) -> str:
        """How a student finds code cell `number`: "code cell 4 (`def layer_norm(…)`)"."""
        return cell_label(number, self.heads.get(number, ""))


def quote_head(first_line: str) -> str:
    """A cell's first line as a short quote: `def layer_norm(…)`, `import matplotlib…`."""
    text = first_line.strip()
    m = re.match(r"(async\s+def|def|class)\s+(\w+)", text)
    if m:
        return f"{m.group(1)} {m.group(2)}(…)" if "(" in text else f"{m.group(1)} {m.group(2)}"
    if len(text) <= 32:
        return text
    cut = text[:32]
    cut = cut[: cut.rfind(" ")] if " " in cut[8:] else cut
    return cut.rstrip(" ,.(=") + "…"


def cell_label(number: int, first_line: str) -> str:
    """ "code cell 4 (`def layer_norm(…)`)"; without a first line, "code cell 4"."""
    head = quote_head(first_line).replace("`", "'")
    return f"code cell {number} (`{head}`)" if head else f"code cell {number}"


def first_line(source: str) -> str:
    """The first line of a cell that is not blank (what a student sees at the cell's top)."""
    return next((line for line in source.split("\n") if line.strip()), "")


# --------------------------------------------------------------------------- magics


def _logical_starts(source: str) -> tuple[set[int] | None, set[int]]:
    """Rows (1-based) where a statement starts, and rows inside a multi-line string literal."""
    starts: set[int] = set()
    inside: set[int] = set()
    depth, at_start = 0, True
    fstrings: list[int] = []  # rows where open f-strings start (Python 3.12+ tokenizes their parts)
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
            elif tok.type == _FSTRING_START:
                fstrings.append(tok.start[0])
            elif tok.type == _FSTRING_END and fstrings:
                inside.update(range(fstrings.pop() + 1, tok.end[0] + 1))
            if tok.type in (tokenize.NEWLINE, tokenize.NL):
                at_start = at_start or tok.type == tokenize.NEWLINE or depth == 0
                continue
            if tok.type in (tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
                continue
            if at_start and depth == 0:
                starts.add(tok.start[0])
                at_start = False
            if tok.type == tokenize.OP and tok.string in "([{":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in ")]}":
                depth = max(0, depth - 1)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None, inside
    return starts, inside


def drop_magics(source: str) -> tuple[str | None, list[str]]:
    """The cell's Python with IPython magics and shell escapes removed, line numbers kept.

    Returns (None, [magic]) for a cell that is not Python (`%%bash`, `%%html`, `%%writefile`).
    """
    lines = source.split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    dropped: list[str] = []
    if first is not None and lines[first].lstrip().startswith("%%"):
        magic = lines[first].strip()
        name = magic[2:].split(maxsplit=1)[0] if len(magic) > 2 else ""
        if name not in PYTHON_CELL_MAGICS:
            return None, [magic]
        dropped.append(magic)
        lines[first] = ""
    starts, _ = _logical_starts("\n".join(lines))
    for i, line in enumerate(lines):
        if starts is not None and (i + 1) not in starts:
            continue
        timed = _TIME_MAGIC.match(line)
        if timed:
            lines[i] = timed.group(1) + timed.group(2)
            dropped.append("%time")
        elif _ASSIGNED_MAGIC.match(line) and not line.rstrip().endswith(("%", "!")):
            m = _ASSIGNED_MAGIC.match(line)
            assert m is not None
            dropped.append(line.strip())
            lines[i] = f"{m.group(1)}{m.group(2)} = None"
        elif _LINE_MAGIC.match(line) or _HELP.match(line):
            dropped.append(line.strip())
            lines[i] = re.match(r"\s*", line).group(0) + "pass"  # type: ignore[union-attr]
    return "\n".join(lines), dropped


def _drop_future_imports(source: str) -> str:
    """`from __future__ import …` may not stand inside the wrapper; it changes nothing we grade."""
    if "__future__" not in source:
        return source
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return source
    lines = source.split("\n")
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            end = node.end_lineno or node.lineno
            lines[node.lineno - 1] = "pass"
            for row in range(node.lineno, end):
                lines[row] = ""
    return "\n".join(lines)


# --------------------------------------------------------------------------- the generated module

_PRELUDE = '''\
# Generated by seqgrade from {notebook}: its code cells run below in order, in this module's
# namespace, a cell that runs code under its own time limit; a cell that raises or overruns is
# skipped.
import os as _sg_os
import signal as _sg_signal
import time as _sg_time

_sg_os.environ["MPLBACKEND"] = "Agg"  # plots draw off-screen, as in a notebook without a display


class _SeqgradeCellTimeout(BaseException):
    """Raised inside a cell that ran past its time limit (not an Exception: `except Exception` misses it)."""


class _SeqgradeCells:
    """Arms each cell's time limits and records the cells that raised or overran.

    A cell that only imports and defines runs until the notebook's hard stop (wall clock); a
    cell that runs code may also use at most `cell_seconds` of CPU time (ITIMER_PROF: time the
    process computes, so a loaded machine does not cut it short) and starts only within `budget`.
    """

    def __init__(self, budget, cell_seconds, hard_stop):
        self.budget, self.cell_seconds, self.hard_stop = budget, cell_seconds, hard_stop
        self.started = _sg_time.monotonic()
        self.pid = _sg_os.getpid()
        self.current = 0
        self.defines = False
        self.cell_started = self.started
        self.wall_limit = 0.0
        self.stopped_by = ""
        self.failures = []
        # The worker's own deadline, when the sandbox set one with alarm(): kept, and re-armed after.
        self.outer_left = _sg_signal.getitimer(_sg_signal.ITIMER_REAL)[0]
        self.outer_handler = _sg_signal.signal(_sg_signal.SIGALRM, self._wall)
        self.prof_handler = _sg_signal.signal(_sg_signal.SIGPROF, self._cpu)

    def _wall(self, signum, frame):
        if self.current:
            self.stopped_by = self.stopped_by or "wall"
            raise _SeqgradeCellTimeout()

    def _cpu(self, signum, frame):
        if self.current:
            self.stopped_by = self.stopped_by or "cpu"
            raise _SeqgradeCellTimeout()

    def begin(self, number, defines_only):
        elapsed = _sg_time.monotonic() - self.started
        if not defines_only and elapsed > self.budget:
            self.failures.append({{"cell": number, "type": "NotRun", "message": "", "lines": [],
                                   "seconds": round(elapsed, 2)}})
            return False
        self.current, self.defines, self.stopped_by = number, defines_only, ""
        wall = max(0.25, self.hard_stop - elapsed)  # a definition runs even past the stop
        if self.outer_left:
            wall = min(wall, max(0.05, self.outer_left - elapsed - 0.5))
        self.wall_limit = wall
        self.cell_started = _sg_time.monotonic()
        _sg_signal.setitimer(_sg_signal.ITIMER_REAL, wall, 0.05)  # repeats until the cell ends
        if not defines_only:
            _sg_signal.setitimer(_sg_signal.ITIMER_PROF, self.cell_seconds, 0.05)
        return True

    def finish(self):
        """After the last cell: the signal handlers and the worker's deadline as they were."""
        _sg_signal.setitimer(_sg_signal.ITIMER_REAL, 0)
        _sg_signal.setitimer(_sg_signal.ITIMER_PROF, 0)
        _sg_signal.signal(_sg_signal.SIGALRM, self.outer_handler if self.outer_handler is not None
                          else _sg_signal.SIG_DFL)
        _sg_signal.signal(_sg_signal.SIGPROF, self.prof_handler if self.prof_handler is not None
                          else _sg_signal.SIG_DFL)
        if self.outer_left:
            left = self.outer_left - (_sg_time.monotonic() - self.started)
            _sg_signal.setitimer(_sg_signal.ITIMER_REAL, max(left, 0.001))

    def __enter__(self):
        return self

    def __exit__(self, etype, exc, tb):
        number, self.current = self.current, 0  # first: a late alarm must not land outside the cell
        _sg_signal.setitimer(_sg_signal.ITIMER_REAL, 0)
        _sg_signal.setitimer(_sg_signal.ITIMER_PROF, 0)
        took = round(_sg_time.monotonic() - self.cell_started, 2)
        if _sg_os.getpid() != self.pid:
            _sg_os._exit(0)  # a process the cell forked never runs the later cells
        if etype is None:
            return False
        lines = []  # this module's lines on the way down; the grader maps them to cells
        while tb is not None and len(lines) < 200:
            if tb.tb_frame.f_code.co_filename == __file__:
                lines.append(tb.tb_lineno)
            tb = tb.tb_next
        try:
            message = str(exc)[:300]
        except BaseException:  # noqa: BLE001 - a hostile __str__
            message = ""
        name = "TimeLimit" if etype is _SeqgradeCellTimeout else etype.__name__
        self.failures.append({{"cell": number, "type": name, "message": message, "lines": lines[-20:],
                               "seconds": took, "limit": self.stopped_by if name == "TimeLimit" else "",
                               "defines_only": self.defines}})
        return True


def _seqgrade_notebook_cells():
    """What happened to the cells, for the grader's feedback."""
    return [dict(f) for f in _sg_cells.failures]


def input(prompt=""):
    """Jupyter would wait for the keyboard; grading answers with an empty line."""
    print(prompt, end="")
    return ""


def display(*objs, **kwargs):
    """IPython's display(): nothing to show while grading."""


class _SeqgradeShell:
    def __getattr__(self, name):
        return lambda *args, **kwargs: None


def get_ipython():
    """A stand-in for the IPython shell: get_ipython().run_line_magic(...) does nothing."""
    return _SeqgradeShell()


def check(*args, **kwargs):
    """The handout's check-as-you-go (its `check.py` is not part of grading): does nothing."""


def check_all(*args, **kwargs):
    """The handout's check-as-you-go (its `check.py` is not part of grading): does nothing."""


_sg_cells = _SeqgradeCells({budget!r}, {cell_seconds!r}, {hard_stop!r})
_sg_begin = _sg_cells.begin
_sg_cell = _sg_cells
'''


@dataclass(frozen=True)
class TimeShares:
    """How the worker's import time limit (the time a `.py` gets to import) serves the cells."""

    budget: float
    """Wall seconds after which a cell that runs code is no longer started."""
    cell_seconds: float
    """CPU seconds one cell that runs code may use (a training loop stops here)."""
    hard_stop: float
    """Wall seconds after which a running cell is stopped (the import must reply)."""

    @classmethod
    def for_import(cls, import_seconds: float) -> TimeShares:
        """80% of the import time to start cells that run code, a quarter of it (at least 1 s)
        of CPU per such cell, 90% for everything (the worker must still reply in time)."""
        return cls(0.8 * import_seconds, max(1.0, 0.25 * import_seconds), 0.9 * import_seconds)


# Statements that only import or define: running them computes nothing worth a limit.
_DEFINING = (
    ast.Import,
    ast.ImportFrom,
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Pass,
)


def _calls_nothing(node: ast.AST | None) -> bool:
    return node is None or not any(isinstance(n, (ast.Call, ast.Await)) for n in ast.walk(node))


def only_defines(stmt: ast.stmt) -> bool:
    """Whether a statement only imports or defines (a cell of such statements, or a `.py`'s
    top-level statement, has no time limit of its own)."""
    if isinstance(stmt, _DEFINING):
        return True
    if isinstance(stmt, ast.Expr):  # a docstring, a bare name
        return isinstance(stmt.value, (ast.Constant, ast.Name))
    if isinstance(stmt, (ast.Assign, ast.AnnAssign)):  # constants: `D = 4`, `EPS = 1e-5`
        return _calls_nothing(stmt.value)
    if isinstance(stmt, ast.Try):  # `try: import torch` / `except ImportError: torch = None`
        blocks = [stmt.body, stmt.orelse, stmt.finalbody, *(h.body for h in stmt.handlers)]
        return all(only_defines(s) for block in blocks for s in block)
    if isinstance(stmt, ast.If):
        return _calls_nothing(stmt.test) and all(only_defines(s) for s in stmt.body + stmt.orelse)
    return False


def defines_only(code: str) -> bool:
    """Whether a cell only imports and defines (functions, classes, constants without calls)."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return all(only_defines(stmt) for stmt in tree.body)


def _syntax_reason(err: SyntaxError, lines: list[str], offset: int) -> str:
    row = max(1, min((err.lineno or 1) - offset, len(lines)))
    text = lines[row - 1].strip()
    quoted = f": `{text[:160]}`" if text else ""
    kind = type(err).__name__
    return f"line {row}{quoted} has a `{kind}` ({err.msg}), so it was not run"


def _wrap(number: int, code: str) -> tuple[list[str] | None, str | None]:
    """The cell inside its wrapper (head, body, a closing `pass`), or why it cannot run."""
    lines = code.split("\n")
    try:
        compile(code, f"cell {number}", "exec", dont_inherit=True)
    except SyntaxError as err:
        return None, _syntax_reason(err, lines, 0)
    except (ValueError, RecursionError, MemoryError, OverflowError) as err:
        return None, f"it could not be read as Python ({type(err).__name__}), so it was not run"
    _, inside = _logical_starts(code)
    body = [
        line if row in inside else _INDENT * 2 + line for row, line in enumerate(lines, start=1)
    ]
    head = f"if _sg_begin({number}, {defines_only(code)}):"
    wrapped = [head, _INDENT + "with _sg_cell:", *body, _INDENT * 2 + "pass"]
    try:
        compile("\n".join(wrapped), f"cell {number}", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as err:
        return None, f"it could not be run inside the grader's cell runner ({type(err).__name__})"
    return wrapped, None


def build_module(cells: list[tuple[int, str]], notebook: str, shares: TimeShares) -> ModuleSource:
    """The module that runs `cells` ((code cell number, source) of the cells to run, in order)."""
    prelude = _PRELUDE.format(
        notebook=notebook,
        budget=round(shares.budget, 3),
        cell_seconds=round(shares.cell_seconds, 3),
        hard_stop=round(shares.hard_stop, 3),
    )
    out = prelude.rstrip("\n").split("\n")
    scan = [""] * len(out)
    spans: list[CellSpan] = []
    skipped: list[SkippedCell] = []
    dropped: list[str] = []
    heads = {number: first_line(raw) for number, raw in cells}
    for number, raw in cells:
        code, magics = drop_magics(raw.replace("\r\n", "\n").replace("\r", "\n"))
        label = cell_label(number, heads[number])
        dropped += [f"`{m[:60]}` in {label}" for m in magics]
        if code is None:
            skipped.append(
                SkippedCell(
                    number, f"it is a `{magics[0].split()[0]}` cell, not Python, so it was not run"
                )
            )
            continue
        if not any(line.strip() and not line.lstrip().startswith("#") for line in code.split("\n")):
            continue  # nothing to run (empty, comments only)
        code = _drop_future_imports(code)
        wrapped, problem = _wrap(number, code)
        if wrapped is None:
            skipped.append(SkippedCell(number, problem or "it was not run"))
            continue
        lines = code.split("\n")
        spans.append(
            CellSpan(number, len(out) + _HEAD_LINES + 1, len(lines), lines, defines_only(code))
        )
        out += wrapped
        scan += ["", "", *lines, ""]
    out.append("_sg_cells.finish()")
    scan.append("")
    return ModuleSource(
        "\n".join(out) + "\n", "\n".join(scan) + "\n", spans, skipped, dropped, heads
    )
