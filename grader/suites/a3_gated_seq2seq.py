"""Hidden suite of a3_gated_seq2seq: LSTM/GRU cells, attention scores, beam search, BLEU.

Every expected value comes from `reference/` (gated, seq2seq, bleu); every mutant is a
reference function with one hook turned (see those modules' docstrings). Hidden cases are
drawn from numpy.random.default_rng([salt, seed]) and chosen so that the reference and each
mutant disagree far beyond the tolerance (non-square shapes, a square non-symmetric W,
pre-activations of order 1 so tanh matters, beam trees where length normalisation changes
the winner, BLEU corpora with repeated words, short candidates and closest != shortest
references, greedy trees with exact ties for the best token, an eos before max_len and none
within it; their probabilities are at least 0.02 apart elsewhere, so float32 work picks the
same argmax).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from functools import cache, lru_cache, partial
from typing import Any

import numpy as np

from grader.mutants import AnyOf
from grader.questions import Assignment, Case, TableLM, WrittenQuestion, WrongForm
from grader.suites._kit import builder
from reference import bleu, gated, seq2seq
from reference.functional import log_softmax

FILE = "gated_seq2seq.py"
CELL_SHORTCUTS = (
    "torch.nn.LSTM*",
    "torch.nn.GRU*",
    "torch.nn.modules.rnn.*",
    "torch._VF.*",
    "torch.lstm*",
    "torch.gru*",
)
LOG0 = math.log(1e-9)  # "probability 0" in hidden beam trees (finite, so it travels as JSON)


def _fixed(*shape: int, salt: int, scale: float = 1.0) -> np.ndarray:
    """Fixed visible numbers, one decimal: the same for every student."""
    return np.round(np.random.default_rng(salt).normal(size=shape) * scale, 1)


# ---------------------------------------------------------------- LSTM / GRU


def _lstm_args(rng: np.random.Generator, D: int, H: int) -> tuple[np.ndarray, ...]:
    return (
        rng.normal(size=D),  # x
        rng.normal(size=H) * 0.8,  # h
        rng.normal(size=H) * 1.5,  # c: large enough that tanh(c_old) and tanh(c_new) differ
        rng.normal(size=(4 * H, D)) * 0.8,  # weight_ih
        rng.normal(size=(4 * H, H)) * 0.8,  # weight_hh
        rng.normal(size=4 * H) * 0.5,  # bias_ih
        rng.normal(size=4 * H) * 0.5,  # bias_hh
    )


def _lstm_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([31, seed])
    D, H = 3, 2
    visible = (
        _fixed(D, salt=310),
        _fixed(H, salt=311),
        _fixed(H, salt=312),
        _fixed(4 * H, D, salt=313),
        _fixed(4 * H, H, salt=314),
        _fixed(4 * H, salt=315, scale=0.5),
        _fixed(4 * H, salt=316, scale=0.5),
    )
    cases = [Case("small example (D=3, H=2)", visible, visible=True)]
    for i, (D, H) in enumerate([(3, 4), (5, 2), (2, 3)]):
        cases.append(
            Case(f"hidden case {i + 1}: D={D}, H={H}, nonzero h and c", _lstm_args(rng, D, H))
        )
    return cases


def _gru_args(rng: np.random.Generator, D: int, H: int) -> tuple[np.ndarray, ...]:
    return (
        rng.normal(size=D),  # x
        rng.normal(size=H),  # h
        rng.normal(size=(3 * H, D)) * 0.9,  # weight_ih
        rng.normal(size=(3 * H, H)) * 0.9,  # weight_hh
        rng.normal(size=3 * H) * 0.5,  # bias_ih
        rng.normal(size=3 * H) * 0.8,  # bias_hh: b_hn inside the reset product matters
    )


def _gru_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([32, seed])
    # The slides' retention example: update gate u = z = 0.9, old state 0.5, candidate -0.4
    # -> 0.9 * 0.5 + 0.1 * (-0.4) = 0.41. One unit; the input x = 1 sets z and n exactly.
    slides = (
        np.array([1.0]),
        np.array([0.5]),
        np.array([[0.0], [math.log(9.0)], [math.atanh(-0.4)]]),
        np.zeros((3, 1)),
        np.zeros(3),
        np.zeros(3),
    )
    cases = [Case("slides' retention example (0.41)", slides, visible=True)]
    for i, (D, H) in enumerate([(3, 4), (4, 2), (2, 5)]):
        cases.append(
            Case(f"hidden case {i + 1}: D={D}, H={H}, nonzero h and b_hn", _gru_args(rng, D, H))
        )
    return cases


# Every wrong reading of torch's i, f, g, o row blocks; the notes' own listing order (f, i, o,
# then the candidate) first.
WRONG_GATE_ORDERS = ("fiog",) + tuple(
    "".join(p) for p in itertools.permutations("ifgo") if "".join(p) not in ("ifgo", "fiog")
)


def _lstm_gate_order(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    return AnyOf(
        *(
            gated.lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, gate_order=order)
            for order in WRONG_GATE_ORDERS
        )
    )


def _lstm_old_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    return gated.lstm_cell(
        x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, output_cell=lambda c_old, c_new: c_old
    )


def _gru_flipped(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return gated.gru_cell(
        x, h, weight_ih, weight_hh, bias_ih, bias_hh, mix=lambda z, n, h: z * n + (1 - z) * h
    )


def _gru_reset_before(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return gated.gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh, reset_after=False)


# ---------------------------------------------------------------- attention scores


def _dot_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([33, seed])
    visible = (np.array([1.0, 2.0]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    cases = [Case("small example", visible, visible=True)]
    for i, (N, d) in enumerate([(5, 3), (2, 6), (4, 4)]):
        cases.append(
            Case(
                f"hidden case {i + 1}: N={N} encoder states, d={d}",
                (rng.normal(size=d), rng.normal(size=(N, d))),
            )
        )
    return cases


def _multiplicative_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([34, seed])
    visible = (
        np.array([1.0, -1.0]),
        np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]),
        np.array([[1.0, 2.0], [0.0, 1.0]]),  # square and not symmetric
    )
    cases = [Case("small example (square, non-symmetric W)", visible, visible=True)]
    # Mostly square non-symmetric W (a transpose changes values), one non-square (d_s != d_h).
    for i, (N, d_s, d_h) in enumerate([(4, 3, 3), (5, 4, 4), (3, 2, 5)]):
        args = (rng.normal(size=d_s), rng.normal(size=(N, d_h)), rng.normal(size=(d_s, d_h)))
        shape = "square non-symmetric W" if d_s == d_h else "non-square W"
        cases.append(Case(f"hidden case {i + 1}: N={N}, d_s={d_s}, d_h={d_h}, {shape}", args))
    return cases


def _reduced_rank_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([35, seed])
    visible = (
        np.array([1.0, 0.0, -1.0]),
        np.array([[1.0, 2.0], [0.0, 1.0]]),
        np.array([[1.0, 0.0, 1.0]]),
        np.array([[2.0, -1.0]]),
    )
    cases = [Case("small example (k=1)", visible, visible=True)]
    for i, (N, d_s, d_h, k) in enumerate([(4, 3, 5, 2), (3, 6, 2, 3), (5, 4, 4, 2)]):
        args = (
            rng.normal(size=d_s),
            rng.normal(size=(N, d_h)),
            rng.normal(size=(k, d_s)),
            rng.normal(size=(k, d_h)),
        )
        cases.append(Case(f"hidden case {i + 1}: N={N}, d_s={d_s}, d_h={d_h}, rank k={k}", args))
    return cases


def _additive_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([36, seed])
    visible = (
        np.array([1.0, -1.0]),
        np.array([[1.0, 0.0, 2.0], [0.0, 1.0, -1.0]]),
        np.array([[0.5, -1.0, 0.0], [1.0, 0.5, 0.5]]),
        np.array([[1.0, 0.0], [0.5, 1.0]]),
        np.array([1.0, -2.0]),
    )
    cases = [Case("small example", visible, visible=True)]
    for i, (N, d_s, d_h, k) in enumerate([(4, 3, 5, 6), (3, 2, 4, 3), (5, 4, 3, 2)]):
        args = (
            rng.normal(size=d_s),
            rng.normal(size=(N, d_h)),
            rng.normal(size=(k, d_h)),  # W1 (k, d_h); pre-activations of order 1: tanh bends
            rng.normal(size=(k, d_s)),  # W2 (k, d_s)
            rng.normal(size=k),
        )
        cases.append(
            Case(f"hidden case {i + 1}: N={N}, d_s={d_s}, d_h={d_h}, attention width k={k}", args)
        )
    return cases


def _attend_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([37, seed])
    anchor = (np.array([2.0, 0.0, 1.0]), np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]))
    cases = [Case("notes' numeric anchor (e = 2, 0, 1)", anchor, visible=True)]
    for i, (N, d) in enumerate([(5, 3), (4, 2)]):
        cases.append(
            Case(
                f"hidden case {i + 1}: N={N} scores, d_h={d}",
                (rng.normal(size=N) * 2, rng.normal(size=(N, d))),
            )
        )
    big = rng.normal(size=4) * 3 + 800.0  # exp(800) overflows: the max shift is needed
    cases.append(
        Case(
            "hidden case 3: large scores (exp overflows without the max shift)",
            (big, rng.normal(size=(4, 3))),
        )
    )
    spread = np.array([800.0, -800.0, 795.0, 0.0, -10.0])[rng.permutation(5)] + np.round(
        rng.normal(size=5), 1
    )
    cases.append(
        Case(
            "hidden case 4: scores from -800 to 800 (a shift by the minimum overflows)",
            (spread, rng.normal(size=(5, 3))),
        )
    )
    return cases


def _multiplicative_transposed(s, H, W):
    return seq2seq.multiplicative_scores(s, H, np.asarray(W).T)


def _additive_no_tanh(s, H, W1, W2, v):
    return seq2seq.additive_scores(s, H, W1, W2, v, activation=lambda u: u)


def _sum_normalize(e: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return e / e.sum()


def _attend_no_softmax(scores, H):
    """Weights without the exponential: the raw scores, or the scores divided by their sum
    (normalised, but a sum-to-one that is not a softmax: negative weights, no exp)."""
    return AnyOf(
        seq2seq.attend(scores, H, normalize=lambda e: e),
        seq2seq.attend(scores, H, normalize=_sum_normalize),
    )


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
    words = list(range(2, 2 + n_words))
    prefixes: list[tuple[int, ...]] = []
    frontier: list[tuple[int, ...]] = [(BOS,)]
    for _ in range(depth):
        prefixes.extend(frontier)
        frontier = [prefix + (w,) for prefix in frontier for w in words]
    draws = rng.normal(size=(len(prefixes), 1 + n_words))  # (P, 1 + n_words)
    eos_shift = np.array(
        [1.5 if len(p) == 1 else 0.3 for p in prefixes]
    )  # an immediate eos is rarer
    logits = np.concatenate(
        (np.full((len(prefixes), 1), -25.0), draws[:, :1] - eos_shift[:, None], draws[:, 1:] * 1.5),
        axis=1,
    )  # (P, 2 + n_words)
    rows = log_softmax(logits).tolist()  # one call for every row of the tree
    return TableLM(table=dict(zip(prefixes, map(tuple, rows))), default=_uniform_row(n_words))


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


def _wrong_beams(lm: TableLM, beam_size: int, max_len: int) -> list[list[int]]:
    """What plausible slips other than the missing normalisation return (each must lose points
    without looking like `beam-no-length-normalization`): the length counted with bos or without
    eos, a nonzero start score, one step short or long, a beam one wider or narrower."""

    def run(k: int = beam_size, steps: int = max_len, **hooks: Any) -> list[int]:
        return _table_beam_search(lm, max(k, 1), steps, True, **hooks)

    def normed(t: list[int], s: float) -> float:
        return s / (len(t) - 1) if len(t) > 1 else s

    return [
        run(length=len),
        run(length=lambda t: max(len(t) - 1 - (t[-1] == EOS), 1)),
        run(length=lambda t: len(t) - 2),  # eos not counted, a hypothesis of 0 tokens by its score
        run(start_score=1.0),
        run(start_score=-1.0),
        run(steps=max_len - 1),
        run(steps=max_len + 1),
        run(k=beam_size + 1),
        run(k=beam_size - 1),
        run(rank=lambda t, s: -normed(t, s)),  # the worst instead of the best
        run(rank=lambda t, s: 0.0),  # the first finished
        run(rank=lambda t, s: s * (len(t) - 1)),  # multiplied by the length
        run(rank=lambda t, s: s // max(len(t) - 1, 1)),  # floor division
        run(keep=10**6),
    ]  # every candidate kept (no pruning to the beam)


def _slip_marks(
    lm: TableLM,
    beam_size: int,
    max_len: int,
    normed: list[int] | None = None,
    raw: list[int] | None = None,
) -> list[int]:
    """Per slip of `_wrong_beams`: 0 right, +1 wrong and unlike the raw-score winner, -1 wrong
    and equal to it (a case where the slip looks like a missing normalisation). `normed`, `raw`:
    the two winners when the caller already searched for them."""
    if normed is None or raw is None:
        normed, raw = _beam(lm, beam_size, max_len, True), _beam(lm, beam_size, max_len, False)
    return [
        0 if w == normed else (-1 if w == raw else 1) for w in _wrong_beams(lm, beam_size, max_len)
    ]


def _separating_trees(
    rng: np.random.Generator, n: int, fixed: list[tuple[TableLM, int, int]], pool: int = 150
) -> list[tuple[TableLM, int]]:
    """n random trees (depth 4) where the per-token and the raw score pick different winners,
    chosen greedily from a pool so that every slip of `_wrong_beams`, over these and the `fixed`
    cases, fails more cases where it differs from the raw-score winner than cases where it
    coincides with it: it is docked and not read as a missing normalisation."""
    trees = []
    while len(trees) < pool:
        beam_size = 3 + len(trees) % 3  # up to 5 finished hypotheses: many plausible answers
        lm = _random_tree(rng, n_words=3, depth=4)
        normed, raw = _beam(lm, beam_size, 4, True), _beam(lm, beam_size, 4, False)
        if normed != raw:
            trees.append((lm, beam_size, _slip_marks(lm, beam_size, 4, normed, raw)))
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
    """The tree cases, then the domain's edges: no step at all with length normalisation on
    (a hypothesis of 0 tokens keeps its raw score, no division by 0), and the tree of finished
    lengths 1, 2 and 3 with every token id above 256 (`tokens[-1] is eos` no longer finishes a
    hypothesis)."""
    cases = tuple(_beam_cases(seed))
    rng = np.random.default_rng([381, seed])
    lengths = next(c for c in cases if "finished hypotheses of 1, 2 and 3 tokens" in c.name)
    lm, bos, eos, beam_size, max_len = lengths.args
    ids = _large_ids(rng, len(lm.default))
    n = sum(not c.visible for c in cases)
    return (
        *cases,
        Case(
            f"hidden case {n + 1}: max_len=0 with length normalisation",
            (lm, BOS, EOS, beam_size, 0),
        ),
        Case(
            f"hidden case {n + 2}: finished hypotheses of 1, 2 and 3 tokens, ids above 256",
            (_renumbered(lm, ids), ids[bos], ids[eos], beam_size, max_len),
        ),
    )


def _beam_no_normalization(next_log_probs, bos, eos, beam_size, max_len, length_normalize=True):
    return seq2seq.beam_search(next_log_probs, bos, eos, beam_size, max_len, length_normalize=False)


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
    return cases


# ---------------------------------------------------------------- written questions


def _attn_scores(v: dict[str, Any]) -> np.ndarray:
    return seq2seq.dot_scores(np.array(v["attention_s"], float), np.array(v["attention_H"], float))


def _attn(v: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    return seq2seq.attend(_attn_scores(v), np.array(v["attention_H"], float))


def _attn_raw(v: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    return seq2seq.attend(_attn_scores(v), np.array(v["attention_H"], float), normalize=lambda e: e)


def _attn_sum(v: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    return seq2seq.attend(
        _attn_scores(v), np.array(v["attention_H"], float), normalize=_sum_normalize
    )


def _no_softmax_forms(v: dict[str, Any], part: int) -> list[WrongForm]:
    """The raw-score weights (part 0) or output (part 1), and the sum-normalised ones when they
    exist (the scores' sum is not 0) and differ from the raw ones (the sum is not 1)."""
    what = (
        "these are the raw scores used as weights",
        "this output weights the h_i by the raw scores",
    )
    forms = [
        WrongForm(
            _attn_raw(v)[part],
            "attention-no-softmax",
            f"{what[part]}: the softmax step is missing.",
        )
    ]
    total = float(_attn_scores(v).sum())
    if total != 0.0 and not math.isclose(total, 1.0):
        what = (
            "these are the scores divided by their sum",
            "this output weights the h_i by the scores divided by their sum",
        )
        forms.append(
            WrongForm(
                _attn_sum(v)[part],
                "attention-no-softmax",
                f"{what[part]}: the softmax exponentiates first, α_i = exp(e_i) / Σ_j exp(e_j).",
            )
        )
    return forms


def _tree_beam(v: dict[str, Any], normalize: bool) -> list[int]:
    def logs(row):
        return tuple(math.log(p) if p > 0 else -math.inf for p in row)

    lm = TableLM(
        table={tuple(k): logs(r) for k, r in v["beam_tree"].items()},
        default=logs(v["beam_default"]),
    )
    return _beam(lm, int(v["beam_size"]), int(v["beam_max_len"]), normalize)


def _bp(v: dict[str, Any], ref_length=bleu.closest_reference_length) -> float:
    cs, refs = v["bleu_candidate_lengths"], v["bleu_reference_lengths"]
    r = sum(ref_length(c, lens) for c, lens in zip(cs, refs))
    return bleu.brevity_penalty(sum(cs), r)


def _greedy_tree_of(v: dict[str, Any]) -> TableLM:
    """The student's two-step tree (ids: 0 <bos>, 1 <eos>, 2 a, 3 b), from variant.py's numbers."""
    p_a, q_a, q_b = float(v["greedy_p_a"]), float(v["greedy_q_a"]), float(v["greedy_q_b"])
    A, B = 2, 3
    return TableLM(
        table={
            (BOS,): _row(0.0, p_a, 1.0 - p_a),
            (BOS, A): _row(q_a, (1 - q_a) / 2, (1 - q_a) / 2),
            (BOS, B): _row(q_b, 1.0 - q_b, 0.0),
        },
        default=_row(1.0, 0.0, 0.0),
    )


def _greedy_vs_best(v: dict[str, Any]) -> list[float]:
    """[P(greedy's output), P(the most probable output ending in <eos> within 2 tokens)]."""
    lm = _greedy_tree_of(v)

    def prob(tokens: list[int]) -> float:
        return math.exp(sum(float(lm([BOS, *tokens[:i]])[t]) for i, t in enumerate(tokens)))

    finished = [[EOS]] + [[w, EOS] for w in (2, 3)]
    greedy = seq2seq.greedy_decode(lm, BOS, EOS, 2)
    return [prob(greedy), max(prob(t) for t in finished)]


def _written(
    name: str,
    title: str,
    points: float,
    answer_kind: str,
    expected: Callable[[dict[str, Any]], Any] | None = None,
    key: str = "",
    **fields: Any,
) -> WrittenQuestion:
    """A written question of a3: id `a3.w_<name>`, answers.toml key `key` (default: the name)."""
    return WrittenQuestion(
        id=f"a3.w_{name}",
        title=title,
        points=points,
        key=key or name,
        answer_kind=answer_kind,  # type: ignore[arg-type]
        expected=expected,
        **fields,
    )


def _answer(text: str) -> Callable[[dict[str, Any]], str]:
    """The same answer for every student."""
    return lambda v: text


def _carry_forms(v: dict[str, Any]) -> list[WrongForm]:
    """The broken steps of the cell-carry derivation, each at its own id."""
    return [
        WrongForm(
            "1",
            "lstm-carry-identity",
            "the cell update does not pass the old cell on unchanged: look at what multiplies c_prev.",
        ),
        WrongForm(
            "o_t (1 - tanh(c_t)^2) f_t",
            "lstm-carry-through-output",
            "this differentiates the hidden state h_t = o_t tanh(c_t), not the cell c_t.",
        ),
        WrongForm(
            "f_t (1 - f_t)",
            "lstm-carry-gate-derivative",
            "this is the derivative of the gate's sigmoid, not the derivative by c_prev.",
        ),
    ]


def _beam_raw_forms(v: dict[str, Any]) -> list[WrongForm]:
    return [
        WrongForm(
            _tree_beam(v, False),
            "beam-no-length-normalization",
            "this is the winner by the raw summed log-probability; the question "
            "divides each finished score by its number of tokens.",
        )
    ]


def _bp_forms(v: dict[str, Any]) -> list[WrongForm]:
    return [
        WrongForm(
            _bp(v, lambda c, lens: min(lens)),
            "bleu-shortest-reference",
            "this uses the shortest reference of each sentence; r sums the closest ones.",
        ),
        WrongForm(
            1.0,
            "bleu-no-brevity-penalty",
            "the candidate corpus is shorter than r, so the penalty exp(1 - r/c) applies.",
        ),
    ]


# What the written questions expect, and the wrong forms they name.
_ABCD = {"choices": ("A", "B", "C", "D")}
_ATTN_WEIGHTS = {
    "expected": lambda v: _attn(v)[0],
    "wrong_forms": lambda v: _no_softmax_forms(v, 0),
}
_ATTN_OUTPUT = {"expected": lambda v: _attn(v)[1], "wrong_forms": lambda v: _no_softmax_forms(v, 1)}
_BEAM_NORM = {
    "expected": lambda v: _tree_beam(v, True),
    "ordered": True,
    "wrong_forms": _beam_raw_forms,
}
_BEAM_RAW = {"expected": lambda v: _tree_beam(v, False), "ordered": True}
_BREVITY = {"expected": _bp, "key": "bleu_brevity_penalty", "wrong_forms": _bp_forms}
_PARAMETERS = ("d_s", "d_h", "k")
# The parameter counts of the three score functions: (name, score, the count in d_s, d_h, k).
PARAMETER_COUNTS = tuple(
    (name, score, {"expected": _answer(count), "symbols": _PARAMETERS})
    for name, score, count in (
        ("multiplicative", "multiplicative", "d_s*d_h"),
        ("reduced_rank", "reduced-rank", "k*(d_s + d_h)"),
        ("additive", "additive", "k*(d_s + d_h) + k"),
    )
)

WRITTEN = (
    _written(
        "lstm_carry",
        "LSTM: the cell-carry derivative",
        3,
        "expression",
        _answer("f_t"),
        # the gates held fixed; c_t and h_t as defined names, so that a derivation may start
        # from d/dc_prev c_t or from the cell update written out
        symbols=("f_t", "i_t", "o_t", "g_t", "c_prev", "c_t", "h_t"),
        relations=("c_t = f_t c_prev + i_t g_t", "h_t = o_t tanh(c_t)"),
        steps=True,
        wrong_forms=_carry_forms,
    ),
    _written("gru_merges", "GRU: what the update gate merges", 3, "choice", _answer("A"), **_ABCD),
    _written("attn_scores", "Attention by hand: scores", 2, "array", _attn_scores),
    _written("attn_weights", "Attention by hand: weights", 3, "array", **_ATTN_WEIGHTS),
    _written("attn_output", "Attention by hand: output", 3, "array", **_ATTN_OUTPUT),
    *(
        _written(f"params_{name}", f"Parameters: {score} score", 2, "expression", **count)
        for name, score, count in PARAMETER_COUNTS
    ),
    _written("beam_normalized", "Beam search by hand: length-normalised", 3, "list", **_BEAM_NORM),
    _written("beam_raw", "Beam search by hand: raw score", 3, "list", **_BEAM_RAW),
    _written("bleu_brevity", "BLEU: brevity penalty by hand", 3, "number", **_BREVITY),
)


# ---------------------------------------------------------------- the assignment


_q = builder("a3", FILE)  # every code question of a3 (grader/suites/_kit.py)


CODE = (
    _q(
        "lstm_cell",
        "LSTM cell (torch.nn.LSTMCell conventions)",
        9,
        "lstm_cell",
        gated.lstm_cell,
        _lstm_cases,
        mutants={"lstm-gate-order": _lstm_gate_order, "lstm-output-uses-old-cell": _lstm_old_cell},
        forbidden=CELL_SHORTCUTS,
        output_names=("h_new", "c_new"),
    ),
    _q(
        "gru_cell",
        "GRU cell (torch.nn.GRUCell conventions)",
        9,
        "gru_cell",
        gated.gru_cell,
        _gru_cases,
        mutants={"gru-reset-before-matmul": _gru_reset_before, "gru-update-flipped": _gru_flipped},
        forbidden=CELL_SHORTCUTS,
    ),
    _q("dot_scores", "Dot-product scores", 3, "dot_scores", seq2seq.dot_scores, _dot_cases),
    _q(
        "multiplicative_scores",
        "Multiplicative scores",
        4,
        "multiplicative_scores",
        seq2seq.multiplicative_scores,
        _multiplicative_cases,
        mutants={"multiplicative-transposed": _multiplicative_transposed},
    ),
    _q(
        "reduced_rank_scores",
        "Reduced-rank multiplicative scores",
        4,
        "reduced_rank_scores",
        seq2seq.reduced_rank_scores,
        _reduced_rank_cases,
    ),
    _q(
        "additive_scores",
        "Additive scores",
        5,
        "additive_scores",
        seq2seq.additive_scores,
        _additive_cases,
        mutants={"additive-missing-tanh": _additive_no_tanh},
    ),
    # No follow-through dependency (issue 19, FT.md): `attend(scores, H)` receives the scores as an
    # argument and calls none of the score functions, and no other a3 function calls an earlier
    # graded function (greedy decoding does not call beam search), so nothing is declared.
    _q(
        "attend",
        "Attention: softmax and weighted sum",
        5,
        "attend",
        seq2seq.attend,
        _attend_cases,
        mutants={"attention-no-softmax": _attend_no_softmax},
        output_names=("alpha", "a"),
    ),
    _q(
        "beam_search",
        "Beam search with length normalisation",
        12,
        "beam_search",
        seq2seq.beam_search,
        _beam_domain_cases,
        mutants={"beam-no-length-normalization": _beam_no_normalization},
        integer=True,
    ),
    _q(
        "corpus_bleu",
        "Corpus BLEU",
        12,
        "corpus_bleu",
        bleu.corpus_bleu,
        _bleu_cases,
        mutants=BLEU_MUTANTS,
    ),
)

# Added after the original questions so that their numbers stay as they were.
GREEDY = (
    _q(
        "greedy",
        "Greedy decoding",
        5,
        "greedy_decode",
        seq2seq.greedy_decode,
        _greedy_cases,
        mutants=GREEDY_MUTANTS,
        integer=True,
    ),
    _written("greedy_vs_best", "Greedy cannot undo a bad choice", 3, "array", _greedy_vs_best),
)

ASSIGNMENT = Assignment(
    id="a3_gated_seq2seq",
    title="a3: Gated RNNs, attention, beam search and BLEU",
    code_file=FILE,
    questions=CODE + WRITTEN + GREEDY,
)
