"""a7's hidden cases at the edges of its arguments' domains (issue 33, item 4; the suite's
DOMAINS says them): one row against several, a batch of one, a sentence with a single real
token, one-word and empty sentences, a context never seen, a word the counts never saw and test
sentences of very different lengths. Each edge kills a slip that passed every other case (a
squeeze to 1-D, a length-1 shortcut, a zero-count guard); the control without the edge cases
shows the edge is what kills it, and the solution passes every edge. The edge cases come after
every existing case, from a stream of their own: the earlier cases are pinned here by digest.
"""

from __future__ import annotations

import dataclasses
import hashlib
import pickle

import numpy as np
import pytest
from conftest import ROOT, slipped
from test_case_stability import KEYS, _plain
from test_validity_a1a3a6 import judge

import grader.suites.a7_classification_ngrams as suite
from grader.course import variants
from grader.engine.trusted import run_trusted

SOLUTION = (ROOT / "solutions" / "a7_classification_ngrams" / "classify.py").read_text()
A7 = suite.ASSIGNMENT
SEEDS = range(6)
EDGE = "domain edge"

# sha256 over KEYS of each question's cases BEFORE the domain edges were appended (main at
# 25bad84), with the number of those cases: appending must leave every one of them as it was.
EARLIER = {
    "a7.cosine_similarity": (6, "c88b2d9d76b57301594f07a889fc76c3303295c683a7a70a171dde2fb97cc55f"),
    "a7.softmax_cross_entropy": (
        9,
        "6a396c6e009aaced386f1ff69aad7f6fc9e0d41666ab053d92a6c043a9b63cde",
    ),
    "a7.dan_forward": (5, "cf457ee87e1b74ffeaa8aeaca569749e0ca1e62ee471c238baadec8e7a63e9f5"),
    "a7.dan_backward": (4, "18e01f1ee65d4e4550962f03a2be723f2d4a3599764a0916adf33923e37f234d"),
    "a7.ngram_counts": (6, "095e6e06b68993c21bd3305a025fc284a74c8f57cdf5dbea5c1edeeea6a27e70"),
    "a7.ngram_prob": (6, "4a1d81de3128025dc73eb298714185c5596385b5b9ed375de9e9bd4ce4d2c2da"),
    "a7.ngram_perplexity": (5, "d5f9246f01798a17ac3b6c4e9e6827a8a58bf1788658d65d77ec59beccfa40a2"),
}


@pytest.mark.parametrize("qid", sorted(EARLIER))
def test_the_earlier_cases_are_unchanged_and_the_edges_come_after(qid):
    n, pinned = EARLIER[qid]
    q = A7.question(qid)
    h = hashlib.sha256()
    for key in KEYS:
        cases = list(q.cases(variants.seed_for(A7.id, key)))
        assert len(cases) > n and all(EDGE in c.name for c in cases[n:])
        assert not any(EDGE in c.name or c.visible for c in cases[n:] if EDGE not in c.name)
        h.update(pickle.dumps(_plain(cases[:n]), protocol=4))
    assert h.hexdigest() == pinned


def test_every_graded_function_declares_its_domain():
    code = {q.function for q in A7.questions if hasattr(q, "cases")}
    assert code == set(suite.DOMAINS)


def _student(old: str, new: str, function: str):
    """The instructor's solution with one slip, as a student would write it."""
    return slipped("a7_classification_ngrams", function, new, old)


def _raising_as_failed(fn):
    """judge counts ArithmeticError and ValueError as a failed case; an IndexError is one too."""

    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except IndexError as e:
            raise ValueError(str(e)) from e

    return call


def _without_edges(q):
    return dataclasses.replace(
        q, cases=lambda seed: [c for c in q.cases(seed) if EDGE not in c.name]
    )


