"""a3's decoding: beam search over hand-built and searched random trees, greedy decoding, and
the token-id renumbering that puts ids past CPython's small-int cache."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator, Sequence
from functools import cache, lru_cache, partial
from itertools import islice
from typing import Any

import numpy as np

from grader.mutants import AnyOf
from grader.questions import Case, TableLM
from reference import seq2seq
from reference.functional import log_softmax

LOG0 = math.log(1e-9)  # "probability 0" in hidden beam trees (finite, so it travels as JSON)

# ---------------------------------------------------------------- beam search

BOS, EOS = 0, 1


def _row(*probs: float) -> tuple[float, ...]:
    """Log-probabilities over (bos, eos, a, b, ...) from probabilities; bos never generated."""
    return (LOG0, *(math.log(p) if p > 0 else LOG0 for p in probs))


def _random_tree(rng: np.random.Generator, n_words: int, depth: int) -> TableLM:
    """Rows for every live prefix up to `depth` tokens: log-softmax of random logits.

    Per prefix, breadth first: one normal draw for eos, then `n_words` for the words; drawn in
    one call for the whole tree (a Generator's normals come out the same one at a time or in an
    array), the same numbers in the same order."""
    return _random_trees(rng, n_words, depth, 1)[0]


def _random_trees(rng: np.random.Generator, n_words: int, depth: int, count: int) -> list[TableLM]:
    """`count` calls of `_random_tree` in one: the normals of all the trees drawn in one call and
    every row's log-softmax taken in one call (row by row, as for one tree)."""
    prefixes, bos_column, eos_shift = _tree_shape(n_words, depth)
    draws = rng.normal(size=(count * len(prefixes), 1 + n_words))  # (count · P, 1 + n_words)
    logits = np.empty((draws.shape[0], 2 + n_words))  # (count · P, 2 + n_words)
    logits[:, :1] = np.tile(bos_column, (count, 1))
    np.subtract(draws[:, :1], np.tile(eos_shift, (count, 1)), out=logits[:, 1:2])
    np.multiply(draws[:, 1:], 1.5, out=logits[:, 2:])
    flat = log_softmax(logits).ravel().tolist()  # one list of floats: faster than rows of lists
    rows = list(zip(*[iter(flat)] * logits.shape[1]))  # the rows as tuples, in order
    default = _uniform_row(n_words)
    size = len(prefixes)
    return [
        TableLM(table=dict(zip(prefixes, rows[k * size : (k + 1) * size])), default=default)
        for k in range(count)
    ]


def _tree_stream(
    rng: np.random.Generator, n_words: int, depth: int, first: int = 320, then: int = 16
) -> Iterator[TableLM]:
    """The trees of successive `_random_tree(rng, n_words, depth)` calls, drawn `first` at
    once, then `then` at a time: the generator may have drawn trees that were not taken, so it
    is not to be used after the stream."""
    yield from _random_trees(rng, n_words, depth, first)
    while True:
        yield from _random_trees(rng, n_words, depth, then)


@cache
def _tree_shape(
    n_words: int, depth: int
) -> tuple[tuple[tuple[int, ...], ...], np.ndarray, np.ndarray]:
    """What every random tree of this size shares: its prefixes (breadth first), bos's logit
    column (P, 1) and the shift taken off eos's logit (P, 1), larger at the first step so that
    an immediate eos is rarer. The arrays are read only."""
    words = list(range(2, 2 + n_words))
    prefixes: list[tuple[int, ...]] = []
    frontier: list[tuple[int, ...]] = [(BOS,)]
    for _ in range(depth):
        prefixes.extend(frontier)
        frontier = [prefix + (w,) for prefix in frontier for w in words]
    bos_column = np.full((len(prefixes), 1), -25.0)
    eos_shift = np.array([1.5 if len(p) == 1 else 0.3 for p in prefixes])[:, None]
    bos_column.flags.writeable = False
    eos_shift.flags.writeable = False
    return tuple(prefixes), bos_column, eos_shift


@cache
def _uniform_row(n_words: int) -> tuple[float, ...]:
    """The row of a prefix the tree does not list: eos and the words equally likely."""
    return tuple(log_softmax(np.array([-25.0] + [0.0] * (1 + n_words))).tolist())


def _beam(lm: TableLM, beam_size: int, max_len: int, normalize: bool) -> list[int]:
    return _table_beam_search(lm, beam_size, max_len, normalize)


