"""The one harness for the held-out collections in tests/heldout/<assignment id>/.

Each file there was written independently of the hidden suites, in a student's style:
- `<catalog id>__<style>.py`: a complete code file with ONE mistake; its first line
  `# question: <question id>` names the question it is graded on;
- `<catalog id>__<style>.toml`: an answers.toml graded on the one written question named the same way;
- `correct__<style>.py` (`# question: all`): fully correct, graded on every code question.

A mistake file must lose points and be named with exactly its id; a correct file must get full
marks with no id. Used by tests/test_heldout.py and benchmarks/catalog_accuracy.py.

For speed, the code files of one assignment whose questions ban no library call are graded
together in ONE submission: each file becomes a module of its own, the code file re-exports its
functions under numbered names, and the questions are duplicated, one per file. Files graded on
a question with a ban (whose source scan reads the code file itself) and answers files are
graded alone.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import re
import shutil
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from grader import sandbox
from grader.course import registry
from grader.engine.grade import grade_submission
from grader.questions import Assignment, CodeQuestion
from grader.sandbox import zygote

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT / "tests" / "heldout"
CORRECT = "correct"
LIMITS = sandbox.Limits(call_seconds=30.0, submission_seconds=900.0)
QUESTION_LINE = re.compile(r"^#\s*question:\s*(\S+)\s*$")


@dataclasses.dataclass(frozen=True)
class Item:
    assignment: str
    path: Path
    expected: str | None  # the catalog id; None for a correct file
    question: str  # a question id, or "all"


@dataclasses.dataclass(frozen=True)
class Outcome:
    item: Item
    named: tuple[str, ...]  # every id named on the graded questions
    score: float
    max_score: float
    error: str | None = None
    detail: str = ""  # per question: id, score, ids, for failure messages

    @property
    def ok(self) -> bool:
        if self.error:
            return False
        if self.item.expected is None:
            return not self.named and self.score >= self.max_score - 1e-9
        return self.named == (self.item.expected,) and self.score < self.max_score - 1e-9


def question_of(path: Path) -> str:
    lines = path.read_text().splitlines()
    m = QUESTION_LINE.match(lines[0].strip()) if lines else None
    if not m:
        raise ValueError(f"{path}: the first line must be `# question: <question id>`")
    return m.group(1)


def discover(assignments: list[str] | None = None) -> list[Item]:
    wanted = {registry.resolve_id(a) for a in assignments} if assignments else None
    items = []
    for folder in sorted(p for p in HELDOUT.iterdir() if p.is_dir()):
        if folder.name not in registry.ASSIGNMENT_IDS or (wanted and folder.name not in wanted):
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix in (".py", ".toml") and "__" in path.stem:
                mid = path.stem.split("__", 1)[0]
                expected = None if mid == CORRECT else mid
                items.append(Item(folder.name, path, expected, question_of(path)))
    return items


def code_questions(assignment: Assignment) -> list[CodeQuestion]:
    return [q for q in assignment.questions if isinstance(q, CodeQuestion)]


def _questions_of(item: Item, assignment: Assignment) -> list:
    if item.question == "all":
        return code_questions(assignment)
    found = [q for q in assignment.questions if q.id == item.question]
    if not found:
        raise ValueError(f"{item.path.name}: {assignment.id} has no question {item.question!r}")
    return found


def _packable(item: Item, assignment: Assignment) -> bool:
    if item.path.suffix != ".py":
        return False
    return not any(getattr(q, "forbidden", ()) for q in _questions_of(item, assignment))


def _outcome(item: Item, results: list, error: str | None) -> Outcome:
    named = tuple(sorted({m for r in results for m in r.misconceptions}))
    detail = "; ".join(
        f"{r.question_id} {r.score:g}/{r.max_score:g} {r.misconceptions}" for r in results
    )
    return Outcome(
        item, named, sum(r.score for r in results), sum(r.max_score for r in results), error, detail
    )


def grade_alone(item: Item) -> Outcome:
    assignment = registry.load(item.assignment)
    try:
        only = dataclasses.replace(assignment, questions=tuple(_questions_of(item, assignment)))
    except ValueError as err:
        return Outcome(item, (), 0.0, 0.0, str(err))
    target = "answers.toml" if item.path.suffix == ".toml" else assignment.code_file
    with tempfile.TemporaryDirectory(prefix="heldout-") as tmp:
        folder = Path(tmp) / "sub"
        folder.mkdir()
        shutil.copy(item.path, folder / target)
        report = grade_submission(folder, only, limits=LIMITS)
    return _outcome(item, report.questions, report.grader_error)


def grade_packed(items: list[Item]) -> list[Outcome]:
    """Every item (one assignment, no bans) in one submission, one duplicated question per file."""
    assignment = registry.load(items[0].assignment)
    exports, questions, owner = [], [], {}
    with tempfile.TemporaryDirectory(prefix="heldout-") as tmp:
        folder = Path(tmp) / "sub"
        folder.mkdir()
        for i, item in enumerate(items):
            module = f"heldout_{i:03d}"
            shutil.copy(item.path, folder / f"{module}.py")
            for q in _questions_of(item, assignment):
                alias = f"{q.function}__heldout_{i:03d}"
                exports.append(f"from {module} import {q.function} as {alias}")
                dup = dataclasses.replace(q, id=f"{q.id}#{i}", function=alias)
                questions.append(dup)
                owner[dup.id] = i
        (folder / assignment.code_file).write_text("\n".join(exports) + "\n")
        report = grade_submission(
            folder, dataclasses.replace(assignment, questions=tuple(questions)), limits=LIMITS
        )
    per_item: dict[int, list] = {i: [] for i in range(len(items))}
    for r in report.questions:
        if r.question_id in owner:
            per_item[owner[r.question_id]].append(r)
    return [_outcome(item, per_item[i], report.grader_error) for i, item in enumerate(items)]


def _run(job: tuple[str, list[Item]]) -> list[Outcome]:
    kind, items = job
    return grade_packed(items) if kind == "packed" else [grade_alone(items[0])]


def grade_all(items: list[Item], jobs: int = 2) -> list[Outcome]:
    """Every item graded once: packed per assignment where possible, alone otherwise."""
    work: list[tuple[str, list[Item]]] = []
    for aid in sorted({i.assignment for i in items}):
        assignment = registry.load(aid)
        mine = [i for i in items if i.assignment == aid]
        packed = [i for i in mine if _packable(i, assignment)]
        for start in range(0, len(packed), 40):  # a few packs per assignment, to share the cores
            work.append(("packed", packed[start : start + 40]))
        work += [("alone", [i]) for i in mine if not _packable(i, assignment)]
    work.sort(key=lambda w: -len(w[1]))  # long jobs first
    # Worker processes, not threads: ast.parse is not thread-safe in Python 3.11 (cpython#106905).
    ctx = multiprocessing.get_context("spawn")
    # Each pool process forks its gradings from warm templates, as a batch's do: a spawned
    # process does not inherit the parent's choice.
    with ProcessPoolExecutor(
        max_workers=max(1, jobs), mp_context=ctx, initializer=zygote.enable_as_wanted
    ) as pool:
        done = [o for batch in pool.map(_run, work) for o in batch]
    order = {item: n for n, item in enumerate(items)}
    return sorted(done, key=lambda o: order[o.item])
