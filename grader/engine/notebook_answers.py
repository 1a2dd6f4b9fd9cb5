"""Which cell of a notebook holds its written answers, and what it says.

An answers cell is marked by its first line (`%%writefile answers.toml` or `# answers.toml` in a
code cell, `# answers.toml` over a ```toml block in a markdown cell, or a raw cell). A notebook
without one may still hold its answers in a cell that is not marked (`unmarked_candidate`: a
```toml block, a mark below a title line, a string written to the file, a code cell that is
itself TOML): `grader.engine.notebook` takes such a cell only when it sets a key of the
assignment's written questions. The answers are read, never run, with the cell's own line
numbers.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Literal

from grader.engine.locate import ANSWERS_FILE
from grader.engine.notebook_source import cell_label, first_line
from grader.written.answers import toml_table

ANSWERS_MARK = "# answers.toml"
_FENCE = re.compile(r"^\s*(```|~~~)\s*([\w-]*)\s*$")
# First lines that make a cell the answers cell, by the cell's type.
_WRITEFILE = re.compile(r"^%%writefile(\s+-a|\s+--append)?\s+(\./)?answers\.toml\s*$", re.I)
_COMMENT_MARK = re.compile(r"^#\s*answers\.toml\s*$", re.I)
_MARKDOWN_MARK = re.compile(r"^(#{1,6}\s*)?[*_`]*answers\.toml[*_`]*\s*:?\s*$", re.I)
AnswersForm = Literal["writefile", "comment", "markdown", "raw", "string", "toml"]


def cell_text(value: Any) -> str:
    """A cell's source: a string or a list of strings (nbformat's multiline form)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return ""


@dataclass(frozen=True)
class AnswersCell:
    """The cell a notebook's written answers come from."""

    form: AnswersForm
    """How it is marked: `%%writefile answers.toml`, `# answers.toml`, …"""
    toml: str
    """Its TOML, other lines blank so that "line 3" is the cell's line 3."""
    where: str
    """How the student finds it: "code cell 9 (`%%writefile answers.toml`)"."""
    # the same without quoting the mark ("code cell 9", "the markdown cell"): feedback names the
    # answers file where this is substituted
    short: str
    marked: bool = True
    """False for a cell read by what it holds (`adopt_unmarked`), not by its first line."""
    number: int | None = None
    """Its number among the code cells, for a code cell."""


def _lines(cell: dict) -> list[str]:
    return cell_text(cell.get("source")).replace("\r\n", "\n").replace("\r", "\n").split("\n")


def _mark_row(cell: dict, lines: list[str]) -> tuple[int, AnswersForm] | None:
    """The row of the cell's answers mark (its first line that is not blank), and its form."""
    row = next((i for i, line in enumerate(lines) if line.strip()), None)
    if row is None:
        return None
    head = lines[row].strip()
    kind = cell.get("cell_type")
    if kind == "code" and _WRITEFILE.match(head):
        return row, "writefile"
    if kind in ("code", "raw") and _COMMENT_MARK.match(head):
        return row, "comment" if kind == "code" else "raw"
    if kind == "raw" and head.lower() == ANSWERS_FILE:
        return row, "raw"
    if kind == "markdown" and _MARKDOWN_MARK.match(head):
        return row, "markdown"
    return None


def _markdown_toml(lines: list[str], after: int) -> list[str]:
    """A markdown cell's TOML: the first fenced block (```toml or plain) after the mark, or,
    without a fence, everything after it. Every other line is blanked (line numbers kept)."""
    fences = [i for i in range(after + 1, len(lines)) if _FENCE.match(lines[i])]
    if not fences:
        return ["" if i <= after else line for i, line in enumerate(lines)]
    start = next(
        (i for i in fences if (m := _FENCE.match(lines[i])) and m.group(2).lower() == "toml"),
        fences[0],
    )
    end = next((i for i in fences if i > start), len(lines))
    return [line if start < i < end else "" for i, line in enumerate(lines)]


def answers_cell(cell: dict, code_number: int | None = None) -> AnswersCell | None:
    """The answers in `cell`, if it is an answers cell (`code_number`: its number among the
    code cells, for a code cell)."""
    lines = _lines(cell)
    found = _mark_row(cell, lines)
    if found is None:
        return None
    row, form = found
    body = _markdown_toml(lines, row) if form == "markdown" else _after(lines, row)
    where, short = _place(cell, code_number, lines[row])
    return AnswersCell(form, "\n".join(body) + "\n", where, short)


def _place(cell: dict, code_number: int | None, head: str) -> tuple[str, str]:
    """How the student finds the cell, quoting `head` ("code cell 9 (`%%writefile …`)"), and
    the same without the quote ("code cell 9", "the markdown cell")."""
    kind = cell.get("cell_type")
    if kind == "code" and code_number is not None:
        return cell_label(code_number, head), f"code cell {code_number}"
    return f"the {kind} cell that starts `{head.strip()[:40]}`", f"the {kind} cell"


def _after(lines: list[str], row: int) -> list[str]:
    """The lines after `row`, the others blanked (line numbers kept)."""
    return ["" if i <= row else line for i, line in enumerate(lines)]


