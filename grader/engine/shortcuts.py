"""Library shortcuts read from the student's source: forbidden calls, and code to review.

The worker wraps the same entry points the moment their library is imported and refuses
them while a question that bans them runs (grader.sandbox.worker, with this module's
`NOT_SHORTCUTS` as its exemptions), so a call hidden behind
`getattr` or a helper module is stopped too. This scan adds what the run cannot see: the
line of a forbidden call that no case reached, and constructs that can reach a library (or
the grader's own checks) by a computed name, which an instructor should review.

Patterns are dotted names: `torch.nn.functional.layer_norm` (exact), `torch.autograd.*`
(anything in that module), `torch.nn.Transformer*` (a name prefix), and
`torch.Tensor.backward` (a method of torch's tensors).

A forbidden name costs the questions whose function can reach it: the function itself, the
top-level functions and classes it names (the student's helpers), and the module-level
assignments it reads (`attn = F.scaled_dot_product_attention`), followed transitively.
"""

from __future__ import annotations

import ast
import fnmatch
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from grader.engine import syntax

# Not shortcuts, although they live in banned modules: grad-mode switches compute nothing
# (`with torch.no_grad():` in a manual backward pass is allowed). The one list: the engine
# sends it to the worker when it starts (`WorkerSession(not_shortcuts=...)`).
NOT_SHORTCUTS = frozenset(
    {
        "no_grad",
        "enable_grad",
        "set_grad_enabled",
        "inference_mode",
        "set_multithreading_enabled",
        "detect_anomaly",
        "set_detect_anomaly",
        "Variable",
        "variable",
        "grad_mode",
        "enforce_grad_layout_policy",
    }
)

# Ways to reach a library or the grader's checks by a computed name, or to rewrite them.
_REVIEW_CALLS = {
    "__import__": "`__import__`",
    "exec": "`exec`",
    "eval": "`eval`",
    "compile": "`compile`",
    "globals": "`globals()`",
    "vars": "`vars()`",
    "breakpoint": "`breakpoint`",
}
_REVIEW_MODULES = {
    "importlib",
    "ctypes",
    "cffi",
    "gc",
    "inspect",
    "builtins",
    "runpy",
    "__main__",
    "imp",
    "pkgutil",
    # a fresh interpreter is out of the worker's reach: the library unguarded
    "subprocess",
    "multiprocessing",
    "concurrent",
    "pty",
}
_PROCESS_CALLS = {
    "system",
    "popen",
    "fork",
    "forkpty",
    "posix_spawn",
    "posix_spawnp",
    "execv",
    "execve",
    "execvp",
    "execvpe",
    "execl",
    "execle",
    "execlp",
    "execlpe",
    "spawnv",
    "spawnve",
    "spawnvp",
    "spawnvpe",
    "spawnl",
    "spawnle",
    "spawnlp",
    "spawnlpe",
}
_REVIEW_ATTRIBUTES = {
    "modules",
    "meta_path",
    "path_hooks",
    "_getframe",
    "settrace",
    "setprofile",
    "__closure__",
    "cell_contents",
    "__globals__",
    "__code__",
    "__builtins__",
    "__subclasses__",
    "__dict__",
    "__wrapped__",
    "f_back",
    "f_globals",
    "f_locals",
    "tb_frame",
    "gi_frame",
    "cr_frame",
    "_current_frames",
    "__loader__",
    "__spec__",
    "_C",
    "_VF",
    "ops",
    # autograd's engine under the public entry points
    "_execution_engine",
    "run_backward",
    "_engine_run_backward",
    "grad_fn",
    "next_functions",
}
# The worker's own names: a submission has no reason to mention them.
_WORKER_NAMES = {
    "_serve",
    "_call",
    "_hello",
    "_import_student",
    "_make_guard",
    "_ShortcutGuard",
    "_ImportHook",
    "_AfterLoad",
    "_Tripwires",
    "_BlockedFinder",
    "ShortcutRefused",
    "write_message",
    "read_message",
    "_student_error",
    "_hits_json",
    "_hit",
    "tripped",
    "tripped_at",
}


@dataclass(frozen=True)
class _Module:
    """A parsed submission and what every scan of it reads (the tree is never modified after
    parsing; `memo` keeps what the scans derived from it, so that the questions of one
    submission read each top-level statement's nodes once, not once per question and scan)."""

    syntax: syntax.Syntax
    """The tree and its nodes, walked once (shared with the engine's other readers)."""
    aliases: dict[str, str]
    """import-bound local names -> dotted names."""
    own_methods: frozenset[str]
    """Method names the student's own classes define."""
    memo: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    @property
    def tree(self) -> ast.Module:
        return self.syntax.tree

    def names(self, statement: ast.stmt) -> tuple[str, ...]:
        """Every `Name` a top-level statement reads or binds, in `ast.walk` order (memoised)."""
        key = ("names", id(statement))
        got = self.memo.get(key)
        if got is None:
            nodes = self.syntax.nodes(statement)
            got = self.memo[key] = tuple(n.id for n in nodes if isinstance(n, ast.Name))
        return got


