"""The folders are the architecture: imports run one way, and nothing imports in a circle.

Every module's imports are read with `ast` (module level and inside functions: a lazy import is
still a dependency). Rooms and what each may import:

    app      → anything in grader          (the entry points)
    reports  → course, catalog, leaves     (what the grader writes)
    engine   → written, sandbox, catalog, course, leaves
    written  → catalog, leaves             (answers.toml and the expression checker)
    course   → catalog, leaves             (the registry loads suites by name, never by import)
    suites   → questions, mutants, reference only
    catalog  → nothing but itself
    sandbox  → nothing in grader           (it knows nothing of grading)
    leaves   → nothing: questions, records (the records and their rendering), mutants, the
               dataclass cache, the package's own __init__
    reference → nothing in grader          (the trusted formulas know nothing of judging)
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LEAVES = {"questions", "records", "mutants", "grader", "dataclass_cache"}
ROOMS = {"app", "reports", "engine", "written", "course", "suites", "catalog", "sandbox"}
ALLOWED: dict[str, set[str]] = {
    "app": ROOMS | LEAVES | {"reference", "__main__"},
    "reports": {"course", "catalog"} | LEAVES,
    "engine": {"written", "sandbox", "catalog", "course"} | LEAVES,
    "written": {"catalog"} | LEAVES,
    "course": {"catalog"} | LEAVES,
    "suites": {"questions", "mutants", "reference"},
    "catalog": set(),
    "sandbox": set(),
    "reference": set(),
    "__main__": {"app"},
    **{leaf: {"grader"} for leaf in LEAVES},  # a leaf may read the package's __version__
    "grader": {"grader", "dataclass_cache"},  # the package installs the cache before any record
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def room(module: str) -> str:
    """The room of a module: `grader.engine.code` → engine; `grader.questions` → questions."""
    parts = module.split(".")
    if parts[0] == "reference":
        return "reference"
    return parts[1] if len(parts) > 1 else "grader"


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The project modules a file imports (`from grader import catalog` names the submodule)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in known else node.module)
    return {m for m in found if m.split(".")[0] in ("grader", "reference")}


def project_graph() -> dict[str, set[str]]:
    """Every project module -> the project modules it imports (a fresh copy for each caller)."""
    return {m: set(ts) for m, ts in _project_graph().items()}


@functools.cache
def _project_graph() -> dict[str, frozenset[str]]:
    """The tree read once per test process: the four checks below read the same files."""
    files = [
        p
        for top in ("grader", "reference")
        for p in (ROOT / top).rglob("*.py")
        if "samples" not in p.parts and "_content" not in p.parts
    ]
    known = {module_name(p) for p in files}
    return {module_name(p): frozenset(imports_of(p, known)) for p in files}


def violations(graph: Mapping[str, Iterable[str]]) -> list[str]:
    """Imports against the direction above (same-room imports are always fine)."""
    bad = []
    for mod, targets in graph.items():
        src = room(mod)
        for t in targets:
            dst = room(t)
            if dst != src and dst not in ALLOWED.get(src, set()):
                bad.append(f"{mod} imports {t} ({src} → {dst})")
    return sorted(bad)


def cycles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Every import circle between modules (one representative path per strongly connected set)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_imports_follow_the_rooms():
    assert violations(project_graph()) == []


def test_no_import_circles():
    graph = {m: {t for t in ts if t != m} for m, ts in project_graph().items()}
    # A package's __init__ re-exporting its own submodules is not a circle of ideas.
    graph = {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in graph.items()}
    assert cycles(graph) == []


def test_reference_imports_nothing_from_grader():
    bad = {
        m: ts
        for m, ts in project_graph().items()
        if m.startswith("reference") and any(t.startswith("grader") for t in ts)
    }
    assert bad == {}


def test_the_checker_catches_a_forbidden_import_and_a_circle():
    """The checks above can fail: a planted sandbox → engine import and an a ↔ b circle."""
    graph = project_graph()
    graph["grader.sandbox.launcher"] = set(graph["grader.sandbox.launcher"]) | {
        "grader.engine.grade"
    }
    graph["reference.attention"] = set(graph["reference.attention"]) | {"grader.questions"}
    found = violations(graph)
    assert "grader.sandbox.launcher imports grader.engine.grade (sandbox → engine)" in found
    assert "reference.attention imports grader.questions (reference → questions)" in found
    assert cycles({"x.a": {"x.b"}, "x.b": {"x.a"}, "x.c": set()}) == [["x.a", "x.b"]]
