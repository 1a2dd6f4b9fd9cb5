"""The class report: one self-contained HTML file that says what to reteach.

Mistakes are ranked by the points they cost the class (not by how many students hold them),
each counted once at its root: the question where a student first makes it, apart from the
later questions it dragged down. Wrong written answers are grouped by the mistake or form they
show, never by raw per-student values. Copy signals are listed for a person to look at, code
similarity ranked by overlap with the matching passages side by side (grader/reports/similarity.py).

Every table names people as the export does (name and email, not the folder's name) and links
each to the student's full feedback, instructor view, a static page beside the report
(grader/reports/student_pages.py); the per-question statistics go to a CSV beside it
(grader/reports/question_stats.py). The mistakes table sorts by points lost or by students
affected with a few lines of inline script (no network); `#sort=students` in the address sorts
it on load.

Plots are drawn with matplotlib (Agg) and embedded as PNG data; they use hatching and grey
levels, not colour, so they read in print, and they stay within their scales (shares of the
class, never bars past 100%). Every number also appears in a table.
"""

from __future__ import annotations

import base64
import html
import io
import statistics
import textwrap
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import catalog
from grader.questions import Assignment, WrittenQuestion
from grader.reports import copy_signals, question_stats, similarity, student_pages
from grader.reports.copy_signals import BorrowedAnswers, Expected
from grader.reports.similarity import SimilarPair

Graded = Sequence[tuple[Any, Mapping[str, Any]]]

_CSS = """
body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#111}
table{border-collapse:collapse;margin:1em 0;width:100%}
th,td{border:1px solid #999;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eee}td.num{text-align:right}img{max-width:100%;border:1px solid #ccc}
code{background:#f4f4f4;padding:0 3px}details summary{cursor:pointer}
p.note{color:#444;font-size:0.95em}
.sbs{display:grid;grid-template-columns:1fr 1fr;gap:8px}
.sbs pre{background:#fff6d5;margin:0 0 6px;padding:4px;overflow-x:auto;font-size:0.85em}
button{margin-right:6px}
"""

_SORT_JS = """
function sortMistakes(by){
  var t=document.getElementById('misconceptions');if(!t)return;
  var rows=Array.prototype.slice.call(t.querySelectorAll('tr[data-points]'));
  rows.sort(function(a,b){
    var k=by==='students'?['data-students','data-points']:['data-points','data-students'];
    return (parseFloat(b.getAttribute(k[0]))-parseFloat(a.getAttribute(k[0])))||
           (parseFloat(b.getAttribute(k[1]))-parseFloat(a.getAttribute(k[1])))||
           a.getAttribute('data-id').localeCompare(b.getAttribute('data-id'));});
  rows.forEach(function(r){t.tBodies[0].appendChild(r);});
  t.setAttribute('data-sorted',by);
}
window.addEventListener('DOMContentLoaded',function(){
  var m=/sort=(students|points)/.exec(location.hash);if(m)sortMistakes(m[1]);});
"""


class People:
    """How the report names each submission (its people) and where its feedback page is."""

    def __init__(
        self,
        labels: Mapping[str, str] | None = None,
        links: Mapping[str, str] | None = None,
    ) -> None:
        self.labels = dict(labels or {})
        self.links = dict(links or {})

    def label(self, name: str) -> str:
        """The submission's people as text ("Ada Lovelace <ada@uni.edu>"), else its name."""
        return self.labels.get(name, name)

    def cell(self, name: str) -> str:
        """The submission's people as HTML, linked to its feedback page when there is one."""
        text = html.escape(self.label(name))
        href = self.links.get(name)
        if href is None:
            return text
        return f"<a class=student href='{html.escape(href, quote=True)}'>{text}</a>"


FORM_OTHER_VARIANT = "right for another student's variant"
FORM_DEFAULT_VARIANT = "right for the default variant (no key)"
FORM_UNRECOGNISED = "not a recognised mistake"


@dataclass(frozen=True)
class Mistake:
    """One misconception across the class, counted at its root."""

    id: str
    """Catalog id."""
    students: tuple[str, ...]
    """Submissions holding it."""
    share: float
    """Of the class, 0..1."""
    points_lost: float
    """Over the class: at the root plus downstream."""
    root: str
    """The question where it is most often first made."""
    root_points: float
    """Points lost where it is first made."""
    dragged: tuple[tuple[str, float], ...]
    """Later questions it dragged down, with the points lost there."""
    returned: float = 0.0
    """Points follow-through credit gave back in the questions built on its root."""


