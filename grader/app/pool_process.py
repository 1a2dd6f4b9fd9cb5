"""What a grading process keeps across the submissions it grades one after another (a batch's
pool process, a cluster's worker): one expression checker, the trusted side's outputs, and its
warm sandbox templates, each started with its first submission."""

from __future__ import annotations

from grader.engine.trusted import TrustedRuns
from grader.sandbox import zygote
from grader.written.expr.checker import ExprChecker

_KEPT: list[tuple[ExprChecker, TrustedRuns]] = []


def kept() -> tuple[ExprChecker, TrustedRuns]:
    """This process's checker and trusted outputs; the first call also starts its warm sandbox
    templates as wanted (SEQGRADE_WARM=0: cold)."""
    if not _KEPT:
        _KEPT.append((ExprChecker(), TrustedRuns()))
        zygote.enable_as_wanted()
    return _KEPT[0]
