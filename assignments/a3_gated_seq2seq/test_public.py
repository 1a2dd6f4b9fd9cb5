"""Public tests for a3: run `python -m pytest -q` in this folder.

They check the notes' worked numbers and simple properties. Passing them is a good sign,
not a guarantee: the grader runs more (hidden) cases with other shapes and numbers.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from gated_seq2seq import (
    additive_scores,
    attend,
    beam_search,
    corpus_bleu,
    dot_scores,
    greedy_decode,
    gru_cell,
    lstm_cell,
    multiplicative_scores,
    reduced_rank_scores,
)

NEG = math.log(1e-9)  # "probability 0"


def arr(x):
    """Your return value as a float64 numpy array (works for tensors and lists too)."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


# ---------------------------------------------------------------- gated cells


def test_lstm_zero_weights_halves_the_cell():
    # All weights and biases 0: every gate is σ(0) = 0.5 and the candidate tanh(0) = 0, so
    # c' = 0.5 c and h' = 0.5 tanh(0.5 c).
    D, H = 3, 2
    c = np.array([1.0, -2.0])
    h_new, c_new = lstm_cell(
        np.ones(D),
        np.ones(H),
        c,
        np.zeros((4 * H, D)),
        np.zeros((4 * H, H)),
        np.zeros(4 * H),
        np.zeros(4 * H),
    )
    np.testing.assert_allclose(arr(c_new), 0.5 * c, rtol=1e-6)
    np.testing.assert_allclose(arr(h_new), 0.5 * np.tanh(0.5 * c), rtol=1e-6)


def test_lstm_blocks_are_i_f_g_o():
    # One unit. Bias rows: i = σ(big) = 1, f = σ(-big) = 0, g = tanh(atanh(0.5)) = 0.5, o = σ(big) = 1,
    # so c' = 0 * c + 1 * 0.5 = 0.5 whatever c was, and h' = tanh(0.5).
    big = 30.0
    bias = np.array([big, -big, math.atanh(0.5), big])
    h_new, c_new = lstm_cell(
        np.zeros(1),
        np.zeros(1),
        np.array([3.0]),
        np.zeros((4, 1)),
        np.zeros((4, 1)),
        bias,
        np.zeros(4),
    )
    np.testing.assert_allclose(arr(c_new), [0.5], rtol=1e-5)
    np.testing.assert_allclose(arr(h_new), [math.tanh(0.5)], rtol=1e-5)


def test_gru_slides_retention_example():
    # Slides: update gate 0.9, old state 0.5, candidate -0.4 -> 0.9*0.5 + 0.1*(-0.4) = 0.41.
    weight_ih = np.array(
        [[0.0], [math.log(9.0)], [math.atanh(-0.4)]]
    )  # z = σ(log 9) = 0.9, n = -0.4
    h_new = gru_cell(
        np.array([1.0]), np.array([0.5]), weight_ih, np.zeros((3, 1)), np.zeros(3), np.zeros(3)
    )
    np.testing.assert_allclose(arr(h_new), [0.41], rtol=1e-6)


def test_gru_shape():
    rng = np.random.default_rng(0)
    D, H = 3, 4
    out = gru_cell(
        rng.normal(size=D),
        rng.normal(size=H),
        rng.normal(size=(3 * H, D)),
        rng.normal(size=(3 * H, H)),
        rng.normal(size=3 * H),
        rng.normal(size=3 * H),
    )
    assert arr(out).shape == (H,)


# ---------------------------------------------------------------- attention


def test_attention_notes_numeric_anchor():
    # Notes §4: e = (2, 0, 1) -> α = (0.67, 0.09, 0.24); h = (1,0), (0,1), (1,1) -> a = (0.91, 0.33).
    H = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    alpha, a = attend(np.array([2.0, 0.0, 1.0]), H)
    np.testing.assert_allclose(arr(alpha), [0.67, 0.09, 0.24], atol=0.005)
    np.testing.assert_allclose(arr(a), [0.91, 0.33], atol=0.005)


def test_attend_is_stable_for_large_scores():
    alpha, a = attend(np.array([1000.0, 1000.0, 0.0]), np.eye(3))
    np.testing.assert_allclose(arr(alpha), [0.5, 0.5, 0.0], atol=1e-6)


