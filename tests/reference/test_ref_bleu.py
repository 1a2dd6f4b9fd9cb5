"""reference.bleu against nltk's corpus_bleu (no smoothing) and Papineni et al.'s examples.

nltk.translate.bleu_score.corpus_bleu matches the handout's definition where every modified precision is
positive: clipped counts summed over the corpus, uniform weights, geometric mean, and the
brevity penalty exp(1 - r/c) for c <= r with r the sum of the closest reference lengths, ties to
the shorter (its closest_ref_length keys on (|r - c|, r)). Where some precision is 0 nltk warns
and returns a tiny positive number (it substitutes sys.float_info.min) instead of 0.0: there we
only check that nltk is negligibly small and that ours is exactly 0.0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import nltk_corpus_bleu

from reference.bleu import (
    brevity_penalty,
    closest_reference_length,
    corpus_bleu,
    geometric_mean,
    modified_precision,
)


def _t(sentence: str) -> list[str]:
    """Whitespace tokens."""
    return sentence.split()


# The nltk documentation's corpus_bleu example (two sentences, three and one references).
HYP1 = _t(
    "It is a guide to action which ensures that the military always obeys the commands of the party"
)
REF1A = _t(
    "It is a guide to action that ensures that the military will forever heed Party commands"
)
REF1B = _t(
    "It is the guiding principle which guarantees the military forces always being under the command of the Party"
)
REF1C = _t("It is the practical guide for the army always to heed the directions of the party")
HYP2 = _t("he read the book because he was interested in world history")
REF2A = _t("he was interested in world history because he read the book")


def test_nltk_documentation_example():
    candidates, references = [HYP1, HYP2], [[REF1A, REF1B, REF1C], [REF2A]]
    ours = corpus_bleu(candidates, references)
    assert ours == pytest.approx(0.5920778868801042, rel=1e-12)  # the value nltk documents
    assert ours == pytest.approx(nltk_corpus_bleu(candidates, references), rel=1e-12)


def test_short_candidate_brevity_penalty_against_nltk():
    cand = [_t("the cat sat on the mat")]
    refs = [[_t("the cat sat on the red mat today")]]
    ours = corpus_bleu(cand, refs)
    assert ours == pytest.approx(nltk_corpus_bleu(cand, refs), rel=1e-12)
    # c = 6, r = 8: BP = exp(1 - 8/6); precisions 6/6, 4/5, 3/4, 2/3 by hand
    # (bigram "the mat", trigram "on the mat", 4-gram "sat on the mat" are missing from the reference).
    want = math.exp(1 - 8 / 6) * (1.0 * 0.8 * 0.75 * (2 / 3)) ** 0.25
    assert ours == pytest.approx(want, rel=1e-12)


def test_closest_reference_ties_to_the_shorter_like_nltk():
    # Sentence 1: c = 5, references of lengths 6 and 4, both at distance 1 -> r = 4 (the shorter).
    # Sentence 2: c = 3, one reference of length 5. Corpus c = 8, r = 9: BP = exp(1 - 9/8) < 1;
    # ties to the longer would give r = 11 instead.
    cand = [_t("a b c d e"), _t("x y z")]
    refs = [[_t("a b c d e f"), _t("a b c d")], [_t("x y z w v")]]
    assert closest_reference_length(5, [6, 4]) == 4
    assert closest_reference_length(5, [4, 6]) == 4
    assert nltk_corpus_bleu(cand, refs, max_n=2) == pytest.approx(
        corpus_bleu(cand, refs, max_n=2), rel=1e-12
    )
    # by hand: unigram 8/8, bigram 6/6 -> BLEU = BP
    assert corpus_bleu(cand, refs, max_n=2) == pytest.approx(math.exp(1 - 9 / 8), rel=1e-12)


def _perturbed_corpus(seed: int):
    rng = np.random.default_rng(seed)
    vocab = [f"w{i}" for i in range(12)]
    candidates, references = [], []
    for _ in range(int(rng.integers(2, 5))):
        ref = [vocab[i] for i in rng.integers(0, len(vocab), size=int(rng.integers(8, 14)))]
        cand = list(ref)
        for _ in range(2):  # a couple of substitutions, and sometimes a deletion
            cand[int(rng.integers(len(cand)))] = vocab[int(rng.integers(len(vocab)))]
        if rng.random() < 0.5:
            del cand[int(rng.integers(len(cand)))]
        others = [
            [vocab[i] for i in rng.integers(0, len(vocab), size=int(rng.integers(6, 16)))]
            for _ in range(int(rng.integers(0, 3)))
        ]
        candidates.append(cand)
        references.append([ref, *others])
    return candidates, references


@pytest.mark.parametrize("seed", range(8))
def test_random_corpora_with_multiple_references_match_nltk(seed):
    candidates, references = _perturbed_corpus(seed)
    ours = corpus_bleu(candidates, references)
    assert 0.0 < ours <= 1.0  # every precision positive here: the region where nltk agrees
    assert ours == pytest.approx(nltk_corpus_bleu(candidates, references), rel=1e-12)


def test_identical_corpus_scores_one():
    cand = [_t("a b c d e"), _t("f g h i")]
    assert corpus_bleu(cand, [[c] for c in cand]) == pytest.approx(1.0, abs=1e-15)


def test_zero_precision_gives_exactly_zero():
    # No 4-gram of the candidate occurs in the reference: p_4 = 0 -> 0.0 (nltk: ~1e-77, a warning).
    cand, refs = [_t("a b c d e")], [[_t("a b c x d e")]]
    assert corpus_bleu(cand, refs) == 0.0
    assert nltk_corpus_bleu(cand, refs) < 1e-50
    # A candidate shorter than n has no n-grams at all: also 0.0 (nltk: ~0 again).
    assert corpus_bleu([["a", "b"]], [[["a", "b"]]]) == 0.0
    assert corpus_bleu([[]], [[["a"]]]) == 0.0


def test_papineni_modified_unigram_precision():
    # Papineni et al. (2002) §2.1: candidate "the the the the the the the" against the references
    # "The cat is on the mat" and "There is a cat on the mat": modified unigram precision 2/7
    # (unclipped it would be 7/7).
    cand = [["the"] * 7]
    refs = [[_t("the cat is on the mat"), _t("there is a cat on the mat")]]
    assert modified_precision(cand, refs, 1) == (2, 7)
    assert modified_precision(cand, refs, 1, clip=False) == (7, 7)


def test_brevity_penalty_and_geometric_mean_by_hand():
    assert brevity_penalty(4, 5) == pytest.approx(math.exp(-0.25), rel=1e-15)
    assert brevity_penalty(5, 5) == 1.0
    assert brevity_penalty(6, 5) == 1.0
    assert brevity_penalty(0, 5) == 0.0
    assert geometric_mean([0.5, 0.125]) == pytest.approx(0.25, rel=1e-15)
    assert geometric_mean([0.5, 0.0]) == 0.0


def test_mismatched_corpus_lengths_are_rejected():
    with pytest.raises(ValueError, match="one reference list per candidate"):
        corpus_bleu([["a"]], [])
