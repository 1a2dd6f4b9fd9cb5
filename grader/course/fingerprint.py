"""Fingerprints of what a grade depends on, so that a batch re-run reuses a result only while it is true.

A stored result stays valid while six things are unchanged: the submission's bytes, its owner
(the variant key its numbers come from, the roster field that key was taken from, the group's
members), the assignment's suite (its hidden suite file, instructor tests, the handout's
`variant.py`, and the questions as data: ids, points, titles, functions), the misconception
catalog, the trusted reference, and the grader's version. Each is one SHA-256 digest, and each
is the assignment's own: the catalog modules whose ids it names, the reference modules its suite
imports, so that an edit to a2 never makes a1's stored results stale.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import __version__
from grader.course import variants
from grader.course.content import assignment_dir
from grader.questions import Assignment

KINDS = ("submission", "owner", "suite", "catalog", "reference", "grader")  # a Fingerprints' fields
_CHUNK = 1 << 20  # bytes hashed at a time


@dataclass(frozen=True)
class Fingerprints:
    """One digest per thing a grade depends on."""

    submission: str
    """The submission's files: relative names and bytes."""
    owner: str
    """Whose numbers: the variant key, its field, the group's members (owner_fingerprint)."""
    suite: str
    """The assignment: suite source, instructor tests, variant.py, questions as data."""
    catalog: str
    """grader/catalog/*.py."""
    reference: str
    """reference/*.py."""
    grader: str
    """The grader's version."""

    def as_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> Fingerprints | None:
        """The fingerprints stored in a results file; None when missing or malformed."""
        if not isinstance(data, Mapping) or not all(isinstance(data.get(k), str) for k in KINDS):
            return None
        return cls(**{k: data[k] for k in KINDS})

    def changed(self, other: Fingerprints) -> list[str]:
        """The kinds whose digests differ between the two, in KINDS order."""
        return [k for k in KINDS if getattr(self, k) != getattr(other, k)]


def _digest(parts: Iterable[bytes]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))  # lengths keep ("ab", "c") apart from ("a", "bc")
        h.update(part)
    return h.hexdigest()


def _files(paths: Iterable[Path], base: Path | None = None) -> list[bytes]:
    """Each file's name (relative to `base`, else its folder and name: never where the checkout
    sits) and its bytes (a file that cannot be read hashes as such)."""

    def label(p: Path) -> bytes:
        return os.fsencode(
            p.relative_to(base) if base and p.is_relative_to(base) else Path(*p.parts[-2:])
        )

    out: list[bytes] = []
    for name, p in sorted((label(p), p) for p in paths):  # by name: the same wherever the files sit
        out.append(name)
        try:
            out.append(p.read_bytes())
        except OSError:
            out.append(b"<unreadable>")
    return out


def submission_fingerprint(path: Path) -> str:
    """The submission folder's files (names and bytes; links are not followed, as the grader
    never follows them), or the zip's bytes; hashed in steps, never read whole."""
    path = Path(path)
    base = path if path.is_dir() else path.parent
    files = [path] if path.is_file() else list(_regular_files(path))
    h = hashlib.sha256()
    for name, p in sorted((os.fsencode(p.relative_to(base)), p) for p in files):
        h.update(len(name).to_bytes(8, "little"))
        h.update(name)
        _hash_file(h, p)
    return h.hexdigest()


def _regular_files(folder: Path) -> Iterable[Path]:
    for top, dirs, names in os.walk(folder):  # symlinked folders are not entered
        dirs.sort()
        for name in names:
            p = Path(top) / name
            if p.is_file() and not p.is_symlink():
                yield p