# A cell without a mark on its first line may still be where a student put the answers: a
# markdown cell over a ```toml block ("## Written answers"), a mark below a title line, or a
# code cell that writes answers.toml from a string (what Colab users do without %%writefile).
# Such a cell is read only when no marked cell and no file exist, and only when it holds a
# key of the assignment's written questions: an example block in the instructions holds none.
_TRIPLE = re.compile(r"^[rRuU]?('''|\"\"\")")
MAX_UNMARKED = 20  # unmarked cells kept as candidates
MAX_TOML_CELL = 64 << 10  # characters of a code cell tried as a whole TOML document


def unmarked_candidate(cell: dict, number: int | None) -> AnswersCell | None:
    """What an unmarked cell would give as the answers (`notebook.adopt_unmarked` decides)."""
    kind = cell.get("cell_type")
    lines = _lines(cell)
    where, short = _place(cell, number, first_line("\n".join(lines)))
    if kind == "markdown":
        tomls = [
            i
            for i, line in enumerate(lines)
            if (m := _FENCE.match(line)) and m.group(2).lower() == "toml"
        ]
        if not tomls:
            return None
        body = _markdown_toml(lines, tomls[0] - 1)
        return AnswersCell("markdown", "\n".join(body) + "\n", where, short, False)
    names_the_file = ANSWERS_FILE in "\n".join(lines).lower()
    if kind == "code" and not names_the_file:
        return _toml_code(lines, where, short, number)
    if kind not in ("code", "raw") or not names_the_file:
        return None
    row = next((i for i, line in enumerate(lines) if _a_mark(line.strip())), None)
    if row is not None:  # the mark below a title line
        form: AnswersForm = "raw" if kind == "raw" else "comment"
        if kind == "code" and _WRITEFILE.match(lines[row].strip()):
            form = "writefile"
        body = _after(lines, row)
        return AnswersCell(form, "\n".join(body) + "\n", where, short, False, number)
    if kind == "code":
        return _string_candidate(lines, where, short, number)
    return None


def _a_mark(line: str) -> bool:
    """`%%writefile answers.toml` or `# answers.toml`, as a whole line."""
    return bool(_WRITEFILE.match(line) or _COMMENT_MARK.match(line))


def _toml_code(lines: list[str], where: str, short: str, number: int | None) -> AnswersCell | None:
    """A code cell that is a whole TOML document of two or more values (`score_variance =
    "d_k"` …, answers written as Python variables): read as the answers, not run."""
    source = "\n".join(lines)
    if len(source) > MAX_TOML_CELL or source.count("=") < 2:
        return None
    table = toml_table(source)
    if table is None or sum(not isinstance(v, dict) for v in table.values()) < 2:
        return None
    return AnswersCell("toml", source + "\n", where, short, False, number)


def _string_candidate(
    lines: list[str], where: str, short: str, number: int | None
) -> AnswersCell | None:
    """A code cell that writes answers.toml from a triple-quoted string: the string, read as
    the file it writes, on the cell's own lines (its longest such string)."""
    import ast

    source = "\n".join(lines)
    if '"""' not in source and "'''" not in source:
        return None
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    nodes = list(ast.walk(tree))
    writes = any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in ("write", "write_text", "writelines")
        for n in nodes
    )
    if not writes:  # a string the cell does not write is not the file's text
        return None
    strings = [
        node
        for node in nodes
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and "\n" in node.value
        and _TRIPLE.match(_from_column(lines[node.lineno - 1], node.col_offset))
    ]
    if not strings:
        return None
    node = max(strings, key=lambda n: len(n.value))
    value_lines = node.value.split("\n")
    start = node.lineno - 1  # the value's first line is the opening quotes' line
    if len(value_lines) != (node.end_lineno or node.lineno) - node.lineno + 1:
        start = node.lineno  # escaped line ends: lines no longer match the cell's; near enough
    body = [""] * start + value_lines
    return AnswersCell("string", "\n".join(body) + "\n", where, short, False, number)


def _from_column(line: str, col_offset: int) -> str:
    """The line from an AST column (a count of UTF-8 bytes, not characters) on."""
    return line.encode("utf-8", "surrogatepass")[col_offset:].decode("utf-8", "ignore")


def assigned_key(toml: str, keys: Collection[str]) -> str | None:
    """The first of `keys` that a line of `toml` assigns (`key = …`, the key quoted or not)."""
    for line in toml.split("\n"):
        m = re.match(r"""\s*["']?([A-Za-z0-9_-]+)["']?\s*=""", line)
        if m and m.group(1) in keys:
            return m.group(1)
    return None


def near_miss(cell: dict, kind: Any) -> bool:
    """A cell that looks meant as the answers cell: it names the file and holds TOML-like lines
    (a code or raw cell, or a markdown cell with a ```toml block), but not under its mark."""
    text = cell_text(cell.get("source"))
    if ANSWERS_FILE not in text.lower():
        return False
    if kind == "markdown":
        return "```toml" in text.lower()
    return kind in ("code", "raw")


def mention(cell: dict, number: int | None) -> str:
    """A cell named as the student finds it ("code cell 4 (`# my answers`)")."""
    return _place(cell, number, first_line(cell_text(cell.get("source"))))[0]


ANSWERS_FORMS = (
    "a code cell whose first line is `%%writefile answers.toml` (the handout's form) or "
    "`# answers.toml`, a markdown cell that starts `# answers.toml` over a ```toml block, or a "
    "raw cell that starts `# answers.toml`"
)
