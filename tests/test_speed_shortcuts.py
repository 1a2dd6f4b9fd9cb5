"""The shortcut scans walk each submission once (engine/syntax walks it, engine/shortcuts
memoises what they derive): their findings are those of the plain `ast.walk` they replaced, on
every held-out file, solution and sample, for every question's patterns and function, asked in
any order and more than once; and the one walk lists each statement's nodes as `ast.walk`
does."""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import ROOT

from grader.course import registry
from grader.engine import shortcuts
from grader.questions import CodeQuestion

sys.path.insert(0, str(Path(__file__).parent))
import heldout_harness as h  # noqa: E402


def plain_forbidden_names(
    node: ast.AST, aliases: dict[str, str], patterns: tuple[str, ...], methods: set[str]
) -> Iterator[str]:
    """The names of one node the scan reported, as it was written before the memo."""
    if isinstance(node, (ast.Attribute, ast.Name)):
        parts = shortcuts._dotted(node)
        if parts and parts[0] in aliases:
            full = ".".join([aliases[parts[0]], *parts[1:]])
            if shortcuts.matches(full, patterns):
                yield full
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in methods
    ):
        base = shortcuts._dotted(node.func.value)
        if not (
            base and (base[0] in aliases or base[0] == "self")
        ):  # a tensor's method, not a module's
            yield f"torch.Tensor.{node.func.attr}"
    if isinstance(node, ast.ImportFrom) and node.module:
        for a in node.names:
            full = f"{node.module}.{a.name}"
            if shortcuts.matches(full, patterns):
                yield full


# `ast.walk` of a node of the file being checked, kept while the test checks it: the oracle
# walks the same statements for every function and pattern set it is asked about.
_WALKS: dict[ast.AST, list[ast.AST]] = {}


def walk(node: ast.AST) -> list[ast.AST]:
    """`ast.walk(node)`, as a list (computed once per node while its file is checked)."""
    got = _WALKS.get(node)
    if got is None:
        got = _WALKS[node] = list(ast.walk(node))
    return got


def plain_reached(tree: ast.Module, function: str | None) -> list[tuple[ast.stmt, str | None]]:
    """The statements `function` reaches, each statement's names read by `ast.walk` itself."""
    return shortcuts._reached(
        tree,
        function,
        lambda node: [n.id for n in walk(node) if isinstance(n, ast.Name)],
    )


