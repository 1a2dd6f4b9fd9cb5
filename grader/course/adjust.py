"""The staff's adjustments to a graded result: overrides on its questions, then the late
penalty on its total, applied to a copy so that the stored result stays the raw grade."""

from __future__ import annotations

import copy
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from grader.course import late
from grader.course.overrides import Override, for_student
from grader.course.term import Term

_SCORE_LINE = re.compile(r"^\*\*Score: [^*\n]* / [^*\n]*\*\*", re.M)


@dataclass(frozen=True)
class Decision:
    """What applies to one submission: its overrides and the late policy's verdict."""

    overrides: tuple[Override, ...] = ()
    verdict: late.Verdict | None = None
    ledger_key: str | None = None
    """Whose late days the verdict spends (the roster email or key)."""

    @property
    def empty(self) -> bool:
        return not self.overrides and self.verdict is None


def decide(
    term: Term | None,
    overrides: Sequence[Override],
    assignment_id: str,
    keys: Collection[str],
    submitted: datetime | None,
    *,
    dates: late.Dates | None = None,
    ledger: Mapping[tuple[str, str], int] | None = None,
) -> Decision:
    """The decision for a submission known by `keys` (emails, SIDs, folder names), submitted at
    `submitted`. `dates` (Gradescope's own, in the container) win over the term file's."""
    mine = tuple(for_student(overrides, keys))
    if term is None:
        return Decision(mine)
    student = term.roster.find(keys)
    deadline = (
        dates if dates is not None and dates.due is not None else term.dates.get(assignment_id)
    )
    if deadline is None or (
        term.policy.kind == "none" and not term.policy.late_days and deadline.late_due is None
    ):
        return Decision(mine)
    who = student.email if student else next(iter(sorted(k for k in keys if "@" in k)), None)
    allowance = term.policy.late_days
    if student is not None and student.late_days is not None:
        allowance = student.late_days
    spent = late.spent_before(ledger or {}, who, assignment_id) if who and allowance else 0
    available = max(allowance - spent, 0)
    short = assignment_id.split("_", 1)[0]
    extension = student.extensions.get(short, timedelta(0)) if student else timedelta(0)
    verdict = late.assess(
        term.policy, deadline, submitted, extension=extension, late_days_available=available
    )
    return Decision(mine, verdict, who)


def _points(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def override_note(before: float, after: float, comment: str = "") -> str:
    """What the student reads under a question the course staff adjusted."""
    note = f"**Adjusted by the course staff:** {_points(before)} → {_points(after)} points."
    return note + (f" {comment}" if comment else "")


def late_note(message: str) -> str:
    """What the student reads at the top of a late submission's feedback (`Verdict.message`)."""
    return f"**Late submission.** {message}"


def apply(data: Mapping[str, Any], decision: Decision) -> dict[str, Any]:
    """A copy of the results.json `data` with the decision applied: each override sets or moves
    its question's score and says so under the question; the late penalty takes its share of the
    total and says so at the top. `extra_data.adjustments` records the raw score and every step."""
    out = copy.deepcopy(dict(data))
    if decision.empty:
        return out
    raw = float(out.get("score", 0.0))
    tests = {
        t["extra_data"].get("question"): t
        for t in out.get("tests", [])
        if isinstance(t, dict) and t.get("extra_data", {}).get("kind") in ("code", "written")
    }
    done = []
    score = raw
    for o in decision.overrides:
        test = tests.get(o.question)
        if test is None:  # the stored result lacks the question (a grader error): nothing to move
            continue
        before, top = float(test.get("score", 0.0)), float(test.get("max_score", 0.0))
        after = o.applied_to(before, top)
        test["score"] = after
        test["status"] = "passed" if after >= top else "failed"
        test["output"] = f"{test.get('output', '')}\n\n{override_note(before, after, o.comment)}"
        record = {
            "question": o.question,
            "before": before,
            "after": after,
            "score": o.score,
            "delta": o.delta,
            "comment": o.comment,
            "who": o.who,
            "when": o.when,
        }
        test["extra_data"].setdefault("overrides", []).append(record)
        done.append(record)
        score += after - before
    lost = 0.0
    message = ""
    verdict = decision.verdict
    if verdict is not None:
        lost = score * verdict.percent / 100.0
        message = verdict.message(lost)
    final = round(score - lost, 6)
    out["score"] = final
    top = sum(float(t.get("max_score", 0.0)) for t in out.get("tests", []) if isinstance(t, dict))
    text = str(out.get("output", ""))
    if final != raw:
        why = [
            w
            for w, on in (("the course staff's adjustment", done), ("the late policy", lost))
            if on
        ]
        line = f"**Score: {_points(final)} / {_points(top)}** (graded {_points(raw)}; after {' and '.join(why)})"
        text = (
            _SCORE_LINE.sub(line, text, count=1)
            if _SCORE_LINE.search(text)
            else f"{line}\n\n{text}"
        )
    if message:
        text = f"{late_note(message)}\n\n{text}"
    out["output"] = text
    out.setdefault("extra_data", {})["adjustments"] = {
        "raw_score": raw,
        "score": final,
        "overrides": done,
        "late": None
        if verdict is None
        else {
            "late_by_seconds": verdict.late_by.total_seconds(),
            "late": late.span(verdict.late_by, verdict.unit)
            if verdict.late_by > timedelta(0)
            else "",
            "late_days_used": verdict.late_days_used,
            "late_days_left": verdict.late_days_left,
            "percent": verdict.percent,
            "points_lost": round(lost, 6),
            "after_late_due": verdict.after_late_due,
            "extension_seconds": verdict.extension.total_seconds(),
            "ledger_key": decision.ledger_key,
            "message": message,
        },
    }
    return out
