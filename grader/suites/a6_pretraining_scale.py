"""a6 — Pretraining and scale: BPE, BERT masking, next-token targets, parameter counts (notes §7–8, Lecture 7).

Code questions compare with reference/ (bpe.py, masking.py, params.py); T5's span corruption
is judged on T5's own example and on random spans (at the ends too, with more sentinel ids than
needed, which tells the two ways of reversing the sentinels apart); `bert_mask` is
random, so it is graded by invariants and by distribution (`judge_bert_mask`), not by
draws: students may draw from the generator in any order. Written questions take the
student's own numbers from the handout's `variant.py`.

It stays one file (about 1,000 lines): each section (BPE, BERT masking, targets, T5, parameter
counts, written) holds a function's mistakes beside the cases built to separate them; the
written questions are the first section to move out if it grows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from grader.mutants import AnyOf, any_form, failed_checks, judged_alike
from grader.questions import Assignment, Case, Judgement, Rng, Tolerance, WrittenQuestion, WrongForm
from grader.suites._kit import choice, reference_builder, shown, written
from reference import bpe, masking, params

CODE_FILE = "pretraining.py"
IGNORE = masking.IGNORE_INDEX

# --------------------------------------------------------------------------- BPE

# Sennrich et al. (2016)'s corpus, worked by hand in tests/reference/test_ref_pretraining.py
SENNRICH_CORPUS = {"low": 5, "lower": 2, "newest": 6, "widest": 3}
_ALPHABET = "abdelorstw"


def _random_corpus(rng: np.random.Generator, n_words: int) -> dict[str, int]:
    """Words over a small alphabet (many shared pairs), distinct counts 1..20 (weights matter)."""
    corpus: dict[str, int] = {}
    while len(corpus) < n_words:
        length = int(rng.integers(2, 7))
        word = "".join(rng.choice(list(_ALPHABET), size=length))
        corpus.setdefault(word, int(rng.integers(1, 21)))
    return corpus


def _bpe_learn_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([601, seed])
    cases = shown("Sennrich corpus, 10 merges (README worked example)", dict(SENNRICH_CORPUS), 10)
    for i in range(4):
        corpus = _random_corpus(rng, int(rng.integers(5, 9)))
        n_merges = int(rng.integers(6, 13))  # drawn after the corpus, as always
        cases.append(
            Case(
                f"hidden corpus {i + 1}: {len(corpus)} random word types with counts, {n_merges} merges",
                (corpus, n_merges),
            )
        )
    # more merges than pairs: must stop early
    cases.append(
        Case(
            "hidden corpus 5: 2 word types, more merges asked than pairs exist",
            (_random_corpus(rng, 2), 40),
        )
    )
    # most words seen once: their pairs (count 1) must be merged too once the frequent ones are done
    once = _random_corpus(rng, 6)
    once = {w: (3 if i == 0 else 1) for i, w in enumerate(once)}
    cases.append(Case("hidden corpus 6: 6 word types, 5 of them seen once, 12 merges", (once, 12)))
    cases.append(
        Case("hidden corpus 7: equally frequent pairs, listed largest first", _tie_corpus(rng))
    )
    corpus, _ = _one_letter_corpus(seed)
    cases.append(
        Case("domain edge: a frequent one-letter word among 5 others, 8 merges", (corpus, 8))
    )
    return cases


# The domain of every graded function's arguments, as the handout defines it; the cases named
# "domain edge" sit at these edges, drawn after the other cases from a stream of their own
# (`_edge_rng`), so that every earlier case stays what it was.
DOMAINS: dict[str, dict[str, str]] = {
    "bpe_learn": {
        "word_counts": "words of one or more letters (one-letter words included), counts >= 1",
        "num_merges": ">= 0, more than the pairs there are included (stop early)",
    },
    "bpe_segment": {
        "word": "one or more letters (one letter included), seen in the corpus or not",
        "merges": "a learned list, possibly empty",
    },
    "bert_mask": {"tokens": "(n,) ids in [0, vocab_size), specials included", "p": "0 < p < 1"},
    "next_token_targets": {
        "tokens": "(B, T) ids, T >= 2, right-padded rows; ids above 256 included",
        "pad_id": "any id (0, 1, 99, or above 256: compared by value, never by identity)",
    },
    "transformer_parameter_count": {
        "sizes": "V, P >= 0, d, L, d_ff >= 1; tied or not, biases or not, gelu or swiglu, "
        "layernorm or rmsnorm",
    },
    "span_corruption": {
        "tokens": "ids of any size (above 256 included)",
        "spans": "sorted, non-empty, non-overlapping, at the very start and end included",
        "sentinel_ids": "at least one more than the spans, given as <extra_id_0>, <extra_id_1>, …",
    },
}


def _edge_rng(salt: int, seed: int) -> np.random.Generator:
    """The domain edges' own stream: drawing them leaves every earlier case as it was."""
    return np.random.default_rng([salt, seed, 33])


def _one_letter_corpus(seed: int) -> tuple[dict[str, int], str]:
    """Random words plus a one-letter word seen 200 times: ("c", "</w>") is the first merge."""
    edge = _edge_rng(601, seed)
    corpus = _random_corpus(edge, 5)
    letter = str(edge.choice([c for c in _ALPHABET if c not in corpus]))
    return {**corpus, letter: 200}, letter


