"""Library shortcuts: forbidden calls found by reading the student's source.

The worker also installs tripwires around the same names while the student's function
runs (grader.sandbox.worker), so a call hidden behind `getattr` or a helper module is caught too.

Patterns are dotted names: `torch.nn.functional.layer_norm` (exact), `torch.autograd.*`
(anything in that module), `torch.nn.Transformer*` (a name prefix), and
`torch.Tensor.backward` (a method: any `.backward(...)` call).
"""

from __future__ import annotations

import ast
import fnmatch
import threading
from collections.abc import Iterable
from dataclasses import dataclass

_PARSE_LOCK = threading.Lock()


def parse_python(source: str, filename: str = "<submission>") -> ast.Module:
    """ast.parse behind a lock: it is not thread-safe in Python 3.11 (CPython issue 106905)."""
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename)


@dataclass(frozen=True)
class Finding:
    name: str  # the full dotted name that was used, e.g. "torch.nn.functional.layer_norm"
    line: int


def matches(name: str, patterns: Iterable[str]) -> str | None:
    """The first pattern `name` falls under, or None."""
    for p in patterns:
        if name == p or fnmatch.fnmatchcase(name, p):
            return p
        if p.endswith(".*") and name.startswith(p[:-1]):
            return p
    return None


def _aliases(tree: ast.AST) -> dict[str, str]:
    """Local names bound by imports anywhere in the file -> the dotted names they stand for."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    names[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    names[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


def _dotted(node: ast.AST) -> list[str] | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return parts[::-1]
    return None


def _scope(tree: ast.Module, function: str | None) -> list[ast.AST]:
    """The function's definition plus every top-level function or class it reaches by name."""
    if function is None:
        return [tree]
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    if function not in defs:
        return []
    seen, todo = set(), [function]
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        for n in ast.walk(defs[name]):
            if isinstance(n, ast.Name) and n.id in defs:
                todo.append(n.id)
    # Module-level assignments can hide an alias too (`attn = F.scaled_dot_product_attention`).
    extra = [n for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))]
    return [defs[n] for n in sorted(seen)] + extra


def scan(source: str, patterns: Iterable[str], function: str | None = None) -> list[Finding]:
    """Forbidden names used in `function` (and what it calls), or anywhere when function is None."""
    patterns = tuple(patterns)
    if not patterns:
        return []
    try:
        tree = parse_python(source)
    except SyntaxError:
        return []
    aliases = _aliases(tree)
    methods = {p.rsplit(".", 1)[1] for p in patterns if ".Tensor." in p}
    found: dict[str, Finding] = {}
    for root in _scope(tree, function):
        for node in ast.walk(root):
            if isinstance(node, (ast.Attribute, ast.Name)):
                parts = _dotted(node)
                if parts and parts[0] in aliases:
                    full = ".".join([aliases[parts[0]], *parts[1:]])
                    if matches(full, patterns) and full not in found:
                        found[full] = Finding(full, getattr(node, "lineno", 0))
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods:
                base = _dotted(node.func.value)
                if not (base and base[0] in aliases):  # a method on a tensor, not a module function
                    name = f"torch.Tensor.{node.func.attr}"
                    found.setdefault(name, Finding(name, node.lineno))
            if isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    full = f"{node.module}.{a.name}"
                    if matches(full, patterns) and full not in found:
                        found[full] = Finding(full, node.lineno)
    return sorted(found.values(), key=lambda f: f.line)
