"""Every graded function of a suite keyed by question id declares the domain of each of its
arguments in the suite's `DOMAINS` (the edges of those domains are drawn as hidden cases).
The suites keyed by function name (a5, a6, a7) are checked beside their own edge tests."""

from __future__ import annotations

import inspect

import pytest

from grader.suites import a1_word_vectors, a2_rnn_bptt


@pytest.mark.parametrize("suite", [a1_word_vectors, a2_rnn_bptt], ids=lambda s: s.__name__)
def test_every_graded_function_declares_the_domain_of_each_argument(suite):
    code = [q for q in suite.ASSIGNMENT.questions if hasattr(q, "mutants")]
    assert set(suite.DOMAINS) == {q.id for q in code}
    for q in code:
        params = [
            p
            for p in inspect.signature(q.reference).parameters.values()
            if p.kind is p.POSITIONAL_OR_KEYWORD
        ]
        declared = {name.strip() for key in suite.DOMAINS[q.id] for name in key.split(",")}
        assert {p.name for p in params} <= declared, (q.id, declared)