def _tie_corpus(rng: np.random.Generator) -> tuple[dict[str, int], int]:
    """Two words of one count over disjoint letters, the later letters first: every pair ties,
    and the pair counted first is not the lexicographically smallest one."""
    letters = sorted(rng.choice(list(_ALPHABET), size=6, replace=False))
    low, high = "".join(letters[:3]), "".join(letters[3:])
    n = int(rng.integers(2, 9))
    return {high: n, low: n}, 5


def _bpe_learn_no_end_of_word(word_counts: dict[str, int], num_merges: int) -> list[bpe.Pair]:
    """bpe-no-end-of-word: words start as their bare characters (no "</w>"); the rest as the reference."""
    corpus = {tuple(w): n for w, n in word_counts.items()}
    merges: list[bpe.Pair] = []
    for _ in range(num_merges):
        pair = bpe.best_pair(bpe.pair_counts(corpus))
        if pair is None:
            break
        merges.append(pair)
        merged: dict[tuple[str, ...], int] = {}
        for symbols, n in corpus.items():
            key = bpe.apply_merge(symbols, pair)
            merged[key] = merged.get(key, 0) + n
        corpus = merged
    return merges


def _bpe_learn_unweighted(word_counts: dict[str, int], num_merges: int) -> list[bpe.Pair]:
    """bpe-unweighted-pair-counts: every word type counts once, whatever its count."""
    return bpe.bpe_learn({w: 1 for w in word_counts}, num_merges)


def _bpe_segment_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([602, seed])
    hand = bpe.bpe_learn(SENNRICH_CORPUS, 10)
    cases = shown('"lowest" with the Sennrich merges', "lowest", hand)
    corpus = _random_corpus(rng, 8)
    merges = bpe.bpe_learn(corpus, int(rng.integers(8, 14)))
    seen = sorted(corpus, key=lambda w: -corpus[w])[:2]
    unseen = ["".join(rng.choice(list(_ALPHABET), size=int(rng.integers(4, 8)))) for _ in range(2)]
    for i, word in enumerate(seen + unseen):
        kind = "a frequent corpus word" if i < len(seen) else "a word not in the corpus"
        cases.append(
            Case(f"hidden word {i + 1}: {kind}, {len(merges)} learned merges", (word, merges))
        )
    cases.append(Case("hidden word 5: a word not in the corpus, no merges", (unseen[0], [])))
    corpus, letter = _one_letter_corpus(seed)
    merges = bpe.bpe_learn(corpus, 8)
    cases.append(Case("domain edge: a one-letter word, 8 learned merges", (letter, merges)))
    word, merges = _right_nested(seed)
    cases.append(
        Case("domain edge: merges whose right symbol was merged before (b + cd)", (word, merges))
    )
    return cases


def _right_nested(seed: int) -> tuple[str, list[bpe.Pair]]:
    """A four-letter word and the merges (c, d), (b, cd), (a, bcd): each merge's right symbol
    is the one the merge before made, as learned merges often are ("ew" + "est</w>" in the
    Sennrich corpus). A merge applied only where its symbols were never merged shows here."""
    a, b, c, d = (str(x) for x in _edge_rng(604, seed).choice(list(_ALPHABET), 4, replace=False))
    return a + b + c + d, [(c, d), (b, c + d), (a, b + c + d)]


def _bpe_segment_no_end_of_word(word: str, merges: Sequence[bpe.Pair]) -> AnyOf:
    """bpe-no-end-of-word: the merges applied to the bare characters.

    Natural forms: no "</w>" at all, or a bare "</w>" tacked on after merging (so no merge
    that involves "</w>" can ever apply).
    """
    symbols = tuple(word)
    for pair in merges:
        symbols = bpe.apply_merge(symbols, tuple(pair))
    return AnyOf(list(symbols), [*symbols, bpe.END_OF_WORD])


# --------------------------------------------------------------------------- BERT masking

BERT_SPECIALS = (0, 1, 2, 3)  # [PAD], [CLS], [SEP], [MASK]
BERT_MASK_ID = 3
BERT_VOCAB = 1000
BERT_SMALL_VOCAB = (
    12  # a small vocabulary: every id in [0, 12) must come up as a random replacement
)
BERT_N = 20_000
Z_BOUND = 5.0  # a correct submission fails a 5-sigma bound with probability ~6e-7 per check


