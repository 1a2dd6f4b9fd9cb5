"""a3's BLEU against the conventions of the implementations students copy (issue 33, item 2):
nltk's smoothing (SmoothingFunction().method1, epsilon; method3, sacrebleu's 'exp') and the
average of nltk's sentence_bleu over the corpus. The handout wants corpus BLEU without smoothing;
a student who follows nltk loses the points where the outputs differ and reads the catalog entry
that says which rule the handout wants. nltk itself is the outside authority for every value.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections import Counter
from fractions import Fraction

import pytest
from conftest import ROOT, nltk_bleu, nltk_corpus_bleu
from test_validity_a1a3a6 import judge

from grader import catalog, sandbox
from grader.engine.grade import grade_submission
from grader.engine.trusted import run_trusted
from grader.suites import a3_gated_seq2seq as a3
from reference import bleu

SOLUTION = (ROOT / "solutions" / "a3_gated_seq2seq" / "gated_seq2seq.py").read_text()
SEEDS = range(6)


BLEU = a3.ASSIGNMENT.question("a3.corpus_bleu")


def _nltk(case, **kw) -> float:
    candidates, references = case.args
    return nltk_corpus_bleu(candidates, references, case.kwargs.get("max_n", 4), **kw)


# ---------------------------------------------------------------- the hooks are nltk's


@pytest.mark.parametrize("seed", SEEDS)
def test_the_reference_and_its_smoothing_hooks_are_nltks(seed):
    for case in BLEU.cases(seed):
        cands, refs = case.args
        max_n = case.kwargs.get("max_n", 4)
        want = run_trusted(BLEU.reference, case)
        plain = _nltk(case)
        # no smoothing: nltk's value, except that nltk puts the smallest float in for a zero p_n
        assert want == pytest.approx(plain, rel=1e-12) or (want == 0.0 and plain < 1e-100)
        for hook, method in (
            (bleu.epsilon_precisions, nltk_bleu().SmoothingFunction().method1),
            (bleu.exp_precisions, nltk_bleu().SmoothingFunction().method3),
        ):

            def precisions(counts, hook=hook, cands=cands):
                return hook(bleu.per_sentence_denominators(cands, counts))

            got = bleu.corpus_bleu(cands, refs, max_n, precisions=precisions)
            assert got == pytest.approx(_nltk(case, smoothing_function=method), rel=1e-12)


# ---------------------------------------------------------------- students who follow nltk


def _ngram_counts(tokens, n):
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def nltk_style_bleu(smoothing):
    """corpus_bleu written the way nltk writes it: Fraction precisions over max(1, count), an
    early 0 when no unigram matches, a smoothing function over the precisions, the closest
    reference length."""

    def method1(p_n, epsilon=0.1):
        return [
            Fraction(p.numerator + epsilon) / p.denominator if p.numerator == 0 else p for p in p_n
        ]

    def method3(p_n):
        out, incvnt = [], 1
        for p in p_n:
            if p.numerator == 0:
                out.append(1 / (2**incvnt * p.denominator))
                incvnt += 1
            else:
                out.append(p)
        return out

    smooth = {"method1": method1, "method3": method3}[smoothing]

    def corpus_bleu(candidates, references, max_n=4):
        numerators, denominators = Counter(), Counter()
        hyp_lengths = ref_lengths = 0
        for refs, hyp in zip(references, candidates):
            for n in range(1, max_n + 1):
                counts = _ngram_counts(hyp, n)
                max_counts = {}
                for ref in refs:
                    for g, k in _ngram_counts(ref, n).items():
                        max_counts[g] = max(max_counts.get(g, 0), k)
                numerators[n] += sum(min(k, max_counts.get(g, 0)) for g, k in counts.items())
                denominators[n] += max(1, sum(counts.values()))
            hyp_lengths += len(hyp)
            ref_lengths += min((len(r) for r in refs), key=lambda r: (abs(r - len(hyp)), r))
        if numerators[1] == 0:
            return 0
        p_n = [
            Fraction(numerators[n], denominators[n], _normalize=False) for n in range(1, max_n + 1)
        ]
        bp = 1 if hyp_lengths > ref_lengths else math.exp(1 - ref_lengths / hyp_lengths)
        p_n = smooth(p_n)
        return bp * math.exp(math.fsum(math.log(p) / max_n for p in p_n))

    return corpus_bleu


def sentence_average_bleu(candidates, references, max_n=4):
    """The mean of nltk's sentence_bleu over the sentences (nltk called as a student would)."""
    weights = (1.0 / max_n,) * max_n
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        scores = [
            nltk_bleu().sentence_bleu(refs, cand, weights=weights)
            for cand, refs in zip(candidates, references)
        ]
    return sum(scores) / len(scores)


