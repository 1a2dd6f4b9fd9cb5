"""The student's source parsed once for every reader of its syntax (the shortcut scans, the
call graph, which file defines a graded function): the tree, and each top-level statement's
nodes listed in one walk, in `ast.walk`'s order. The tree is shared: no reader changes it."""

from __future__ import annotations

import ast
import re
import threading
from dataclasses import dataclass
from functools import lru_cache

_PARSE_LOCK = threading.Lock()


def parse_python(source: str, filename: str = "<submission>") -> ast.Module:
    """ast.parse behind a lock: it is not thread-safe in Python 3.11 (CPython issue 106905)."""
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename)


@dataclass(frozen=True)
class Syntax:
    """A parsed source: its tree and its nodes, walked once."""

    tree: ast.Module
    walked: tuple[ast.AST, ...]
    """Every node below the module, in `ast.walk(tree)`'s order (breadth first)."""
    statements: dict[int, tuple[ast.AST, ...]]
    """id() of each top-level statement -> its nodes in `ast.walk(statement)`'s order."""

    def nodes(self, statement: ast.stmt) -> tuple[ast.AST, ...]:
        """A top-level statement's nodes, itself first, as `ast.walk(statement)` yields them."""
        return self.statements[id(statement)]


@lru_cache(maxsize=8)
def parsed(source: str) -> Syntax | None:
    """The source's syntax (None: it does not parse). Cached: the questions of one submission,
    and its every reader, share one parse and one walk."""
    try:
        tree = parse_python(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    return _walked(tree)


def _walked(tree: ast.Module) -> Syntax:
    """One breadth-first walk of the whole tree, each node tagged with its top-level statement.
    A statement's nodes in the whole walk's order are those of its own walk: breadth first, a
    subtree's nodes come level by level, each level left to right, as in the whole tree."""
    body = tree.body
    order: list[ast.AST] = list(body)
    owner: list[int] = list(range(len(body)))
    buckets: list[list[ast.AST]] = [[] for _ in body]
    i = 0
    while i < len(order):
        node, o = order[i], owner[i]
        i += 1
        buckets[o].append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, ast.AST):
                order.append(value)
                owner.append(o)
            elif isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST):
                        order.append(item)
                        owner.append(o)
    statements = {id(s): tuple(b) for s, b in zip(body, buckets)}
    return Syntax(tree, tuple(order), statements)


@dataclass(frozen=True)
class LeftOut:
    """Top-level statements left out of a file for a syntax error in them."""

    first: int
    """The first and last of their lines (1-based)."""
    last: int
    line: int
    """Where Python found the error, its text and its message."""
    text: str
    message: str
    defines: tuple[str, ...] = ()
    """The functions and classes they defined (`def f(` / `class C` at the margin)."""


_DEFINED = re.compile(r"(?:async\s+def|def|class)\s+([A-Za-z_]\w*)")

MAX_LEFT_OUT = 8  # top-level statements a file may lose to syntax errors and still be graded


def without_broken_statements(source: str) -> tuple[str, tuple[LeftOut, ...]] | None:
    """The source with each top-level statement that holds a syntax error blanked out, so that
    the rest may run, as a notebook's other cells do when one has a syntax error. A statement
    reaches from the last line at or above the error that starts at the left margin (with the
    decorators right above it) to the line before the next one that does; its lines stay, empty,
    so every other line keeps its number. None when that does not give a module Python reads
    within `MAX_LEFT_OUT` statements (an unclosed string or bracket swallowing the rest)."""
    lines = source.split("\n")
    left: list[LeftOut] = []
    for _ in range(MAX_LEFT_OUT + 1):
        try:
            parse_python("\n".join(lines))
        except SyntaxError as err:
            row = err.lineno or 0
            if not 0 < row <= len(lines) or len(left) == MAX_LEFT_OUT:
                return None
            first = row
            while first > 1 and not _at_margin(lines[first - 1]):
                first -= 1
            while first > 1 and lines[first - 2].startswith("@"):
                first -= 1
            last = row
            while last < len(lines) and not _at_margin(lines[last]):
                last += 1
            text = (err.text or "").strip()
            defined = (_DEFINED.match(line) for line in lines[first - 1 : last])
            names = tuple(m.group(1) for m in defined if m is not None)
            left.append(LeftOut(first, last, row, text, str(err.msg), names))
            lines[first - 1 : last] = [""] * (last - first + 1)
            continue
        except (ValueError, RecursionError, MemoryError):
            return None
        return ("\n".join(lines), tuple(left)) if left else None
    return None


def _at_margin(line: str) -> bool:
    """Whether a line may start a top-level statement: it starts at the left margin, and not
    with a comment or a closing bracket (those continue the statement above)."""
    return bool(line) and line[0] not in " \t#)]}\r\f"