@lru_cache(maxsize=8)
def _parsed(source: str) -> _Module | None:
    """The submission parsed once for all its questions' scans (None: it does not parse)."""
    parsed = syntax.parsed(source)
    if parsed is None:
        return None
    return _Module(parsed, _aliases(parsed.walked), frozenset(_methods_defined(parsed.walked)))


@dataclass(frozen=True)
class Finding:
    name: str
    """The dotted name used ("torch.nn.functional.layer_norm"), or what to review."""
    line: int
    function: str | None = None
    """The student's top-level function or class holding the line."""
    file: str = ""
    """The student's module holding the line, when not the code file."""


def matches(name: str, patterns: Iterable[str]) -> str | None:
    """The first pattern `name` falls under, or None (grad-mode switches never do)."""
    return _match(name, tuple(patterns))


@lru_cache(maxsize=4096)  # a file names the same few modules' attributes over and over
def _match(name: str, patterns: tuple[str, ...]) -> str | None:
    if name.rpartition(".")[2] in NOT_SHORTCUTS:
        return None
    for p in patterns:
        if name == p or fnmatch.fnmatchcase(name, p):
            return p
        if p.endswith(".*") and name.startswith(p[:-1]):
            return p
    return None


def _aliases(walked: Iterable[ast.AST]) -> dict[str, str]:
    """Local names bound by imports anywhere in the file (its nodes in `ast.walk` order: a name
    bound twice stands for what the later one says) -> the dotted names they stand for."""
    names: dict[str, str] = {}
    for node in walked:
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


# --------------------------------------------------------------------------- what a function reaches


def _top_level_names(node: ast.stmt) -> set[str]:
    """The names a top-level statement binds."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name}
    targets: list[ast.AST] = []
    if isinstance(node, ast.Assign):
        targets = list(node.targets)
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _reached_in(module: _Module, function: str | None) -> list[tuple[ast.stmt, str | None]]:
    """`_reached` of the module's tree, computed once per function (a fresh list each call)."""
    key = ("reached", function)
    got = module.memo.get(key)
    if got is None:
        got = module.memo[key] = tuple(_reached(module.tree, function, module.names))
    return list(got)


def _reached(
    tree: ast.Module, function: str | None, names_of: Callable[[ast.stmt], Iterable[str]]
) -> list[tuple[ast.stmt, str | None]]:
    """Top-level statements `function` can reach by name (all of them when None), each with the
    name of the function or class it defines (None for assignments and other statements).
    `names_of`: every `Name` of a statement, in `ast.walk` order."""
    owners = [(node, _top_level_names(node)) for node in tree.body]
    if function is None:
        return [(node, getattr(node, "name", None)) for node, _ in owners]
    by_name: dict[str, list[ast.stmt]] = {}
    for node, names in owners:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            for name in names:
                by_name.setdefault(name, []).append(node)
    if function not in by_name:
        return []
    seen: list[ast.stmt] = []
    todo = [function]
    visited: set[str] = set()
    while todo:
        name = todo.pop()
        if name in visited:
            continue
        visited.add(name)
        for node in by_name.get(name, []):
            if node not in seen:
                seen.append(node)
            todo += [n for n in names_of(node) if n in by_name]
    return [(node, getattr(node, "name", None)) for node in seen]


def _methods_defined(walked: Iterable[ast.AST]) -> set[str]:
    """Method names the student's own classes define (their `x.backward()` is not torch's)."""
    return {
        item.name
        for node in walked
        if isinstance(node, ast.ClassDef)
        for item in node.body
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
    }


# --------------------------------------------------------------------------- the scans


def scan(source: str, patterns: Iterable[str], function: str | None = None) -> list[Finding]:
    """Forbidden names used in `function` and what it reaches (anywhere when function is None)."""
    patterns = tuple(patterns)
    module = _parsed(source) if patterns else None
    if module is None:
        return []
    key = ("scan", patterns, function)
    done = module.memo.get(key)
    if done is not None:
        return list(done)
    aliases = module.aliases
    torch_bound = any(v.split(".")[0] == "torch" for v in aliases.values())
    methods = {p.rsplit(".", 1)[1] for p in patterns if ".Tensor." in p} - module.own_methods
    if not torch_bound:
        methods = set()
    found: dict[str, Finding] = {}
    for root, owner in _reached_in(module, function):
        for name, line, is_method in _candidates(module, root):
            if is_method:
                if name not in methods:
                    continue
                name = f"torch.Tensor.{name}"
            elif not matches(name, patterns):
                continue
            found.setdefault(name, Finding(name, line, owner))
    result = sorted(found.values(), key=lambda f: f.line)
    module.memo[key] = tuple(result)
    return result