@dataclass(frozen=True)
class AnswerGroup:
    """Wrong answers to one written question that show the same mistake or form."""

    question: str
    """Question id."""
    form: str
    """A catalog id, or one of the FORM_* phrases."""
    students: tuple[str, ...]


def _name(sub: Any) -> str:
    return getattr(sub, "name", str(sub))


def _scored_tests(data: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        t
        for t in data.get("tests", [])
        if t.get("extra_data", {}).get("kind") not in ("error", None)
    ]


def rank_mistakes(assignment: Assignment, graded: Graded) -> list[Mistake]:
    """Misconceptions by points lost, most costly first (a test naming k of them splits its loss)."""
    order = {q.id: i for i, q in enumerate(assignment.questions)}
    students: dict[str, set[str]] = defaultdict(set)
    roots: dict[str, Counter] = defaultdict(Counter)
    at_root: dict[str, float] = defaultdict(float)
    downstream: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    returned: dict[str, float] = defaultdict(float)
    for sub, data in graded:
        seen: set[str] = set()
        tests = sorted(
            _scored_tests(data), key=lambda t: order.get(t["extra_data"]["question"], len(order))
        )
        for t in tests:
            ids = list(dict.fromkeys(t["extra_data"].get("misconceptions", [])))
            lost = max(0.0, float(t.get("max_score", 0.0)) - float(t.get("score", 0.0))) / max(
                len(ids), 1
            )
            qid = t["extra_data"]["question"]
            carried = t["extra_data"].get("carried", [])
            for c in carried:  # follow-through: charged at its root, credit returned here
                returned[c["misconception"]] += float(
                    t["extra_data"].get("carried_points", 0.0)
                ) / len(carried)
            for mid in ids:
                students[mid].add(_name(sub))
                if mid in seen:
                    downstream[mid][qid] += lost
                else:
                    seen.add(mid)
                    roots[mid][qid] += 1
                    at_root[mid] += lost
    n = max(len(graded), 1)
    out = []
    for mid, who in students.items():
        dragged = tuple(
            sorted(downstream[mid].items(), key=lambda kv: order.get(kv[0], len(order)))
        )
        total = at_root[mid] + sum(p for _, p in dragged)
        out.append(
            Mistake(
                mid,
                tuple(sorted(who)),
                len(who) / n,
                total,
                roots[mid].most_common(1)[0][0],
                at_root[mid],
                dragged,
                returned.get(mid, 0.0),
            )
        )
    return sorted(out, key=lambda m: (-round(m.points_lost, 9), -len(m.students), m.id))


def group_wrong_answers(
    assignment: Assignment, graded: Graded, borrowed: Sequence[BorrowedAnswers], expected: Expected
) -> list[AnswerGroup]:
    """Each written question's wrong answers, grouped by the mistake or form they show."""
    questions = {q.id: q for q in assignment.questions if isinstance(q, WrittenQuestion)}
    from_others = {(b.student, qid) for b in borrowed for qid in b.questions}
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for sub, data in graded:
        key = data.get("extra_data", {}).get("student")
        for t in _scored_tests(data):
            extra = t["extra_data"]
            q = questions.get(extra["question"])
            if q is None or t.get("status") != "failed" or not extra.get("answer"):
                continue  # right, or nothing to read (not attempted)
            groups[(q.id, _form(q, extra, _name(sub), key, from_others, expected))].append(
                _name(sub)
            )
    order = {q.id: i for i, q in enumerate(assignment.questions)}
    return [
        AnswerGroup(qid, form, tuple(sorted(who)))
        for (qid, form), who in sorted(
            groups.items(), key=lambda kv: (order[kv[0][0]], -len(kv[1]), kv[0][1])
        )
    ]


