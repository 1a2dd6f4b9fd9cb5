"""The class report: one self-contained HTML file with what the class got right and wrong.

Plots are drawn with matplotlib (Agg) and embedded as PNG data; they use hatching and
grey levels, not colour, so they read in print. Every number also appears in a table.
"""

from __future__ import annotations

import base64
import html
import io
import statistics
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from grader import catalog
from grader.questions import Assignment

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#111}
table{border-collapse:collapse;margin:1em 0;width:100%}th,td{border:1px solid #999;padding:4px 8px;text-align:left}
th{background:#eee}td.num{text-align:right}img{max-width:100%;border:1px solid #ccc}
code{background:#f4f4f4;padding:0 3px}
"""


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _plots(assignment: Assignment, totals: list[float], per_q: dict[str, list[float]]) -> tuple[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3))
    ax.hist(totals, bins=min(20, max(5, len(set(totals)))), range=(0, assignment.total_points),
            color="0.6", edgecolor="black", hatch="//")
    ax.set_xlabel("total score")
    ax.set_ylabel("submissions")
    ax.set_title("Score distribution")
    dist = _png(fig)

    qs = assignment.questions
    means = [statistics.mean(per_q[q.id]) / q.points * 100 if per_q[q.id] else 0.0 for q in qs]
    spread = [statistics.pstdev(per_q[q.id]) / q.points * 100 if len(per_q[q.id]) > 1 else 0.0 for q in qs]
    fig, ax = plt.subplots(figsize=(7, max(2.5, 0.35 * len(qs))))
    ax.barh(range(len(qs)), means, xerr=spread, color="0.75", edgecolor="black", hatch="..", capsize=3)
    ax.set_yticks(range(len(qs)), [f"{i + 1}. {q.title[:40]}" for i, q in enumerate(qs)])
    ax.invert_yaxis()
    ax.set_xlim(0, 105)
    ax.set_xlabel("mean score, % of the question's points (bars: ± one standard deviation)")
    ax.set_title("Questions")
    return dist, _png(fig)


def write_report(path: Path, assignment: Assignment, graded: list[tuple[Any, dict[str, Any]]]) -> None:
    """Write the class report for graded (submission, results.json) pairs."""
    totals = [float(d["score"]) for _, d in graded]
    per_q: dict[str, list[float]] = defaultdict(list)
    mis_students: dict[str, set[str]] = defaultdict(set)
    mis_questions: dict[str, set[str]] = defaultdict(set)
    wrong_answers: dict[str, Counter] = defaultdict(Counter)
    failures: list[tuple[str, str]] = []
    titles = {q.id: f"{i + 1}. {q.title}" for i, q in enumerate(assignment.questions)}
    for sub, data in graded:
        errors = []
        for t in data["tests"]:
            extra = t["extra_data"]
            qid = extra["question"]
            if extra.get("kind") == "error":
                errors.append(t["output"])
                continue
            per_q[qid].append(float(t["score"]))
            for m in extra.get("misconceptions", []):
                mis_students[m].add(sub.name)
                mis_questions[m].add(qid)
            if extra.get("kind") == "written" and t["status"] == "failed" and extra.get("answer"):
                wrong_answers[qid][extra["answer"]] += 1
            if extra.get("error"):
                errors.append(f"{titles.get(qid, qid)}: {extra['error']}")
        if errors:
            failures.append((sub.name, errors[0] if len(errors) == 1 else f"{errors[0]} (+{len(errors) - 1} more)"))

    esc = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(assignment.id)} class report</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{esc(assignment.title)} — class report</h1>",
             f"<p>{len(graded)} submissions; mean {statistics.mean(totals) if totals else 0:.1f}, "
             f"median {statistics.median(totals) if totals else 0:.1f} of {assignment.total_points:g} points.</p>"]
    if graded:
        dist, questions = _plots(assignment, totals, per_q)
        parts.append(f"<h2>Score distribution</h2><img alt='histogram of total scores' src='{dist}'>")
        parts.append(f"<h2>Questions</h2><img alt='mean score per question' src='{questions}'>")
    parts.append("<table id='questions'><tr><th>question</th><th>points</th><th>mean</th><th>std</th>"
                 "<th>full marks</th></tr>")
    for q in assignment.questions:
        s = per_q[q.id]
        mean = statistics.mean(s) if s else 0.0
        std = statistics.pstdev(s) if len(s) > 1 else 0.0
        full = sum(1 for v in s if v >= q.points - 1e-9)
        parts.append(f"<tr><td>{esc(titles[q.id])}</td><td class=num>{q.points:g}</td><td class=num>{mean:.2f}</td>"
                     f"<td class=num>{std:.2f}</td><td class=num>{full}/{len(s)}</td></tr>")
    parts.append("</table>")

    parts.append("<h2>Misconceptions, most frequent first</h2>")
    if mis_students:
        parts.append("<table id='misconceptions'><tr><th>misconception</th><th>students</th><th>questions</th>"
                     "<th>what it means</th></tr>")
        for mid, students in sorted(mis_students.items(), key=lambda kv: (-len(kv[1]), kv[0])):
            try:
                m = catalog.get(mid)
                text = f"<b>{esc(m.title)}</b>: {esc(m.explanation)} <i>({esc(m.section)})</i>"
            except KeyError:
                text = ""
            qs = ", ".join(esc(titles.get(q, q)) for q in sorted(mis_questions[mid]))
            parts.append(f"<tr><td><code>{esc(mid)}</code></td><td class=num>{len(students)}</td><td>{qs}</td>"
                         f"<td>{text}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>No misconception was recognised.</p>")

    parts.append("<h2>Most common wrong written answers</h2>")
    if wrong_answers:
        parts.append("<table id='wrong-answers'><tr><th>question</th><th>answer</th><th>students</th></tr>")
        for qid, counts in wrong_answers.items():
            for answer, n in counts.most_common(3):
                parts.append(f"<tr><td>{esc(titles.get(qid, qid))}</td><td><code>{esc(answer)}</code></td>"
                             f"<td class=num>{n}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>No wrong written answers.</p>")

    parts.append("<h2>Submissions that failed to run</h2>")
    if failures:
        parts.append("<table id='failures'><tr><th>submission</th><th>why</th></tr>")
        for name, why in failures:
            parts.append(f"<tr><td>{esc(name)}</td><td>{esc(why[:400])}</td></tr>")
        parts.append("</table>")
    else:
        parts.append("<p>Every submission ran.</p>")
    parts.append("</body></html>")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(parts), encoding="utf-8")
