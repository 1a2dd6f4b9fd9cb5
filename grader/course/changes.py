"""What moved between two gradings of a class: per submission and question, the old score and
the new one (`seqgrade batch --diff`), read from the stored results before a re-run."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Scores = dict[str, float]  # question id (and "total") -> points


@dataclass(frozen=True)
class Change:
    """One score that moved."""

    submission: str
    who: str
    """The student's name or email where known, else ""."""
    question: str
    """A question id, or "total"."""
    old: float | None
    """None: not graded before."""
    new: float | None
    """None: no longer graded."""


def scores_of(data: Mapping[str, Any]) -> Scores:
    """A results.json's question scores and its total."""
    out: Scores = {}
    for t in data.get("tests", []) if isinstance(data.get("tests"), list) else []:
        extra = t.get("extra_data") if isinstance(t, dict) else None
        if isinstance(extra, dict) and extra.get("kind") in ("code", "written"):
            out[str(extra.get("question"))] = float(t.get("score", 0.0))
    if isinstance(data.get("score"), (int, float)):
        out["total"] = float(data["score"])
    return out


def snapshot(results_dir: Path) -> dict[str, Scores]:
    """The stored results' scores, by submission name (the results file's stem)."""
    out = {}
    for path in sorted(Path(results_dir).glob("*.json")) if Path(results_dir).is_dir() else []:
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            out[path.stem] = scores_of(data)
    return out


def compare(
    before: Mapping[str, Scores], after: Iterable[tuple[str, str, Scores]], tolerance: float = 1e-9
) -> list[Change]:
    """Every score that differs between `before` and `after` ((submission, who, scores) rows),
    questions in the order the new result lists them, the total last."""
    changes = []
    for name, who, new in after:
        old = before.get(name)
        if old is None:
            continue  # graded for the first time: nothing moved
        keys = [k for k in new if k != "total"] + [k for k in old if k not in new and k != "total"]
        for q in [*keys, "total"]:
            a, b = old.get(q), new.get(q)
            if a is None and b is None:
                continue
            if a is None or b is None or abs(a - b) > tolerance:
                changes.append(Change(name, who, q, a, b))
    return changes


def _pts(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}".rstrip("0").rstrip(".")


def lines(changes: Iterable[Change]) -> list[str]:
    """One line per submission: "submission_3 (Ada Lovelace): a1.softmax 4 → 2; total 90 → 88"."""
    by: dict[tuple[str, str], list[Change]] = {}
    for c in changes:
        by.setdefault((c.submission, c.who), []).append(c)
    return [
        f"{name}{f' ({who})' if who else ''}: "
        + "; ".join(f"{c.question} {_pts(c.old)} → {_pts(c.new)}" for c in cs)
        for (name, who), cs in by.items()
    ]


def write(path: Path, changes: Iterable[Change]) -> None:
    """The changes as CSV: submission, student, question, old, new."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        out = csv.writer(fh, lineterminator="\n")
        out.writerow(["submission", "student", "question", "old", "new"])
        out.writerows([c.submission, c.who, c.question, _pts(c.old), _pts(c.new)] for c in changes)
