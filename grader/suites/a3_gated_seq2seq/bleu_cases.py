"""a3's corpus BLEU: generated corpora (repeated words, short and long candidates, tied
reference lengths, zero precisions) and the mutants and slips each must separate."""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from grader.mutants import AnyOf
from grader.questions import Case
from reference import bleu

# ---------------------------------------------------------------- BLEU

_WORDS = ("the", "cat", "sat", "on", "mat", "a", "dog", "ran", "to", "red", "big", "and")


def _bleu_no_bp(candidates, references, max_n=4):
    return bleu.corpus_bleu(candidates, references, max_n, brevity=lambda c, r: 1.0)


def _bleu_shortest(candidates, references, max_n=4):
    return bleu.corpus_bleu(candidates, references, max_n, ref_length=lambda c, lens: min(lens))


def _bleu_unclipped(candidates, references, max_n=4):
    return bleu.corpus_bleu(candidates, references, max_n, clip=False)


def _bleu_arithmetic(candidates, references, max_n=4):
    return bleu.corpus_bleu(candidates, references, max_n, combine=lambda ps: float(np.mean(ps)))


def _bleu_smoothed(candidates, references, max_n=4):
    """nltk's smoothing method1 (epsilon 0.1) or method3 (NIST / sacrebleu's 'exp')."""

    def smoothed(hook):
        def precisions(counts):
            return hook(bleu.per_sentence_denominators(candidates, counts))

        return bleu.corpus_bleu(candidates, references, max_n, precisions=precisions)

    return AnyOf(smoothed(bleu.epsilon_precisions), smoothed(bleu.exp_precisions))


def _bleu_sentence_average(candidates, references, max_n=4):
    """The mean of per-sentence BLEU scores (nltk's sentence_bleu averaged), not corpus BLEU."""
    return float(
        np.mean([bleu.corpus_bleu([c], [r], max_n) for c, r in zip(candidates, references)])
    )


# Conventions of widely used implementations that the handout excludes (named, not used to choose
# the corpora: the cases stay the ones BLEU_MUTANTS separate).
BLEU_CONVENTIONS = {
    "bleu-smoothed": _bleu_smoothed,
    "bleu-sentence-average": _bleu_sentence_average,
}

BLEU_MUTANTS = {
    "bleu-unclipped-counts": _bleu_unclipped,
    "bleu-arithmetic-mean": _bleu_arithmetic,
    "bleu-shortest-reference": _bleu_shortest,
    "bleu-no-brevity-penalty": _bleu_no_bp,
}


def _bleu_sentence(
    rng: np.random.Generator, vocab: list[str], c: int, ref_lens: list[int]
) -> tuple:
    """A candidate of length c repeating one word 3 times, and references of the given lengths.

    Each reference is the candidate with the repeats dropped (so clipping matters), one word
    substituted and words inserted at random places until it has its length; then one candidate
    word is replaced by a word that no reference has.
    """
    w = vocab[int(rng.integers(len(vocab)))]
    others = [v for v in vocab if v != w]
    cand = [w] + [others[int(i)] for i in rng.integers(len(others), size=c - 3)]
    for _ in range(2):
        cand.insert(int(rng.integers(1, len(cand) + 1)), w)
    refs = []
    for length in ref_lens:
        ref = [v for v in cand if v != w]
        ref.insert(int(rng.integers(len(ref) + 1)), w)
        ref[int(rng.integers(len(ref)))] = others[int(rng.integers(len(others)))]
        while len(ref) > length:
            del ref[int(rng.integers(len(ref)))]
        while len(ref) < length:
            ref.insert(int(rng.integers(len(ref) + 1)), others[int(rng.integers(len(others)))])
        refs.append(ref)
    # one candidate word that no reference has: p_1 < 1 even unclipped, so that dropping p_1 (or
    # keeping only the last precision) does not look like unclipped counts
    unseen = [v for v in _WORDS if all(v not in ref for ref in refs)]
    spots = [i for i, v in enumerate(cand) if v != w]
    cand[spots[int(rng.integers(len(spots)))]] = unseen[int(rng.integers(len(unseen)))]
    return cand, refs


