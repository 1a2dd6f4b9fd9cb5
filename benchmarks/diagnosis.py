"""Time the grade of wrong submissions, where the diagnosis costs most: the bundled buggy samples
and the solutions with a mistake no catalog entry describes planted in a function that others
build on. Each submission is graded warm, several times in one process (as a batch's pool
process grades), in this checkout and in another one in turn.

    python benchmarks/diagnosis.py /path/to/other/checkout [--grades 6] [--rounds 2]

Each run is a fresh interpreter with its checkout first on sys.path; the medians of the warm
grades are printed per round, then the ratio of the medians of all rounds."""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from checkouts import timed_in  # benchmarks/checkouts.py, beside this script

HERE = Path(__file__).resolve().parent.parent

# (assignment, what is planted, the solution's line, the line put in its place)
PLANTS = [
    (
        "a4_transformer",
        "attention output shifted by 0.01",
        "    return weights @ V, weights\n",
        "    return weights @ V + 0.01, weights\n",
    ),
    (
        "a4_transformer",
        "gpt_forward logits scaled by 1.01",
        "    return _softmax(x @ W_U.T)  # (T, V)\n",
        "    return _softmax(x @ W_U.T * 1.01)  # (T, V)\n",
    ),
    (
        "a2_rnn_bptt",
        "rnn states scaled by 0.99",
        "        h = np.tanh(Z[t])\n",
        "        h = np.tanh(Z[t]) * 0.99\n",
    ),
]

TIMER = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from grader.course import registry
from grader.engine.grade import grade_submission
from grader.sandbox import zygote
from grader.written.expr.checker import ExprChecker
aid, sub, grades = sys.argv[2], Path(sys.argv[3]), int(sys.argv[4])
assignment, checker = registry.load(aid), ExprChecker()
zygote.enable_as_wanted()
try:  # a pool process keeps the trusted side's outputs for all its submissions
    from grader.engine.trusted import TrustedRuns, remembering
    kept = remembering(TrustedRuns())
except ImportError:  # a checkout from before they were kept
    import contextlib
    kept = contextlib.nullcontext()
times = []
with kept:
    for i in range(grades + 1):  # the first warms the template, the checker and the caches
        t = time.perf_counter()
        grade_submission(sub, assignment, student=f"student{i}@uni.edu", checker=checker)
        times.append(time.perf_counter() - t)
import grader
print(json.dumps({"file": grader.__file__, "times": times[1:]}))
"""


def submissions(where: Path) -> list[tuple[str, str, Path]]:
    """(assignment, what it is, its folder): the buggy samples, then the planted mistakes."""
    out = [
        (buggy.parent.name, "the bundled buggy sample", buggy)
        for buggy in sorted((HERE / "grader" / "samples").glob("*/buggy"))
    ]
    for i, (aid, what, old, new) in enumerate(PLANTS):
        solution = HERE / "solutions" / aid
        code = next(p for p in solution.glob("*.py") if p.name != "answer_key.py")
        text = code.read_text()
        if text.count(old) != 1:
            print(f"skipped ({aid}: the solution no longer reads {old!r})", file=sys.stderr)
            continue
        folder = where / f"plant{i}"
        folder.mkdir()
        (folder / code.name).write_text(text.replace(old, new))
        for extra in solution.glob("answers.*"):
            shutil.copy(extra, folder / extra.name)
        out.append((aid, what, folder))
    return out


def _run(checkout: Path, aid: str, sub: Path, grades: int) -> float:
    """The median warm grade of `sub` by `checkout`'s grader, in a fresh interpreter."""
    return statistics.median(timed_in(checkout, TIMER, aid, str(sub), str(grades)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="the checkout to compare against")
    parser.add_argument("--grades", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for aid, what, sub in submissions(Path(tmp)):
            before, after = [], []
            for _ in range(args.rounds):
                before.append(_run(args.before.resolve(), aid, sub, args.grades))
                after.append(_run(HERE, aid, sub, args.grades))
            b, a = statistics.median(before), statistics.median(after)
            rounds = ", ".join(f"{x:.2f}/{y:.2f}" for x, y in zip(after, before))
            print(
                f"{aid:<18} {what:<36} this {a:.2f} s, before {b:.2f} s: {a / b:.2f}x "
                f"(rounds, this/before: {rounds})"
            )


if __name__ == "__main__":
    main()
