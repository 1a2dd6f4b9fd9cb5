"""The Gradescope container's entry point: `run_autograder` runs `python -m grader.app.gradescope`.

It grades /autograder/submission with the sandbox (within the bundled term's `[limits]`, if it
sets any), takes the student's variant key from
/autograder/submission_metadata.json (`users[0]`'s email, or sid when the assignment
chooses it; never Gradescope's internal id), and always writes a valid
/autograder/results/results.json, even when the grader itself fails. What only the
instructor should read (how the sandbox ran, what the student's code printed) goes to
this process's stdout, which Gradescope shows to instructors only.
The container root can be moved with SEQGRADE_GRADESCOPE_ROOT (the tests do).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from grader.course.term import Term

ROOT_ENV = "SEQGRADE_GRADESCOPE_ROOT"
ASSIGNMENT_FILE = "seqgrade_assignment.txt"  # written into the bundle by `seqgrade autograder`


def container_root() -> Path:
    return Path(os.environ.get(ROOT_ENV, "/autograder"))


def read_metadata(root: Path) -> dict[str, Any]:
    """Gradescope's submission_metadata.json, or {} when it is absent or unreadable."""
    try:
        data = json.loads((root / "submission_metadata.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _users(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    users = metadata.get("users")
    return [u for u in users if isinstance(u, dict)] if isinstance(users, list) else []


def _instructor_notes(report: Any, data: dict[str, Any]) -> None:
    """The autograder's stdout: hidden from students (stdout_visibility), read by instructors."""
    extra = data["extra_data"]
    print(
        f"graded {report.assignment_id}: {report.score:g}/{report.max_score:g} "
        f"for variant key {extra.get('student')!r} ({extra.get('variant_key_source')})"
    )
    print(
        "sandbox: "
        + (extra.get("isolation") or "isolated (namespaces mode: an unprivileged uid, no network)")
    )
    if report.student_output.strip():
        print("--- what the submission printed (not shown to the student) ---")
        print(report.student_output)


def bundled_term(source: Path) -> Term | None:
    """The term file `seqgrade autograder --term` put in the bundle (docs/term.md), read once for
    the grading's limits and the adjustments after it; None without one, or when it cannot be
    used (the raw grade under the default limits, and why in the instructors' output)."""
    from grader.course import term

    path = source / term.BUNDLE_DIR / term.TERM_FILE
    if not path.is_file():
        return None
    try:
        return term.load(path)
    except term.TermError as err:
        print(
            "seqgrade: the bundled term cannot be used (graded with the default limits, "
            f"no adjustments applied): {err}"
        )
        return None


def staff_adjusted(
    data: dict[str, Any],
    assignment: Any,
    metadata: dict[str, Any],
    known: Term | None,
    key: str | None,
) -> dict[str, Any]:
    """The result with the bundled term's overrides and late policy applied (docs/term.md): the
    due dates and the submission time from submission_metadata.json, the extension and late
    days from the bundled roster and ledger. Without a term (`bundled_term`), `data` unchanged;
    an overrides file or a date that cannot be used leaves the raw grade and says why in the
    instructors' output."""
    from grader.course import adjust, late, overrides

    if known is None:
        return data
    try:
        path = known.overrides_file(assignment.id)
        found = overrides.load(path, assignment) if path else ()
        info = metadata.get("assignment") if isinstance(metadata.get("assignment"), dict) else {}
        dates = late.Dates(
            late.parse_date(info.get("due_date"), "submission_metadata.json assignment.due_date"),
            late.parse_date(
                info.get("late_due_date"), "submission_metadata.json assignment.late_due_date"
            ),
        )
        submitted = late.parse_date(
            metadata.get("created_at"), "submission_metadata.json created_at"
        )
        ledger = late.read_ledger(known.ledger_path) if known.ledger_path else None
    except (overrides.OverrideError, late.LateError) as err:
        print(f"seqgrade: the term's adjustments were not applied: {err}")
        return data
    keys = {str(u.get(k) or "").strip().lower() for u in _users(metadata) for k in ("email", "sid")}
    keys = {k for k in keys | {(key or "").lower()} if k}
    decision = adjust.decide(
        known, found, assignment.id, keys, submitted, dates=dates, ledger=ledger
    )
    return adjust.apply(data, decision)


def main() -> int:
    root = container_root()
    results_path = root / "results" / "results.json"
    assignment_id = None
    try:
        from grader import sandbox
        from grader.course import registry, variants
        from grader.engine.grade import grade_submission
        from grader.reports.results_json import to_gradescope, write_results

        source = Path(__file__).resolve().parents[2]
        assignment_id = registry.resolve_id((source / ASSIGNMENT_FILE).read_text().strip())
        assignment = registry.load(assignment_id)
        key = variants.variant_key(assignment.variant_key, users=_users(read_metadata(root)))
        known = bundled_term(source)
        report = grade_submission(
            root / "submission",
            assignment,
            student=key.value,
            hide=(results_path.parent, root / "source", root / "submission_metadata.json"),
            limits=sandbox.Limits(**known.limits) if known else None,  # the term's [limits]
        )
        data = to_gradescope(report, key, assignment)
        data = staff_adjusted(data, assignment, read_metadata(root), known, key.value)
        write_results(results_path, data)
        _instructor_notes(report, data)
        return 0
    except Exception as exc:  # noqa: BLE001 - never leave Gradescope without a results file
        traceback.print_exc()
        from grader.reports.results_json import error_results, write_results

        write_results(results_path, error_results(assignment_id, f"{type(exc).__name__}: {exc}"))
        return 0


def run() -> int:
    """The process (`python -m grader.app.gradescope`): BLAS on one thread, as `seqgrade` runs
    (runtime.ONE_THREAD), then `main`."""
    from grader.sandbox.runtime import one_thread

    one_thread()
    return main()


if __name__ == "__main__":
    sys.exit(run())
