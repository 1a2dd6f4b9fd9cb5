"""Per-question statistics of a class, as a CSV beside the class report: mean, median, the
share with full marks, the share that attempted the question, its most common mistakes."""

from __future__ import annotations

import csv
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.questions import Assignment

TOP_MISCONCEPTIONS = 3  # listed per question
COLUMNS = (
    "question",
    "title",
    "points",
    "submissions",
    "mean",
    "median",
    "share_full_marks",
    "share_attempted",
    "top_misconceptions",
)


@dataclass(frozen=True)
class QuestionStats:
    """One question over the class."""

    question: str
    """Id."""
    title: str
    points: float
    submissions: int
    """Graded submissions holding the question."""
    mean: float
    median: float
    share_full: float
    """0..1."""
    share_attempted: float
    """0..1."""
    top: tuple[tuple[str, int], ...]
    """(catalog id, students), most common first."""


def attempted(test: Mapping[str, Any]) -> bool:
    """Whether the student tried the question: a written answer given; code that did not
    just keep the stub's `raise NotImplementedError` on every case."""
    extra = test.get("extra_data", {})
    if float(test.get("score", 0)) > 0 or extra.get("misconceptions"):
        return True
    if extra.get("kind") == "written":
        return bool(extra.get("answer"))
    cases = [c for c in extra.get("cases") or [] if isinstance(c, dict)]
    if not cases:  # no file, or it did not import: nothing of the question ran
        return False
    return not all(c.get("exception") == "NotImplementedError" for c in cases)


def question_stats(
    assignment: Assignment, graded: Sequence[tuple[Any, Mapping[str, Any]]]
) -> list[QuestionStats]:
    """Every question of the assignment, in its order, over the graded submissions."""
    tests: dict[str, list[Mapping[str, Any]]] = {q.id: [] for q in assignment.questions}
    for _, data in graded:
        for t in data.get("tests", []):
            qid = t.get("extra_data", {}).get("question")
            if qid in tests:
                tests[qid].append(t)
    out = []
    for i, q in enumerate(assignment.questions):
        ts = tests[q.id]
        scores = [float(t.get("score", 0)) for t in ts]
        n = len(ts)
        mistakes = Counter(
            m for t in ts for m in dict.fromkeys(t.get("extra_data", {}).get("misconceptions", []))
        )
        out.append(
            QuestionStats(
                q.id,
                f"{i + 1}. {q.title}",
                float(q.points),
                n,
                statistics.mean(scores) if scores else 0.0,
                statistics.median(scores) if scores else 0.0,
                sum(s >= q.points - 1e-9 for s in scores) / n if n else 0.0,
                sum(attempted(t) for t in ts) / n if n else 0.0,
                tuple(
                    sorted(mistakes.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_MISCONCEPTIONS]
                ),
            )
        )
    return out


def write_stats_csv(path: Path, stats: Sequence[QuestionStats]) -> None:
    """The statistics, one row per question (shares as fractions, mistakes as `id (n)`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(COLUMNS)
        for s in stats:
            w.writerow(
                [
                    s.question,
                    s.title,
                    f"{s.points:g}",
                    s.submissions,
                    round(s.mean, 4),
                    round(s.median, 4),
                    round(s.share_full, 4),
                    round(s.share_attempted, 4),
                    "; ".join(f"{m} ({n})" for m, n in s.top),
                ]
            )