def _form(
    q: WrittenQuestion,
    extra: Mapping[str, Any],
    name: str,
    key: str | None,
    from_others: set[tuple[str, str]],
    expected: Expected,
) -> str:
    if extra.get("misconceptions"):
        return str(extra["misconceptions"][0])
    if (name, q.id) in from_others:
        return FORM_OTHER_VARIANT
    if key and q.answer_kind in copy_signals.NUMERIC_KINDS:
        got = copy_signals.read_answer(q.answer_kind, str(extra["answer"]))
        default = expected(q, None)
        if got is not None and default is not None and copy_signals.agrees(got, default, q):
            return FORM_DEFAULT_VARIANT
    return FORM_UNRECOGNISED


# ----------------------------------------------------------------------------- plots


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _plots(
    assignment: Assignment, totals: list[float], per_q: Mapping[str, list[float]]
) -> tuple[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3))
    from matplotlib.ticker import MaxNLocator

    ax.hist(
        totals,
        bins=20 if len(totals) >= 40 else 10,
        range=(0, assignment.total_points),  # 5 or 10% bins
        color="0.6",
        edgecolor="black",
        hatch="//",
    )
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of submissions
    ax.set_xlim(0, assignment.total_points)
    ax.set_xlabel(f"total score (of {assignment.total_points:g})")
    ax.set_ylabel("submissions")
    ax.set_title("Score distribution")
    dist = _png(fig)

    qs = assignment.questions
    full, partial, zero = [], [], []
    for q in qs:
        s = per_q.get(q.id, [])
        n = max(len(s), 1)
        full.append(100 * sum(v >= q.points - 1e-9 for v in s) / n)
        zero.append(100 * sum(v <= 1e-9 for v in s) / n)
        partial.append(max(0.0, 100 - full[-1] - zero[-1]) if s else 0.0)
    labels = [textwrap.fill(f"{i + 1}. {q.title}", 48) for i, q in enumerate(qs)]
    height = max(2.5, 0.3 * sum(label.count("\n") + 1 for label in labels) + 1.2)
    fig, ax = plt.subplots(figsize=(9, height))
    ys = range(len(qs))
    ax.barh(ys, full, color="0.35", edgecolor="black", label="full marks")
    ax.barh(
        ys,
        partial,
        left=full,
        color="0.75",
        edgecolor="black",
        hatch="..",
        label="part of the points",
    )
    ax.barh(
        ys,
        zero,
        left=[f + p for f, p in zip(full, partial)],
        color="white",
        edgecolor="black",
        hatch="//",
        label="no points",
    )
    ax.set_yticks(list(ys), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("share of the class (%)")
    ax.set_title("Each question: who got full marks, part of the points, none")
    ax.legend(
        loc="upper center",
        bbox_to_anchor=(0.5, -0.12 if len(qs) > 6 else -0.3),
        ncol=3,
        frameon=False,
    )
    return dist, _png(fig)


def _plots_html(
    assignment: Assignment, totals: list[float], per_q: Mapping[str, list[float]]
) -> list[str]:
    try:
        dist, questions = _plots(assignment, totals, per_q)
    except ImportError:  # matplotlib is a dependency; a broken install still gets the tables
        return [
            "<p class=note>The charts need matplotlib (<code>pip install matplotlib</code>); "
            "every number is in the tables below.</p>"
        ]
    return [
        f"<h2>Score distribution</h2><img alt='histogram of total scores' src='{dist}'>",
        f"<h2>Questions</h2><img alt='share of the class with full, part or no points per question' "
        f"src='{questions}'>",
    ]


# ----------------------------------------------------------------------------- HTML


def _students(names: Sequence[str], people: People | None = None) -> str:
    people = people or People()
    listed = ", ".join(people.cell(n) for n in sorted(names, key=people.label))
    return f"<details><summary>{len(names)} student{'s' if len(names) != 1 else ''}</summary>{listed}</details>"


def _mistakes_html(
    mistakes: Sequence[Mistake], titles: Mapping[str, str], people: People | None = None
) -> list[str]:
    esc = html.escape
    if not mistakes:
        return ["<p>No misconception was recognised.</p>"]
    given_back = sum(m.returned for m in mistakes)
    parts = [
        "<p class=note>Each mistake is counted once, at its root (the question where a student first "
        "makes it); the points it cost in later questions built on that one are listed apart. "
        f"Follow-through credit (a later question right given the student's own earlier function) "
        f"returned {given_back:.1f} points to the class.</p>",
        "<p>Sort by <button id='sort-points' onclick=\"sortMistakes('points')\">points lost</button>"
        "<button id='sort-students' onclick=\"sortMistakes('students')\">students affected</button></p>",
        "<table id='misconceptions' data-sorted='points'><thead><tr><th>misconception</th>"
        "<th>points lost</th><th>students affected</th><th>made in</th><th>questions it dragged down"
        "</th><th>returned by follow-through</th><th>what it means</th></tr></thead><tbody>",
    ]
    for m in mistakes:
        try:
            entry = catalog.get(m.id)
            text = (
                f"<b>{esc(entry.title)}</b>: {esc(entry.explanation)} <i>({esc(entry.section)})</i>"
            )
        except KeyError:
            text = ""
        dragged = "; ".join(f"{esc(titles.get(q, q))} ({p:.1f})" for q, p in m.dragged) or "—"
        parts.append(
            f"<tr data-id='{esc(m.id)}' data-points='{m.points_lost:.6f}' "
            f"data-students='{len(m.students)}'><td><code>{esc(m.id)}</code></td>"
            f"<td class=num>{m.points_lost:.1f}</td>"
            f"<td>{len(m.students)} ({100 * m.share:.0f}%) {_students(m.students, people)}</td>"
            f"<td>{esc(titles.get(m.root, m.root))} ({m.root_points:.1f})</td><td>{dragged}</td>"
            f"<td class=num>{m.returned:.1f}</td><td>{text}</td></tr>"
        )
    parts.append("</tbody></table>")
    return parts


def _answers_html(
    groups: Sequence[AnswerGroup], titles: Mapping[str, str], people: People | None = None
) -> list[str]:
    esc = html.escape
    if not groups:
        return ["<p>No wrong written answers.</p>"]
    parts = [
        "<table id='wrong-answers'><tr><th>question</th><th>what the answers show</th><th>students</th></tr>"
    ]
    for g in groups:
        form = f"<code>{esc(g.form)}</code>" if g.form not in _FORMS else esc(g.form)
        parts.append(
            f"<tr><td>{esc(titles.get(g.question, g.question))}</td><td>{form}</td>"
            f"<td>{_students(g.students, people)}</td></tr>"
        )
    parts.append("</table>")
    return parts


_FORMS = (FORM_OTHER_VARIANT, FORM_DEFAULT_VARIANT, FORM_UNRECOGNISED)


def _copies_html(
    borrowed: Sequence[BorrowedAnswers],
    pairs: Sequence[SimilarPair],
    titles: Mapping[str, str],
    people: People | None = None,
) -> list[str]:
    people = people or People()
    esc = html.escape
    parts = [
        "<p class=note>Signals for a person to look at, never a penalty, and never shown to students: "
        "written numbers that are right for another student's variant and not for the student's own, "
        "and code whose normalised text (names, strings, comments and layout aside, the handout's stub "
        f"excluded) largely overlaps another's: pairs at {100 * similarity.THRESHOLD:.0f}% or more of "
        "either file, most overlapping first (docs/similarity.md says what the figures mean).</p>"
    ]
    if borrowed:
        parts.append(
            "<table id='copy-written'><tr><th>student</th><th>numbers right for the variant of"
            "</th><th>answers</th></tr>"
        )
        for b in borrowed:
            qs = "; ".join(esc(titles.get(q, q)) for q in b.questions)
            parts.append(
                f"<tr><td>{people.cell(b.student)}</td><td>{people.cell(b.other)}</td><td>{qs}</td></tr>"
            )
        parts.append("</table>")
    else:
        parts.append("<p>No written answers match another student's variant.</p>")
    if pairs:
        parts.append(
            "<table id='similar-code'><tr><th>#</th><th>student</th><th>student</th>"
            "<th>overlap</th><th>of the first's code</th><th>of the second's code</th>"
            "<th>matching passages</th></tr>"
        )
        for i, p in enumerate(pairs[:MAX_PAIRS], 1):
            parts.append(
                f"<tr data-overlap='{p.overlap:.4f}'><td class=num>{i}</td><td>{people.cell(p.left)}</td>"
                f"<td>{people.cell(p.right)}</td><td class=num>{100 * p.overlap:.0f}%</td>"
                f"<td class=num>{100 * p.left_share:.0f}%</td>"
                f"<td class=num>{100 * p.right_share:.0f}%</td><td>{_side_by_side(p, people)}</td></tr>"
            )
        parts.append("</table>")
        if len(pairs) > MAX_PAIRS:
            parts.append(
                f"<p class=note>{len(pairs) - MAX_PAIRS} more pairs past the threshold, less "
                "overlapping than these, are not listed.</p>"
            )
    else:
        parts.append("<p>No two submissions' code overlaps past the threshold.</p>")
    return parts


MAX_PASSAGES = 12  # side by side per pair; the rest counted
MAX_PAIRS = 100  # similar pairs listed, most overlapping first; the rest counted


def _side_by_side(p: SimilarPair, people: People) -> str:
    esc = html.escape
    shown = p.passages[:MAX_PASSAGES]
    cells = "".join(f"<pre>{esc(x.left)}</pre><pre>{esc(x.right)}</pre>" for x in shown)
    more = (
        f"<p class=note>{len(p.passages) - len(shown)} more passages.</p>"
        if len(p.passages) > len(shown)
        else ""
    )
    return (
        f"<details><summary>{len(p.passages)} passages</summary><div class=sbs>"
        f"<b>{esc(people.label(p.left))}</b><b>{esc(people.label(p.right))}</b>{cells}</div>{more}</details>"
    )


def _questions_html(
    assignment: Assignment,
    per_q: Mapping[str, list[float]],
    titles: Mapping[str, str],
    stats: Sequence[question_stats.QuestionStats] = (),
) -> list[str]:
    by_id = {st.question: st for st in stats}
    parts = [
        "<table id='questions'><tr><th>question</th><th>points</th><th>mean</th><th>median</th>"
        "<th>std</th><th>full marks</th><th>attempted</th><th>most common mistakes</th></tr>"
    ]
    for q in assignment.questions:
        s = per_q.get(q.id, [])
        mean = statistics.mean(s) if s else 0.0
        median = statistics.median(s) if s else 0.0
        std = statistics.pstdev(s) if len(s) > 1 else 0.0
        full = sum(1 for v in s if v >= q.points - 1e-9)
        st = by_id.get(q.id)
        tried = f"{100 * st.share_attempted:.0f}%" if st else "—"
        top = ", ".join(f"<code>{html.escape(m)}</code> ({n})" for m, n in st.top) if st else ""
        parts.append(
            f"<tr><td>{html.escape(titles[q.id])}</td><td class=num>{q.points:g}</td>"
            f"<td class=num>{mean:.2f}</td><td class=num>{median:.2f}</td>"
            f"<td class=num>{std:.2f}</td><td class=num>{full}/{len(s)}</td>"
            f"<td class=num>{tried}</td><td>{top or '—'}</td></tr>"
        )
    parts.append("</table>")
    return parts


def _failures(graded: Graded, titles: Mapping[str, str]) -> list[tuple[str, str]]:
    failures = []
    for sub, data in graded:
        errors = []
        for t in data.get("tests", []):
            extra = t.get("extra_data", {})
            if extra.get("kind") == "error":
                errors.append(t.get("output", ""))
            elif extra.get("error"):
                errors.append(
                    f"{titles.get(extra['question'], extra['question'])}: {extra['error']}"
                )
        if errors:
            more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
            failures.append((_name(sub), errors[0] + more))
    return failures


def _failures_html(failures: Sequence[tuple[str, str]], people: People | None = None) -> list[str]:
    people = people or People()
    if not failures:
        return ["<p>Every submission ran.</p>"]
    rows = "".join(
        f"<tr><td>{people.cell(n)}</td><td>{html.escape(w[:400])}</td></tr>" for n, w in failures
    )
    return [f"<table id='failures'><tr><th>submission</th><th>why</th></tr>{rows}</table>"]


def stats_path(report: Path) -> Path:
    """Where the per-question statistics CSV goes: beside the report."""
    return report.with_name(report.stem + "_questions.csv")


def pages_dir(report: Path) -> Path:
    """Where the students' feedback pages go: a folder beside the report."""
    return report.with_name(report.stem + "_students")


def write_report(path: Path, assignment: Assignment, graded: Graded) -> None:
    """Write the class report for graded (submission, results.json) pairs, the students'
    feedback pages and the per-question statistics beside it."""
    path = Path(path)
    totals = [float(d.get("score", 0.0)) for _, d in graded]
    per_q: dict[str, list[float]] = defaultdict(list)
    for _, data in graded:
        for t in _scored_tests(data):
            per_q[t["extra_data"]["question"]].append(float(t["score"]))
    titles = {q.id: f"{i + 1}. {q.title}" for i, q in enumerate(assignment.questions)}
    links = student_pages.write_pages(pages_dir(path), path.name, assignment.title, graded)
    people = People({_name(s): student_pages.person(s).label for s, _ in graded}, links)
    stats = question_stats.question_stats(assignment, graded)
    question_stats.write_stats_csv(stats_path(path), stats)
    expected = Expected(assignment)
    borrowed = copy_signals.borrowed_answers(assignment, graded, expected)
    try:
        pairs = similarity.similar_pairs(assignment, [s for s, _ in graded])
        no_similarity = []
    except ImportError:  # copydetect is a dependency; a broken install still gets the rest
        pairs, no_similarity = (
            [],
            [
                "<p class=note>Code similarity needs copydetect (<code>pip install copydetect</code>)."
                "</p>"
            ],
        )
    esc = html.escape
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(assignment.id)} class report</title>"
        f"<style>{_CSS}</style><script>{_SORT_JS}</script></head><body>",
        f"<h1>{esc(assignment.title)} — class report</h1>",
        f"<p>{len(graded)} submissions; mean {statistics.mean(totals) if totals else 0:.1f}, "
        f"median {statistics.median(totals) if totals else 0:.1f} of {assignment.total_points:g} points. "
        f"Per-question statistics: <a id='stats-csv' href='{esc(stats_path(path).name, quote=True)}'>"
        f"{esc(stats_path(path).name)}</a>.</p>",
    ]
    if graded:
        parts += _plots_html(assignment, totals, per_q)
    parts += _questions_html(assignment, per_q, titles, stats)
    parts += [
        "<h2>What to reteach: mistakes by the points they cost</h2>",
        *_mistakes_html(rank_mistakes(assignment, graded), titles, people),
    ]
    parts += [
        "<h2>Wrong written answers, by the mistake they show</h2>",
        *_answers_html(group_wrong_answers(assignment, graded, borrowed, expected), titles, people),
    ]
    parts += ["<h2>Signals of copying</h2>", *_copies_html(borrowed, pairs, titles, people)]
    parts += no_similarity
    parts += [
        "<h2>Submissions that failed to run</h2>",
        *_failures_html(_failures(graded, titles), people),
    ]
    parts += _review_html(needs_review(graded), titles, people)
    py_scores = [
        float(d.get("score", 0))
        for _, d in graded
        if not isinstance(d.get("extra_data", {}).get("notebook"), dict)
    ]
    py_mean = sum(py_scores) / len(py_scores) if py_scores else None
    parts += _notebooks_html(notebook_summary(graded), notebook_losses(graded), py_mean, people)
    parts += _everyone_html(graded, people)
    parts.append("</body></html>")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(parts), encoding="utf-8")


