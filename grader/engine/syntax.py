"""The student's source parsed once for every reader of its syntax (the shortcut scans, the
call graph, which file defines a graded function): the tree, and each top-level statement's
nodes listed in one walk, in `ast.walk`'s order. The tree is shared: no reader changes it."""

from __future__ import annotations

import ast
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
