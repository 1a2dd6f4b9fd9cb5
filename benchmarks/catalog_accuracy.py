"""How well the grader names misconceptions on the held-out submissions in tests/heldout/.

Layout: tests/heldout/<assignment id>/<catalog id>__<style>.py, each a complete code file
with ONE mistake and a first line `# question: <question id>` naming the question to grade
it on; tests/heldout/<assignment id>/correct__<style>.py (`# question: all`) are fully
correct files, graded on every code question.

Run by hand, from the repository:

    python benchmarks/catalog_accuracy.py              # every assignment folder present
    python benchmarks/catalog_accuracy.py a1 a2 -j 2   # some assignments, two gradings at a time

It prints, per catalog id, the files holding that mistake, how many were named with exactly
that id (true positives), how many other files were given that id (false positives), the
precision and recall; then the overall numbers and the list of misses (file, expected, got,
score). Exit status 0 whatever the accuracy (1 only when the grader itself failed).
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from grader import sandbox  # noqa: E402
from grader.course import registry  # noqa: E402
from grader.engine.grade import grade_submission  # noqa: E402
from grader.questions import CodeQuestion  # noqa: E402

HELDOUT = REPO / "tests" / "heldout"
CORRECT = "correct"
LIMITS = sandbox.Limits(call_seconds=10.0, submission_seconds=120.0)
QUESTION_LINE = re.compile(r"^#\s*question:\s*(\S+)\s*$")


@dataclasses.dataclass
class Item:
    assignment: str
    path: Path
    expected: str | None  # the catalog id, None for a correct file
    question: str  # a question id or "all"


@dataclasses.dataclass
class Outcome:
    item: Item
    named: tuple[str, ...]  # every id the grader named on the graded questions
    score: float
    max_score: float
    error: str | None = None

    @property
    def ok(self) -> bool:
        if self.error:
            return False
        if self.item.expected is None:
            return not self.named and self.score >= self.max_score - 1e-9
        return self.named == (self.item.expected,) and self.score < self.max_score - 1e-9


def question_of(path: Path) -> str:
    first = path.read_text().splitlines()[0] if path.read_text() else ""
    m = QUESTION_LINE.match(first.strip())
    if not m:
        raise ValueError(f"{path}: the first line must be `# question: <question id>`")
    return m.group(1)


def discover(assignments: list[str] | None = None) -> list[Item]:
    items = []
    if not HELDOUT.is_dir():
        return items
    wanted = {registry.resolve_id(a) for a in assignments} if assignments else None
    for folder in sorted(p for p in HELDOUT.iterdir() if p.is_dir()):
        if folder.name not in registry.ASSIGNMENT_IDS or (wanted and folder.name not in wanted):
            continue
        for path in sorted(folder.glob("*.py")):
            if "__" not in path.stem:
                continue
            mid = path.stem.split("__", 1)[0]
            items.append(Item(folder.name, path, None if mid == CORRECT else mid, question_of(path)))
    return items


def reduced(assignment, question: str):
    """The assignment with only the named code question (all code questions for "all")."""
    code = [q for q in assignment.questions if isinstance(q, CodeQuestion)]
    if question != "all":
        code = [q for q in code if q.id == question]
        if not code:
            raise ValueError(f"{assignment.id} has no code question {question!r}")
    return dataclasses.replace(assignment, questions=tuple(code))


def grade_item(item: Item) -> Outcome:
    assignment = registry.load(item.assignment)
    try:
        only = reduced(assignment, item.question)
    except ValueError as err:
        return Outcome(item, (), 0.0, 0.0, str(err))
    with tempfile.TemporaryDirectory(prefix="heldout-") as tmp:
        folder = Path(tmp) / "sub"
        folder.mkdir()
        shutil.copy(item.path, folder / assignment.code_file)
        report = grade_submission(folder, only, limits=LIMITS)
    named = tuple(sorted({m for q in report.questions for m in q.misconceptions}))
    return Outcome(item, named, report.score, report.max_score, report.grader_error)


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "  -  "


def summarize(outcomes: list[Outcome]) -> tuple[float, float]:
    ids = sorted({o.item.expected for o in outcomes if o.item.expected}
                 | {m for o in outcomes for m in o.named})
    print(f"{'assignment':<22} {'catalog id':<36} {'files':>5} {'TP':>4} {'FP':>4} {'prec':>6} {'recall':>6}")
    for aid in sorted({o.item.assignment for o in outcomes}):
        mine = [o for o in outcomes if o.item.assignment == aid]
        for mid in ids:
            files = [o for o in mine if o.item.expected == mid]
            tp = sum(1 for o in files if mid in o.named and o.ok)
            fp = sum(1 for o in mine if mid in o.named and o.item.expected != mid)
            if not files and not fp:
                continue
            print(f"{aid:<22} {mid:<36} {len(files):>5} {tp:>4} {fp:>4} {ratio(tp, tp + fp):>6} "
                  f"{ratio(tp, len(files)):>6}")
    print()
    per_assignment = defaultdict(list)
    for o in outcomes:
        per_assignment[o.item.assignment].append(o)
    print(f"{'assignment':<22} {'files':>5} {'mistake':>7} {'named ok':>8} {'misnamed':>8} {'unnamed':>7} "
          f"{'correct':>7} {'correct ok':>10}")
    for aid, mine in sorted(per_assignment.items()):
        mist = [o for o in mine if o.item.expected]
        corr = [o for o in mine if not o.item.expected]
        print(f"{aid:<22} {len(mine):>5} {len(mist):>7} {sum(o.ok for o in mist):>8} "
              f"{sum(1 for o in mist if o.named and not o.ok):>8} {sum(1 for o in mist if not o.named):>7} "
              f"{len(corr):>7} {sum(o.ok for o in corr):>10}")
    mistakes = [o for o in outcomes if o.item.expected]
    tp = sum(o.ok for o in mistakes)
    predicted = sum(1 for o in outcomes if o.named)  # files given at least one id
    precision = tp / predicted if predicted else 1.0
    recall = tp / len(mistakes) if mistakes else 1.0
    print(f"\noverall: {len(outcomes)} files, {len(mistakes)} with a mistake; named exactly right {tp}; "
          f"precision {precision:.3f} ({tp}/{predicted} files given an id), recall {recall:.3f} ({tp}/{len(mistakes)})")
    misses = [o for o in outcomes if not o.ok]
    print(f"\nmisses ({len(misses)}):")
    for o in misses:
        rel = o.item.path.relative_to(REPO)
        want = o.item.expected or "(none, full marks)"
        got = ", ".join(o.named) or "(none)"
        extra = f"  ERROR {o.error}" if o.error else ""
        print(f"  {rel} [{o.item.question}]: expected {want}; got {got}; score {o.score:g}/{o.max_score:g}{extra}")
    return precision, recall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", help="assignment ids or a1 … a6 (default: every folder present)")
    parser.add_argument("-j", "--jobs", type=int, default=1, help="gradings at a time")
    args = parser.parse_args(argv)
    items = discover(args.assignments or None)
    if not items:
        print(f"no held-out files under {HELDOUT}")
        return 0
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        outcomes = list(pool.map(grade_item, items))
    summarize(outcomes)
    print(f"\n{len(items)} gradings in {time.monotonic() - started:.1f} s")
    return 1 if any(o.error for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