def _everyone_html(graded: Graded, people: People) -> list[str]:
    """Every submission with its score and a link to its feedback, by name."""
    rows = sorted(
        ((people.label(_name(s)), _name(s), float(d.get("score", 0))) for s, d in graded),
        key=lambda r: r[0].lower(),
    )
    body = "".join(
        f"<tr><td>{people.cell(n)}</td><td><code>{html.escape(n)}</code></td>"
        f"<td class=num>{score:g}</td></tr>"
        for _, n, score in rows
    )
    return [
        "<h2>Every submission</h2>",
        "<table id='students'><tr><th>student</th><th>submission</th><th>score</th></tr>"
        f"{body}</table>",
    ]


def notebook_summary(graded: Graded) -> tuple[list[str], Counter]:
    """The submissions graded from a notebook, and how many of them each cell number failed in."""
    names, cells = [], Counter()
    for sub, data in graded:
        nb = data.get("extra_data", {}).get("notebook")
        if isinstance(nb, dict):
            names.append(_name(sub))
            cells.update(c for c in nb.get("failed_cells", []) if isinstance(c, int))
    return names, cells


@dataclass(frozen=True)
class NotebookLoss:
    """What one notebook submission lost, and why, as the report tells it."""

    student: str
    score: float
    written_lost: float
    """Points of written questions not earned."""
    answers: str
    """Where its written answers came from ("not found" when nowhere)."""
    cells: tuple[str, ...]
    """ "code cell 4 (`import torch`): stopped (cpu)"."""