def _sentence_lengths(
    rng: np.random.Generator, c: int, i: int, kind: str, a: int, b: int
) -> list[int]:
    """The reference lengths of sentence i (candidate length c), in the order they are listed.

    short: sentence 0's closest reference (c + a) is longer than its shortest (c - b), the others
    are longer than c; very-short: the others about 3 c long (r >= 2 c); tie: sentence 0 has
    references c + a and c - a, the longer listed first (ties go to the shorter), the others
    very short; long: every reference shorter than its candidate (the penalty is 1).
    """
    if kind == "long":
        lens = (
            [c - a, c - a - 2, c + a + 3]
            if i == 0
            else [c - 1 - int(rng.integers(0, 2)), c - 3, c + 4]
        )
        return [lens[int(k)] for k in rng.permutation(3)]
    if i == 0:
        lens = [c + a, c - a, c + a + 2] if kind == "tie" else [c - b, c + a, c + a + 2]
        return lens if kind == "tie" else [lens[int(k)] for k in rng.permutation(3)]
    d = int(rng.integers(b + 1, b + 4)) + (2 * c if kind in ("very-short", "tie") else 0)
    return [c + d + 2 * int(k) for k in rng.permutation(3)]


def _bleu_corpus(
    rng: np.random.Generator, n_sent: int, long: bool, kind: str = "short"
) -> tuple[list, list]:
    """Candidates with repeated words (clipping matters) and references of `_sentence_lengths`."""
    vocab = [str(v) for v in rng.choice(_WORDS, size=8, replace=False)]
    candidates, references = [], []
    a = int(rng.integers(1, 3))  # sentence 0: closest reference c + a
    b = int(rng.integers(a + 1, a + 3))  # sentence 0: shortest reference c - b, farther
    for i in range(n_sent):
        c = int(rng.integers(8, 12) if long else rng.integers(5, 8))
        cand, refs = _bleu_sentence(rng, vocab, c, _sentence_lengths(rng, c, i, kind, a, b))
        candidates.append(cand)
        references.append(refs)
    return candidates, references


def _tie_to_longer(c: int, lens) -> int:
    return min(lens, key=lambda r: (abs(r - c), -r))


def _first_closest(c: int, lens) -> int:
    return min(lens, key=lambda r: abs(r - c))  # the first listed of two tied references


def _inverted_penalty(c: int, r: int) -> float:
    """The brevity penalty applied to candidates LONGER than the references (the condition inverted)."""
    return 1.0 if c < r else math.exp(1.0 - r / c)