def _table_beam_search(
    lm: TableLM, beam_size: int, max_len: int, length_normalize: bool = True, **hooks: Any
) -> list[int]:
    """`seq2seq.beam_search(lm, BOS, EOS, ...)` reading the tree's rows as the plain floats they
    are (its `read` hook) instead of through `lm(prefix)` and an array per call: the hidden
    trees' search runs thousands of these per seed. tests/test_case_stability.py compares the
    two."""
    table, default = lm.table, lm.default
    return seq2seq.beam_search(
        lm,
        BOS,
        EOS,
        beam_size,
        max_len,
        length_normalize,
        read=lambda tokens: table.get(tuple(tokens), default),
        **hooks,
    )


@lru_cache(maxsize=16)  # a seed's search over 150 random trees (0.2 s) runs once per process
def _beam_cases(
    seed: int,
) -> tuple[Case, ...]:  # over 60 lines: hand-built trees, each commented, as data
    rng = np.random.default_rng([38, seed])
    A, B = 2, 3
    # Visible (the reference tests' tree): [eos] wins on the raw score, [a eos] per token.
    visible = TableLM(
        table={(BOS,): _row(0.5, 0.4, 0.1), (BOS, A): _row(0.9, 0.05, 0.05)},
        default=_row(1.0, 0.0, 0.0),
    )
    cases = [
        Case("length normalisation changes the winner", (visible, BOS, EOS, 2, 5), visible=True)
    ]
    # Early stopping: after step 2, [eos] and [a eos] have finished (= beam_size) -> stop, even
    # though continuing [a a] would reach [a a eos] with a better per-token score.
    early = TableLM(
        table={
            (BOS,): _row(0.45, 0.5, 0.05),
            (BOS, A): _row(0.3, 0.6, 0.1),
            (BOS, A, A): _row(0.99, 0.005, 0.005),
        },
        default=_row(0.4, 0.3, 0.3),
    )
    cases.append(
        Case("hidden case 1: stop once beam_size hypotheses finished", (early, BOS, EOS, 2, 4))
    )
    # Nothing finishes within max_len: the best live hypothesis, without eos.
    live = TableLM(
        table={
            (BOS,): _row(0.05, 0.55, 0.4),
            (BOS, A): _row(0.02, 0.38, 0.6),
            (BOS, B): _row(0.01, 0.7, 0.29),
        },
        default=_row(0.1, 0.45, 0.45),
    )
    cases.append(Case("hidden case 2: nothing finishes within max_len", (live, BOS, EOS, 2, 2)))
    cases.append(
        Case(
            "hidden case 3: max_len=0 (no step: the empty hypothesis), length_normalize=False",
            (early, BOS, EOS, 2, 0),
            {"length_normalize": False},
        )
    )
    # Three finished lengths, 1, 2 and 3 tokens, scores -1.2, -1.35, -2.0: the raw score picks
    # [eos], the per-token score [a a eos], a length counted with bos (or a start score of 1) [a eos].
    lengths = TableLM(
        table={
            (BOS,): _row(0.301, 0.6977, 0.0013),
            (BOS, A): _row(0.3716, 0.5488, 0.0796),
            (BOS, A, A): _row(0.3535, 0.45, 0.1965),
        },
        default=_row(0.8, 0.1, 0.1),
    )
    cases.append(
        Case("hidden case 4: finished hypotheses of 1, 2 and 3 tokens", (lengths, BOS, EOS, 3, 4))
    )
    # Scores -1.2, -1.3, -1.7: the raw score picks [eos], the per-token score [a a eos], and a
    # start score of 1 instead of 0 [a eos].
    start = TableLM(
        table={
            (BOS,): _row(0.301, 0.6977, 0.0013),
            (BOS, A): _row(0.3906, 0.55, 0.0594),
            (BOS, A, A): _row(0.476, 0.4, 0.124),
        },
        default=_row(0.8, 0.1, 0.1),
    )
    cases.append(
        Case(
            "hidden case 5: finished hypotheses of 1, 2 and 3 tokens, close scores",
            (start, BOS, EOS, 3, 4),
        )
    )
    # Finished [eos] -1.3, [a a eos] -1.5, [b b b eos] -2.1: the raw score picks [eos], the per-token
    # score [a a eos], a length that leaves eos out [b b b eos].
    four = TableLM(
        table={
            (BOS,): _row(0.2725, 0.5, 0.2275),
            (BOS, A): _row(0.02, 0.6, 0.38),
            (BOS, A, A): _row(0.7435, 0.15, 0.1065),
            (BOS, B): _row(0.075, 0.075, 0.85),
            (BOS, B, B): _row(0.075, 0.075, 0.85),
            (BOS, B, B, B): _row(0.745, 0.15, 0.105),
        },
        default=_row(0.05, 0.5, 0.45),
    )
    cases.append(
        Case("hidden case 6: finished hypotheses of 1, 3 and 4 tokens", (four, BOS, EOS, 3, 4))
    )
    cases.append(
        Case(
            "hidden case 7: finished hypotheses of 1, 3 and 4 tokens, a and b swapped",
            (_swap_words(four, A, B), BOS, EOS, 3, 4),
        )
    )
    fixed = [(c.args[0], c.args[3], c.args[4]) for c in cases]
    trees = _separating_trees(rng, 7, fixed)
    for i, (lm, beam_size) in enumerate(trees):
        n = i + 8
        if i < len(trees) - 1:
            cases.append(
                Case(
                    f"hidden case {n}: beam_size={beam_size}, length normalisation picks the winner",
                    (lm, BOS, EOS, beam_size, 4),
                )
            )
        else:  # the flag must be honoured
            cases.append(
                Case(
                    f"hidden case {n}: beam_size={beam_size}, length_normalize=False",
                    (lm, BOS, EOS, beam_size, 4),
                    {"length_normalize": False},
                )
            )
    return tuple(cases)  # frozen cases: the cached tuple is shared


