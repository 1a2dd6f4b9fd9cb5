"""The one harness for the held-out collections in tests/heldout/<assignment id>/.

Each file there was written independently of the hidden suites, in a student's style:
- `<catalog id>__<style>.py`: a complete code file with ONE mistake; its first line
  `# question: <question id>` names the question it is graded on;
- `<catalog id>__<style>.toml`: an answers.toml graded on the one written question named the same way;
- `correct__<style>.py` (`# question: all`): fully correct, graded on every code question;
- `<name>.edit`: the file `<name>.py` stored as a whole .py of the same folder plus declared
  edits (tests/heldout_edits.py), generated here; a case is the same whichever way it is stored.

A mistake file must lose points and be named with exactly its id; a correct file must get full
marks with no id. Used by tests/test_heldout.py and benchmarks/catalog_accuracy.py;
`folder(<assignment>)` gives every case of an assignment as files, for tests that read them.

For speed, the code files of one assignment are graded together in packs of up to 40 per
submission: each file becomes a module of its own, the code file re-exports its functions under
numbered names, and the questions are duplicated, one per file (a question's shortcut scan reads
the module its function is imported from, grader/engine/code.py's `_defined`, so a ban sees the
file's own source). Answers files are graded alone. `grade_all(..., single=True)` (or SEQGRADE_HELDOUT_SINGLE=1, or
`python tests/heldout_harness.py --single`) grades every file as its own submission instead.
"""

from __future__ import annotations

import argparse
import atexit
import dataclasses
import functools
import multiprocessing
import os
import re
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import heldout_edits

from grader import sandbox
from grader.app import pool_process
from grader.course import registry
from grader.engine.grade import grade_submission
from grader.questions import Assignment, CodeQuestion
from grader.sandbox import zygote

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT / "tests" / "heldout"
CORRECT = "correct"
LIMITS = sandbox.Limits(call_seconds=30.0, submission_seconds=900.0)
QUESTION_LINE = re.compile(r"^#\s*question:\s*(\S+)\s*$")
SINGLE_ENV = "SEQGRADE_HELDOUT_SINGLE"  # "1": every file graded as its own submission


@dataclasses.dataclass(frozen=True)
class Item:
    assignment: str
    path: Path  # tests/heldout/<assignment>/<name>.py or .toml: the case's name (an edit's is generated)
    expected: str | None  # the catalog id; None for a correct file
    question: str  # a question id, or "all"
    text: str = dataclasses.field(default="", repr=False, compare=False)  # the file's content


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


def question_of(path: Path, text: str | None = None) -> str:
    lines = (path.read_text() if text is None else text).splitlines()
    m = QUESTION_LINE.match(lines[0].strip()) if lines else None
    if not m:
        raise ValueError(f"{path}: the first line must be `# question: <question id>`")
    return m.group(1)


@functools.cache
def _stored(path: Path) -> str:
    return path.read_text()


def case_text(stored: Path) -> str:
    """The content of the case stored at `stored`: the file itself, or an edit applied to its base."""
    if stored.suffix != heldout_edits.EDIT_SUFFIX:
        return _stored(stored)
    edit = _stored(stored)
    _, base, _ = heldout_edits.parse_edit(edit)
    return heldout_edits.apply(edit, _stored(stored.parent / base))


def cases(folder: Path) -> dict[str, str]:
    """Every case stored in one assignment's folder: file name -> content."""
    out = {}
    for stored in sorted(folder.iterdir()):
        if stored.suffix in (".py", ".toml", heldout_edits.EDIT_SUFFIX) and "__" in stored.stem:
            name = stored.with_suffix(".py").name if stored.suffix == ".edit" else stored.name
            if name in out:
                raise ValueError(f"{folder.name}/{name} is stored both whole and as an edit")
            out[name] = case_text(stored)
    return dict(sorted(out.items()))


_FOLDERS: dict[str, Path] = {}


def folder(assignment: str) -> Path:
    """A directory (temporary, one per process) holding every case of `assignment` as a file."""
    if assignment not in _FOLDERS:
        root = Path(tempfile.mkdtemp(prefix=f"heldout-{assignment}-"))
        atexit.register(shutil.rmtree, root, True)
        for name, text in cases(HELDOUT / assignment).items():
            (root / name).write_text(text)
        _FOLDERS[assignment] = root
    return _FOLDERS[assignment]


def discover(assignments: list[str] | None = None) -> list[Item]:
    wanted = {registry.resolve_id(a) for a in assignments} if assignments else None
    items = []
    for folder in sorted(p for p in HELDOUT.iterdir() if p.is_dir()):
        if folder.name not in registry.ASSIGNMENT_IDS or (wanted and folder.name not in wanted):
            continue
        for name, text in cases(folder).items():
            path = folder / name
            mid = path.stem.split("__", 1)[0]
            expected = None if mid == CORRECT else mid
            items.append(Item(folder.name, path, expected, question_of(path, text), text))
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


def _packable(item: Item) -> bool:
    """A code file (an answers file is graded alone, on its one written question)."""
    return item.path.suffix == ".py"


def banned(item: Item, assignment: Assignment) -> bool:
    """Is the file graded on a question that bans library calls (whose source scan follows the
    packed code file's re-export into the file's own module)?"""
    return any(getattr(q, "forbidden", ()) for q in _questions_of(item, assignment))


def _outcome(item: Item, results: list, error: str | None) -> Outcome:
    named = tuple(sorted({m for r in results for m in r.misconceptions}))
    detail = "; ".join(
        f"{r.question_id.split('#')[0]} {r.score:g}/{r.max_score:g} {r.misconceptions}"
        for r in results
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
        (folder / target).write_text(item.text)
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
            (folder / f"{module}.py").write_text(item.text)
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
    """A job graded with the pool process's trusted outputs kept, as a batch's pool process
    grades (an assignment's packs and files meet the same visible cases)."""
    kind, items = job
    with pool_process.keeping():
        return grade_packed(items) if kind == "packed" else [grade_alone(items[0])]


def single_wanted() -> bool:
    return os.environ.get(SINGLE_ENV, "") == "1"


def grade_all(items: list[Item], jobs: int = 2, single: bool | None = None) -> list[Outcome]:
    """Every item graded once: packed per assignment where possible, alone otherwise; with
    `single` (default: SEQGRADE_HELDOUT_SINGLE=1), every item alone."""
    single = single_wanted() if single is None else single
    work: list[tuple[str, list[Item]]] = []
    for aid in sorted({i.assignment for i in items}):
        mine = [i for i in items if i.assignment == aid]
        packed = [] if single else [i for i in mine if _packable(i)]
        for start in range(0, len(packed), 40):  # a few packs per assignment, to share the cores
            work.append(("packed", packed[start : start + 40]))
        work += [("alone", [i]) for i in mine if i not in packed]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Grade the held-out files; list the wrong ones.")
    parser.add_argument("assignments", nargs="*", help="a1 ... a7 (default: all)")
    parser.add_argument("--single", action="store_true", help="each file its own submission")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    outcomes = grade_all(discover(args.assignments or None), args.jobs, args.single or None)
    wrong = [o for o in outcomes if not o.ok]
    for o in wrong:
        print(f"{o.item.assignment}/{o.item.path.name}: {o.error or o.detail}")
    print(f"{len(outcomes) - len(wrong)} of {len(outcomes)} as expected")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
