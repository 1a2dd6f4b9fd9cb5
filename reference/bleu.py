"""Corpus BLEU exactly as the handout defines it (notes §4: n-gram precision + brevity penalty).

BLEU = BP · exp((1/N) Σ_{n=1}^{N} log p_n), p_n = Σ_sentences clipped matches / Σ_sentences
candidate n-grams; no smoothing (0.0 when any p_n is 0); BP = exp(1 - r/c) when c <= r,
else 1, with c the total candidate length and r the sum of the closest reference lengths
(ties to the shorter).

Hooks for the grader's mutants (keyword arguments of `corpus_bleu`):
`brevity=lambda c, r: 1.0` (`bleu-no-brevity-penalty`), `ref_length=lambda c, lens: min(lens)`
(`bleu-shortest-reference`), `clip=False` (`bleu-unclipped-counts`),
`combine=lambda ps: float(np.mean(ps))` (`bleu-arithmetic-mean`),
`precisions=epsilon_precisions` or `precisions=exp_precisions` (`bleu-smoothed`: nltk's
SmoothingFunction().method1 and method3, Chen & Cherry 2014; the handout smooths nothing).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence

__all__ = [
    "ngram_counts",
    "sentence_ngram_matches",
    "modified_precision",
    "closest_reference_length",
    "brevity_penalty",
    "geometric_mean",
    "plain_precisions",
    "per_sentence_denominators",
    "epsilon_precisions",
    "exp_precisions",
    "corpus_bleu",
]

Counts = Sequence[tuple[int, int]]  # per order n: (clipped matches, candidate n-grams)

Sentence = Sequence[str]


def ngram_counts(tokens: Sentence, n: int) -> Counter[tuple[str, ...]]:
    """Count(g) for every n-gram g of the sentence."""
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def sentence_ngram_matches(
    candidate: Sentence, references: Sequence[Sentence], n: int, *, clip: bool = True
) -> tuple[int, int]:
    """(Σ_g min(Count(g), max_ref Count_ref(g)), Σ_g Count(g)) for one candidate sentence.

    Hook: `clip=False` counts every candidate n-gram that occurs in some reference.
    """
    cand = ngram_counts(candidate, n)
    max_ref: Counter[tuple[str, ...]] = Counter()
    for ref in references:
        for g, k in ngram_counts(ref, n).items():
            max_ref[g] = max(max_ref[g], k)
    if clip:
        matched = sum(min(k, max_ref[g]) for g, k in cand.items())
    else:
        matched = sum(k for g, k in cand.items() if max_ref[g] > 0)
    return matched, sum(cand.values())


def modified_precision(
    candidates: Sequence[Sentence],
    references: Sequence[Sequence[Sentence]],
    n: int,
    *,
    clip: bool = True,
) -> tuple[int, int]:
    """Corpus p_n as (numerator, denominator): clipped matches and candidate n-grams, summed over sentences."""
    num = den = 0
    for cand, refs in zip(candidates, references):
        m, total = sentence_ngram_matches(cand, refs, n, clip=clip)
        num += m
        den += total
    return num, den


def closest_reference_length(candidate_length: int, reference_lengths: Sequence[int]) -> int:
    """The reference length closest to the candidate's; ties go to the shorter reference."""
    return min(reference_lengths, key=lambda r: (abs(r - candidate_length), r))


def brevity_penalty(c: int, r: int) -> float:
    """BP = 1 if c > r, exp(1 - r/c) if 0 < c <= r, 0 if c = 0."""
    if c > r:
        return 1.0
    if c == 0:
        return 0.0
    return math.exp(1.0 - r / c)


def geometric_mean(precisions: Sequence[float]) -> float:
    """exp((1/N) Σ log p_n), and 0.0 when any p_n is 0 (no smoothing)."""
    if any(p <= 0 for p in precisions):
        return 0.0
    return math.exp(math.fsum(math.log(p) for p in precisions) / len(precisions))


def plain_precisions(counts: Counts) -> list[float]:
    """p_n = matches / candidate n-grams, and 0 for an order with no candidate n-gram (the handout)."""
    return [num / den if den > 0 else 0.0 for num, den in counts]


def per_sentence_denominators(
    candidates: Sequence[Sentence], counts: Counts
) -> list[tuple[int, int]]:
    """nltk's counts: each sentence's n-gram count raised to at least 1 before the corpus sum
    (differs from the handout's only where a candidate is shorter than n)."""
    return [
        (num, sum(max(1, len(c) - n + 1) for c in candidates))
        for n, (num, _) in enumerate(counts, start=1)
    ]


def epsilon_precisions(counts: Counts, epsilon: float = 0.1) -> list[float]:
    """nltk's method1: a zero count of matches becomes epsilon, over max(1, n-grams); no unigram
    match still gives 0 (nltk returns 0 before it smooths)."""
    if counts[0][0] == 0:
        return [0.0] * len(counts)
    return [(num if num > 0 else epsilon) / max(1, den) for num, den in counts]


def exp_precisions(counts: Counts) -> list[float]:
    """nltk's method3 (NIST's, sacrebleu's 'exp'): the k-th zero precision becomes
    1 / (2^k · max(1, n-grams)); no unigram match still gives 0."""
    if counts[0][0] == 0:
        return [0.0] * len(counts)
    out, k = [], 0
    for num, den in counts:
        if num == 0:
            k += 1
        out.append(num / max(1, den) if num > 0 else 1.0 / (2**k * max(1, den)))
    return out


def corpus_bleu(
    candidates: list[list[str]],
    references: list[list[list[str]]],
    max_n: int = 4,
    *,
    clip: bool = True,
    ref_length: Callable[[int, Sequence[int]], int] = closest_reference_length,
    brevity: Callable[[int, int], float] = brevity_penalty,
    combine: Callable[[Sequence[float]], float] = geometric_mean,
    precisions: Callable[[Counts], list[float]] = plain_precisions,
) -> float:
    """BLEU = BP(c, r) · (Π_{n=1}^{max_n} p_n)^{1/max_n}, corpus-level (hooks: module docstring).

    A precision whose denominator is 0 (every candidate shorter than n) counts as 0.
    """
    if len(candidates) != len(references):
        raise ValueError(
            f"expected one reference list per candidate, got {len(candidates)} candidates "
            f"and {len(references)} reference lists"
        )
    counts = [modified_precision(candidates, references, n, clip=clip) for n in range(1, max_n + 1)]
    c = sum(len(cand) for cand in candidates)
    r = sum(
        ref_length(len(cand), [len(ref) for ref in refs])
        for cand, refs in zip(candidates, references)
    )
    return float(brevity(c, r) * combine(precisions(counts)))
