"""a3's hidden cases at the edges of the input domain (issue 33, item 4), each killing a slip that
passed every other case: an n-gram loop started at n = 0 (differs only where a candidate is longer
than every reference), an order with no candidate n-gram skipped instead of counted as a zero
precision (one-word candidates), and a top-k that cannot take more than the candidates there are
(a beam wider than the vocabulary). Each slip is docked, nothing is named for it (no catalogued
mistake reproduces it), and the control without the edge case shows the case is what kills it.
The expected BLEU values are nltk's.
"""

from __future__ import annotations

import dataclasses

import pytest
from conftest import ROOT, nltk_bleu, nltk_corpus_bleu, slipped
from test_validity_a1a3a6 import judge

from grader.engine.trusted import run_trusted
from grader.suites import a3_gated_seq2seq as a3

SOLUTION = (ROOT / "solutions" / "a3_gated_seq2seq" / "gated_seq2seq.py").read_text()
SEEDS = range(6)


BLEU = a3.ASSIGNMENT.question("a3.corpus_bleu")
BEAM = a3.ASSIGNMENT.question("a3.beam_search")


def _student(old: str, new: str, function: str):
    """The instructor's solution with one slip, as a student would write it."""
    return slipped("a3_gated_seq2seq", function, new, old)


FROM_ZERO = _student(
    "for n in range(1, max_n + 1):", "for n in range(0, max_n + 1):", "corpus_bleu"
)
SKIPS_EMPTY_ORDER = _student(
    "        if matched == 0 or total == 0:\n            return 0.0\n",
    "        if total == 0:\n            continue\n        if matched == 0:\n            return 0.0\n",
    "corpus_bleu",
)
TOPK_OF_BEAM_SIZE = _student(  # torch.topk(scores, beam_size) raises when beam_size > len(scores)
    "        candidates.sort(key=lambda cand: -cand[1])\n",
    "        if len(candidates) < beam_size:\n"
    '            raise ValueError("selected index k out of range")\n'
    "        candidates.sort(key=lambda cand: -cand[1])\n",
    "beam_search",
)
CORRECT_BLEU = _student("return bp * math.exp", "return bp * math.exp", "corpus_bleu")
CORRECT_BEAM = _student("best = max(pool, key=key)", "best = max(pool, key=key)", "beam_search")


def _without(q, marker: str):
    """The question with the cases whose name holds `marker` left out (the control)."""
    return dataclasses.replace(
        q, cases=lambda seed: [c for c in q.cases(seed) if marker not in c.name]
    )


def _nltk(case) -> float:
    candidates, references = case.args
    return nltk_corpus_bleu(candidates, references, case.kwargs.get("max_n", 4))


def _edge(q, marker: str, seed: int):
    (case,) = [c for c in q.cases(seed) if marker in c.name]
    assert not case.visible
    return case


@pytest.mark.parametrize("seed", SEEDS)
def test_every_student_gets_a_corpus_longer_than_every_reference(seed):
    case = _edge(BLEU, "longer than all its references", seed)
    candidates, references = case.args
    assert all(len(c) > max(map(len, rs)) for c, rs in zip(candidates, references))
    want = run_trusted(BLEU.reference, case)
    assert want > 0.05 and want == pytest.approx(_nltk(case), rel=1e-12)


@pytest.mark.parametrize("seed", SEEDS)
def test_every_student_gets_one_word_candidates_that_nltk_scores_zero(seed):
    case = _edge(BLEU, "one-word candidates", seed)
    candidates, references = case.args
    assert (
        all(len(c) == 1 for c in candidates) and len(candidates) == 3 and case.kwargs["max_n"] == 2
    )
    assert run_trusted(BLEU.reference, case) == 0.0
    # nltk (no smoothing) puts the smallest float in for the zero p_2 and warns: 0 to 1e-100
    assert 0.0 <= _nltk(case) < 1e-100
    # p_1 is not 0: the zero comes from the order with nothing to count
    assert nltk_bleu().corpus_bleu(references, candidates, weights=(1.0,)) > 0


@pytest.mark.parametrize("seed", SEEDS)
def test_the_solution_keeps_full_marks_on_the_edges(seed):
    assert judge(BLEU, CORRECT_BLEU, seed) == (0, [])
    assert judge(BEAM, CORRECT_BEAM, seed) == (0, [])


@pytest.mark.parametrize(
    "student, q, marker",
    [
        (FROM_ZERO, BLEU, "longer than all its references"),
        (SKIPS_EMPTY_ORDER, BLEU, "one-word candidates"),
        (TOPK_OF_BEAM_SIZE, BEAM, "wider than the"),
    ],
    ids=["bleu-ngrams-from-0", "bleu-skips-an-empty-order", "beam-topk-of-beam-size"],
)
def test_each_edge_docks_its_slip_and_names_nothing(student, q, marker):
    for seed in SEEDS:
        assert judge(q, student, seed) == (1, []), seed
        # the control: without its edge case the slip passes every case
        assert judge(_without(q, marker), student, seed) == (0, []), seed


def test_the_beam_edges_max_len_one_and_a_beam_wider_than_the_vocabulary():
    for seed in SEEDS:
        one = _edge(BEAM, "max_len=1", seed)
        lm, bos, eos, beam_size, max_len = one.args
        assert max_len == 1
        # one step keeps [a] (.70), [eos] (.30), [b]: the finished [eos] is chosen, as any
        # finished hypothesis is over the live ones
        assert beam_size == 3 and run_trusted(BEAM.reference, one) == [eos]
        wide = _edge(BEAM, "wider than the", seed)
        lm, bos, eos, beam_size, max_len = wide.args
        assert beam_size > len(lm([bos])) and max_len == 4
        # By hand (the early-stopping tree: eos .45, a .5, b .05 at the root): step 1 keeps all
        # four tokens; step 2 finishes [a eos] (.15) and [b eos] (.02) beside [eos]; step 3 adds
        # [a a eos] (.297) and three more, seven finished >= 6: stop. Per token, [a a eos]
        # (log .297 / 3 = -0.40) beats [eos] (-0.80) and [a eos] (-0.95).
        assert run_trusted(BEAM.reference, wide) == [2, 2, 1]
