"""How well the grader names misconceptions on the held-out submissions in tests/heldout/.

The layout of tests/heldout/ and how its files are graded: tests/heldout_harness.py (the same
harness as tests/test_heldout.py).

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
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

sys.path.insert(0, str(REPO / "tests"))

from heldout_harness import HELDOUT, Outcome, discover, grade_all  # noqa: E402


def ratio(a: int, b: int) -> str:
    return f"{a / b:.3f}" if b else "  -  "


def summarize(outcomes: list[Outcome]) -> tuple[float, float]:
    ids = sorted(
        {o.item.expected for o in outcomes if o.item.expected}
        | {m for o in outcomes for m in o.named}
    )
    print(
        f"{'assignment':<22} {'catalog id':<36} {'files':>5} {'TP':>4} {'FP':>4} {'prec':>6} {'recall':>6}"
    )
    for aid in sorted({o.item.assignment for o in outcomes}):
        mine = [o for o in outcomes if o.item.assignment == aid]
        for mid in ids:
            files = [o for o in mine if o.item.expected == mid]
            tp = sum(1 for o in files if mid in o.named and o.ok)
            fp = sum(1 for o in mine if mid in o.named and o.item.expected != mid)
            if not files and not fp:
                continue
            print(
                f"{aid:<22} {mid:<36} {len(files):>5} {tp:>4} {fp:>4} {ratio(tp, tp + fp):>6} "
                f"{ratio(tp, len(files)):>6}"
            )
    print()
    per_assignment = defaultdict(list)
    for o in outcomes:
        per_assignment[o.item.assignment].append(o)
    print(
        f"{'assignment':<22} {'files':>5} {'mistake':>7} {'named ok':>8} {'misnamed':>8} {'unnamed':>7} "
        f"{'correct':>7} {'correct ok':>10}"
    )
    for aid, mine in sorted(per_assignment.items()):
        mist = [o for o in mine if o.item.expected]
        corr = [o for o in mine if not o.item.expected]
        print(
            f"{aid:<22} {len(mine):>5} {len(mist):>7} {sum(o.ok for o in mist):>8} "
            f"{sum(1 for o in mist if o.named and not o.ok):>8} {sum(1 for o in mist if not o.named):>7} "
            f"{len(corr):>7} {sum(o.ok for o in corr):>10}"
        )
    mistakes = [o for o in outcomes if o.item.expected]
    tp = sum(o.ok for o in mistakes)
    predicted = sum(1 for o in outcomes if o.named)  # files given at least one id
    precision = tp / predicted if predicted else 1.0
    recall = tp / len(mistakes) if mistakes else 1.0
    print(
        f"\noverall: {len(outcomes)} files, {len(mistakes)} with a mistake; named exactly right {tp}; "
        f"precision {precision:.3f} ({tp}/{predicted} files given an id), recall {recall:.3f} ({tp}/{len(mistakes)})"
    )
    misses = [o for o in outcomes if not o.ok]
    print(f"\nmisses ({len(misses)}):")
    for o in misses:
        rel = o.item.path.relative_to(REPO)
        want = o.item.expected or "(none, full marks)"
        got = ", ".join(o.named) or "(none)"
        extra = f"  ERROR {o.error}" if o.error else ""
        print(
            f"  {rel} [{o.item.question}]: expected {want}; got {got}; score {o.score:g}/{o.max_score:g}{extra}"
        )
    return precision, recall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "assignments", nargs="*", help="assignment ids or a1 … a6 (default: every folder present)"
    )
    parser.add_argument("-j", "--jobs", type=int, default=1, help="gradings at a time")
    args = parser.parse_args(argv)
    items = discover(args.assignments or None)
    if not items:
        print(f"no held-out files under {HELDOUT}")
        return 0
    started = time.monotonic()
    outcomes = grade_all(items, jobs=max(1, args.jobs))
    summarize(outcomes)
    print(f"\n{len(items)} gradings in {time.monotonic() - started:.1f} s")
    return 1 if any(o.error for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