def _swap_words(lm: TableLM, a: int, b: int) -> TableLM:
    """The same tree with the ids of two words exchanged (in the prefixes and in the rows)."""

    def swap(t: int) -> int:
        return b if t == a else a if t == b else t

    def row(r: tuple[float, ...]) -> tuple[float, ...]:
        return tuple(r[swap(i)] for i in range(len(r)))

    return TableLM(
        table={tuple(swap(t) for t in k): row(v) for k, v in lm.table.items()},
        default=row(lm.default),
    )


Pool = list[tuple[tuple[int, ...], float]]  # (tokens from bos on, summed log-probability)
Ranking = tuple[list[float], list[int]]  # a step's candidate scores, their indices best first


def _pools(
    lm: TableLM,
    beam_size: int,
    start_score: float = 0.0,
    keep: int | None = None,
    uniform: bool | None = None,
    rankings: list[Ranking] | None = None,
) -> Iterator[Pool]:
    """The hypotheses `_table_beam_search(lm, beam_size, max_len, start_score=..., keep=...)`
    ranks at its end (the finished, else the live), in its order, with their scores, for
    max_len = 0, 1, 2, ... in turn: one search, paused after every step, serves every max_len.

    The same arithmetic as the reference: a candidate scores `score + logp[w]`, the candidates
    (live order, then token id) are sorted best first with a stable sort (`reverse=True` keeps
    equal scores in order, as the reference's key `-score` does), the first `keep or
    beam_size` are kept, and those ending in eos finish. Candidates are held as scores until
    kept, so only the kept ones build their tokens. The yielded lists are never changed later.
    `uniform`: whether every row has as many tokens as the default (`_one_row_size`), when
    the caller knows. `rankings`, when a list: per step, the candidates' scores and their
    ranking (`_steady` reads them)."""
    table, default = lm.table, lm.default
    width = keep or beam_size
    size = len(default)
    if uniform is None:
        uniform = _one_row_size(lm)
    live: Pool = [((BOS,), float(start_score))]
    finished: Pool = []
    yield live
    while True:
        scores: list[float] = []  # live order, then token id
        for tokens, score in live:
            scores += map(score.__add__, table.get(tokens, default))  # score + logp[w]
        ranked = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)
        best = ranked[:width]
        if rankings is not None:
            rankings.append((scores, ranked))
        origin = _grid(size, len(live)) if uniform else _origins(table, default, live)
        done: Pool = []
        kept: Pool = []
        for j in best:
            i, w = origin[j]
            if w == EOS:
                done.append((live[i][0] + (w,), scores[j]))
            else:
                kept.append((live[i][0] + (w,), scores[j]))
        if done:
            finished = finished + done
        live = kept
        pool = finished if finished else live
        yield pool
        if len(finished) >= beam_size or not live:
            while True:  # the search has stopped: more steps change nothing
                yield pool


MARGIN = 1e-6  # far above the rounding of a sum of a few log-probabilities (~1e-13)


