"""reference.seq2seq: the notes' attention anchor, torch scores, hand-built beam-search trees."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from grader.questions import TableLM
from reference.functional import log_softmax
from reference.seq2seq import (
    additive_scores,
    attend,
    beam_search,
    dot_scores,
    greedy_decode,
    multiplicative_scores,
    reduced_rank_scores,
)

NEG = float("-inf")
BOS, EOS, A, B = 0, 1, 2, 3  # the hand-built vocabularies below


def _row(p_eos: float, p_a: float, p_b: float) -> tuple[float, ...]:
    """Log-probabilities over (bos, eos, a, b); bos is never generated."""
    return (NEG, *(math.log(p) if p > 0 else NEG for p in (p_eos, p_a, p_b)))


# ---------------------------------------------------------------- attention


def test_attention_notes_numeric_anchor():
    # Notes §4 "Numeric anchor": e = (2, 0, 1) -> α = (0.67, 0.09, 0.24);
    # h_1 = (1,0), h_2 = (0,1), h_3 = (1,1) -> a = (0.91, 0.33).
    H = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    alpha, a = attend(np.array([2.0, 0.0, 1.0]), H)
    np.testing.assert_allclose(alpha, [0.67, 0.09, 0.24], atol=0.005)
    np.testing.assert_allclose(a, [0.91, 0.33], atol=0.005)
    assert alpha.sum() == pytest.approx(1.0, abs=1e-15)


def test_attend_matches_torch_and_is_stable():
    rng = np.random.default_rng(0)
    scores, H = rng.normal(size=6) * 5, rng.normal(size=(6, 3))
    w = torch.softmax(torch.tensor(scores), dim=0)
    alpha, a = attend(scores, H)
    np.testing.assert_allclose(alpha, w.numpy(), rtol=1e-12)
    np.testing.assert_allclose(a, (w @ torch.tensor(H)).numpy(), rtol=1e-12)
    alpha, a = attend(np.array([1e4, 0.0, 1e4]), H[:3])
    assert np.all(np.isfinite(a))
    np.testing.assert_allclose(alpha, [0.5, 0.0, 0.5], atol=1e-12)


def test_dot_and_multiplicative_scores_match_torch_bilinear():
    rng = np.random.default_rng(1)
    N, d_s, d_h = 5, 3, 4
    s, H, W = rng.normal(size=d_s), rng.normal(size=(N, d_h)), rng.normal(size=(d_s, d_h))
    # torch.nn.functional.bilinear(x1, x2, A)[n] = x1[n]^T A[0] x2[n]
    want = torch.nn.functional.bilinear(
        torch.tensor(s).expand(N, d_s), torch.tensor(H), torch.tensor(W)[None]
    )[:, 0]
    np.testing.assert_allclose(multiplicative_scores(s, H, W), want.numpy(), rtol=1e-12)
    H_same = rng.normal(size=(N, d_s))
    np.testing.assert_allclose(
        dot_scores(s, H_same), (torch.tensor(H_same) @ torch.tensor(s)).numpy(), rtol=1e-12
    )


def test_reduced_rank_equals_multiplicative_with_low_rank_W():
    # (U s)·(V h) = s^T (U^T V) h: a rank-k multiplicative score (notes §4).
    rng = np.random.default_rng(2)
    N, d_s, d_h, k = 4, 5, 3, 2
    s, H, U, V = (
        rng.normal(size=d_s),
        rng.normal(size=(N, d_h)),
        rng.normal(size=(k, d_s)),
        rng.normal(size=(k, d_h)),
    )
    want = torch.nn.functional.bilinear(
        torch.tensor(s).expand(N, d_s), torch.tensor(H), torch.tensor(U.T @ V)[None]
    )[:, 0]
    np.testing.assert_allclose(reduced_rank_scores(s, H, U, V), want.numpy(), rtol=1e-12)


def test_additive_scores_match_torch_modules():
    rng = np.random.default_rng(3)
    N, d_s, d_h, k = 4, 3, 5, 6
    s, H = rng.normal(size=d_s), rng.normal(size=(N, d_h))
    lin1 = torch.nn.Linear(d_h, k, bias=False).double()
    lin2 = torch.nn.Linear(d_s, k, bias=False).double()
    out = torch.nn.Linear(k, 1, bias=False).double()
    with torch.no_grad():
        want = out(torch.tanh(lin1(torch.tensor(H)) + lin2(torch.tensor(s))))[:, 0].numpy()
    got = additive_scores(
        s,
        H,
        lin1.weight.detach().numpy(),
        lin2.weight.detach().numpy(),
        out.weight.detach().numpy()[0],
    )
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert got.shape == (N,)


# ---------------------------------------------------------------- beam search


def test_length_normalisation_changes_the_winner():
    # Hand-built tree, beam_size 2:
    #   step 1 from [bos]: eos 0.5, a 0.4, b 0.1  -> keep [eos] (finished, -0.6931), [a] (-0.9163)
    #   step 2 from [bos a]: eos 0.9, a 0.05, b 0.05 -> keep [a eos] (finished, -1.0217), [a a]
    #   two finished = beam_size: stop.
    # Unnormalised: [eos] -0.6931 > [a eos] -1.0217.  Normalised: -0.6931/1 < -1.0217/2 = -0.5108.
    lm = TableLM(
        table={(BOS,): _row(0.5, 0.4, 0.1), (BOS, A): _row(0.9, 0.05, 0.05)},
        default=_row(1.0, 0, 0),
    )
    assert beam_search(lm, BOS, EOS, beam_size=2, max_len=5, length_normalize=True) == [A, EOS]
    assert beam_search(lm, BOS, EOS, beam_size=2, max_len=5, length_normalize=False) == [EOS]


def test_beam_beats_greedy_on_a_garden_path():
    # From [bos]: a 0.6, b 0.4. After a: eos 0.5, a 0.25, b 0.25. After b: eos 1.0.
    # Greedy: a then eos, P = 0.30. Beam 2 keeps [a], [b]; then [b eos] (P = 0.40) and [a eos]
    # (P = 0.30) are the two best candidates, both finished: [b eos] wins either way.
    lm = TableLM(
        table={
            (BOS,): _row(0.0, 0.6, 0.4),
            (BOS, A): _row(0.5, 0.25, 0.25),
            (BOS, B): _row(1.0, 0, 0),
        },
        default=_row(1.0, 0, 0),
    )
    assert greedy_decode(lm, BOS, EOS, max_len=5) == [A, EOS]
    for normalise in (True, False):
        assert beam_search(lm, BOS, EOS, 2, 5, length_normalize=normalise) == [B, EOS]


def test_no_hypothesis_finished_returns_best_live_without_eos():
    # Every prefix: eos 0.1, a 0.6, b 0.3. With max_len 2 and beam 2 the kept candidates are
    # [a] [b], then [a a] (0.36) and [a b] (0.18; ties [b a] and comes first); none ends in eos.
    lm = TableLM(table={}, default=_row(0.1, 0.6, 0.3))
    assert beam_search(lm, BOS, EOS, beam_size=2, max_len=2) == [A, A]
    assert beam_search(lm, BOS, EOS, beam_size=2, max_len=0) == []


def test_beam_stops_early_once_beam_size_finished():
    calls = []
    base = TableLM(table={}, default=_row(0.7, 0.2, 0.1))

    def lm(prefix):
        calls.append(tuple(prefix))
        return base(prefix)

    # beam 1: eos is the best first token, one hypothesis finished = beam_size: stop after one call.
    assert beam_search(lm, BOS, EOS, beam_size=1, max_len=10) == [EOS]
    assert calls == [(BOS,)]


def _random_lm(seed: int, V: int = 5):
    def next_log_probs(prefix):
        rng = np.random.default_rng([seed, *prefix])  # a fixed random distribution per prefix
        return log_softmax(rng.normal(size=V) * 2.0)

    return next_log_probs


@pytest.mark.parametrize("seed", range(6))
def test_beam_size_one_equals_greedy(seed):
    lm = _random_lm(seed)
    for normalise in (True, False):
        assert beam_search(
            lm, 0, 1, beam_size=1, max_len=6, length_normalize=normalise
        ) == greedy_decode(lm, 0, 1, max_len=6)


@pytest.mark.parametrize("seed", range(3))
def test_wide_beam_picks_the_exhaustive_best_finished_output(seed):
    # With beam_size >= V^max_len nothing is pruned, so the finished pool is every sequence that
    # ends in eos within max_len tokens: [eos] and [w, eos] for w != eos. Enumerate it by hand.
    V, max_len = 4, 2
    lm = _random_lm(100 + seed, V)
    finished = [([EOS], lm([BOS])[EOS])] + [
        ([w, EOS], lm([BOS])[w] + lm([BOS, w])[EOS]) for w in range(V) if w != EOS
    ]
    for normalise in (False, True):
        want = max(finished, key=lambda p: p[1] / (len(p[0]) if normalise else 1))[0]
        got = beam_search(
            lm, BOS, EOS, beam_size=V**max_len, max_len=max_len, length_normalize=normalise
        )
        assert got == want


def test_table_lm_reads_rows_and_default():
    lm = TableLM(table={(0, 2): (-1.0, -2.0)}, default=(-0.5, -0.25))
    np.testing.assert_array_equal(lm([0, 2]), [-1.0, -2.0])
    np.testing.assert_array_equal(lm([0]), [-0.5, -0.25])
    lm([0, 2])[0] = 99.0  # a caller cannot corrupt the table
    assert lm([0, 2])[0] == -1.0