def _candidates(module: _Module, root: ast.stmt) -> tuple[tuple[str, int, bool], ...]:
    """What a scan tests in `root`, whatever the patterns, in `ast.walk` order:
    (dotted name, line, False) for names through the file's imports and `from` imports, and
    (method name, line, True) for a method called on something that is not a module or self.
    Computed once per top-level statement of a submission."""
    key = ("candidates", id(root))
    got = module.memo.get(key)
    if got is not None:
        return got
    aliases = module.aliases
    out: list[tuple[str, int, bool]] = []
    for node in module.syntax.nodes(root):
        line = getattr(node, "lineno", 0)
        if isinstance(node, (ast.Attribute, ast.Name)):
            parts = _dotted(node)
            if parts and parts[0] in aliases:
                out.append((".".join([aliases[parts[0]], *parts[1:]]), line, False))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = _dotted(node.func.value)
            if not (base and (base[0] in aliases or base[0] == "self")):
                out.append((node.func.attr, line, True))
        if isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                out.append((f"{node.module}.{a.name}", line, False))
    got = module.memo[key] = tuple(out)
    return got


def review(source: str, function: str | None = None) -> list[Finding]:
    """Constructs in `function`, what it reaches, and the module's own top-level code that can
    reach a library or the grader's checks by a computed name: for an instructor to review."""
    module = _parsed(source)
    if module is None:
        return []
    key = ("review", function)
    done = module.memo.get(key)
    if done is not None:
        return list(done)
    tree = module.tree
    roots = _reached_in(module, function)
    if function is not None:  # import-time code runs before any question: it counts for every one
        roots += [
            (node, None)
            for node in tree.body
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        ]
    found: dict[str, Finding] = {}
    for root, owner in roots:
        for what, line in _suspicious_in(module, root):
            found.setdefault(what, Finding(what, line, owner))
    result = sorted(found.values(), key=lambda f: f.line)
    module.memo[key] = tuple(result)
    return result


def _suspicious_in(module: _Module, root: ast.stmt) -> tuple[tuple[str, int], ...]:
    """`_suspicious` of every node of `root` that has something to say, in `ast.walk` order
    (once per top-level statement of a submission)."""
    key = ("suspicious", id(root))
    got = module.memo.get(key)
    if got is None:
        found = []
        for node in module.syntax.nodes(root):
            what = _suspicious(node)
            if what is not None:
                found.append((what, getattr(node, "lineno", 0)))
        got = module.memo[key] = tuple(found)
    return got


def _suspicious(node: ast.AST) -> str | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        name = node.func.id
        if name in _REVIEW_CALLS:
            return _REVIEW_CALLS[name]
        if (
            name in ("getattr", "setattr", "delattr")
            and len(node.args) >= 2
            and not (isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str))
        ):
            return f"`{name}` with a computed name"
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        modules = (
            [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
        )
        for m in modules:
            if m.split(".")[0] in _REVIEW_MODULES:
                return f"`import {m}`"
    if isinstance(node, ast.Attribute) and node.attr in _REVIEW_ATTRIBUTES:
        return f"`.{node.attr}`"
    if (
        isinstance(node, ast.Attribute)
        and node.attr in _PROCESS_CALLS
        and isinstance(node.value, ast.Name)
        and node.value.id in ("os", "posix", "_os")
    ):
        return f"`os.{node.attr}` (a new process)"
    if isinstance(node, ast.Name) and node.id in _WORKER_NAMES:
        return f"`{node.id}` (a name of the grader's worker)"
    if isinstance(node, ast.Attribute) and node.attr in _WORKER_NAMES:
        return f"`.{node.attr}` (a name of the grader's worker)"
    return None


def describe(
    found: list[Finding],
    function: str,
    line_words: Callable[[int], str] = lambda n: f"line {n}" if n else "while it ran",
) -> str:
    """The forbidden calls in words: the call, the student's function and the line."""
    parts = []
    for f in found[:4]:
        where = f"`{f.file}` line {f.line}" if f.file and f.line else line_words(f.line)
        if f.function and f.function not in (function, "<module>"):
            parts.append(f"`{function}` reaches `{f.name}` through your `{f.function}` ({where})")
        else:
            parts.append(f"`{function}` uses `{f.name}` ({where})")
    return "; ".join(parts)