def _steady(rankings: list[Ranking], width: int) -> bool:
    """Whether a search that recorded these `rankings`, keeping `width` a step, keeps the same
    hypotheses in the same order from any start score.

    A start score adds the same amount to every candidate of a step, so only rounding can
    change the ranking: it cannot when neighbours among the kept candidates and the first one
    dropped are more than MARGIN apart at every step."""
    for scores, ranked in rankings:
        top = [scores[j] for j in ranked[: width + 1]]
        if min(map(operator.sub, top, top[1:]), default=math.inf) <= MARGIN:
            return False
    return True


def _rescored(lm: TableLM, pool: Pool, start_score: float) -> Pool:
    """The hypotheses of `pool` scored from `start_score`: summed one token at a time, as the
    search sums them. A steady search's final pool from another start score (`_steady`)."""
    table, default = lm.table, lm.default
    out: Pool = []
    for tokens, _ in pool:
        score = float(start_score)
        for k in range(1, len(tokens)):
            score = score + table.get(tokens[:k], default)[tokens[k]]
        out.append((tokens, score))
    return out


def _one_row_size(lm: TableLM) -> bool:
    """Whether every row of the tree has as many tokens as its default row."""
    return set(map(len, lm.table.values())) <= {len(lm.default)}


@cache
def _grid(size: int, n_live: int) -> tuple[tuple[int, int], ...]:
    """(live hypothesis, token) of each candidate of a step, in `_pools`' order, when every
    row has `size` tokens."""
    return tuple((i, w) for i in range(n_live) for w in range(size))


def _origins(table: Any, default: tuple[float, ...], live: Pool) -> list[tuple[int, int]]:
    """(live hypothesis, token) of each candidate of a step, in `_pools`' order, for rows of
    any lengths."""
    return [(i, w) for i, (t, _) in enumerate(live) for w in range(len(table.get(t, default)))]


def _pool_at(lm: TableLM, beam_size: int, max_len: int, **hooks: Any) -> Pool:
    """The final pool of a search of at most `max_len` steps (none when max_len <= 0)."""
    return next(islice(_pools(lm, beam_size, **hooks), max(max_len, 0), None))


def _final_pool(lm: TableLM, beam_size: int, max_len: int) -> Pool:
    """The hypotheses `_table_beam_search(lm, beam_size, max_len, ...)` ranks at its end (the
    finished, else the live), in its order, with their scores. Everything but the final
    ranking (the normalisation, the length, `rank`) leaves the search the same, so one search
    serves them all (`_best`)."""
    return _pool_at(lm, max(beam_size, 1), max_len)


def _normed_winner(pool: Pool) -> list[int]:
    """The per-token winner of a final pool, the tokens after bos: the first of the largest
    `seq2seq.hypothesis_key(tokens, score, True)`, as `max` keeps the first of equal keys."""
    keys = list(map(_per_token, pool))
    return list(pool[keys.index(max(keys))][0][1:])


def _normed_and_raw(pool: Pool) -> tuple[list[int], list[int]]:
    """The per-token and the raw-score winners of one search's final pool."""
    return _normed_winner(pool), list(max(pool, key=lambda hyp: hyp[1])[0][1:])


# Final ranking keys of `_wrong_beams`' slips, on a hypothesis (tokens, score): what
# `seq2seq.hypothesis_key(tokens, score, True, length)` gives for each wrong `length`, and
# three wrong keys in place of `hypothesis_key`. `_best` keeps the first of equal keys.
Hyp = tuple[tuple[int, ...], float]


def _over(h: Hyp, n: int) -> float:
    """`seq2seq.hypothesis_key`'s normalised score for a length of `n`: a length of 0 or less
    keeps the score."""
    return h[1] / n if n > 0 else h[1]


def _per_token(h: Hyp) -> float:
    """The right key: the score over the tokens after bos."""
    return _over(h, len(h[0]) - 1)


def _with_bos(h: Hyp) -> float:
    """The length counted with bos."""
    return _over(h, len(h[0]))


def _without_eos(h: Hyp) -> float:
    """The length without a final eos, at least 1."""
    return _over(h, max(len(h[0]) - 1 - (h[0][-1] == EOS), 1))


def _without_eos_or_bos(h: Hyp) -> float:
    """The length without bos and without one more token (eos): 0 tokens keep the score."""
    return _over(h, len(h[0]) - 2)