def notebook_losses(graded: Graded) -> list[NotebookLoss]:
    """Each notebook submission: its score, its written points lost, where its answers were
    read from and the cells that did not run as written."""
    out = []
    for sub, data in graded:
        nb = data.get("extra_data", {}).get("notebook")
        if not isinstance(nb, dict):
            continue
        written = [t for t in _scored_tests(data) if t["extra_data"].get("kind") == "written"]
        lost = sum(float(t.get("max_score", 0)) - float(t.get("score", 0)) for t in written)
        cells = tuple(
            f"{c.get('label', c.get('cell'))}: {c.get('what', '')}"
            + (f" ({c['detail']})" if c.get("detail") else "")
            for c in nb.get("cells", [])
            if isinstance(c, dict)
        )
        out.append(
            NotebookLoss(
                _name(sub), float(data.get("score", 0)), lost, str(nb.get("answers", "?")), cells
            )
        )
    return out


def _notebooks_html(
    summary: tuple[list[str], Counter],
    losses: Sequence[NotebookLoss] = (),
    py_mean: float | None = None,
    people: People | None = None,
) -> list[str]:
    people = people or People()
    names, cells = summary
    if not names:
        return []
    esc = html.escape
    worst = ", ".join(f"cell {c} ({n})" for c, n in cells.most_common(8)) or "none"
    parts = [
        "<h2>Notebooks</h2>",
        f"<p>{len(names)} submission{'s' if len(names) != 1 else ''} were notebooks "
        f"{_students(names, people)}</p>",
        f"<p>Cells that failed (raised, ran out of time or were not run) most often, with the number of "
        f"notebooks: {esc(worst)}.</p>",
    ]
    if losses:
        mean = sum(n.score for n in losses) / len(losses)
        beside = f"; the .py submissions' mean: {py_mean:.2f}" if py_mean is not None else ""
        missing = [n for n in losses if n.answers == "not found"]
        parts.append(f"<p>Mean score of the notebooks: {mean:.2f}{beside}.")
        if missing:
            parts.append(
                f" {len(missing)} had no answers cell and no answers.toml: every written point "
                "lost for that alone."
            )
        parts.append("</p>")
        rows = "".join(
            f"<tr><td>{people.cell(n.student)}</td><td>{n.score:g}</td><td>{n.written_lost:g}</td>"
            f"<td>{esc(n.answers)}</td><td>{esc('; '.join(n.cells) or '-')}</td></tr>"
            for n in sorted(losses, key=lambda n: n.score)
        )
        parts.append(
            "<table id='notebooks'><tr><th>student</th><th>score</th><th>written points lost</th>"
            f"<th>answers read from</th><th>cells that did not run as written</th></tr>{rows}</table>"
        )
    return parts


def needs_review(graded: Graded) -> list[tuple[str, str, tuple[str, ...]]]:
    """(student, question, what) for code an instructor should look at: library access by a
    computed name, a library loaded around the grader's import hook."""
    out = []
    for sub, data in graded:
        for t in _scored_tests(data):
            what = t.get("extra_data", {}).get("needs_review") or []
            if what:
                out.append((_name(sub), t["extra_data"]["question"], tuple(str(w) for w in what)))
    return out


def _review_html(
    rows: list[tuple[str, str, tuple[str, ...]]],
    titles: Mapping[str, str],
    people: People | None = None,
) -> list[str]:
    people = people or People()
    if not rows:
        return []
    esc = html.escape
    parts = [
        "<h2>Needs review</h2>",
        "<p class=note>Code that reaches a library or the grader's checks by a computed name; the grade "
        "stands as computed, but a person should look.</p>",
        "<table id='needs-review'><tr><th>student</th><th>question</th><th>what</th></tr>",
    ]
    parts += [
        f"<tr><td>{people.cell(who)}</td><td>{esc(titles.get(q, q))}</td><td>{esc('; '.join(what))}</td></tr>"
        for who, q, what in rows
    ]
    parts.append("</table>")
    return parts
