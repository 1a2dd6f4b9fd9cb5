"""Gradescope's results.json (plus our `extra_data`), written atomically, always valid.

What a student may see is written out in docs/feedback.md: each question's feedback as
grader/records.py renders it for students; the isolation note, the student's own
printed output, every case in full and the sandbox's events in full go to the instructor
(`extra_data`, one test of visibility "hidden", the autograder's stdout); the expected
written answers only into the answer-key test with the assignment's `reveal_answers`
visibility.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from grader import __version__
from grader.course.fingerprint import KINDS, Fingerprints
from grader.course.variants import VariantKey
from grader.questions import VISIBILITIES, Assignment
from grader.records import GradeReport, QuestionResult, case_data, question_markdown
from grader.reports.render import points

MAX_OUTPUT_CHARS = 4000  # of the student's printed output kept (extra_data; the output if shown)

# The schema the project's tests hold results.json to: Gradescope's fields and ours.
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["score", "execution_time", "output", "tests", "extra_data"],
    "properties": {
        "score": {"type": "number"},
        "execution_time": {"type": "number", "minimum": 0},
        "output": {"type": "string"},
        "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
        "visibility": {"enum": list(VISIBILITIES)},
        "stdout_visibility": {"enum": list(VISIBILITIES)},
        "tests": {
            "type": "array",
            "items": {
                "type": "object",
                "required": [
                    "name",
                    "number",
                    "score",
                    "max_score",
                    "status",
                    "output",
                    "visibility",
                    "extra_data",
                ],
                "properties": {
                    "name": {"type": "string"},
                    "number": {"type": "string"},
                    "score": {"type": "number"},
                    "max_score": {"type": "number"},
                    "status": {"enum": ["passed", "failed"]},
                    "output": {"type": "string"},
                    "output_format": {"enum": ["text", "html", "simple_format", "md", "ansi"]},
                    "visibility": {"enum": list(VISIBILITIES)},
                    "extra_data": {
                        "type": "object",
                        "required": ["question", "kind", "function", "misconceptions"],
                        "properties": {
                            "question": {"type": "string"},
                            "kind": {
                                "enum": [
                                    "code",
                                    "written",
                                    "error",
                                    "instructor",
                                    "answer-key",
                                    "detail",
                                ]
                            },
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
            "properties": {
                "assignment": {"type": ["string", "null"]},
                "grader_version": {"type": "string"},
                # a batch's: what the result was graded with (set_fingerprints), null = never reused
                "fingerprints": {
                    "type": ["object", "null"],
                    "required": list(KINDS),
                    "additionalProperties": {"type": "string"},
                },
                "regraded": {"type": "object"},  # question id -> fingerprints, after `--only`
            },
        },
    },
}


def _is_isolation_note(warning: str) -> bool:
    return "not isolated" in warning


def _summary(report: GradeReport, key: VariantKey | None, show_output: bool) -> str:
    """The top-level `output`, which the student sees: never the isolation note, their prints only if allowed."""
    parts = [f"**Score: {points(report.score)} / {points(report.max_score)}**"]
    notes = [w for w in report.warnings if not _is_isolation_note(w)]
    if key is not None and (key.value is None or key.group_size > 1):
        notes.insert(0, key.feedback())
    if notes:
        parts.append("Notes: " + "; ".join(notes))
    if report.events:
        parts.append("What the sandbox stopped: " + "; ".join(dict.fromkeys(report.events)))
    if show_output and report.student_output.strip():
        parts.append(
            "Your code printed:\n\n```\n"
            + _truncated(report.student_output).replace("```", "ʼʼʼ")
            + "\n```"
        )
    return "\n\n".join(parts)


def _truncated(text: str) -> str:
    more = "\n[… output truncated]" if len(text) > MAX_OUTPUT_CHARS else ""
    return text[:MAX_OUTPUT_CHARS] + more


def isolation_note(report: GradeReport) -> str | None:
    """For the instructor (stdout, extra_data): how the sandbox ran, and why not isolated."""
    if report.isolated:
        return None
    found = [w for w in report.warnings if _is_isolation_note(w)]
    return "; ".join(found) or "this run was not isolated: no sandbox available"


def to_gradescope(
    report: GradeReport, key: VariantKey | None = None, assignment: Assignment | None = None
) -> dict[str, Any]:
    """results.json for one graded submission: what a student may see in the fields they see.

    `key`: the variant key the submission was graded with (as `variant_key` decided it);
    by default the report's student, given explicitly. `assignment`: the one graded, as the
    registry loaded it (None: a report without one, so no answer key and no per-student line).
    """
    if key is None and assignment is not None:
        key = VariantKey(
            report.student, assignment.variant_key, "option" if report.student else "none"
        )
    per_student = _per_student(assignment)
    tests = [
        _test(q, key.question_line() if key is not None and q.question_id in per_student else None)
        for q in report.questions
    ]
    if assignment is not None:
        tests.extend(_answer_key_test(assignment, report, len(tests) + 1))
    tests.extend(detail_test(tests, list(dict.fromkeys(report.event_details))))
    if report.grader_error:
        tests.append(_error_test(report.grader_error))
    extra: dict[str, Any] = {
        "assignment": report.assignment_id,
        "grader_version": __version__,
        "student": report.student,
        "variant_seed": report.seed,
        "variant_key_source": key.source if key else None,
        "isolated": report.isolated,
        "isolation": isolation_note(report),
        "warnings": list(report.warnings),
    }
    if report.event_details:
        extra["events"] = list(dict.fromkeys(report.event_details))
    if report.student_output:
        extra["student_output"] = _truncated(report.student_output)
    if report.notebook is not None:
        extra["notebook"] = report.notebook
    show = bool(assignment is not None and assignment.show_student_output)
    return {
        "score": report.score,
        "execution_time": round(report.execution_time, 3),
        "output": _summary(report, key, show),
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "visible" if show else "hidden",
        "tests": tests,
        "extra_data": extra,
    }


def _per_student(assignment: Assignment | None) -> frozenset[str]:
    """The assignment's per-student questions, as the registry decided them when it loaded it."""
    if assignment is None:
        return frozenset()
    if assignment.per_student is None:  # built by hand, not loaded: decided here, by probing
        from grader.course.variants import per_student_questions

        return per_student_questions(assignment)
    return assignment.per_student