def _worst_first(h: Hyp) -> float:
    """The per-token score negated."""
    return -_per_token(h)


def _times_length(h: Hyp) -> float:
    """The score multiplied by the tokens after bos."""
    return h[1] * (len(h[0]) - 1)


def _floor_divided(h: Hyp) -> float:
    """The score floor-divided by the tokens after bos (at least 1)."""
    return h[1] // max(len(h[0]) - 1, 1)


def _best(pool: Pool, key: Any) -> list[int]:
    """The tokens after bos of the pool's first hypothesis of the largest key."""
    return list(max(pool, key=key)[0][1:])


def _wrong_beams(
    lm: TableLM,
    beam_size: int,
    max_len: int,
    stages: list[Pool] | None = None,
    rankings: list[Ranking] | None = None,
) -> list[list[int]]:
    """What plausible slips other than the missing normalisation return (each must lose points
    without looking like `beam-no-length-normalization`): the length counted with bos or without
    eos, a nonzero start score, one step short or long, a beam one wider or narrower. One search
    paused after each step gives the pools of max_len - 1, max_len and max_len + 1 steps
    (`stages[s]`: the pool after s steps, from 0 to at least max_len + 1, when the caller has
    them); the slips of the final ranking alone are read from the pool of max_len steps, a
    start score other than 0 from it too where the `rankings` of its first max_len steps show
    that the ranking cannot change (`_steady`), and the others search again."""
    k = max(beam_size, 1)
    uniform = _one_row_size(lm)
    if stages is None:
        stages = list(islice(_pools(lm, k, uniform=uniform), max(max_len, 0) + 2))

    def at(steps: int) -> Pool:
        return stages[max(steps, 0)]

    pool = at(max_len)

    steady = rankings is not None and _steady(rankings[: max(max_len, 0)], k)

    def shifted(start_score: float) -> list[int]:
        if not steady:
            return run(start_score=start_score)
        return _normed_winner(_rescored(lm, pool, start_score))

    def run(width: int = beam_size, steps: int = max_len, **hooks: Any) -> list[int]:
        return _normed_winner(_pool_at(lm, max(width, 1), steps, uniform=uniform, **hooks))

    return [
        _best(pool, _with_bos),
        _best(pool, _without_eos),
        _best(pool, _without_eos_or_bos),  # a hypothesis of 0 tokens by its score
        shifted(1.0),
        shifted(-1.0),
        _normed_winner(at(max_len - 1)),
        _normed_winner(at(max_len + 1)),
        run(width=beam_size + 1),
        run(width=beam_size - 1),
        _best(pool, _worst_first),  # the worst instead of the best
        list(pool[0][0][1:]),  # every key 0: the first finished
        _best(pool, _times_length),  # multiplied by the length
        _best(pool, _floor_divided),  # floor division
        run(keep=10**6),
    ]  # every candidate kept (no pruning to the beam)


def _slip_marks(
    lm: TableLM,
    beam_size: int,
    max_len: int,
    stages: list[Pool] | None = None,
    rankings: list[Ranking] | None = None,
) -> list[int]:
    """Per slip of `_wrong_beams`: 0 right, +1 wrong and unlike the raw-score winner, -1 wrong
    and equal to it (a case where the slip looks like a missing normalisation). `stages`: the
    pools of the search after 0, 1, ... steps (`_pools`) when the caller already has them, and
    the `rankings` it recorded."""
    if stages is None:
        stages = list(islice(_pools(lm, max(beam_size, 1)), max(max_len, 0) + 2))
    normed, raw = _normed_and_raw(stages[max(max_len, 0)])
    return [
        0 if w == normed else (-1 if w == raw else 1)
        for w in _wrong_beams(lm, beam_size, max_len, stages, rankings)
    ]