def _bert_tokens(rng: np.random.Generator, n: int) -> np.ndarray:
    """A long stream of ordinary ids with [CLS]/[SEP] every 25 tokens and trailing padding."""
    tokens = rng.integers(4, BERT_VOCAB, size=n)  # (N,)
    tokens[::25] = 1
    tokens[24::25] = 2
    tokens[-n // 20 :] = 0
    return tokens


def _bert_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([603, seed])
    short = np.array(
        [1, 17, 230, 45, 9, 712, 88, 14, 301, 56, 2, 0, 0]
    )  # [CLS] … [SEP] [PAD] [PAD]
    cases = [
        Case(
            "short sentence (invariants only)",
            (short, Rng(7), BERT_MASK_ID, BERT_VOCAB),
            {"special_ids": BERT_SPECIALS, "p": 0.15},
            visible=True,
        )
    ]
    for i, p in enumerate((0.15, 0.15, 0.3)):
        tokens = _bert_tokens(rng, BERT_N)
        cases.append(
            Case(
                f"long stream {i + 1}: N = {BERT_N} tokens with [CLS]/[SEP]/[PAD], p = {p}",
                (tokens, Rng(int(rng.integers(2**31))), BERT_MASK_ID, BERT_VOCAB),
                {"special_ids": BERT_SPECIALS, "p": p},
            )
        )
    tokens = _bert_tokens(rng, BERT_N)
    cases.append(
        Case(
            f"long stream 4: N = {BERT_N} tokens, p not passed (the default 0.15)",
            (tokens, Rng(int(rng.integers(2**31))), BERT_MASK_ID, BERT_VOCAB),
            {"special_ids": BERT_SPECIALS},
        )
    )
    small = _bert_tokens(rng, BERT_N) % (BERT_SMALL_VOCAB - 4) + 4  # ordinary ids 4 … 11
    small[::25], small[24::25], small[-BERT_N // 20 :] = 1, 2, 0
    cases.append(
        Case(
            f"long stream 5: N = {BERT_N} tokens, vocab_size = {BERT_SMALL_VOCAB} (every random id "
            "should appear)",
            (small, Rng(int(rng.integers(2**31))), BERT_MASK_ID, BERT_SMALL_VOCAB),
            {"special_ids": BERT_SPECIALS, "p": 0.15},
        )
    )
    return cases


def _bert_no_random_or_keep(tokens, rng, mask_id, vocab_size, special_ids=(), p=0.15):
    """bert-mask-no-random-or-keep: every selected token becomes mask_id."""
    inputs, labels = masking.bert_mask(tokens, rng, mask_id, vocab_size, special_ids, p)
    inputs[labels != IGNORE] = mask_id
    return inputs, labels


def _bert_labels_all_positions(tokens, rng, mask_id, vocab_size, special_ids=(), p=0.15):
    """bert-labels-all-positions: the label is the original token everywhere."""
    inputs, _ = masking.bert_mask(tokens, rng, mask_id, vocab_size, special_ids, p)
    return inputs, np.asarray(tokens).copy()


def _bert_masks_specials(tokens, rng, mask_id, vocab_size, special_ids=(), p=0.15):
    """bert-masks-specials: special ids are ignored, so they are selected like any token."""
    return masking.bert_mask(tokens, rng, mask_id, vocab_size, (), p)


BERT_MUTANTS: dict[str, Callable[..., Any]] = {
    "bert-labels-all-positions": _bert_labels_all_positions,
    "bert-masks-specials": _bert_masks_specials,
    "bert-mask-no-random-or-keep": _bert_no_random_or_keep,
}


BertJudgement = (
    Judgement  # what the invariant and distribution checks found over all cases of bert_mask
)


def _within(count: int, n: int, prob: float) -> tuple[bool, float]:
    """Is count ~ Binomial(n, prob) within Z_BOUND standard deviations? (ok, z)"""
    if n == 0:
        return False, float("inf")
    sd = np.sqrt(n * prob * (1 - prob))
    z = (count - n * prob) / sd if sd > 0 else (0.0 if count == n * prob else float("inf"))
    return abs(z) <= Z_BOUND, float(z)


def _numbers(x: Any) -> np.ndarray | None:
    """A returned array in any accepted form (ndarray, list, number), or None; the engine's
    `as_array`, which a suite may not import."""
    if isinstance(x, np.ndarray):
        return x
    if isinstance(x, (bool, int, float, list, tuple)):
        try:
            a = np.asarray(x)
        except (ValueError, TypeError):  # a ragged list
            return None
        return a if a.dtype.kind in "biuf" else None
    return None


def _as_int_vector(x: Any, n: int, what: str) -> tuple[np.ndarray | None, str | None]:
    a = _numbers(x)
    if a is None:
        return None, f"`{what}`: expected an array of shape ({n},), got a {type(x).__name__}"
    if a.shape != (n,):
        return None, f"`{what}`: expected shape ({n},), got {tuple(a.shape)}"
    if a.dtype.kind == "f":
        if not np.all(np.isfinite(a)) or np.any(a != np.round(a)):
            return None, f"`{what}`: expected integer token ids, got non-integer values"
    elif a.dtype.kind not in "iub":
        return None, f"`{what}`: expected integer token ids"
    return a.astype(np.int64), None


def judge_bert_mask(cases: Sequence[Case], outputs: Sequence[Any]) -> BertJudgement:
    """Invariants on every case; selection rate and the 80/10/10 split pooled over the long cases.

    `outputs[i]` is what the student returned for `cases[i]` (None when the call failed). The
    question's `custom` judge: the engine makes the calls and handles their failures. A mistake
    the statistics point to is named only when its own outputs on these cases fail the same
    checks (`judged_alike`): specials selected like any token is not the name of a file that
    also selects every ordinary token.
    """
    j = _bert_judgement(cases, outputs)
    if j.misconceptions:
        j.misconceptions = judged_alike(
            j.misconceptions,
            failed_checks(j),
            BERT_MUTANTS,
            lambda mutant: _bert_judgement(cases, _bert_outputs_of(mutant, cases)),
        )
    return j


def _bert_outputs_of(fn: Callable[..., Any], cases: Sequence[Case]) -> list[Any]:
    """A trusted function's outputs on the cases (each generator built from its seed, as the
    worker builds it; None where the function does not apply)."""
    outputs: list[Any] = []
    for case in cases:
        args = tuple(np.random.default_rng(a.seed) if isinstance(a, Rng) else a for a in case.args)
        try:
            outputs.append(fn(*args, **case.kwargs))
        except (ValueError, IndexError, TypeError):
            outputs.append(None)
    return outputs


def _bert_judgement(cases: Sequence[Case], outputs: Sequence[Any]) -> BertJudgement:
    """The checks, and the mistakes whose signature the statistics show (not yet confirmed)."""
    j = Judgement(
        how=f"graded by invariants and by distribution over {len(cases)} calls with fresh "
        "generators; any drawing order is fine"
    )
    rows = _bert_rows(cases, outputs, j)
    if not rows:
        j.fatal = j.fatal or "no call returned a value"
        return j
    _bert_invariants(rows, j)
    long_rows = [r for r in rows if r[7]]
    if not long_rows:
        j.fatal = "the long streams could not be checked (their calls failed)"
        return j
    rate = _bert_selection_rate(long_rows, j)
    n_sel, n_mask = _bert_split(long_rows, j)
    j.misconceptions += _bert_mistakes(rows, long_rows, rate, n_sel, n_mask)
    return j


def _bert_rows(cases: Sequence[Case], outputs: Sequence[Any], j: Judgement) -> list[tuple]:
    """(tokens, inputs, labels, special, mask_id, V, p, is_long) per call that returned; [] with
    `j.fatal` set when an output is unusable."""
    rows = []
    for case, out in zip(cases, outputs):
        if out is None:
            continue
        tokens = np.asarray(case.args[0])
        mask_id, vocab = int(case.args[2]), int(case.args[3])
        specials = tuple(case.kwargs.get("special_ids", ()))
        p = float(case.kwargs.get("p", 0.15))
        n = tokens.shape[0]
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            j.fatal = f"{case.name}: expected a tuple (inputs, labels)"
            return []
        inputs, err = _as_int_vector(out[0], n, "inputs")
        labels, err2 = _as_int_vector(out[1], n, "labels")
        if err or err2:
            j.fatal = f"{case.name}: {err or err2}"
            return []
        rows.append(
            (tokens, inputs, labels, np.isin(tokens, specials), mask_id, vocab, p, n >= 1000)
        )
    return rows


def _bert_invariants(rows: list[tuple], j: Judgement) -> None:
    def every(pred) -> tuple[bool, int]:
        bad = sum(int(np.sum(~pred(r))) for r in rows)
        return bad == 0, bad

    ok, bad = every(lambda r: (r[2] == IGNORE) | (r[2] == r[0]))
    j.checks.append(("labels are -100 or the original token", ok, f"{bad} labels are neither"))
    ok, bad = every(lambda r: (r[2] != IGNORE) | (r[1] == r[0]))
    j.checks.append(
        ("positions labelled -100 keep their input token", ok, f"{bad} unlabelled inputs changed")
    )
    ok, bad = every(lambda r: ~r[3] | ((r[2] == IGNORE) & (r[1] == r[0])))
    j.checks.append(
        (
            "special tokens are never selected (label -100, input unchanged)",
            ok,
            f"{bad} special positions were selected or changed",
        )
    )
    ok, bad = every(lambda r: (r[2] == IGNORE) | (r[1] == r[4]) | ((r[1] >= 0) & (r[1] < r[5])))
    j.checks.append(
        (
            "selected inputs are mask_id or an id in [0, vocab_size)",
            ok,
            f"{bad} inputs out of range",
        )
    )


def _bert_selection_rate(long_rows: list[tuple], j: Judgement) -> float:
    """The share of ordinary tokens labelled, checked against p; returns the share."""
    ordinary = [~r[3] for r in long_rows]
    n_ord = sum(int(np.sum(o)) for o in ordinary)
    labelled = sum(int(np.sum((r[2] != IGNORE) & o)) for r, o in zip(long_rows, ordinary))
    expected_sel = sum(r[6] * np.sum(o) for r, o in zip(long_rows, ordinary))
    sd_sel = np.sqrt(sum(r[6] * (1 - r[6]) * np.sum(o) for r, o in zip(long_rows, ordinary)))
    z_sel = (labelled - expected_sel) / sd_sel
    rate, want_rate = labelled / n_ord, expected_sel / n_ord
    j.checks.append(
        (
            "selection rate ≈ p over ordinary tokens",
            abs(z_sel) <= Z_BOUND,
            f"{100 * rate:.1f}% labelled, expected {100 * want_rate:.1f}% (z = {z_sel:+.1f})",
        )
    )
    return rate


def _bert_split(long_rows: list[tuple], j: Judgement) -> tuple[int, int]:
    """The 80/10/10 split of the selected tokens and the uniformity of the random ids; returns
    (selected, masked) counts."""
    sel = [(r[2] != IGNORE) & ~r[3] for r in long_rows]
    n_sel = sum(int(np.sum(s)) for s in sel)
    n_mask = sum(int(np.sum(r[1][s] == r[4])) for r, s in zip(long_rows, sel))
    n_keep = sum(int(np.sum(r[1][s] == r[0][s])) for r, s in zip(long_rows, sel))
    n_other = n_sel - n_mask - n_keep
    # a "random" replacement may land on mask_id or on the original token (probability 1/V each)
    e_mask = sum(float(np.sum(s)) * (0.8 + 0.1 / r[5]) for r, s in zip(long_rows, sel))
    e_keep = sum(float(np.sum(s)) * (0.1 + 0.1 / r[5]) for r, s in zip(long_rows, sel))
    split_ok = all(
        _within(c, n_sel, e / max(n_sel, 1))[0]
        for c, e in ((n_mask, e_mask), (n_keep, e_keep), (n_other, n_sel - e_mask - e_keep))
    )
    shares = (
        f"{100 * n_mask / max(n_sel, 1):.1f}% mask_id, {100 * n_other / max(n_sel, 1):.1f}% random, "
        f"{100 * n_keep / max(n_sel, 1):.1f}% unchanged"
    )
    j.checks.append(
        (
            "among selected tokens: 80% mask_id, 10% random id, 10% unchanged",
            split_ok,
            f"{shares} of {n_sel} selected",
        )
    )
    j.checks.append(
        (
            "random replacements uniform over [0, vocab_size)",
            *_bert_uniform(long_rows, sel, split_ok),
        )
    )
    return n_sel, n_mask


def _bert_uniform(
    long_rows: list[tuple], sel: list[np.ndarray], split_ok: bool
) -> tuple[bool, str]:
    """The random replacements (ids other than mask_id and the original): their mean over a large
    vocabulary, and every id of a small one showing up. (passed, detail)"""
    ok, notes = True, []
    for vocab in sorted({r[5] for r in long_rows}):
        rows = [(r, s) for r, s in zip(long_rows, sel) if r[5] == vocab]
        others = np.concatenate([r[1][s & (r[1] != r[4]) & (r[1] != r[0])] for r, s in rows])
        if others.size < 30:
            ok = ok and split_ok
            notes.append("too few random replacements to check")
            continue
        in_range = bool(others.min() >= 0 and others.max() < vocab)
        if vocab <= 50:  # about 25 draws per id: each must come up
            missing = sorted(set(range(vocab)) - {rows[0][0][4]} - {int(x) for x in others})
            ok = ok and in_range and not missing
            notes.append(
                f"vocab_size {vocab}: ids never drawn {missing[:5]}"
                if missing
                else f"vocab_size {vocab}: every id drawn"
            )
            continue
        mean, want_mean = float(others.mean()), (vocab - 1) / 2
        sd = np.sqrt((vocab**2 - 1) / 12 / others.size)
        ok = ok and in_range and abs(mean - want_mean) <= Z_BOUND * sd
        notes.append(f"mean random id {mean:.0f}, expected about {want_mean:.0f}")
    return bool(ok), "; ".join(notes)


def _bert_mistakes(
    rows: list[tuple], long_rows: list[tuple], rate: float, n_sel: int, n_mask: int
) -> list[str]:
    """The mistake named from the observed statistics, each only on its own signature: labels equal
    to the original token nearly everywhere (not just "never -100": a wrong ignore label is not
    this); specials labelled at about the selection rate while unlabelled inputs stay unchanged
    (not random ids spilling onto specials) and ordinary tokens selected too (not only the
    specials); every selected token the mask id."""
    special_rows = [r for r in rows if np.any(r[3])]
    n_spec = sum(int(np.sum(r[3])) for r in special_rows)
    spec_labelled = sum(int(np.sum(r[3] & (r[2] != IGNORE))) for r in special_rows)
    ordinary = [~r[3] for r in long_rows]
    n_ord = sum(int(np.sum(o)) for o in ordinary)
    changed = sum(int(np.sum((r[1] != r[0]) & o)) for r, o in zip(long_rows, ordinary)) / n_ord
    original = sum(int(np.sum((r[2] == r[0]) & o)) for r, o in zip(long_rows, ordinary)) / n_ord
    if original > 0.97 and changed < 0.5:
        return ["bert-labels-all-positions"]
    found = []
    unlabelled_changed = sum(int(np.sum((r[2] == IGNORE) & (r[1] != r[0]))) for r in rows)
    if (
        n_spec
        and 0.02 * n_spec < spec_labelled < 0.5 * n_spec
        and unlabelled_changed == 0
        and rate > 0.05
    ):
        found.append("bert-masks-specials")
    if n_sel and n_mask / n_sel > 0.97:
        found.append("bert-mask-no-random-or-keep")
    return found


# --------------------------------------------------------------------------- next-token targets


def _next_token_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([604, seed])
    cases = shown("two padded rows, pad_id 0", np.array([[5, 6, 7, 0], [8, 9, 0, 0]]), 0)
    for i, (B, T, pad) in enumerate(((3, 7, 0), (4, 9, 99), (2, 12, 1))):
        tokens = rng.integers(2, 99, size=(B, T))  # never pad (0, 1 or 99) by chance
        tokens[tokens == pad] = 50
        for b in range(B):
            length = int(rng.integers(2, T + 1)) if b else T - 2  # row 0 always padded
            tokens[b, length:] = pad
        which = {
            0: "pad_id 0 as in the visible case",
            1: "a pad_id other than 0",
            99: "a pad_id above every real token",
        }[pad]
        cases.append(
            Case(f"hidden batch {i + 1}: B={B}, T={T}, right-padded rows, {which}", (tokens, pad))
        )
    # ids above 256 (CPython shares one int object only for -5 … 256: `t is pad_id` fails here)
    edge = _edge_rng(604, seed)
    pad = int(edge.integers(300, 1000))
    tokens = edge.integers(257, 1000, size=(3, 8))
    tokens[tokens == pad] = pad + 1
    for b, length in enumerate((5, int(edge.integers(2, 9)), 1)):  # the last: one real token
        tokens[b, length:] = pad
    cases.append(
        Case(f"domain edge: token ids above 256 and pad_id {pad}, B=3, T=8", (tokens, pad))
    )
    return cases


def _targets_not_shifted(tokens, pad_id):
    """lm-targets-not-shifted: the target at t is the input token itself.

    Natural forms: inputs tokens[:, :-1] with targets equal to them, or no slicing at all
    (inputs and targets both the whole (B, T) row).
    """
    inputs, _ = masking.next_token_targets(tokens, pad_id)
    whole = np.asarray(tokens).copy()
    return AnyOf(
        (inputs, np.where(inputs == pad_id, IGNORE, inputs)),
        (whole, np.where(whole == pad_id, IGNORE, whole)),
    )


def _inputs_not_truncated(tokens, pad_id):
    """lm-inputs-not-truncated: the targets right, the inputs the whole (B, T) rows."""
    _, targets = masking.next_token_targets(tokens, pad_id)
    return np.asarray(tokens).copy(), targets


def _targets_padding_kept(tokens, pad_id):
    """lm-targets-padding-kept: pad ids stay as targets."""
    inputs, _ = masking.next_token_targets(tokens, pad_id)
    return inputs, np.asarray(tokens)[:, 1:].copy()


# --------------------------------------------------------------------------- T5 span corruption

# Raffel et al. (2020), Figure 2: "Thank you for inviting me to your party last week ."
T5_WORDS = ("Thank", "you", "for", "inviting", "me", "to", "your", "party", "last", "week", ".")
T5_SENTINELS = [32099, 32098, 32097]  # <extra_id_0>, <extra_id_1>, <extra_id_2>: down from the top


def _random_spans(rng: np.random.Generator, n: int, n_spans: int) -> list[tuple[int, int]]:
    """Sorted, non-empty, non-overlapping spans with at least one kept token between two spans."""
    while True:
        starts = sorted(int(s) for s in rng.choice(n, size=n_spans, replace=False))
        lengths = [int(x) for x in rng.integers(1, 4, size=n_spans)]
        ends = [s + k for s, k in zip(starts, lengths)]
        if ends[-1] <= n and all(e < s for e, s in zip(ends, starts[1:])):
            return list(zip(starts, lengths))


def _span_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([606, seed])
    cases = shown(
        "T5's example: spans 'for inviting' and 'last'",
        list(range(len(T5_WORDS))),
        [(2, 2), (8, 1)],
        T5_SENTINELS,
    )
    V = 500
    for i, (n, n_spans, extra) in enumerate(((14, 3, 0), (20, 2, 3), (9, 1, 0))):
        tokens = [int(t) for t in rng.integers(0, V, size=n)]
        sentinels = [V + 99 - k for k in range(n_spans + 1 + extra)]
        what = f"{n} tokens, {n_spans} span{'s' if n_spans > 1 else ''}"
        what += f", {extra} more sentinel ids than needed" if extra else ""
        cases.append(
            Case(
                f"hidden case {i + 1}: {what}", (tokens, _random_spans(rng, n, n_spans), sentinels)
            )
        )
    edge = [int(t) for t in rng.integers(0, V, size=8)]
    cases.append(
        Case(
            "hidden case 4: spans at the very start and the very end",
            (edge, [(0, 2), (6, 2)], [V + 9, V + 8, V + 7]),
        )
    )
    return cases


def _span(**hooks: Any) -> Callable[..., Any]:
    return lambda tokens, spans, sentinel_ids: masking.span_corruption(
        tokens, spans, sentinel_ids, **hooks
    )


def _span_sentinels_reversed(tokens, spans, sentinel_ids):
    """Sentinels taken from the end of the given list (<extra_id_0> read as the last id)."""
    return masking.span_corruption(tokens, spans, list(sentinel_ids)[::-1])


SPAN_MUTANTS: dict[str, Callable[..., Any]] = {
    "span-no-final-sentinel": _span(final_sentinel=False),
    # the needed sentinels in reverse, or the whole list read from its end
    "span-sentinels-out-of-order": any_form(
        _span(order=lambda s: s[::-1]), _span_sentinels_reversed
    ),
    "span-tokens-left-in-inputs": _span(drop_spans=False),
}


# --------------------------------------------------------------------------- parameter counts

GPT2_SMALL = (50257, 1024, 768, 12, 3072)


def _params_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([605, seed])

    def size() -> tuple[int, int, int, int]:
        V = int(rng.integers(1000, 60000))
        P = int(rng.choice([128, 256, 512, 1024, 2048]))
        d = 64 * int(rng.integers(2, 24))
        L = int(rng.integers(2, 25))
        return V, P, d, L

    def add(name: str, args: tuple[Any, ...], config: dict[str, Any] | None = None) -> None:
        cases.append(Case(name, args, config or {}))

    V, P, d, L = size()
    cases = [
        Case("GPT-2 small (slides)", GPT2_SMALL, visible=True),
        Case(
            "hidden GPT-2-style model: tied head, learned positions, biases, GELU, LayerNorm",
            (V, P, d, L, 4 * d),
        ),
    ]
    V, P, d, L = size()
    add(
        "hidden model: untied head, learned positions, biases, GELU, LayerNorm",
        (V, P, d, L, 4 * d),
        {"tied_embeddings": False},
    )
    V, _, d, L = size()
    add(
        "hidden LLaMA-style model: no learned positions, untied, no biases, SwiGLU, RMSNorm",
        (V, 0, d, L, 256 * int(np.ceil(8 * d / 3 / 256))),
        {"tied_embeddings": False, "biases": False, "ffn": "swiglu", "norm": "rmsnorm"},
    )
    V, P, d, L = size()
    add(
        "hidden model: RMSNorm without biases, tied head, GELU",
        (V, P, d, L, 3 * d),
        {"tied_embeddings": True, "biases": False, "ffn": "gelu", "norm": "rmsnorm"},
    )
    V, P, d, L = size()
    add(
        "hidden model: SwiGLU with biases, tied head, LayerNorm",
        (V, P, d, L, 2 * d, True, True, "swiglu", "layernorm"),
    )
    # a second SwiGLU model with biases: without biases, "two matrices" and "the down matrix
    # missing" count the same, so most SwiGLU cases must have biases to tell them apart
    V, P, d, L = size()
    add(
        "hidden model: SwiGLU with biases, untied head, RMSNorm",
        (V, P, d, L, 3 * d),
        {"tied_embeddings": False, "biases": True, "ffn": "swiglu", "norm": "rmsnorm"},
    )
    return cases


def _with(args: tuple, kwargs: dict, **changes: Any) -> dict[str, int]:
    """The reference count with some arguments changed (positional or keyword)."""
    names = (
        "vocab_size",
        "max_positions",
        "d_model",
        "n_layers",
        "d_ff",
        "tied_embeddings",
        "biases",
        "ffn",
        "norm",
    )
    bound = dict(zip(names, args)) | dict(kwargs) | changes
    return params.transformer_parameter_count(**bound)


PARAMS_MUTANTS: dict[str, Callable[..., Any]] = {
    "params-missing-position-embedding": lambda *a, **k: _with(a, k, max_positions=0),
    "params-lm-head-counted-when-tied": lambda *a, **k: _with(a, k, tied_embeddings=False),
    # every bias left out, or those of the FFN only, or those of attention only
    "params-missing-biases": any_form(
        lambda *a, **k: _with(a, k, biases=False),
        lambda *a, **k: _with(a, k, biased=("attention",)),
        lambda *a, **k: _with(a, k, biased=("ffn",)),
    ),
    # every norm left out, or one of each block's two, or the final one before the LM head
    "params-missing-norms": any_form(
        lambda *a, **k: _with(a, k, norms_in_block=0, final_norm=False),
        lambda *a, **k: _with(a, k, norms_in_block=1),
        lambda *a, **k: _with(a, k, final_norm=False),
    ),
    # SwiGLU counted like the GELU FFN: two matrices (and their biases), not three
    "params-swiglu-two-matrices": lambda *a, **k: _with(a, k, ffn="gelu"),
}


# --------------------------------------------------------------------------- written questions


@dataclass(frozen=True)
class OrderedListQuestion(WrittenQuestion):
    """A list answer whose order matters (grader.written.grading reads `ordered`)."""

    ordered: bool = True


def _gpt2(**changes: Any) -> int:
    return _with(GPT2_SMALL, {}, **changes)["total"]


def _per_block_wrong(numbers: Mapping[str, Any]) -> list[WrongForm]:
    def without_norms(d):
        return params.attention_count(d, True) + params.ffn_count(d, 4 * d, "gelu", True)

    no_norms = params.quadratic_text(without_norms)
    one_norm = params.quadratic_text(lambda d: without_norms(d) + params.norm_count(d, "layernorm"))
    return [
        WrongForm(
            params.per_block_text(biases=False),
            "params-missing-biases",
            "12d² + 4d leaves out the biases: Q, K, V, O add 4d and the FFN d_ff + d = 5d.",
        ),
        WrongForm(
            no_norms,
            "params-missing-norms",
            "12d² + 9d leaves out the block's two LayerNorms (2d each).",
        ),
        WrongForm(
            one_norm,
            "params-missing-norms",
            "12d² + 11d counts 2d for the norms: a block has two LayerNorms of 2d (γ and β).",
        ),
    ]


def _gpt2_wrong(numbers: Mapping[str, Any]) -> list[WrongForm]:
    return [
        WrongForm(
            _gpt2(tied_embeddings=False),
            "params-lm-head-counted-when-tied",
            "this counts the LM head (V × d) although it is tied to the token embedding.",
        ),
        WrongForm(
            _gpt2(max_positions=0),
            "params-missing-position-embedding",
            "this leaves out the 1024 × 768 learned position table.",
        ),
        WrongForm(
            _gpt2(biases=False),
            "params-missing-biases",
            "this leaves out the biases of every linear layer.",
        ),
        WrongForm(
            _gpt2(norms_in_block=0, final_norm=False),
            "params-missing-norms",
            "this leaves out the LayerNorms.",
        ),
        WrongForm(
            _gpt2(norms_in_block=1),
            "params-missing-norms",
            "this counts one LayerNorm per block; each block has two.",
        ),
        WrongForm(
            _gpt2(final_norm=False),
            "params-missing-norms",
            "this leaves out the final LayerNorm before the LM head.",
        ),
    ]


def _estimate(numbers: Mapping[str, Any]) -> int:
    """12 N d²: N × (attention 4d² + FFN 8d²) without biases and norms, d_ff = 4d."""
    d, n_layers = numbers["d_model"], numbers["n_layers"]
    return n_layers * (params.attention_count(d, False) + params.ffn_count(d, 4 * d, "gelu", False))


def _swiglu(numbers: Mapping[str, Any]) -> int:
    return params.ffn_count(numbers["swiglu_d"], numbers["swiglu_d_ff"], "swiglu", False)


def _swiglu_wrong(numbers: Mapping[str, Any]) -> list[WrongForm]:
    return [
        WrongForm(
            params.ffn_count(numbers["swiglu_d"], numbers["swiglu_d_ff"], "gelu", False),
            "params-swiglu-two-matrices",
            "2 d d_ff counts only two of SwiGLU's three matrices.",
        )
    ]


def _bpe_by_hand(numbers: Mapping[str, Any]) -> list[str]:
    merges = bpe.bpe_learn(dict(numbers["bpe_corpus"]), int(numbers["bpe_num_merges"]))
    return [f"{a} {b}" for a, b in merges]


def _bpe_by_hand_wrong(numbers: Mapping[str, Any]) -> list[WrongForm]:
    corpus, k = dict(numbers["bpe_corpus"]), int(numbers["bpe_num_merges"])
    out = []
    for mid, fn in (
        ("bpe-no-end-of-word", _bpe_learn_no_end_of_word),
        ("bpe-unweighted-pair-counts", _bpe_learn_unweighted),
    ):
        wrong = [f"{a} {b}" for a, b in fn(corpus, k)]
        if wrong != _bpe_by_hand(numbers):
            out.append(WrongForm(wrong, mid, "these are the merges of that mistake."))
    return out


WRITTEN: tuple[WrittenQuestion, ...] = (
    written(
        "a6.per_block_formula",
        "Parameters of one GPT-2 block as an expression in d",
        6,
        "per_block_formula",
        "expression",
        lambda n: params.per_block_text(),
        _per_block_wrong,
        symbols=("d", "d_model"),
        relations=("d_model = d",),  # the notes write the model width both ways
    ),
    written(
        "a6.gpt2_small_total",
        "GPT-2 small's total parameter count",
        5,
        "gpt2_small_total",
        "number",
        lambda n: _gpt2(),
        _gpt2_wrong,
        tolerance=Tolerance(rtol=0.0, atol=0.5),
        example="4718592",
    ),
    written(
        "a6.estimate_12nd2",
        "The 12 N d² estimate for your model",
        5,
        "estimate_12nd2",
        "number",
        _estimate,
        tolerance=Tolerance(rtol=5e-3, atol=0.0),
    ),
    written(
        "a6.swiglu_ffn",
        "Parameters of your SwiGLU FFN",
        5,
        "swiglu_ffn",
        "number",
        _swiglu,
        _swiglu_wrong,
        tolerance=Tolerance(rtol=0.0, atol=0.5),
    ),
    choice("a6.rmsnorm", "RMSNorm versus LayerNorm", 4, "rmsnorm_vs_layernorm", "C"),
    choice(
        "a6.bert_80_10_10",
        "Why BERT's 80/10/10",
        4,
        "bert_80_10_10",
        "B",
        (
            "D",
            "bert-mask-no-random-or-keep",
            "replacing every selected token by [MASK] is what 80/10/10 avoids.",
        ),
    ),
    choice("a6.objectives", "GPT, BERT and T5 objectives", 5, "objectives", "D"),
    OrderedListQuestion(
        "a6.bpe_by_hand",
        "BPE by hand on your corpus",
        6,
        "bpe_by_hand",
        "list",
        _bpe_by_hand,
        wrong_forms=_bpe_by_hand_wrong,
    ),
)


# --------------------------------------------------------------------------- the assignment

_question = reference_builder("a6", CODE_FILE)  # every code question (grader/suites/_kit.py)
ASSIGNMENT = Assignment(
    id="a6_pretraining_scale",
    title="a6 — Pretraining and scale: BPE, masking objectives, parameter counts",
    code_file=CODE_FILE,
    questions=(
        _question(
            bpe.bpe_learn,
            "BPE: learn merges",
            12,
            _bpe_learn_cases,
            {
                "bpe-no-end-of-word": _bpe_learn_no_end_of_word,
                "bpe-unweighted-pair-counts": _bpe_learn_unweighted,
                "bpe-ties-first-counted": partial(bpe.bpe_learn, choose=bpe.first_counted_pair),
                "bpe-stops-below-two": partial(bpe.bpe_learn, min_count=2),
                # subword-nmt's convention: "</w>" glued to the last character
                "bpe-end-of-word-glued": partial(bpe.bpe_learn, initial=bpe.glued_symbols),
                # subword-nmt's tie rule: max((count, pair)), the largest pair
                "bpe-ties-largest-pair": partial(bpe.bpe_learn, choose=bpe.largest_pair),
            },
            integer=True,
        ),
        _question(
            bpe.bpe_segment,
            "BPE: segment a word",
            8,
            _bpe_segment_cases,
            {
                "bpe-no-end-of-word": _bpe_segment_no_end_of_word,
                "bpe-end-of-word-glued": partial(bpe.bpe_segment, initial=bpe.glued_symbols),
            },
            integer=True,
        ),
        _question(
            masking.bert_mask,
            "BERT masking (80/10/10)",
            12,
            _bert_cases,
            BERT_MUTANTS,
            integer=True,
            output_names=("inputs", "labels"),
            custom=judge_bert_mask,
        ),
        _question(
            masking.next_token_targets,
            "Next-token inputs and targets",
            8,
            _next_token_cases,
            {
                "lm-targets-not-shifted": _targets_not_shifted,
                "lm-targets-padding-kept": _targets_padding_kept,
                "lm-inputs-not-truncated": _inputs_not_truncated,
            },
            integer=True,
            output_names=("inputs", "targets"),
        ),
        _question(
            params.transformer_parameter_count,
            "Transformer parameter count",
            14,
            _params_cases,
            PARAMS_MUTANTS,
            integer=True,
        ),
        *WRITTEN,
        # Added after the original questions so that their numbers stay as they were
        _question(
            masking.span_corruption,
            "T5 span corruption",
            6,
            _span_cases,
            SPAN_MUTANTS,
            integer=True,
            output_names=("inputs", "targets"),
        ),
    ),
)
