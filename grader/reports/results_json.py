"""Gradescope's results.json (plus our `extra_data`), written atomically, always valid."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from grader import __version__
from grader.report import GradeReport

MAX_OUTPUT_CHARS = 4000  # of the student's own printed output kept in the top-level output

# The schema the project's tests hold results.json to: Gradescope's fields and ours.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["score", "execution_time", "output", "tests", "extra_data"],
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"},
        "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "visibility": {"enum": ["visible", "hidden", "after_due_date", "after_published"]},
        "stdout_visibility": {"enum": ["visible", "hidden", "after_due_date", "after_published"]},
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["name", "number", "score", "max_score", "status", "output", "visibility", "extra_data"],
                "properties": {
                    "name": {"type": "string"},
                    "number": {"type": "string"},
                    "score": {"type": "number"},
                    "max_score": {"type": "number"},
                    "status": {"enum": ["passed", "failed"]},
                    "output": {"type": "string"},
                    "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
                    "visibility": {"enum": ["visible", "hidden", "after_due_date", "after_published"]},
                    "extra_data": {
                        "type": "object",
                        "required": ["question", "kind", "function", "misconceptions"],
                        "properties": {
                            "question": {"type": "string"},
                            "kind": {"enum": ["code", "written", "error", "instructor"]},
                            "function": {"type": ["string", "null"]},
                            "misconceptions": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                },
            },
        },
        "extra_data": {
            "type": "object",
            "required": ["assignment", "grader_version"],
            "properties": {"assignment": {"type": ["string", "null"]}, "grader_version": {"type": "string"}},
        },
    },
}


def _summary(report: GradeReport) -> str:
    parts = [f"**Score: {report.score:g} / {report.max_score:g}**"]
    if not report.isolated:
        parts.append("⚠ " + "; ".join(report.warnings or ["this run was not isolated: no sandbox available"]))
    elif report.warnings:
        parts.append("Notes: " + "; ".join(report.warnings))
    if report.events:
        parts.append("What the sandbox stopped: " + "; ".join(dict.fromkeys(report.events)))
    if report.student_output.strip():
        text = report.student_output[:MAX_OUTPUT_CHARS]
        more = "\n[… output truncated]" if len(report.student_output) > MAX_OUTPUT_CHARS else ""
        parts.append("Your code printed:\n\n```\n" + text.replace("```", "ʼʼʼ") + more + "\n```")
    return "\n\n".join(parts)


def to_gradescope(report: GradeReport) -> dict[str, Any]:
    tests = []
    for q in report.questions:
        extra = {"question": q.question_id, "kind": q.kind, "function": q.function,
                 "misconceptions": list(q.misconceptions)}
        if q.answer_text is not None:
            extra["answer"] = q.answer_text[:200]  # for the class report's common wrong answers
        if q.error:
            extra["error"] = q.error[:300]
        tests.append({
            "name": f"{q.number}. {q.title}",
            "number": q.number,
            "score": round(q.score, 4),
            "max_score": q.max_score,
            "status": q.status,
            "output": q.feedback,
            "output_format": "md",
            "visibility": q.visibility,
            "extra_data": extra,
        })
    if report.grader_error:
        tests.append(_error_test(report.grader_error))
    return {
        "score": report.score,
        "execution_time": round(report.execution_time, 3),
        "output": _summary(report),
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"assignment": report.assignment_id, "grader_version": __version__,
                       "student": report.student, "variant_seed": report.seed, "isolated": report.isolated},
    }


def _error_test(message: str) -> dict[str, Any]:
    return {
        "name": "Grader error", "number": "0", "score": 0.0, "max_score": 0.0, "status": "failed",
        "output": f"The grader failed while grading this submission: {message}. Please tell your instructor.",
        "output_format": "md", "visibility": "visible",
        "extra_data": {"question": "grader-error", "kind": "error", "function": None, "misconceptions": []},
    }


def error_results(assignment_id: str | None, message: str) -> dict[str, Any]:
    """A valid results.json for a run in which the grader itself failed."""
    return {
        "score": 0.0, "execution_time": 0.0, "output": f"The grader failed: {message}", "output_format": "md",
        "visibility": "visible", "stdout_visibility": "hidden", "tests": [_error_test(message)],
        "extra_data": {"assignment": assignment_id, "grader_version": __version__},
    }


def write_results(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (a temporary file renamed over the target), so a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".results-", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=2, allow_nan=False, default=str)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