def _hash_file(h: Any, path: Path) -> None:
    """As `_digest` hashes one part (its length, then its bytes), the bytes read in steps."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            h.update(size.to_bytes(8, "little"))
            left = size
            while left > 0:
                piece = fh.read(min(_CHUNK, left))
                if not piece:
                    break
                h.update(piece)
                left -= len(piece)
    except OSError:
        h.update(len(b"<unreadable>").to_bytes(8, "little"))
        h.update(b"<unreadable>")


def owner_fingerprint(key: variants.VariantKey, members: Sequence[Mapping[str, Any]] = ()) -> str:
    """Whose grade it is: the variant key and the roster field it was taken from (email or SID),
    and every member's key in order (a group's first member decides its numbers, and the
    feedback counts its members)."""
    keys = [variants.variant_key(key.field, users=[m]).value or "" for m in members]
    return _digest([key.field.encode(), (key.value or "").encode(), *(k.encode() for k in keys)])


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def _sources(package: str) -> str:
    folder = _package_dir(package)
    return _digest(_files(folder.glob("*.py"), folder) if folder else [b"<missing>"])


def catalog_fingerprint() -> str:
    """grader/catalog/*.py, all of it: the misconceptions' ids, words and advice (a batch uses
    catalog_fingerprint_of, the part one assignment sees)."""
    return _sources("grader.catalog")


def reference_fingerprint() -> str:
    """reference/*.py, all of it: the trusted formulas every expected value comes from (a batch
    uses reference_fingerprint_of, the part one assignment reaches)."""
    return _sources("reference")


def catalog_fingerprint_of(assignment: Assignment) -> str:
    """The catalog as this assignment sees it: the catalog's own code, the shared ids
    (`common.py`), the assignment's own module, and any other module registering an id its
    questions name. An edit to another assignment's entries leaves this one unchanged."""
    folder = _package_dir("grader.catalog")
    if folder is None:
        return _digest([b"<missing>"])
    named = _named_ids(assignment)
    short = assignment.id.split("_", 1)[0]
    files = [folder / "__init__.py", folder / "common.py", folder / f"{short}.py"]
    for path in sorted(folder.glob("*.py")):
        if path not in files and named & _registered_ids(path):
            files.append(path)
    return _digest(_files([p for p in files if p.is_file()], folder))


def _named_ids(assignment: Assignment) -> set[str]:
    from grader.questions import CodeQuestion, WrittenQuestion

    ids: set[str] = set()
    for q in assignment.questions:
        if isinstance(q, CodeQuestion):
            ids.update(q.mutants)
        elif isinstance(q, WrittenQuestion) and q.wrong_forms is not None:
            try:
                ids.update(
                    f.misconception for f in q.wrong_forms(variants.numbers(assignment.id, None))
                )
            except Exception:  # noqa: BLE001 - an assignment defined in code without a variant tool
                continue
    return ids


def _registered_ids(path: Path) -> set[str]:
    """The `id="…"` strings a catalog module's entries declare (read from its source)."""
    try:
        return set(_declared_ids(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError):
        return set()


@functools.lru_cache(maxsize=256)
def _declared_ids(source: str) -> frozenset[str]:
    """The `id="…"` keyword strings of a source text (cached by the text: a batch or a term
    fingerprints the same few dozen files for every assignment)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    return frozenset(
        kw.value.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        for kw in node.keywords
        if kw.arg == "id" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)
    )


def reference_fingerprint_of(assignment: Assignment) -> str:
    """The reference modules this assignment's suite reaches (its imports, followed through
    `reference/`): an edit to a formula another assignment uses alone leaves this one unchanged."""
    imported = _imported_package("reference")  # where the modules were found
    folder = _package_dir(
        "reference"
    )  # where they are read from (the same, unless a test moves it)
    if imported is None or folder is None:
        return _digest([b"<none>"])
    names = [
        p.resolve().relative_to(imported) for p in _reached(assignment) if _is_under(p, imported)
    ]
    files = [folder / name for name in names]
    return _digest(_files(files, folder) if files else [b"<none>"])


def _imported_package(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)
    return Path(spec.origin).resolve().parent if spec is not None and spec.origin else None


_FOLLOWED = ("reference", "grader.suites", "grader.mutants")  # imports followed for the closure


def _reached(assignment: Assignment) -> list[Path]:
    """The source files the suite reaches: its own module, the modules defining its callables,
    and what they import from reference/, grader/suites/ and grader/mutants.py, transitively."""
    start = set(_defining_files(assignment)) | set(_reference_files(assignment))
    suites = _package_dir("grader.suites")
    if suites is not None and (suites / f"{assignment.id}.py").is_file():
        start.add(suites / f"{assignment.id}.py")
    seen: set[Path] = set()
    todo = sorted(start)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        todo += [p for p in _imports(path) if p not in seen]
    return sorted(seen)


def _reference_files(assignment: Assignment) -> set[Path]:
    found = set()
    for fn in _callables(assignment):
        module = sys.modules.get(getattr(fn, "__module__", None) or type(fn).__module__)
        if getattr(module, "__name__", "").startswith("reference") and getattr(
            module, "__file__", None
        ):
            found.add(Path(module.__file__))
    return found


def _imports(path: Path) -> list[Path]:
    """The files of the followed modules `path` imports (absolute imports only, as ours are)."""
    try:
        names = _imported_names(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []
    out = []
    for name in sorted(names):
        if not name.startswith(_FOLLOWED):
            continue
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            out.append(Path(spec.origin))
    return out


@functools.lru_cache(maxsize=256)
def _imported_names(source: str) -> frozenset[str]:
    """The absolute module names a source text imports, and `module.name` for each name it
    imports from one (cached by the text, as `_declared_ids`)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return frozenset()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
    return frozenset(names)


def _is_under(path: Path, folder: Path | None) -> bool:
    return folder is not None and path.resolve().is_relative_to(folder.resolve())


def suite_fingerprint(assignment: Assignment) -> str:
    """The assignment as graded: its hidden suite's source, its instructor tests, the handout's
    `variant.py`, the source of every module defining its cases or mutants or imported by the
    suite from grader/suites/ (the question builder), outside reference/ and the catalog, and the
    questions as data (so an assignment changed in code counts too)."""
    files: list[Path] = []
    suites = _package_dir("grader.suites")
    if suites is not None:
        files += [p for p in (suites / f"{assignment.id}.py",) if p.is_file()]
        files += sorted((suites / assignment.id).glob("*.py"))  # a suite split into a package
        files += sorted((suites / f"{assignment.id}_unittests").glob("*.py"))
    variant = assignment_dir(assignment.id) / "variant.py"
    if variant.is_file():
        files.append(variant)
    reference = _imported_package("reference")
    shared = {p for p in _reached(assignment) if not _is_under(p, reference)}
    files += sorted((_defining_files(assignment) | shared) - set(files))
    return _digest([*_files(files), _describe(assignment).encode()])


def _defining_files(assignment: Assignment) -> set[Path]:
    """The source files of the modules that define the assignment's callables (reference/ and the
    catalog have fingerprints of their own)."""
    found: set[Path] = set()
    for fn in _callables(assignment):
        module = sys.modules.get(getattr(fn, "__module__", None) or type(fn).__module__)
        name = getattr(module, "__name__", "")
        file = getattr(module, "__file__", None)
        if file and not name.startswith(("reference", "grader.catalog")):
            found.add(Path(file))
    return found


def _callables(value: Any) -> Iterable[Callable[..., Any]]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _callables(getattr(value, f.name))
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _callables(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _callables(v)
    elif callable(value):
        yield getattr(value, "func", value)  # functools.partial: the function it wraps


def _describe(value: Any) -> str:
    """A stable text of a value: data as itself, a callable by its module and qualified name."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        inner = ", ".join(
            f"{f.name}={_describe(getattr(value, f.name))}" for f in dataclasses.fields(value)
        )
        return f"{type(value).__name__}({inner})"
    if isinstance(value, Mapping):
        items = sorted((_describe(k), _describe(v)) for k, v in value.items())
        return "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_describe(v) for v in value) + "]"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(_describe(v) for v in value)) + "}"
    if callable(value):
        fn = getattr(value, "func", value)
        name = getattr(fn, "__qualname__", type(fn).__qualname__)
        return f"<{getattr(fn, '__module__', type(fn).__module__)}.{name}>"
    if value is None or isinstance(value, (str, int, float, bool)):
        return repr(value)
    return f"<{type(value).__qualname__}>"  # arrays and other objects: their source file counts instead


def grader_fingerprint(limits: Mapping[str, float] | None = None) -> str:
    """The grader's version and the code that judges: the engine and the written-answer checker
    (a fix there regrades, even without a version bump); and the sandbox's limits when a term
    sets them (`[limits]`: a submission that ran out of time may not under new ones)."""
    judging = [_sources(p) for p in ("grader.engine", "grader.written", "grader.written.expr")]
    parts = [__version__.encode(), *(j.encode() for j in judging)]
    if limits:
        parts.append(repr(sorted(limits.items())).encode())
    return _digest(parts)


def current(assignment: Assignment, submission: Path) -> Fingerprints:
    """Every fingerprint of grading `submission` now (the assignment's ones are best taken once,
    with `assignment_fingerprints`, for a whole batch)."""
    return with_submission(assignment_fingerprints(assignment), submission)


def assignment_fingerprints(
    assignment: Assignment, limits: Mapping[str, float] | None = None
) -> Fingerprints:
    """The fingerprints shared by every submission of a batch (the submission's and owner's
    left empty); `limits`: the term's `[limits]`, if it sets any."""
    return Fingerprints(
        submission="",
        owner="",
        suite=suite_fingerprint(assignment),
        catalog=catalog_fingerprint_of(assignment),
        reference=reference_fingerprint_of(assignment),
        grader=grader_fingerprint(limits),
    )


def with_submission(
    shared: Fingerprints,
    submission: Path,
    key: variants.VariantKey | None = None,
    members: Sequence[Mapping[str, Any]] = (),
) -> Fingerprints:
    """The shared fingerprints with this submission's own: its files and, given its key, its owner."""
    owner = owner_fingerprint(key, members) if key is not None else ""
    return dataclasses.replace(shared, submission=submission_fingerprint(submission), owner=owner)