def _separating_trees(
    rng: np.random.Generator, n: int, fixed: list[tuple[TableLM, int, int]], pool: int = 150
) -> list[tuple[TableLM, int]]:
    """n random trees (depth 4) where the per-token and the raw score pick different winners,
    chosen greedily from a pool so that every slip of `_wrong_beams`, over these and the `fixed`
    cases, fails more cases where it differs from the raw-score winner than cases where it
    coincides with it: it is docked and not read as a missing normalisation. The trees are
    drawn from `rng` in batches (`_tree_stream`): rng is spent afterwards.

    One search per tree, paused after each step (`_pools`), gives both winners, the ranking
    slips, the slips of one step short or long and mostly those of a start score other than 0
    (`_steady`): 4 to 6 searches per kept tree, 1 per rejected one; tests/test_speed_cases.py
    holds a digest of the cases the earlier form built for 200 keys."""
    trees = []
    stream = _tree_stream(rng, n_words=3, depth=4)  # rng is not drawn from after this
    while len(trees) < pool:
        beam_size = 3 + len(trees) % 3  # up to 5 finished hypotheses: many plausible answers
        lm = next(stream)
        rankings: list[Ranking] = []
        search = _pools(lm, beam_size, uniform=True, rankings=rankings)  # one row size
        stages = list(islice(search, 5))  # after 0 to 4 steps
        normed, raw = _normed_and_raw(stages[4])
        if normed != raw:
            stages.append(next(search))  # a fifth step, for the slip of one step too many
            trees.append((lm, beam_size, _slip_marks(lm, beam_size, 4, stages, rankings)))
    fixed_marks = [_slip_marks(*f) for f in fixed]
    failed = [sum(m != 0 for m in col) for col in zip(*fixed_marks)]  # per slip
    like_raw = [sum(m < 0 for m in col) for col in zip(*fixed_marks)]
    chosen: list[int] = []
    for _ in range(n):

        def gain(i: int, failed: list[int] = failed, like_raw: list[int] = like_raw) -> float:
            short = [
                f == 0 or 2 * r >= f for f, r in zip(failed, like_raw)
            ]  # not docked, or read as raw
            return sum(
                (5.0 if need else 1.0) if m > 0 else -6.0 if m < 0 else 0.0
                for m, need in zip(trees[i][2], short)
            )

        def harmless(i: int, failed: list[int] = failed, like_raw: list[int] = like_raw) -> bool:
            """No slip this tree shows as the raw winner ends up read as raw in half its failures."""
            return all(
                m >= 0 or 2 * (r + 1) < f + 1 for m, f, r in zip(trees[i][2], failed, like_raw)
            )

        clean = [i for i in range(len(trees)) if i not in chosen and harmless(i)]
        best = max(clean or [i for i in range(len(trees)) if i not in chosen], key=gain)
        chosen.append(best)
        failed = [f + (m != 0) for f, m in zip(failed, trees[best][2])]
        like_raw = [r + (m < 0) for r, m in zip(like_raw, trees[best][2])]
    picked = [(trees[i][0], trees[i][1]) for i in chosen]
    return picked


def _beam_domain_cases(seed: int) -> tuple[Case, ...]:
    """The tree cases, then the domain's edges: the tree of finished lengths 1, 2 and 3 with one
    step, a beam wider than the vocabulary, an eos candidate that takes a place in the beam, no
    step at all with length normalisation on (a hypothesis of 0 tokens keeps its raw score, no
    division by 0), the tree of finished lengths 1, 2 and 3 with every token id above 256
    (`tokens[-1] is eos` no longer finishes a hypothesis) and the same tree with eos the highest
    id (a finish tested by the ids' order)."""
    cases = tuple(_beam_cases(seed))
    rng = np.random.default_rng([381, seed])
    lengths = next(c for c in cases if "finished hypotheses of 1, 2 and 3 tokens" in c.name)
    lm, bos, eos, beam_size, max_len = lengths.args
    early = next(c for c in cases if "stop once beam_size" in c.name).args[0]
    vocab = len(early.default)
    wide = vocab + 2  # every candidate kept at the first step (a top-k of beam_size raises)
    ids = _large_ids(rng, len(lm.default))
    # eos renamed above every word (bos keeps 0): a test of the id's order, `tokens[-1] <= eos`,
    # finishes every hypothesis where eos was the lowest id that can be generated.
    last = [0, len(lm.default) - 1, *range(1, len(lm.default) - 1)]
    n = sum(not c.visible for c in cases)
    return (
        *cases,
        Case(f"hidden case {n + 1}: max_len=1 (one step)", (lm, BOS, EOS, beam_size, 1)),
        Case(
            f"hidden case {n + 2}: a beam of {wide}, wider than the {vocab} tokens of the vocabulary",
            (early, BOS, EOS, wide, 4),
        ),
        Case(
            f"hidden case {n + 3}: a candidate ending in eos takes one of the beam's places",
            (SLOT_TREE, BOS, EOS, 2, 3),
        ),
        Case(
            f"hidden case {n + 4}: max_len=0 with length normalisation",
            (lm, BOS, EOS, beam_size, 0),
        ),
        Case(
            f"hidden case {n + 5}: finished hypotheses of 1, 2 and 3 tokens, ids above 256",
            (_renumbered(lm, ids), ids[bos], ids[eos], beam_size, max_len),
        ),
        Case(
            f"hidden case {n + 6}: finished hypotheses of 1, 2 and 3 tokens, eos the highest id",
            (_renumbered(lm, last), last[bos], last[eos], beam_size, max_len),
        ),
    )