def plain_aliases(tree: ast.Module) -> dict[str, str]:
    """The import-bound names as the scan read them before the one walk: `ast.walk` itself."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                names[a.asname or a.name.split(".")[0]] = (
                    a.name if a.asname else a.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                names[a.asname or a.name] = f"{node.module}.{a.name}"
    return names


# The only node types plain_forbidden_names can yield a name for.
_NAMED = (ast.Attribute, ast.Name, ast.Call, ast.ImportFrom)


def plain_nodes(module, function: str | None) -> list[tuple[ast.AST, str | None]]:
    """Every node of every statement `function` reaches, in the plain walk's order, with its
    owner (only the node types a scan can report; the walk is the same for every pattern set)."""
    return [
        (node, owner)
        for root, owner in plain_reached(module.tree, function)
        for node in walk(root)
        if isinstance(node, _NAMED)
    ]


def plain_scan(
    source: str, patterns: tuple[str, ...], function: str | None, nodes: list | None = None
) -> list:
    """The scan as it was: every reached statement walked, node by node (`nodes`: the walk of
    plain_nodes for this source and function, when the caller has it already)."""
    module = shortcuts._parsed(source) if patterns else None
    if module is None:
        return []
    aliases = module.aliases
    torch_bound = any(v.split(".")[0] == "torch" for v in aliases.values())
    methods = {p.rsplit(".", 1)[1] for p in patterns if ".Tensor." in p} - module.own_methods
    found: dict = {}
    for node, owner in plain_nodes(module, function) if nodes is None else nodes:
        for name in plain_forbidden_names(
            node, aliases, patterns, methods if torch_bound else set()
        ):
            found.setdefault(name, shortcuts.Finding(name, getattr(node, "lineno", 0), owner))
    return sorted(found.values(), key=lambda f: f.line)


def plain_review(source: str, function: str | None) -> list:
    module = shortcuts._parsed(source)
    if module is None:
        return []
    tree = module.tree
    roots = plain_reached(tree, function)
    if function is not None:
        roots += [
            (node, None)
            for node in tree.body
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
    found: dict = {}
    for root, owner in roots:
        for node in walk(root):
            what = shortcuts._suspicious(node)
            if what is not None:
                found.setdefault(what, shortcuts.Finding(what, getattr(node, "lineno", 0), owner))
    return sorted(found.values(), key=lambda f: f.line)


def sources() -> list[tuple[str, str, str]]:
    """(assignment, label, source) of every code file a grade of the course might scan."""
    out = []
    for aid in registry.ASSIGNMENT_IDS:
        code_file = registry.load(aid).code_file
        if not code_file:
            continue
        folder = ROOT / "tests" / "heldout" / aid
        if folder.is_dir():
            for name, text in h.cases(folder).items():
                if name.endswith(".py"):
                    out.append((aid, f"heldout/{aid}/{name}", text))
        for where in (ROOT / "solutions" / aid, *(ROOT / "grader" / "samples" / aid).glob("*")):
            f = where / code_file
            if f.is_file():
                out.append((aid, str(f.relative_to(ROOT)), f.read_text()))
    return out


SOURCES = sources()

# Patterns beyond the course's own: method bans and module-wide ones, on every file.
EXTRA = (
    ("torch.Tensor.backward", "torch.Tensor.softmax", "torch.autograd.*"),
    ("numpy.linalg.*", "numpy.einsum", "numpy.tensordot"),
    ("torch.nn.functional.*", "torch.nn.Transformer*", "numpy.*"),
)


def test_there_are_sources_of_every_kind():
    labels = [label for _, label, _ in SOURCES]
    assert len(labels) > 100
    assert any(label.startswith("heldout/") for label in labels)
    assert any(label.startswith("solutions/") for label in labels)


@pytest.mark.parametrize("aid", registry.ASSIGNMENT_IDS)
def test_scans_and_reviews_find_what_the_plain_walk_finds(aid):
    questions = [q for q in registry.load(aid).questions if isinstance(q, CodeQuestion)]
    checked = 0
    for _, label, source in (s for s in SOURCES if s[0] == aid):
        functions = [q.function for q in questions] + [None, "no_such_function"]
        pattern_sets = list(dict.fromkeys([tuple(q.forbidden) for q in questions] + list(EXTRA)))
        pattern_sets.append(())
        # The plain walk's answers, computed once per file (they depend on nothing else).
        _WALKS.clear()
        module = shortcuts._parsed(source)
        want_review, want_scan = {}, {}
        for function in functions:
            want_review[function] = plain_review(source, function)
            nodes = plain_nodes(module, function) if module is not None else []
            for patterns in pattern_sets:
                want_scan[function, patterns] = plain_scan(source, patterns, function, nodes)
        shortcuts._parsed.cache_clear()  # a fresh memo for each file
        for _ in range(2):  # memoised answers: the same, and fresh lists each time
            for function in functions:
                got = shortcuts.review(source, function)
                assert got == want_review[function], (label, function)
                got.append(None)  # a caller's change does not reach the memo
                for patterns in pattern_sets:
                    got = shortcuts.scan(source, patterns, function)
                    assert got == want_scan[function, patterns], (label, function, patterns)
                    got.append(None)
                    checked += 1
    assert checked or not questions


def test_the_one_walk_lists_what_ast_walk_yields():
    """engine/syntax's single walk against `ast.walk` (the authority), on every source: each
    top-level statement's nodes in the same order, the whole tree's too, and the aliases the
    scans read from it."""
    from grader.engine import syntax

    for _, label, source in SOURCES:
        parsed = syntax.parsed(source)
        if parsed is None:
            continue
        tree = parsed.tree
        for statement in tree.body:
            assert list(parsed.nodes(statement)) == list(ast.walk(statement)), label
        assert list(parsed.walked) == list(ast.walk(tree))[1 : 1 + len(parsed.walked)], label
        assert shortcuts._parsed(source).aliases == plain_aliases(tree), label