def _test(q: QuestionResult, key_line: str | None) -> dict[str, Any]:
    extra = {
        "question": q.question_id,
        "kind": q.kind,
        "function": q.function,
        "misconceptions": list(q.misconceptions),
    }
    if q.answer_text is not None:
        extra["answer"] = q.answer_text[:200]  # for the class report's common wrong answers
    if q.error:
        extra["error"] = q.error[:300]
    if q.carried:  # follow-through: mistakes charged in an earlier question
        extra["carried"] = [dict(c) for c in q.carried]
        extra["carried_points"] = q.carried_points
    if q.needs_review:
        extra["needs_review"] = list(q.needs_review)
    if q.cases:  # every case in full: extra_data is the instructor's
        extra["cases"] = [case_data(r) for r in q.cases]
    return {
        "name": f"{q.number}. {q.title}",
        "number": q.number,
        "score": round(q.score, 4),
        "max_score": q.max_score,
        "status": q.status,
        "output": question_markdown(q) + (f"\n\n{key_line}" if key_line else ""),
        "output_format": "md",
        "visibility": q.visibility,
        "extra_data": extra,
    }


def _answer_key_test(
    assignment: Assignment, report: GradeReport, number: int
) -> list[dict[str, Any]]:
    """The one 0-point test holding the student's own expected written answers."""
    if report.answer_key is None:
        return []
    body, student = report.answer_key, report.student
    who = f"the variant key `{student}`" if student else "the default variant"
    reveal = assignment.reveal_answers
    return [
        {
            "name": f"{number}. Answer key (your variant)",
            "number": str(number),
            "score": 0.0,
            "max_score": 0.0,
            "status": "passed",
            "output": f"The expected written answers for {who}:\n\n{body}",
            "output_format": "md",
            "visibility": "hidden" if reveal == "never" else reveal,
            "extra_data": {
                "question": "answer-key",
                "kind": "answer-key",
                "function": None,
                "misconceptions": [],
            },
        }
    ]


def _case_words(case: dict[str, Any]) -> str:
    """One case of `extra_data.cases` in full, for the instructor view."""
    mark = "✔" if case.get("category") in ("passed", "carried") else "✘"
    said = "; ".join(str(m) for m in case.get("messages", [])) or str(case.get("category", ""))
    lines = [f"- {mark} {case.get('label', '')}" + ("" if case.get("visible") else " (hidden)")]
    if mark == "✘":
        lines[0] += f": {said}"
        for key in ("line", "inputs", "got", "expected"):
            if case.get(key):
                lines.append(f"  - {key}: {case[key]}")
    return "\n".join(lines)


