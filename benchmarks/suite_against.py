"""Is the test suite slower than it was at an earlier commit? Both run in turns on this machine.

    python benchmarks/suite_against.py REV [--rounds N] [--same-tests] [PYTEST ARGS...]

A shared machine's speed drifts by a tenth or more within an hour (the same suite has taken
296 and 377 s on one host in one evening), so a figure from another day or another host says
little, and one run of each side not much more. This checks REV out as a git worktree and runs
its suite and the working tree's in turns, the order swapped every round (old, new; new, old;
...: a steady drift weighs on both sides alike). Each side runs `python -m pytest` (plus the
arguments given, e.g. `-m "not slow"` for the quick tier) in its own tree, with its own
`grader` first on the path and a `seqgrade` command of its own; both trees are byte-compiled
first, so neither pays for compiling where the environment forbids writing bytecode.

It prints each run's wall time, CPU seconds (every process of the machine: keep it otherwise
quiet) and pytest's last line, then each round's ratio new / old and their geometric mean.
A ratio is the figure to read: 1.00 is as fast, and a spread of ±0.1 between rounds is this
kind of machine's noise, not the code's.

`--same-tests`: the working tree runs only the test modules REV has too (today's versions of
them, with whatever tests they have gained), REV its whole suite: whether the code and those
tests got slower, apart from the modules added since.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from suite_time import ROOT, busy_seconds, cpu_counters

# The `seqgrade` console script, as pyproject's [project.scripts] defines it.
SHIM = """#!{python}
import sys
from grader.app.cli import main
sys.exit(main())
"""


def _command_shim(folder: Path) -> Path:
    """A folder holding a `seqgrade` that runs the `grader` first on PYTHONPATH."""
    folder.mkdir(parents=True)
    shim = folder / "seqgrade"
    shim.write_text(SHIM.format(python=sys.executable))
    shim.chmod(0o755)
    return folder


def _run(tree: Path, bin_dir: Path, args: list[str], log: Path) -> dict[str, object]:
    env = {
        **os.environ,
        "PYTHONPATH": str(tree),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
    }
    before, start = cpu_counters(), time.time()
    with log.open("w") as out:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
            cwd=tree,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    wall, after = time.time() - start, cpu_counters()
    lines = log.read_text().strip().splitlines()
    return {
        "wall": wall,
        "cpu": busy_seconds(before, after),
        "last": lines[-1] if lines else f"exit {done.returncode}",
    }


def _modules_of(old: Path, new: Path) -> list[str]:
    """The test modules (tests/**/test_*.py) that both trees have, as paths from the root."""
    found = (p.relative_to(old) for p in old.glob("tests/**/test_*.py"))
    return sorted(str(p) for p in found if (new / p).is_file())


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", help="the earlier commit (anything git rev-parse reads)")
    parser.add_argument("--rounds", type=int, default=2, help="rounds of one run each (2)")
    parser.add_argument(
        "--same-tests", action="store_true", help="the working tree runs only REV's test modules"
    )
    ours, pytest_args = parser.parse_known_args(argv)
    with tempfile.TemporaryDirectory(prefix="suite-against-") as tmp:
        old = Path(tmp) / "old"
        added = subprocess.run(
            ["git", "worktree", "add", "--detach", str(old), ours.rev],
            cwd=ROOT,
            capture_output=True,
            text=True,
        )
        if added.returncode != 0:  # not a git checkout, or no such commit
            print(f"cannot check {ours.rev} out: {added.stderr.strip()}", file=sys.stderr)
            return 2
        try:
            trees = {"old": old, "new": ROOT}
            bins = {side: _command_shim(Path(tmp) / f"bin-{side}") for side in trees}
            for tree in trees.values():
                subprocess.run(
                    [sys.executable, "-m", "compileall", "-q", "-x", r"[\\/]\.", str(tree)],
                    check=False,
                    capture_output=True,
                )
            args = {"old": pytest_args, "new": pytest_args}
            if ours.same_tests:
                modules = _modules_of(old, ROOT)
                args["new"] = [*modules, *pytest_args]
                print(
                    f"the working tree runs the {len(modules)} test modules {ours.rev} has too",
                    flush=True,
                )
            runs: dict[str, list[dict[str, object]]] = {"old": [], "new": []}
            for round_ in range(ours.rounds):
                for side in ("old", "new") if round_ % 2 == 0 else ("new", "old"):
                    log = Path(tmp) / f"{side}-{round_ + 1}.log"
                    run = _run(trees[side], bins[side], args[side], log)
                    runs[side].append(run)
                    print(
                        f"round {round_ + 1} {side}: {run['wall']:6.1f} s wall"
                        f" {run['cpu']:6.0f} CPU-s   {run['last']}",
                        flush=True,
                    )
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(old)], cwd=ROOT, capture_output=True
            )
    for measure in ("wall", "cpu"):
        pairs = zip(runs["old"], runs["new"])
        ratios = [n[measure] / o[measure] for o, n in pairs if o[measure] > 0 and n[measure] > 0]
        if not ratios:  # a selection too small to measure
            continue
        mean = statistics.geometric_mean(ratios)
        each = ", ".join(f"{r:.2f}" for r in ratios)
        print(f"new / old, {measure}: {mean:.2f} (rounds: {each})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
