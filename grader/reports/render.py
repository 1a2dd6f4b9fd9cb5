"""Showing a grade: a terminal table (coloured on a terminal) or full markdown feedback."""

from __future__ import annotations

import os
import sys

from grader.report import GradeReport


def _colour(enabled: bool):
    def paint(text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if enabled else text

    return paint


def use_colour(stream=None) -> bool:
    stream = stream or sys.stdout
    return hasattr(stream, "isatty") and stream.isatty() and "NO_COLOR" not in os.environ


def table(report: GradeReport, colour: bool = False) -> str:
    paint = _colour(colour)
    rows = [("#", "question", "score", "misconceptions")]
    for q in report.questions:
        rows.append((q.number, q.title, f"{q.score:g}/{q.max_score:g}", ", ".join(q.misconceptions) or "-"))
    widths = [min(max(len(r[i]) for r in rows), 48) for i in range(4)]
    lines = []
    for k, r in enumerate(rows):
        cells = [r[i][: widths[i]].ljust(widths[i]) for i in range(4)]
        line = "  ".join(cells).rstrip()
        if k == 0:
            line = paint(line, "1")
        else:
            q = report.questions[k - 1]
            line = paint(line, "32" if q.status == "passed" else ("33" if q.score > 0 else "31"))
        lines.append(line)
    total = f"total {report.score:g} / {report.max_score:g}"
    header = f"{report.assignment_id}" + (f" (student {report.student})" if report.student else "")
    lines = [paint(header, "1"), *lines, paint(total, "1")]
    if not report.isolated:
        lines.append(paint("warning: " + ("; ".join(report.warnings) or "this run was not isolated"), "33"))
    for event in dict.fromkeys(report.events):
        lines.append(f"sandbox: {event}")
    return "\n".join(lines)


def markdown(report: GradeReport) -> str:
    out = [f"# {report.assignment_id}: {report.score:g} / {report.max_score:g}"]
    if not report.isolated:
        out.append("> ⚠ " + ("; ".join(report.warnings) or "this run was not isolated"))
    for q in report.questions:
        out.append(f"## {q.number}. {q.title} — {q.score:g}/{q.max_score:g}")
        out.append(q.feedback or "")
    return "\n\n".join(out) + "\n"
