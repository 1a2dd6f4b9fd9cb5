"""The assignments by id, and their hidden suites (grader/suites/<id>.py)."""

from __future__ import annotations

import importlib
import importlib.util
import json
from dataclasses import replace
from pathlib import Path

from grader import catalog
from grader.course import variants
from grader.questions import Assignment, CodeQuestion, WrittenQuestion

ASSIGNMENT_IDS = (
    "a1_word_vectors",
    "a2_rnn_bptt",
    "a3_gated_seq2seq",
    "a4_transformer",
    "a5_shapes_debugging",
    "a6_pretraining_scale",
    "a7_classification_ngrams",
)


class UnknownAssignment(ValueError):
    """An assignment id that is neither a full id nor a short form a1 … a7."""


def resolve_id(name: str) -> str:
    """`a1` or `a1_word_vectors` -> `a1_word_vectors`."""
    key = name.strip().lower()
    for aid in ASSIGNMENT_IDS:
        if key == aid or key == aid.split("_", 1)[0]:
            return aid
    raise UnknownAssignment(
        f"unknown assignment {name!r}; choose one of {', '.join(ASSIGNMENT_IDS)} (or a1 … a7)"
    )


def available() -> list[str]:
    """The assignment ids whose hidden suite is installed."""
    out = []
    for aid in ASSIGNMENT_IDS:
        if importlib.util.find_spec(f"grader.suites.{aid}") is not None:
            out.append(aid)
    return out


def load(name: str) -> Assignment:
    """The assignment's questions, from its hidden suite module's `ASSIGNMENT`."""
    aid = resolve_id(name)
    try:
        module = importlib.import_module(f"grader.suites.{aid}")
    except ModuleNotFoundError as err:
        if err.name == f"grader.suites.{aid}":
            raise UnknownAssignment(
                f"assignment {aid} has no hidden suite in this installation"
            ) from None
        raise
    assignment: Assignment = module.ASSIGNMENT
    _check_ids(assignment)
    return replace(assignment, per_student=_per_student(assignment))


# Which questions depend on the variant key, per assignment, decided once by probing
# (`variants.per_student_questions`, which builds every question's cases for a few keys) and
# shipped as data; tests/test_per_student.py keeps it true, `write_per_student()` renews it.
PER_STUDENT_DATA = Path(__file__).with_name("per_student.json")


def _per_student(assignment: Assignment) -> frozenset[str]:
    shipped: dict[str, list[str]] = json.loads(PER_STUDENT_DATA.read_text())
    if assignment.id in shipped:
        return frozenset(shipped[assignment.id])
    return variants.per_student_questions(assignment)  # a suite the data does not know yet


def write_per_student() -> dict[str, list[str]]:
    """Probe every installed assignment and write the answer to `PER_STUDENT_DATA`."""
    data = {
        aid: sorted(variants.per_student_questions(importlib.import_module(f"grader.suites.{aid}").ASSIGNMENT))
        for aid in available()
    }
    PER_STUDENT_DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data


class AuthoringError(ValueError):
    """An assignment names something that does not exist (a typo in a suite)."""


def _check_ids(assignment: Assignment) -> None:
    """Every misconception id the suite names is in the catalog, caught when it loads (so a typo
    fails `seqgrade list`, not a student's grading)."""
    known = set(catalog.all_ids())
    named: list[tuple[str, str]] = []
    for q in assignment.questions:
        if isinstance(q, CodeQuestion):
            named += [(q.id, m) for m in q.mutants]
        elif isinstance(q, WrittenQuestion) and q.wrong_forms is not None:
            forms = q.wrong_forms(variants.numbers(assignment.id, None))  # the default variant
            named += [(q.id, f.misconception) for f in forms]
    unknown = sorted({f"{qid}: {mid}" for qid, mid in named if mid not in known})
    if unknown:
        raise AuthoringError(
            f"{assignment.id} names misconceptions that are not in the catalog: "
            + ", ".join(unknown)
        )
    _check_dependencies(assignment)


def _check_dependencies(assignment: Assignment) -> None:
    """Follow-through dependencies name earlier code questions of the same assignment."""
    seen: set[str] = set()
    for q in assignment.questions:
        for dep in getattr(q, "depends_on", ()):
            if dep not in seen:
                raise AuthoringError(
                    f"{assignment.id}: {q.id} depends on {dep!r}, which is not an "
                    "earlier code question of the assignment"
                )
        if isinstance(q, CodeQuestion):
            seen.add(q.id)
