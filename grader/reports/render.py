"""Showing a grade: a terminal table (coloured on a terminal) or full markdown feedback.

The table is the default view: one row per question, then one line per question that lost
points saying why (the diagnosis when one was named, else the first failed check), and the
command that prints the full feedback. Scores show as many decimals as the points need, at
most two (`1.33/8`, not `1.3333/8`); long titles are shortened at a word boundary.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from grader import catalog
from grader.records import GradeReport, QuestionResult, question_markdown
from grader.records import reason as _reason

MAX_COLUMN = 48  # characters of a title or a list of ids in the table
MAX_REASON = 110  # characters of a lost point's one-line reason


def _colour(enabled: bool):
    def paint(text: str, code: str) -> str:
        return f"\033[{code}m{text}\033[0m" if enabled else text

    return paint


def use_colour(stream=None) -> bool:
    stream = stream or sys.stdout
    return hasattr(stream, "isatty") and stream.isatty() and "NO_COLOR" not in os.environ


def points(value: float) -> str:
    """A score as the points allow: at most two decimals, no trailing zeros (`1.33`, `8`, `0.5`)."""
    rounded = round(float(value), 2) + 0.0  # + 0.0: no "-0"
    return f"{rounded:.2f}".rstrip("0").rstrip(".")


def shorten(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut at a word boundary with an ellipsis."""
    text = " ".join(text.split())
    if len(text) <= width:
        return text
    cut = text[: width - 1]
    space = cut.rfind(" ")
    if space >= width // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-—") + "…"


def reason(q: QuestionResult) -> str:
    """Why a question lost points, in one line: the diagnosis when one was named (by its title),
    else its first failed case as the student sees it, else the first line of its lead."""
    return _reason(q, _titles)


def _titles(ids) -> list[str]:
    try:
        return [catalog.get(m).title for m in ids]
    except KeyError:
        return list(ids)


def _rows(report: GradeReport) -> list[tuple[str, str, str, str]]:
    rows = [("#", "question", "score", "misconceptions")]
    for q in report.questions:
        ids = "not attempted" if q.not_attempted else (", ".join(q.misconceptions) or "-")
        rows.append((q.number, q.title, f"{points(q.score)}/{points(q.max_score)}", ids))
    return rows


def table(
    report: GradeReport,
    colour: bool = False,
    submission: str | None = None,
    options: Sequence[str] = (),
) -> str:
    """The per-question table, the reasons for lost points, and the full-feedback command
    (`options`: those of this grade's command that change what the feedback says, `--term F`)."""
    paint = _colour(colour)
    rows = _rows(report)
    widths = [min(max(len(r[i]) for r in rows), MAX_COLUMN) for i in range(4)]
    lines = []
    for k, r in enumerate(rows):
        cells = [shorten(r[i], widths[i]).ljust(widths[i]) for i in range(4)]
        line = "  ".join(cells).rstrip()
        if k == 0:
            line = paint(line, "1")
        else:
            q = report.questions[k - 1]
            line = paint(line, "32" if q.status == "passed" else ("33" if q.score > 0 else "31"))
        lines.append(line)
    total = f"total {points(report.score)} / {points(report.max_score)}"
    header = f"{report.assignment_id}" + (f" (student {report.student})" if report.student else "")
    lines = [paint(header, "1"), *lines, paint(total, "1")]
    lost = [q for q in report.questions if q.status != "passed"]
    if lost:
        lines += ["", paint("where points were lost:", "1")]
        lines += [
            f"  {q.number}. {shorten(q.title, 40)}: {shorten(reason(q), MAX_REASON)}" for q in lost
        ]
    notes = list(report.warnings) or (["this run was not isolated"] if not report.isolated else [])
    lines += [
        paint(f"warning: {w}", "33") for w in notes
    ]  # missing files, notebook cells, isolation
    for event in dict.fromkeys(report.events):
        lines.append(f"sandbox: {event}")
    lines += ["", f"full feedback: {feedback_command(report, submission, options)}"]
    return "\n".join(lines)


def feedback_command(
    report: GradeReport, submission: str | None = None, options: Sequence[str] = ()
) -> str:
    """The command that prints this grade's full feedback (markdown), ready to paste into a
    shell: the same submission, student and `options`, each quoted where it needs to be."""
    words = ["seqgrade", "grade", submission or "SUBMISSION", "-a", report.assignment_id]
    if report.student:
        words += ["--student", report.student]
    return shlex.join([*words, *options, "--format", "md"])


def markdown(
    report: GradeReport, *, instructor: bool = False, adjustments: dict[str, Any] | None = None
) -> str:
    """The whole feedback as a student sees it; `instructor`: every hidden case in full too.
    `adjustments`: the course staff's overrides and the late policy applied to it (results.json's
    `extra_data.adjustments`): the scores then read as the student's results do."""
    total = f"{points(report.score)} / {points(report.max_score)}"
    late = ""
    overrides: dict[str, list[dict[str, Any]]] = {}
    if adjustments:
        from grader.course import adjust  # only then: kept off every other grade's start-up

        total = f"{points(adjustments['score'])} / {points(report.max_score)}"
        total += f" (graded {points(report.score)}; adjusted)"
        message = (adjustments.get("late") or {}).get("message")
        late = adjust.late_note(message) if message else ""
        for o in adjustments.get("overrides", []):
            note = adjust.override_note(o["before"], o["after"], o.get("comment") or "")
            overrides.setdefault(o["question"], []).append({**o, "note": note})
    out = [f"# {report.assignment_id}: {total}"]
    if late:
        out.append(f"> {late}")
    notes = list(report.warnings) or (["this run was not isolated"] if not report.isolated else [])
    out += [f"> ⚠ {w}" for w in notes]
    events = report.event_details if instructor else report.events
    out += [f"> sandbox: {e}" for e in dict.fromkeys(events)]
    for q in report.questions:
        mine = overrides.get(q.question_id, [])
        score = mine[-1]["after"] if mine else q.score
        out.append(f"## {q.number}. {q.title} — {points(score)}/{points(q.max_score)}")
        out += [o["note"] for o in mine]
        out.append(question_markdown(q, instructor=instructor))
    if instructor and report.student_output.strip():
        out.append("## What the code printed\n\n```\n" + report.student_output[:4000] + "\n```")
    return "\n\n".join(out) + "\n"
