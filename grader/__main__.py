"""`python -m grader` is the `seqgrade` command.

`-m` puts the working directory first on sys.path, and grading often runs from inside a
submission folder (`seqgrade grade . -a a1`): a student's `numpy.py` or `mpmath.py` there must
never stand in for a library in the grader. So the working directory leaves sys.path before
anything else is imported; the folder holding the grader itself (a checkout run without
installing) stays reachable, but after the installed libraries.
"""

import os
import sys


def _sanitise_path() -> None:
    cwd = os.path.realpath(os.getcwd())
    here = os.path.dirname(
        os.path.dirname(os.path.realpath(__file__))
    )  # the folder holding grader/

    def is_cwd(entry: str) -> bool:
        return entry in ("", ".") or os.path.realpath(entry) == cwd

    def is_install(entry: str) -> bool:  # the checkout's own entry, put there by its install
        return entry not in ("", ".") and os.path.realpath(entry) == here

    kept = [p for p in sys.path if not is_cwd(p) or is_install(p)]
    if here == cwd and not any(is_install(p) for p in kept):
        kept.append(here)  # `reference` from a checkout, found last: installed libraries win
    sys.path[:] = kept


_sanitise_path()

from grader.app.cli import run  # noqa: E402 - only once sys.path is clean

run()
