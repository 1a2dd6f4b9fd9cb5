"""Conventions widely used implementations follow that the handouts exclude, each graded as the
field writes it: docked, and named with the entry that says which rule the handout wants.

The files below are the public implementations' own logic behind the handout's signature:
Sennrich et al.'s toy BPE (`max(pairs, key=pairs.get)`: the first pair counted wins a tie),
minbpe's `get_stats`/`max(stats, key=stats.get)` (the same rule over ids), and subword-nmt's
learn_bpe (stop when the best pair's frequency is below `--min-frequency 2`). The instructor's
solution is the control: full marks, no name.
"""

from __future__ import annotations

import pytest
from conftest import ROOT, grade_question

from grader.suites import a6_pretraining_scale as a6

SOLUTION = (ROOT / "solutions" / "a6_pretraining_scale" / "pretraining.py").read_text()
AID = a6.ASSIGNMENT.id

SENNRICH_TOY = """
import collections
import re


def get_stats(vocab):
    pairs = collections.defaultdict(int)
    for word, freq in vocab.items():
        symbols = word.split()
        for i in range(len(symbols) - 1):
            pairs[symbols[i], symbols[i + 1]] += freq
    return pairs


def merge_vocab(pair, v_in):
    v_out = {}
    bigram = re.escape(" ".join(pair))
    p = re.compile(r"(?<!\\S)" + bigram + r"(?!\\S)")
    for word in v_in:
        v_out[p.sub("".join(pair), word)] = v_in[word]
    return v_out


def bpe_learn(word_counts, num_merges):
    vocab = {" ".join(list(w)) + " </w>": n for w, n in word_counts.items() if n > 0}
    merges = []
    for _ in range(num_merges):
        pairs = get_stats(vocab)
        if not pairs:
            break
        best = max(pairs, key=pairs.get)
        merges.append(best)
        vocab = merge_vocab(best, vocab)
    return merges
"""

MINBPE_STYLE = """
def get_stats(ids, counts=None):
    counts = {} if counts is None else counts
    for pair in zip(ids, ids[1:]):
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids, pair, idx):
    newids, i = [], 0
    while i < len(ids):
        if i < len(ids) - 1 and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            newids.append(idx)
            i += 2
        else:
            newids.append(ids[i])
            i += 1
    return newids


def bpe_learn(word_counts, num_merges):
    # minbpe's loop over a corpus of words, each weighted by its count
    words = [(list(w) + ["</w>"], n) for w, n in word_counts.items() if n > 0]
    merges = []
    for _ in range(num_merges):
        stats = {}
        for ids, n in words:
            for pair, c in get_stats(ids).items():
                stats[pair] = stats.get(pair, 0) + c * n
        if not stats:
            break
        pair = max(stats, key=stats.get)
        merges.append(pair)
        words = [(merge(ids, pair, pair[0] + pair[1]), n) for ids, n in words]
    return merges
"""

SUBWORD_NMT_STOP = SOLUTION.replace(
    "        merges.append(best)\n",
    "        if pairs[best] < 2:  # learn_bpe's --min-frequency 2\n"
    "            break\n"
    "        merges.append(best)\n",
)


@pytest.mark.parametrize(
    "source, mid",
    [
        (SENNRICH_TOY, "bpe-ties-first-counted"),
        (MINBPE_STYLE, "bpe-ties-first-counted"),
        (SUBWORD_NMT_STOP, "bpe-stops-below-two"),
    ],
    ids=["sennrich-toy", "minbpe", "subword-nmt-min-frequency"],
)
@pytest.mark.parametrize("student", ["ann@uni.edu", "bob@uni.edu"])
def test_a6_bpe_conventions_of_the_field_are_docked_and_named(tmp_path, source, mid, student):
    q = grade_question(AID, tmp_path, source, "a6.bpe_learn", student)
    assert q.score < q.max_score
    assert list(q.misconceptions) == [mid]


def test_a6_solution_is_the_control(tmp_path):
    q = grade_question(AID, tmp_path, SOLUTION, "a6.bpe_learn", "ann@uni.edu")
    assert (q.score, list(q.misconceptions)) == (q.max_score, [])
