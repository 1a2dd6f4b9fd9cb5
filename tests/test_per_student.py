"""The facts the registry ships about each suite (which questions depend on the variant key,
whether its worker preloads torch) are what probing the suite finds, and a loaded assignment
carries them."""

from __future__ import annotations

import json

import pytest

from grader.course import registry, variants
from grader.questions import Assignment

SHIPPED = json.loads(registry.FACTS_DATA.read_text())


def test_every_installed_suite_has_shipped_facts() -> None:
    assert sorted(SHIPPED) == registry.available()


@pytest.mark.parametrize("aid", registry.available())
def test_the_shipped_facts_are_what_probing_finds(aid: str) -> None:
    import importlib

    suite: Assignment = importlib.import_module(f"grader.suites.{aid}").ASSIGNMENT
    assert SHIPPED[aid] == registry.probed_facts(suite), (
        "renew grader/course/suite_facts.json: "
        "python -c 'from grader.course import registry; registry.write_facts()'"
    )


@pytest.mark.parametrize("aid", registry.available())
def test_a_loaded_assignment_carries_its_per_student_questions(aid: str) -> None:
    assignment = registry.load(aid)
    assert assignment.per_student == frozenset(SHIPPED[aid]["per_student"])
    assert registry.preloads_torch(aid) == assignment.preload_torch


def test_an_assignment_built_by_hand_is_probed() -> None:
    from dataclasses import replace

    loaded = registry.load("a1")
    by_hand = replace(loaded, per_student=None)
    assert variants.per_student_questions(by_hand) == loaded.per_student


def test_a_question_that_cannot_be_probed_is_an_error() -> None:
    def broken(key: str | None) -> object:
        raise KeyError("w_missing")

    with pytest.raises(KeyError):
        variants.depends_on_key(broken)