# [eos] (.4) finishes at step 1 and takes one of the two places, [a] (.35) the other: [a a] and
# [a eos] follow, and [eos] wins (-0.92 per token against -1.47). When finished hypotheses leave
# the beam (fairseq), [b] (.25) stays live too and [b eos] (-0.72 per token) wins.
SLOT_TREE = TableLM(
    table={
        (BOS,): _row(0.4, 0.35, 0.25),
        (BOS, 2): _row(0.15, 0.75, 0.1),  # no tie at the beam's edge (tie order is unspecified)
        (BOS, 3): _row(0.95, 0.025, 0.025),
    },
    default=_row(0.4, 0.3, 0.3),
)


def _beam_no_normalization(next_log_probs, bos, eos, beam_size, max_len, length_normalize=True):
    return seq2seq.beam_search(next_log_probs, bos, eos, beam_size, max_len, length_normalize=False)


def _beam_eos_dropped(next_log_probs, bos, eos, beam_size, max_len, length_normalize=True):
    """eos's log-probability left out of a finished score: taken off when the hypothesis
    finishes, or read as 0 from the start (so eos also ranks as certain)."""

    def eos_certain(tokens: list[int]) -> list[float]:
        row = np.asarray(next_log_probs(list(tokens)), dtype=np.float64).tolist()
        row[eos] = 0.0
        return row

    args = (next_log_probs, bos, eos, beam_size, max_len, length_normalize)
    return AnyOf(
        seq2seq.beam_search(*args, finish=lambda score, eos_logp: score - eos_logp),
        seq2seq.beam_search(*args, read=eos_certain),
    )


def _beam_fairseq(next_log_probs, bos, eos, beam_size, max_len, length_normalize=True):
    """fairseq's step: finished hypotheses leave the beam, beam_size live ones go on."""
    return seq2seq.beam_search(
        next_log_probs,
        bos,
        eos,
        beam_size,
        max_len,
        length_normalize,
        select=seq2seq.fairseq_select,
    )


def _beam_one_step(next_log_probs, bos, eos, beam_size, max_len, length_normalize=True):
    """The stop test inverted (`if len(finished) < beam_size: break`, `if live: break`): the
    search ends after its first step, the winner chosen among what that step kept."""
    return seq2seq.beam_search(
        next_log_probs, bos, eos, beam_size, min(max_len, 1), length_normalize
    )


def _beam_flag_inverted(next_log_probs, bos, eos, beam_size, max_len, length_normalize=True):
    """`if not length_normalize` where `if length_normalize` belongs."""
    return seq2seq.beam_search(next_log_probs, bos, eos, beam_size, max_len, not length_normalize)


# Conventions and slips named beside the missing normalisation (the cases do not depend on them).
# A search stopped after one step returns [eos] wherever eos is among the first step's best, as
# a dropped eos score does (its finished [eos] scores 0, the best there is): named apart by the
# trees where nothing finishes. The inverted flag is the missing normalisation on every case but
# the one with `length_normalize=False`.
BEAM_MUTANTS = {
    "beam-no-length-normalization": _beam_no_normalization,
    "beam-eos-score-dropped": _beam_eos_dropped,
    "beam-finished-leave-the-beam": _beam_fairseq,
    "beam-stops-after-first-step": _beam_one_step,
    "beam-length-normalize-inverted": _beam_flag_inverted,
}


# ---------------------------------------------------------------- greedy decoding