def test_score_functions_on_small_numbers():
    s = np.array([1.0, 2.0])
    H = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    np.testing.assert_allclose(arr(dot_scores(s, H)), [1.0, 2.0, 3.0])
    W = np.array([[1.0, 2.0], [0.0, 1.0]])  # s^T W = (1, 4)
    np.testing.assert_allclose(arr(multiplicative_scores(s, H, W)), [1.0, 4.0, 5.0])
    U, V = np.array([[1.0, 1.0]]), np.array([[2.0, -1.0]])  # U s = 3; V h_i = 2, -1, 1
    np.testing.assert_allclose(arr(reduced_rank_scores(s, H, U, V)), [6.0, -3.0, 3.0])
    W1, W2, v = np.eye(2), np.zeros((2, 2)), np.array([1.0, 1.0])  # e_i = tanh(h_i1) + tanh(h_i2)
    t1 = math.tanh(1.0)
    np.testing.assert_allclose(arr(additive_scores(s, H, W1, W2, v)), [t1, t1, 2 * t1], rtol=1e-6)


def test_multiplicative_shapes_non_square():
    rng = np.random.default_rng(1)
    out = multiplicative_scores(
        rng.normal(size=2), rng.normal(size=(4, 5)), rng.normal(size=(2, 5))
    )
    assert arr(out).shape == (4,)


# ---------------------------------------------------------------- beam search


def _lm(table, default):
    rows = {k: np.array(v) for k, v in table.items()}

    def next_log_probs(prefix):
        return rows.get(tuple(prefix), np.array(default)).copy()

    return next_log_probs


def _row(p_eos, p_a, p_b):
    return [NEG] + [math.log(p) if p > 0 else NEG for p in (p_eos, p_a, p_b)]


def test_beam_length_normalisation_changes_the_winner():
    # Tokens 0 = bos, 1 = eos, 2 = a, 3 = b. From [bos]: eos 0.5, a 0.4, b 0.1; after a: eos 0.9.
    # Beam 2 keeps [eos] (finished) and [a]; then [a eos] finishes: two finished, stop.
    # Raw: log 0.5 = -0.69 beats log 0.36 = -1.02. Per token: -1.02 / 2 = -0.51 beats -0.69.
    lm = _lm({(0,): _row(0.5, 0.4, 0.1), (0, 2): _row(0.9, 0.05, 0.05)}, _row(1.0, 0, 0))
    assert [int(t) for t in beam_search(lm, 0, 1, 2, 5)] == [2, 1]
    assert [int(t) for t in beam_search(lm, 0, 1, 2, 5, length_normalize=False)] == [1]


def test_beam_returns_best_live_when_nothing_finishes():
    lm = _lm({}, _row(0.05, 0.6, 0.35))
    assert [int(t) for t in beam_search(lm, 0, 1, beam_size=2, max_len=2)] == [2, 2]


# ---------------------------------------------------------------- BLEU


def test_bleu_perfect_match_is_one():
    cand = ["the", "cat", "sat", "on", "the", "mat"]
    assert corpus_bleu([cand], [[cand]]) == pytest.approx(1.0)


def test_bleu_nltk_documentation_example():
    t = str.split
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
    assert corpus_bleu([hyp1, hyp2], [refs1, refs2]) == pytest.approx(0.5920778868801042, rel=1e-6)


def test_bleu_zero_when_a_precision_is_zero():
    assert corpus_bleu([["a", "b"]], [[["b", "a"]]], max_n=2) == 0.0


def test_bleu_clipping_of_repeated_words():
    # Papineni et al.: "the the the the the the the" against "the cat is on the mat": p_1 = 2/7.
    cand = ["the"] * 7
    refs = [
        ["the", "cat", "is", "on", "the", "mat"],
        ["there", "is", "a", "cat", "on", "the", "mat"],
    ]
    # c = 7, closest reference 7 -> BP = 1; max_n = 1 -> BLEU = p_1.
    assert corpus_bleu([cand], [refs], max_n=1) == pytest.approx(2 / 7)


# ---------------------------------------------------------------- greedy decoding


def test_greedy_takes_the_argmax_and_cannot_undo_it():
    # notes §4: greedy "can't undo a bad choice". From <bos>: a 0.6, b 0.4; after a: <eos> 0.5;
    # after b: <eos> 1.0. Greedy returns [a, <eos>] (P = 0.30), though [b, <eos>] has P = 0.40.
    BOS, EOS, A, B = 0, 1, 2, 3
    table = {(BOS,): [NEG, NEG, math.log(0.6), math.log(0.4)],
             (BOS, A): [NEG, math.log(0.5), math.log(0.25), math.log(0.25)],
             (BOS, B): [NEG, 0.0, NEG, NEG]}

    def next_log_probs(prefix):
        return np.array(table.get(tuple(prefix), [NEG, 0.0, NEG, NEG]))

    assert [int(t) for t in greedy_decode(next_log_probs, BOS, EOS, max_len=5)] == [A, EOS]
    assert [int(t) for t in greedy_decode(next_log_probs, BOS, EOS, max_len=1)] == [A]
