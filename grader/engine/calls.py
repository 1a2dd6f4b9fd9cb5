"""Which of the student's own functions a function calls, read from their source.

A composite question (a GloVe loss on the student's weighting function, a block on their
LayerNorm) may call an earlier graded function without the suite declaring the dependency;
follow-through (docs/conventions.md) needs to know which, and only the student's own source
says. Calls are read by bare name (`f(...)`); a function reaches what it calls, and what those
call in turn.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import lru_cache

from grader.engine import syntax


def _called_names(nodes: Iterable[ast.AST]) -> set[str]:
    """The bare names a function's nodes call (nested functions included)."""
    return {
        node.func.id
        for node in nodes
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }


@lru_cache(maxsize=8)
def _call_graph(source: str) -> dict[str, frozenset[str]]:
    """Each top-level function of the source -> the bare names it calls."""
    parsed = syntax.parsed(source)
    if parsed is None:
        return {}
    graph: dict[str, frozenset[str]] = {}
    for node in parsed.tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            graph[node.name] = frozenset(_called_names(parsed.nodes(node)))
    return graph


def reached(source: str, function: str) -> frozenset[str]:
    """The student's own top-level functions that `function` calls, directly or through their
    other functions (not `function` itself)."""
    graph = _call_graph(source)
    seen: set[str] = set()
    todo = [function]
    while todo:
        for name in graph.get(todo.pop(), ()):
            if name in graph and name not in seen and name != function:
                seen.add(name)
                todo.append(name)
    return frozenset(seen)


def called(source: str, function: str) -> frozenset[str]:
    """Every bare name `function` calls, directly or through the student's other top-level
    functions (not `function` itself): those functions (`reached`), and the names they call
    that no top-level `def` of the file defines: a function left out with its syntax error,
    imported from a helper file or never written (and builtins, which no question grades)."""
    graph = _call_graph(source)
    through = reached(source, function) | {function}
    return frozenset(n for f in through for n in graph.get(f, ())) - {function}


def holding(source: str, line: int) -> str | None:
    """The student's top-level function whose lines hold `line` (None: none does)."""
    for name, (first, last) in _spans(source).items():
        if first <= line <= last:
            return name
    return None


@lru_cache(maxsize=8)
def _spans(source: str) -> dict[str, tuple[int, int]]:
    parsed = syntax.parsed(source)
    if parsed is None:
        return {}
    return {
        node.name: (node.lineno, node.end_lineno or node.lineno)
        for node in parsed.tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
