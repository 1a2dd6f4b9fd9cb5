"""The Gradescope container's entry point: `run_autograder` runs `python3 -m grader.app.gradescope`.

It grades /autograder/submission with the sandbox, takes the student's id from
/autograder/submission_metadata.json (the variant seed), and always writes a valid
/autograder/results/results.json, even when the grader itself fails.
The container root can be moved with SEQGRADE_GRADESCOPE_ROOT (the tests do).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

ROOT_ENV = "SEQGRADE_GRADESCOPE_ROOT"
ASSIGNMENT_FILE = "seqgrade_assignment.txt"  # written into the bundle by `seqgrade autograder`


def container_root() -> Path:
    return Path(os.environ.get(ROOT_ENV, "/autograder"))


def student_id(metadata: dict[str, Any]) -> str | None:
    """The first submitter's id (or email): the seed of their variant."""
    users = metadata.get("users") or []
    if users and isinstance(users[0], dict):
        for key in ("id", "email", "sid"):
            value = users[0].get(key)
            if value not in (None, ""):
                return str(value)
    return None


def _read_metadata(root: Path) -> dict[str, Any]:
    path = root / "submission_metadata.json"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def main() -> int:
    root = container_root()
    results_path = root / "results" / "results.json"
    assignment_id = None
    try:
        from grader.course import registry
        from grader.engine.grade import grade_submission
        from grader.reports.results_json import to_gradescope, write_results

        source = Path(__file__).resolve().parents[2]
        assignment_id = registry.resolve_id((source / ASSIGNMENT_FILE).read_text().strip())
        metadata = _read_metadata(root)
        report = grade_submission(root / "submission", registry.load(assignment_id), student=student_id(metadata),
                                  hide=(results_path.parent, root / "source"))
        write_results(results_path, to_gradescope(report))
        print(f"graded {assignment_id}: {report.score:g}/{report.max_score:g}")
        return 0
    except Exception as exc:  # noqa: BLE001 - never leave Gradescope without a results file
        traceback.print_exc()
        from grader.reports.results_json import error_results, write_results

        write_results(results_path, error_results(assignment_id, f"{type(exc).__name__}: {exc}"))
        return 0


if __name__ == "__main__":
    sys.exit(main())