SLIPS = {
    # np.squeeze "to drop the (n, 1) shapes": a (1, m) result becomes (m,)
    "cosine squeezed": (
        "a7.cosine_similarity",
        "return (A @ B.T) / (norm_A * norm_B.T)  # (n, m)",
        "return np.squeeze((A @ B.T) / (norm_A * norm_B.T))",
        "cosine_similarity",
    ),
    # "one example" read off the batch size: a (1, C) batch gets a (C,) gradient
    "cross-entropy B == 1 as one example": (
        "a7.softmax_cross_entropy",
        "return loss, (grad[0] if single else grad)",
        "return loss, (grad[0] if B == 1 else grad)",
        "softmax_cross_entropy",
    ),
    "DAN probabilities squeezed": (
        "a7.dan_forward",
        "return e / e.sum(axis=1, keepdims=True)  # (B, C)",
        "return np.squeeze(e / e.sum(axis=1, keepdims=True))",
        "dan_forward",
    ),
    # the real lengths squeezed: a batch of one makes them a 0-d array, and indexing fails
    "DAN lengths squeezed": (
        "a7.dan_backward",
        "n_real = m.sum(axis=1)  # (B,)",
        "n_real = np.squeeze(m.sum(axis=1))",
        "dan_backward",
    ),
    # a zero-count guard: an unseen context "has no probability"
    "prob 0 for an unseen context": (
        "a7.ngram_prob",
        "    return (counts.get(context + (word,), 0) + k) / (c_context + k * vocab_size)",
        "    if c_context == 0:\n        return 0.0\n"
        "    return (counts.get(context + (word,), 0) + k) / (c_context + k * vocab_size)",
        "ngram_prob",
    ),
    # an out-of-vocabulary word "cannot be predicted"
    "prob 0 for a word never counted": (
        "a7.ngram_prob",
        "    return (counts.get(context + (word,), 0) + k) / (c_context + k * vocab_size)",
        "    if not any(word in gram for gram in counts):\n        return 0.0\n"
        "    return (counts.get(context + (word,), 0) + k) / (c_context + k * vocab_size)",
        "ngram_prob",
    ),
    # "a one-word sentence has no bigram to score"
    "perplexity skips one-word sentences": (
        "a7.ngram_perplexity",
        "        tokens = _padded(sentence, n)\n        for i in range(n - 1, len(tokens)):\n"
        "            p = ngram_prob(",
        "        if len(sentence) < 2:\n            continue\n"
        "        tokens = _padded(sentence, n)\n        for i in range(n - 1, len(tokens)):\n"
        "            p = ngram_prob(",
        "ngram_perplexity",
    ),
}


@pytest.mark.parametrize("label", sorted(SLIPS))
def test_a_slip_only_the_edge_catches_is_docked_and_named_nothing(label):
    qid, old, new, function = SLIPS[label]
    q = A7.question(qid)
    slip = _raising_as_failed(_student(old, new, function))
    correct = _student(old, old, function)
    for seed in SEEDS:
        failed, named = judge(q, slip, seed)
        assert failed >= 1 and named == [], (seed, failed, named)
        assert judge(_without_edges(q), slip, seed) == (0, [])  # the control: no edge, no loss
        assert judge(q, correct, seed) == (0, [])


COUNT_SLIPS = {
    "empty sentences skipped": "    for sentence in corpus:\n        if not sentence:\n            continue\n",
    "sentences shorter than n - 1 skipped": (
        "    for sentence in corpus:\n        if len(sentence) < n - 1 or not sentence:\n"
        "            continue\n"
    ),
}


@pytest.mark.parametrize("label", sorted(COUNT_SLIPS))
def test_a_counts_slip_only_the_edge_catches_is_docked(label):
    q = A7.question("a7.ngram_counts")
    slip = _student("    for sentence in corpus:\n", COUNT_SLIPS[label], "ngram_counts")
    for seed in SEEDS:
        cases = q.cases(seed)
        j = suite.judge_ngram_counts(cases, [slip(*c.args) for c in cases])
        assert j.fraction < 1.0 and j.misconceptions == [], seed
        plain = [c for c in cases if EDGE not in c.name]
        assert suite.judge_ngram_counts(plain, [slip(*c.args) for c in plain]).fraction == 1.0
        right = [run_trusted(q.reference, c) for c in cases]
        assert suite.judge_ngram_counts(cases, right).fraction == 1.0


@pytest.mark.parametrize("seed", SEEDS)
def test_the_edges_are_what_they_say(seed):
    """Each edge case holds the edge its name promises, for every student."""

    def edges(qid):
        return [c for c in A7.question(qid).cases(seed) if EDGE in c.name]

    shapes = [(np.shape(c.args[0]), np.shape(c.args[1])) for c in edges("a7.cosine_similarity")]
    assert {a[0] for a, _ in shapes} >= {1} and {b[0] for _, b in shapes} >= {1}
    (ce,) = edges("a7.softmax_cross_entropy")
    assert np.shape(ce.args[0])[0] == 1 and np.shape(ce.args[1]) == (1,)
    for qid in ("a7.dan_forward", "a7.dan_backward"):
        (dan,) = edges(qid)
        assert np.shape(dan.args[0])[0] == 1 and int(np.sum(dan.args[1])) == 1
    for c in edges("a7.ngram_counts"):
        assert [] in c.args[0] and any(len(s) == 1 for s in c.args[0])
    prob = edges("a7.ngram_prob")
    from reference import classify as cl

    assert sum(cl.context_count(c.args[0], c.args[2]) == 0 for c in prob) == 2
    assert (
        suite.UNKNOWN not in cl.known_words(prob[-1].args[0]) and prob[-1].args[3] == suite.UNKNOWN
    )
    ppl = edges("a7.ngram_perplexity")
    lengths = [sorted(len(s) for s in c.args[2]) for c in ppl if len(c.args[2]) == 2]
    assert lengths and all(a == 1 and b >= 5 for a, b in lengths)
    assert sum(any(suite.UNKNOWN in s for s in c.args[2]) for c in ppl) == 2
