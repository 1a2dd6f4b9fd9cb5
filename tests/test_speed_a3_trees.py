"""a3's table search (`decoding._pools`) and its batched random trees against the reference:
the same final pools, winners and slips as `seq2seq.beam_search` on random trees, every hook
the suite uses, rows of mixed lengths and ties; the trees drawn in batches equal trees drawn
one at a time."""

from __future__ import annotations

from itertools import islice
from typing import Any

import numpy as np
import pytest

from grader.questions import TableLM
from grader.suites.a3_gated_seq2seq import decoding as a3
from reference import seq2seq
from reference.functional import log_softmax


def _reference_pool(lm: TableLM, beam_size: int, max_len: int, **hooks: Any) -> list[Any]:
    """The reference search's final pool, caught through its `rank` hook, tokens as tuples."""
    pool: list[Any] = []

    def catch(tokens: list[int], score: float) -> float:
        pool.append((tuple(tokens), score))
        return 0.0

    seq2seq.beam_search(lm, a3.BOS, a3.EOS, beam_size, max_len, True, rank=catch, **hooks)
    return pool


def _tied_tree(rng: np.random.Generator, n_words: int, depth: int) -> TableLM:
    """A random tree whose rows repeat a few values, so candidates tie often."""
    lm = a3._random_tree(rng, n_words, depth)
    levels = [-0.5, -1.0, -2.0]
    table = {k: tuple(levels[int(x * 7) % 3] for x in row) for k, row in lm.table.items()}
    return TableLM(table=table, default=lm.default)


def _bits(pool: list[Any]) -> list[Any]:
    """The pool with every score as its exact bits (so -0.0 and 0.0, or a rounding, differ)."""
    return [(t, float(s).hex()) for t, s in pool]


HOOKS: list[dict[str, Any]] = [{}, {"start_score": 1.0}, {"start_score": -1.0}, {"keep": 10**6}]


@pytest.mark.parametrize("tied", [False, True])
def test_the_pools_after_every_step_are_the_references(tied: bool) -> None:
    rng = np.random.default_rng(2026)
    for i in range(60):
        n_words, depth = 2 + i % 3, 1 + i % 4
        lm = _tied_tree(rng, n_words, depth) if tied else a3._random_tree(rng, n_words, depth)
        beam_size = 1 + i % 6
        for hook in HOOKS:
            got = list(islice(a3._pools(lm, beam_size, **hook), 7))
            for max_len in range(7):
                want = _reference_pool(lm, beam_size, max_len, **hook)
                assert _bits(got[max_len]) == _bits(want), (i, hook, max_len)


def test_rows_of_mixed_lengths_are_searched_as_the_reference_does() -> None:
    rng = np.random.default_rng(7)
    for i in range(30):
        lm = a3._random_tree(rng, 3, 3)
        table = dict(lm.table)
        short = next(k for k in table if len(k) == 2)
        table[short] = table[short][:3]  # no token 3 or 4 after this prefix
        mixed = TableLM(table=table, default=lm.default)
        assert not a3._one_row_size(mixed)
        for max_len in range(5):
            got = a3._pool_at(mixed, 1 + i % 4, max_len)
            assert _bits(got) == _bits(_reference_pool(mixed, 1 + i % 4, max_len))


def test_the_winners_and_slips_are_the_references() -> None:
    rng = np.random.default_rng(3)
    for i in range(60):
        lm = _tied_tree(rng, 3, 4) if i % 2 else a3._random_tree(rng, 3, 4)
        beam_size, max_len = 1 + i % 5, i % 6
        normed, raw = a3._normed_and_raw(a3._final_pool(lm, beam_size, max_len))
        assert normed == seq2seq.beam_search(lm, a3.BOS, a3.EOS, beam_size, max_len, True)
        assert raw == seq2seq.beam_search(lm, a3.BOS, a3.EOS, beam_size, max_len, False)
        wrong = a3._wrong_beams(lm, beam_size, max_len)
        k = max(beam_size, 1)

        def ref(lm: TableLM = lm, k: int = k, max_len: int = max_len, **hooks: Any) -> list[int]:
            return seq2seq.beam_search(lm, a3.BOS, a3.EOS, k, max_len, True, **hooks)

        assert wrong[:3] == [
            ref(length=len),
            ref(length=lambda t: max(len(t) - 1 - (t[-1] == a3.EOS), 1)),
            ref(length=lambda t: len(t) - 2),
        ]
        assert wrong[9:13] == [
            ref(rank=lambda t, s: -(s / (len(t) - 1) if len(t) > 1 else s)),
            ref(rank=lambda t, s: 0.0),
            ref(rank=lambda t, s: s * (len(t) - 1)),
            ref(rank=lambda t, s: s // max(len(t) - 1, 1)),
        ]


def _one_tree_as_before(rng: np.random.Generator, n_words: int, depth: int) -> TableLM:
    """A random tree built row list by row list, one tree per call."""
    words = list(range(2, 2 + n_words))
    prefixes: list[tuple[int, ...]] = []
    frontier: list[tuple[int, ...]] = [(a3.BOS,)]
    for _ in range(depth):
        prefixes.extend(frontier)
        frontier = [p + (w,) for p in frontier for w in words]
    draws = rng.normal(size=(len(prefixes), 1 + n_words))
    eos_shift = np.array([1.5 if len(p) == 1 else 0.3 for p in prefixes])
    logits = np.concatenate(
        (np.full((len(prefixes), 1), -25.0), draws[:, :1] - eos_shift[:, None], draws[:, 1:] * 1.5),
        axis=1,
    )
    rows = log_softmax(logits).tolist()
    return TableLM(table=dict(zip(prefixes, map(tuple, rows))), default=a3._uniform_row(n_words))


def test_trees_drawn_in_batches_are_trees_drawn_one_at_a_time() -> None:
    for seed in range(5):
        old, new = np.random.default_rng([38, seed]), np.random.default_rng([38, seed])
        stream = a3._tree_stream(new, 3, 4, first=50, then=7)
        for _ in range(80):  # past the first batch, into the small ones
            want, got = _one_tree_as_before(old, 3, 4), next(stream)
            assert got.default == want.default and list(got.table) == list(want.table)
            assert [[x.hex() for x in r] for r in got.table.values()] == [
                [x.hex() for x in r] for r in want.table.values()
            ]


@pytest.mark.parametrize("tied", [False, True])
def test_a_start_score_read_from_the_search_at_0_is_the_references(tied: bool) -> None:
    rng = np.random.default_rng(99)
    implied = 0
    for i in range(80):
        lm = _tied_tree(rng, 3, 4) if tied else a3._random_tree(rng, 3, 4)
        beam_size, max_len = 1 + i % 5, i % 6
        rankings: list[Any] = []
        stages = list(islice(a3._pools(lm, beam_size, rankings=rankings), max_len + 2))
        for start in (1.0, -1.0, 2.5):
            if a3._steady(rankings[:max_len], beam_size):
                implied += 1
                moved = a3._rescored(lm, stages[max_len], start)
                want = _reference_pool(lm, beam_size, max_len, start_score=start)
                assert _bits(moved) == _bits(want), (i, start)
        assert a3._wrong_beams(lm, beam_size, max_len, stages, rankings) == a3._wrong_beams(
            lm, beam_size, max_len
        )
    if tied:
        assert implied < 3 * 80  # ties leave some searches to be run again
    else:
        assert implied > 2 * 80  # and random trees mostly do not