@pytest.mark.parametrize("smoothing", ["method1", "method3"])
def test_nltk_style_smoothing_is_docked_and_named(smoothing):
    student = nltk_style_bleu(smoothing)
    for seed in SEEDS:
        zero = next(c for c in BLEU.cases(seed) if "BLEU 0" in c.name and "4-gram" in c.name)
        method = getattr(nltk_bleu().SmoothingFunction(), smoothing)
        assert student(*zero.args, **zero.kwargs) == pytest.approx(
            _nltk(zero, smoothing_function=method), rel=1e-12
        )
        failed, named = judge(BLEU, student, seed)
        assert failed >= 1 and named == ["bleu-smoothed"], (seed, failed, named)


def test_nltk_sentence_bleu_averaged_is_docked_and_named():
    for seed in SEEDS:
        failed, named = judge(BLEU, sentence_average_bleu, seed)
        assert failed >= 3 and named == ["bleu-sentence-average"], (seed, failed, named)


def test_the_entries_say_which_rule_the_handout_wants():
    readme = (ROOT / "assignments" / "a3_gated_seq2seq" / "README.md").read_text()
    assert "no smoothing" in readme and "Corpus-level" in readme
    smoothed = catalog.get("bleu-smoothed").explanation
    assert "nltk" in smoothed and "smooths nothing" in smoothed
    average = catalog.get("bleu-sentence-average").explanation
    assert "sentence_bleu" in average and "whole corpus" in average


def test_an_nltk_smoothed_file_is_named_when_graded(tmp_path):
    """End to end, in the sandbox: the solution file with nltk's method1 BLEU in place of its own."""
    start = SOLUTION.index("def corpus_bleu(")
    end = SOLUTION.index("\n\n\n", start) if "\n\n\n" in SOLUTION[start:] else len(SOLUTION)
    body = (
        "def corpus_bleu(candidates, references, max_n=4):\n"
        "    numerators, denominators = Counter(), Counter()\n"
        "    for refs, hyp in zip(references, candidates):\n"
        "        for n in range(1, max_n + 1):\n"
        "            counts = _ngrams(hyp, n)\n"
        "            max_counts = Counter()\n"
        "            for ref in refs:\n"
        "                for g, k in _ngrams(ref, n).items():\n"
        "                    max_counts[g] = max(max_counts[g], k)\n"
        "            numerators[n] += sum(min(k, max_counts[g]) for g, k in counts.items())\n"
        "            denominators[n] += max(1, sum(counts.values()))\n"
        "    if numerators[1] == 0:\n"
        "        return 0.0\n"
        "    p_n = [(numerators[n] or 0.1) / denominators[n] for n in range(1, max_n + 1)]\n"
        "    c = sum(len(h) for h in candidates)\n"
        "    r = sum(min((len(x) for x in refs), key=lambda L: (abs(L - len(h)), L))\n"
        "            for h, refs in zip(candidates, references))\n"
        "    bp = 1.0 if c > r else math.exp(1 - r / c)\n"
        "    return bp * math.exp(math.fsum(math.log(p) for p in p_n) / max_n)\n"
    )
    source = SOLUTION[:start] + body + SOLUTION[end:]
    folder = tmp_path / "ann"
    folder.mkdir()
    (folder / "gated_seq2seq.py").write_text(source)
    only = dataclasses.replace(a3.ASSIGNMENT, questions=(BLEU,))
    limits = sandbox.Limits(call_seconds=10.0, submission_seconds=120.0)
    (q,) = grade_submission(folder, only, student="ann@uni.edu", limits=limits).questions
    assert q.score < q.max_score
    assert q.misconceptions == ["bleu-smoothed"]
