"""`seqgrade demo`: grade the bundled samples — a solution, a buggy and a hostile submission."""

from __future__ import annotations

import sys
from pathlib import Path

from grader import sandbox
from grader.course import registry
from grader.course.content import samples_dir, solution_dir
from grader.engine.grade import grade_submission
from grader.records import GradeReport
from grader.reports import render

DEMO_LIMITS = sandbox.Limits(
    call_seconds=3.0
)  # the hostile samples loop: stop them sooner than a real run


def demo_assignments() -> list[str]:
    """Assignments that have bundled samples and a solution."""
    out = []
    for aid in registry.available():
        if (samples_dir() / aid / "buggy").is_dir() and solution_dir(aid).is_dir():
            out.append(aid)
    return out


def _submissions(aid: str) -> dict[str, Path]:
    return {
        "solution": solution_dir(aid),
        "buggy": samples_dir() / aid / "buggy",
        "hostile": samples_dir() / aid / "hostile",
    }


def side_by_side(reports: dict[str, GradeReport], colour: bool = False) -> str:
    """One row per question, one column per sample: score and the misconceptions named."""
    first = next(iter(reports.values()))
    header = ["#", "question", *reports]
    rows = [header]
    for i, q in enumerate(first.questions):
        row = [q.number, q.title[:40]]
        for rep in reports.values():
            r = rep.questions[i]
            cell = f"{render.points(r.score)}/{render.points(r.max_score)}"
            if r.misconceptions:
                cell += " " + ",".join(r.misconceptions)
            elif r.not_attempted:
                cell += " not attempted"
            row.append(cell)
        rows.append(row)
    rows.append(
        [
            "",
            "total",
            *(
                f"{render.points(rep.score)}/{render.points(rep.max_score)}"
                for rep in reports.values()
            ),
        ]
    )
    widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    if colour:
        lines[0] = f"\033[1m{lines[0]}\033[0m"
        lines[-1] = f"\033[1m{lines[-1]}\033[0m"
    return "\n".join(lines)


def run(assignment_id: str | None = None) -> int:
    ids = [assignment_id] if assignment_id else demo_assignments()
    if not ids:
        print("seqgrade demo: no bundled samples are installed", file=sys.stderr)
        return 1
    colour = render.use_colour()
    for aid in ids:
        assignment = registry.load(aid)
        paths = _submissions(aid)
        missing = [k for k, p in paths.items() if not p.is_dir()]
        if missing:
            print(
                f"seqgrade demo: {aid} has no bundled {', '.join(missing)} sample", file=sys.stderr
            )
            return 1
        print(f"== {aid}: {assignment.title} ==")
        reports = {}
        for kind, path in paths.items():
            print(f"grading the {kind} submission …", flush=True)
            reports[kind] = grade_submission(path, assignment, limits=DEMO_LIMITS)
        print()
        print(side_by_side(reports, colour))
        print()
        for kind, rep in reports.items():
            named = sorted({m for q in rep.questions for m in q.misconceptions})
            line = f"{kind}: {render.points(rep.score)}/{render.points(rep.max_score)} in {rep.execution_time:.1f} s"
            if named:
                line += f"; mistakes named: {', '.join(named)}"
            if rep.event_details:
                line += f"; the sandbox stopped: {'; '.join(dict.fromkeys(rep.event_details))}"
            if not rep.isolated:
                line += " (" + ("; ".join(rep.warnings) or "this run was not isolated") + ")"
            print(line)
        print()
    print("Full feedback for any submission: seqgrade grade FOLDER -a ID --format md")
    return 0
