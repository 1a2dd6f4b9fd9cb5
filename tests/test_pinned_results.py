"""The whole results.json of each bundled buggy sample, pinned: one look shows what a student
and an instructor get, and any change to it shows in a diff.

The pinned files are tests/pinned/<assignment>__buggy.json. After a deliberate change of wording,
write them anew with `python tests/test_pinned_results.py` and read the diff before committing.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from grader.course import registry
from grader.course.content import samples_dir
from grader.engine.grade import grade_submission
from grader.reports.results_json import SCHEMA, to_gradescope

PINNED = Path(__file__).resolve().parent / "pinned"
KEY = "alice@uni.edu"
# Every assignment that bundles a buggy sample (today a1 and a4: the others have none).
SAMPLES = sorted(aid for aid in registry.available() if (samples_dir() / aid / "buggy").is_dir())
# What depends on the machine or the moment, not on the submission.
MACHINE_FIELDS = ("isolated", "isolation", "warnings", "events", "student_output")


def results(aid: str) -> dict[str, Any]:
    assignment = registry.load(aid)
    report = grade_submission(samples_dir() / aid / "buggy", assignment, student=KEY)
    data = to_gradescope(report, assignment=assignment)
    data["execution_time"] = 0.0
    for name in MACHINE_FIELDS:
        data["extra_data"].pop(name, None)
    return json.loads(json.dumps(data))


def test_every_buggy_sample_has_its_pinned_results_and_every_pin_its_sample():
    assert SAMPLES, "no buggy sample found"
    pinned = sorted(p.name.removesuffix("__buggy.json") for p in PINNED.glob("*__buggy.json"))
    assert pinned == SAMPLES


@pytest.mark.slow
@pytest.mark.parametrize("aid", SAMPLES)
def test_the_buggy_sample_gets_exactly_the_pinned_results(aid: str) -> None:
    import jsonschema

    got = results(aid)
    jsonschema.validate(got, SCHEMA)
    want = json.loads((PINNED / f"{aid}__buggy.json").read_text())
    assert got["score"] == want["score"]
    for g, w in zip(got["tests"], want["tests"], strict=True):
        assert g == w, g["name"]
    assert got == want


if __name__ == "__main__":
    for aid in sys.argv[1:] or SAMPLES:
        (PINNED / f"{aid}__buggy.json").write_text(
            json.dumps(results(aid), indent=1, ensure_ascii=False) + "\n"
        )