# Slips that are not catalog mistakes but must lose points on the case of their kind.
BLEU_SLIPS = {
    "tie": (
        partial(bleu.corpus_bleu, ref_length=_tie_to_longer),
        partial(bleu.corpus_bleu, ref_length=_first_closest),
    ),
    "long": (partial(bleu.corpus_bleu, brevity=_inverted_penalty),),
    "very-short": (partial(bleu.corpus_bleu, brevity=lambda c, r: math.exp(1.0 - (r // c))),),
}


def _apart(x: float, y: float) -> bool:
    return abs(x - y) > 5e-3 * max(abs(x), abs(y))


def _bleu_separates(candidates, references, max_n, kind: str = "short") -> bool:
    """The reference well above 0 and apart from every mutant that applies (pairwise for the short
    corpora; in a long corpus the penalty is 1, so no-BP and shortest-reference are right there)."""
    want = bleu.corpus_bleu(candidates, references, max_n)
    if want <= 0.02:
        return False
    mids = (
        ["bleu-unclipped-counts", "bleu-arithmetic-mean"] if kind == "long" else list(BLEU_MUTANTS)
    )
    if kind == "tie":
        mids.remove("bleu-shortest-reference")  # the shorter tied reference is the shortest
    outs = [want] + [BLEU_MUTANTS[m](candidates, references, max_n) for m in mids]
    slips = [f(candidates, references, max_n) for f in BLEU_SLIPS.get(kind, ())]
    return all(_apart(a, b) for i, a in enumerate(outs) for b in outs[i + 1 :]) and all(
        _apart(want, x) for x in slips
    )


def _zero_precision_corpus(rng: np.random.Generator, max_n: int) -> tuple[list, list]:
    """Candidates whose words all occur in the references but no max_n-gram does: BLEU is 0.0
    (no smoothing), while p_1 > 0."""
    while True:
        vocab = [str(v) for v in rng.choice(_WORDS, size=10, replace=False)]
        cands = [[vocab[int(i)] for i in rng.permutation(10)[:6]] for _ in range(2)]
        refs = [
            [[w for w in reversed(c)] + [vocab[0]]] for c in cands
        ]  # reversed: no n-gram (n >= 2) in order
        num, _ = bleu.modified_precision(cands, refs, max_n)
        if num == 0 and bleu.modified_precision(cands, refs, 1)[0] > 0:
            return cands, refs


def _bleu_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([39, seed])

    def t(s: str) -> list[str]:
        return s.split()

    # The nltk documentation's corpus example (0.5920778868801042, nltk's value).
    hyp1 = t(
        "It is a guide to action which ensures that the military always obeys the commands of the party"
    )
    refs1 = [
        t(
            "It is a guide to action that ensures that the military will forever heed Party commands"
        ),
        t(
            "It is the guiding principle which guarantees the military forces always being under the "
            "command of the Party"
        ),
        t("It is the practical guide for the army always to heed the directions of the party"),
    ]
    hyp2 = t("he read the book because he was interested in world history")
    refs2 = [t("he was interested in world history because he read the book")]
    cases = [
        Case("nltk documentation example (max_n=4)", ([hyp1, hyp2], [refs1, refs2]), visible=True)
    ]
    # An inverted penalty condition equals "no penalty" on the short corpora and is caught on the
    # long ones: more long corpora than short ones, so that it is not read as no-penalty.
    specs = [
        (3, 2, False, "short", "candidates shorter than the closest reference"),
        (2, 2, False, "very-short", "candidates less than half as long as the references"),
        (3, 2, False, "tie", "a candidate equally far from a longer and a shorter reference"),
        (2, 4, False, "zero", ""),
        (3, 2, True, "long", "candidates longer than the references"),
        (2, 3, True, "long", "candidates longer than the references"),
        (4, 2, True, "long", "candidates longer than the references"),
        (3, 3, True, "long", "candidates longer than the references"),
    ]
    for i, (n_sent, max_n, long, kind, what) in enumerate(specs):
        if kind == "zero":
            cands, refs = _zero_precision_corpus(rng, max_n)
            cases.append(
                Case(
                    f"hidden case {i + 1}: no 4-gram in common with the references (BLEU 0)",
                    (cands, refs),
                )
            )
            continue
        while True:
            cands, refs = _bleu_corpus(rng, n_sent, long, kind)
            if _bleu_separates(cands, refs, max_n, kind):
                break
        cases.append(
            Case(
                f"hidden case {i + 1}: {n_sent} sentences, 3 references each, {what}, max_n={max_n}",
                (cands, refs),
                {"max_n": max_n},
            )
        )
    return cases + _bleu_edge_cases(seed, len(cases))


def _unigram_order(candidates, references, max_n=4):
    """The n-gram loop started at n = 0 (still divided by max_n): the empty n-gram occurs
    len + 1 times, so p_0 < 1 only where a candidate is longer than every reference."""
    c0 = sum(len(c) + 1 for c in candidates)
    m0 = sum(min(len(c), max(len(r) for r in rs)) + 1 for c, rs in zip(candidates, references))
    return bleu.corpus_bleu(candidates, references, max_n) * (m0 / c0) ** (1 / max_n)


def _longer_than_every_reference(rng: np.random.Generator) -> tuple[list, list]:
    """Three candidates, each longer than all three of its references (BP = 1, p_n > 0)."""
    while True:
        vocab = [str(v) for v in rng.choice(_WORDS, size=8, replace=False)]
        cands, refs = [], []
        for _ in range(3):
            c = int(rng.integers(8, 12))
            lens = [c - 1 - int(k) for k in rng.permutation(3)]
            cand, rs = _bleu_sentence(rng, vocab, c, lens)
            cands.append(cand)
            refs.append(rs)
        want = bleu.corpus_bleu(cands, refs, 2)
        if want > 0.05 and _apart(want, _unigram_order(cands, refs, 2)):
            return cands, refs


def _one_word_candidates(rng: np.random.Generator) -> tuple[list, list]:
    """Three candidates of one token each, two found in their references: p_1 = 2/3, and no
    candidate has a bigram, so p_2 has no n-gram to count and counts as 0 (BLEU 0, as nltk)."""
    vocab = [str(v) for v in rng.choice(_WORDS, size=8, replace=False)]
    cands, refs = [], []
    for i in range(3):
        words = [vocab[int(i)] for i in rng.permutation(8)[:4]]
        cands.append([words[0]])
        refs.append([words[: 2 + int(rng.integers(0, 2))], words[1:]])
        if i == 2:  # one candidate word no reference has: p_1 = 2/3, so that no mean of
            cands[-1] = [next(v for v in vocab if v not in words)]  # p_1 and 0 looks smoothed
    return cands, refs


def _bleu_edge_cases(seed: int, n: int) -> list[Case]:
    """The domain's edges, drawn after the other cases from their own stream: candidates longer
    than every reference (an n-gram loop from n = 0 differs only there) and one-word candidates
    with max_n = 2 (an order with no candidate n-gram is a zero precision, not skipped)."""
    rng = np.random.default_rng([391, seed])
    longer = _longer_than_every_reference(rng)
    return [
        Case(
            f"hidden case {n}: one-word candidates, max_n=2 (no bigram to count: BLEU 0)",
            _one_word_candidates(rng),
            {"max_n": 2},
        ),
        Case(
            f"hidden case {n + 1}: 3 sentences, each candidate longer than all its references, "
            "max_n=2",
            longer,
            {"max_n": 2},
        ),
    ]
