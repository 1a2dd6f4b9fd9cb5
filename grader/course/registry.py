"""The assignments by id, and their hidden suites (grader/suites/<id>.py)."""

from __future__ import annotations

import importlib
import importlib.util
import json
from dataclasses import dataclass, replace
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


class AuthoringError(ValueError):
    """An assignment names something that does not exist (a typo in a suite)."""


def _check_ids(assignment: Assignment) -> None:
    """Every misconception id the suite names is in the catalog, caught when it loads (so a typo
    fails `seqgrade list`, not a student's grading)."""
    known = set(catalog.all_ids())
    named: list[tuple[str, str]] = []
    default: dict | None = None  # the default variant's numbers, computed once for all questions
    for q in assignment.questions:
        if isinstance(q, CodeQuestion):
            named += [(q.id, m) for m in q.mutants]
        elif isinstance(q, WrittenQuestion) and q.wrong_forms is not None:
            if default is None:
                default = variants.numbers(assignment.id, None)
            forms = q.wrong_forms(dict(default))
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


# What is known of each suite without importing it, decided once by probing and shipped as
# data: which questions depend on the variant key (`variants.per_student_questions` builds every
# question's cases for a few keys) and whether its worker preloads torch (the CLI starts the
# right warm template before the suite is imported). tests/test_per_student.py keeps it true;
# `write_facts()` renews it.
FACTS_DATA = Path(__file__).with_name("suite_facts.json")


@dataclass(frozen=True)
class SuiteFacts:
    """One assignment's shipped facts."""

    per_student: frozenset[str]
    """The ids of the questions whose material depends on the key."""
    preload_torch: bool
    """The assignment's worker preloads torch."""


def facts(aid: str) -> SuiteFacts | None:
    """The shipped facts of `aid` (a full id), or None for a suite the data does not know yet."""
    entry = json.loads(FACTS_DATA.read_text()).get(aid)
    if entry is None:
        return None
    return SuiteFacts(frozenset(entry["per_student"]), bool(entry["preload_torch"]))


def preloads_torch(name: str) -> bool:
    """Whether a grade's worker preloads torch (its warm template too), decided before the suite
    loads when the shipped facts know it."""
    known = facts(resolve_id(name))
    return known.preload_torch if known is not None else load(name).preload_torch


def _per_student(assignment: Assignment) -> frozenset[str]:
    known = facts(assignment.id)
    if known is not None:
        return known.per_student
    return variants.per_student_questions(assignment)  # a suite the data does not know yet


def probed_facts(assignment: Assignment) -> dict[str, object]:
    """The facts of a suite's `ASSIGNMENT`, found the slow way (as `FACTS_DATA` holds them)."""
    return {
        "per_student": sorted(variants.per_student_questions(assignment)),
        "preload_torch": assignment.preload_torch,
    }


def write_facts() -> dict[str, dict[str, object]]:
    """Probe every installed assignment and write the answers to `FACTS_DATA`."""
    data = {
        aid: probed_facts(importlib.import_module(f"grader.suites.{aid}").ASSIGNMENT)
        for aid in available()
    }
    FACTS_DATA.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    return data
