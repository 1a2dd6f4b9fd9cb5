"""A timer script run against one checkout of the repo, for the benchmarks that compare two
checkouts in turn (benchmarks/a3_trees.py, benchmarks/diagnosis.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def timed_in(checkout: Path, timer: str, *args: str) -> list[float]:
    """The `times` that `timer` prints as JSON on its last line, run in a fresh interpreter as
    `python -c timer CHECKOUT ARGS...` from `checkout` (the script puts it first on sys.path and
    reports in `file` where it imported the grader from, which must be inside `checkout`)."""
    done = subprocess.run(
        [sys.executable, "-c", timer, str(checkout), *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=checkout,
    )
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["file"].startswith(str(checkout)), got["file"]
    return got["times"]