def detail_test(
    tests: list[dict[str, Any]], events: list[str] | None = None
) -> list[dict[str, Any]]:
    """One 0-point test only instructors see (visibility "hidden"): every hidden case that did
    not pass, in full (from the tests' `extra_data.cases`), and what the sandbox stopped. Built
    from the tests themselves, so a result merged after `--only` gets it anew."""
    parts = []
    for t in tests:
        cases = t.get("extra_data", {}).get("cases") or []
        failed = [
            c
            for c in cases
            if not c.get("visible") and c.get("category") not in ("passed", "carried")
        ]
        if failed:
            parts.append(f"### {t.get('name', '')}\n\n" + "\n".join(_case_words(c) for c in cases))
    if events:
        parts.append("### The sandbox\n\n" + "\n".join(f"- {e}" for e in events))
    if not parts:
        return []
    return [
        {
            "name": "Instructor view: hidden cases in full",
            "number": str(len(tests) + 1),
            "score": 0.0,
            "max_score": 0.0,
            "status": "passed",
            "output": "\n\n".join(parts),
            "output_format": "md",
            "visibility": "hidden",
            "extra_data": {
                "question": "instructor-detail",
                "kind": "detail",
                "function": None,
                "misconceptions": [],
            },
        }
    ]


def _error_test(message: str) -> dict[str, Any]:
    return {
        "name": "Grader error",
        "number": "0",
        "score": 0.0,
        "max_score": 0.0,
        "status": "failed",
        "output": f"The grader failed while grading this submission: {message}. Please tell your instructor.",
        "output_format": "md",
        "visibility": "visible",
        "extra_data": {
            "question": "grader-error",
            "kind": "error",
            "function": None,
            "misconceptions": [],
        },
    }


def error_results(assignment_id: str | None, message: str) -> dict[str, Any]:
    """A valid results.json for a run in which the grader itself failed."""
    return {
        "score": 0.0,
        "execution_time": 0.0,
        "output": f"The grader failed: {message}",
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [_error_test(message)],
        "extra_data": {"assignment": assignment_id, "grader_version": __version__},
    }


def set_fingerprints(
    data: dict[str, Any],
    whole: Fingerprints | None,
    regraded: dict[str, Fingerprints] | None = None,
) -> dict[str, Any]:
    """Record in `extra_data` what the result was graded with: `fingerprints` for the result as a
    whole (None: nothing, so a re-run regrades it), `regraded` for questions regraded since
    (`seqgrade batch --only`), each with its own."""
    extra = data.setdefault("extra_data", {})
    extra.pop("fingerprint", None)  # the submission-only digest of earlier versions
    extra["fingerprints"] = whole.as_dict() if whole is not None else None
    if regraded:
        extra["regraded"] = {qid: fp.as_dict() for qid, fp in regraded.items()}
    else:
        extra.pop("regraded", None)
    return data


def stored_fingerprints(data: Any) -> tuple[Fingerprints | None, dict[str, Fingerprints]]:
    """What a stored result was graded with: the whole result's fingerprints (None when it has
    none, as results of earlier versions) and those of the questions regraded since."""
    extra = data.get("extra_data") if isinstance(data, dict) else None
    if not isinstance(extra, dict):
        return None, {}
    regraded = extra.get("regraded") if isinstance(extra.get("regraded"), dict) else {}
    per_question = {qid: Fingerprints.from_dict(fp) for qid, fp in regraded.items()}
    return (
        Fingerprints.from_dict(extra.get("fingerprints")),
        {qid: fp for qid, fp in per_question.items() if fp is not None},
    )


UNFINISHED = ".results-"
"""How `write_results`' temporary files begin: no result's name does (a batch skips hidden
submission folders), and none of them ends in .json."""


def write_results(path: Path, data: dict[str, Any]) -> None:
    """Write atomically (a temporary file renamed over the target), so a crash never leaves half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=UNFINISHED, dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh, indent=2, allow_nan=False, default=str)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def remove_unfinished(folder: Path) -> None:
    """Delete what `write_results` calls in `folder` left when their process was killed between
    the temporary file and its rename (a batch's pool process stopped by a broken pool): call it
    once nothing writes there any more. A finished result is never touched."""
    for tmp in Path(folder).glob(UNFINISHED + "*"):
        if tmp.suffix != ".json":
            tmp.unlink(missing_ok=True)
