"""What a grading process keeps across the submissions it grades one after another (a batch's
pool process, a cluster's worker): one expression checker, the trusted side's outputs, and its
warm sandbox templates, each started with its first submission; and how a batch forks them."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

from grader.engine.trusted import TrustedRuns, remembering
from grader.sandbox import zygote
from grader.written.expr.checker import ExprChecker

_KEPT: list[tuple[ExprChecker, TrustedRuns]] = []


def _kept() -> tuple[ExprChecker, TrustedRuns]:
    """This process's checker and trusted outputs; the first call also starts its warm sandbox
    templates as wanted (SEQGRADE_WARM=0: cold)."""
    if not _KEPT:
        _KEPT.append((ExprChecker(), TrustedRuns()))
        zygote.enable_as_wanted()
    return _KEPT[0]


@contextlib.contextmanager
def keeping() -> Iterator[ExprChecker]:
    """Within the block, this process's trusted outputs are kept and reused (`remembering`); the
    block gets its checker, to pass to each grading."""
    checker, runs = _kept()
    with remembering(runs):
        yield checker


@contextlib.contextmanager
def forking() -> Iterator[None]:
    """Around a pool that forks its processes from this one: what this process holds is frozen
    (`gc.freeze`) while they are forked, so that their collector never walks the inherited
    objects. A walk writes to each object it visits, and each write copies its page into the
    child (copy on write): a pool process forked from a large process (the grader with torch
    and sympy loaded, a test process) paid in memory and system time for the parent's heap.

    Thawed afterwards, unless this process already kept objects frozen (the CLI freezes what
    its imports made): thawing would give those back to the collector too, so they stay."""
    already = gc.get_freeze_count()
    gc.freeze()
    try:
        yield
    finally:
        if not already:
            gc.unfreeze()