def _greedy_tree(rng: np.random.Generator, n_words: int, depth: int, tie: bool) -> TableLM:
    """Rows for every prefix up to `depth` tokens; probabilities apart by at least 0.02 (float32
    work picks the same argmax), or with an exact tie for the best token when `tie`."""
    words = list(range(2, 2 + n_words))
    table: dict[tuple[int, ...], tuple[float, ...]] = {}
    frontier: list[tuple[int, ...]] = [(BOS,)]
    for step in range(depth):
        nxt = []
        for prefix in frontier:
            while True:
                p = rng.dirichlet(np.ones(1 + n_words))  # over (eos, words)
                p[0] *= 0.3 if step == 0 else 1.0
                p /= p.sum()
                top = np.sort(p)[::-1]
                if top[0] - top[1] > 0.02:
                    break
            if tie and step == 0:
                best = int(np.argmax(p[1:])) + 1
                other = 1 + (best % n_words)  # another word, ties with the best
                p[other] = p[best]
                p /= p.sum()
            table[prefix] = _row(*(float(x) for x in p))
            nxt.extend(prefix + (w,) for w in words)
        frontier = nxt
    return TableLM(table=table, default=_row(*([1.0 / (1 + n_words)] * (1 + n_words))))


def _greedy_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([39, seed])
    A, B = 2, 3
    # The garden path of the notes' "greedy can't undo a bad choice": a (0.6) then eos (0.5) is
    # P = 0.30; b (0.4) then eos (1.0) is P = 0.40, which greedy never sees.
    garden = TableLM(
        table={
            (BOS,): _row(0.0, 0.6, 0.4),
            (BOS, A): _row(0.5, 0.25, 0.25),
            (BOS, B): _row(1.0, 0.0, 0.0),
        },
        default=_row(1.0, 0.0, 0.0),
    )
    tie = TableLM(
        table={
            (BOS,): _row(0.1, 0.45, 0.45),
            (BOS, A): _row(0.7, 0.2, 0.1),
            (BOS, B): _row(0.2, 0.1, 0.7),
        },
        default=_row(0.8, 0.1, 0.1),
    )
    eos_early = TableLM(
        table={(BOS,): _row(0.2, 0.5, 0.3), (BOS, A): _row(0.6, 0.3, 0.1)},
        default=_row(0.1, 0.2, 0.7),
    )  # after eos the default row continues with b
    cases = [
        Case("the garden path: greedy takes a, then eos", (garden, BOS, EOS, 5), visible=True),
        Case("hidden case 1: two tokens tie for the first step", (tie, BOS, EOS, 4)),
        Case("hidden case 2: eos at step 2, max_len 6", (eos_early, BOS, EOS, 6)),
    ]
    cases.append(
        Case("hidden case 3: max_len 1", (_greedy_tree(rng, 3, 1, tie=False), BOS, EOS, 1))
    )
    cases.append(
        Case(
            "hidden case 4: a random tree whose first step is a tie, max_len 4",
            (_greedy_tree(rng, 3, 4, tie=True), BOS, EOS, 4),
        )
    )
    n_words = int(rng.integers(3, 5))
    cases.append(
        Case(
            f"hidden case 5: a random tree over {n_words} words, max_len 4 (may end without eos)",
            (_greedy_tree(rng, n_words, 4, tie=False), BOS, EOS, 4),
        )
    )
    # Token ids past CPython's small-int cache (> 256): `w is eos` no longer stops.
    ids = _large_ids(rng, 4)
    cases.append(
        Case(
            "hidden case 6: eos at step 2, token ids above 256",
            (_renumbered(eos_early, ids), ids[BOS], ids[EOS], 6),
        )
    )
    return cases


def _large_ids(rng: np.random.Generator, n: int) -> list[int]:
    """n increasing token ids above 256 (their order, so which id wins a tie, kept)."""
    return sorted(int(i) for i in rng.choice(np.arange(257, 400), size=n, replace=False))


def _renumbered(lm: TableLM, ids: Sequence[int]) -> TableLM:
    """The same model with token i renamed ids[i], in a vocabulary of max(ids) + 1 tokens where
    every other id has probability e^-60."""
    V = max(ids) + 1

    def row(r: tuple[float, ...]) -> tuple[float, ...]:
        out = np.full(V, -60.0)
        out[list(ids[: len(r)])] = r
        return tuple(float(x) for x in out)

    return TableLM(
        table={tuple(ids[t] for t in k): row(v) for k, v in lm.table.items()},
        default=row(lm.default),
    )


GREEDY_MUTANTS = {
    "eos-compared-by-identity": partial(seq2seq.greedy_decode, is_eos=seq2seq.small_int_identity),
    "greedy-returns-bos": partial(seq2seq.greedy_decode, keep_bos=True),
    "greedy-ignores-eos": partial(seq2seq.greedy_decode, stop_at_eos=False),
    "greedy-ties-to-larger-id": partial(seq2seq.greedy_decode, choose=seq2seq.last_argmax),
}
