"""reference.word_vectors against the notes' anchor, torch autograd and finite differences."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from reference.word_vectors import (
    analogy,
    cooccurrence_matrix,
    cosine_similarity,
    glove_loss,
    glove_loss_and_gradient,
    glove_weight,
    naive_softmax_loss_and_gradient,
    neg_sampling_loss_and_gradient,
    noise_distribution,
    skipgram_probabilities,
    softmax,
    svd_embeddings,
)

SEEDS = [0, 1, 2]


def _central_diff(f, x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central finite differences of a scalar f at x, one coordinate at a time."""
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[idx] += eps
        xm[idx] -= eps
        g[idx] = (f(xp) - f(xm)) / (2 * eps)
    return g


# ---------------------------------------------------------------- softmax


def test_softmax_stable_on_huge_logits():
    p = softmax(np.array([1e4, 0.0, -1e4, 1e4]))
    assert np.all(np.isfinite(p))
    assert math.isclose(p.sum(), 1.0, rel_tol=0, abs_tol=1e-12)
    np.testing.assert_allclose(p, [0.5, 0.0, 0.0, 0.5], atol=1e-12)


@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_matches_torch_on_every_axis(axis):
    x = np.random.default_rng(3).normal(size=(4, 5)) * 10
    want = torch.softmax(torch.tensor(x), dim=axis).numpy()
    np.testing.assert_allclose(softmax(x, axis=axis), want, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------- naive softmax skip-gram


def test_skipgram_notes_numeric_anchor():
    # Notes §1 "Numeric anchor": v_c = (1,0), u_a = (2,0), u_b = (0,1), u_c = (1,0);
    # P = (0.67, 0.09, 0.24); true context a: u_a - E[u] = (2,0) - (1.58, 0.09) = (0.42, -0.09).
    # The notes give the gradient of log P(o|c); the handout's grad_v_c is the gradient of the
    # loss -log P(o|c), the same vector with the opposite sign.
    v_c = np.array([1.0, 0.0])
    U = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    np.testing.assert_allclose(skipgram_probabilities(v_c, U), [0.67, 0.09, 0.24], atol=0.005)
    loss, grad_v_c, _ = naive_softmax_loss_and_gradient(v_c, 0, U)
    np.testing.assert_allclose(-grad_v_c, [0.42, -0.09], atol=0.0051)  # 2-decimal rounding
    expected_u = U.T @ skipgram_probabilities(v_c, U)
    np.testing.assert_allclose(expected_u, [1.58, 0.09], atol=0.0051)
    assert loss == pytest.approx(-math.log(0.665), abs=0.01)


def _torch_naive(v_c, o, U):
    v = torch.tensor(v_c, requires_grad=True)
    Ut = torch.tensor(U, requires_grad=True)
    loss = -torch.log_softmax(Ut @ v, dim=0)[o]
    loss.backward()
    return loss.item(), v.grad.numpy(), Ut.grad.numpy()


@pytest.mark.parametrize("seed", SEEDS)
def test_naive_softmax_matches_autograd(seed):
    rng = np.random.default_rng(seed)
    V, d = 7, 4
    v_c, U, o = rng.normal(size=d), rng.normal(size=(V, d)), int(rng.integers(V))
    loss, gv, gU = naive_softmax_loss_and_gradient(v_c, o, U)
    t_loss, t_gv, t_gU = _torch_naive(v_c, o, U)
    assert loss == pytest.approx(t_loss, rel=1e-12)
    np.testing.assert_allclose(gv, t_gv, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gU, t_gU, rtol=1e-10, atol=1e-12)
    assert gv.shape == (d,) and gU.shape == (V, d)


def test_naive_softmax_finite_differences():
    rng = np.random.default_rng(11)
    V, d, o = 5, 3, 2
    v_c, U = rng.normal(size=d), rng.normal(size=(V, d))
    _, gv, gU = naive_softmax_loss_and_gradient(v_c, o, U)
    fd_v = _central_diff(lambda v: naive_softmax_loss_and_gradient(v, o, U)[0], v_c)
    fd_U = _central_diff(lambda W: naive_softmax_loss_and_gradient(v_c, o, W)[0], U)
    np.testing.assert_allclose(gv, fd_v, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gU, fd_U, rtol=1e-6, atol=1e-8)


def test_naive_softmax_large_scores_finite():
    v_c = np.array([100.0, 0.0])
    U = np.array([[50.0, 0.0], [-50.0, 1.0], [0.0, 0.0]])
    loss, gv, gU = naive_softmax_loss_and_gradient(v_c, 1, U)
    assert np.isfinite(loss) and np.all(np.isfinite(gv)) and np.all(np.isfinite(gU))
    assert loss == pytest.approx(10000.0, rel=1e-9)  # -log P = 5000 - (-5000), the rest negligible


# ---------------------------------------------------------------- negative sampling


def _torch_sgns(v_c, o, U, neg):
    v = torch.tensor(v_c, requires_grad=True)
    Ut = torch.tensor(U, requires_grad=True)
    idx = torch.tensor(neg, dtype=torch.long)
    loss = (
        -torch.nn.functional.logsigmoid(Ut[o] @ v)
        - torch.nn.functional.logsigmoid(-(Ut[idx] @ v)).sum()
    )
    loss.backward()
    return loss.item(), v.grad.numpy(), Ut.grad.numpy()


@pytest.mark.parametrize(
    "neg",
    [
        [1, 2, 3, 4],
        [3, 3, 3, 5],  # a repeated negative counts each time
        [0, 2, 0, 6, 6],  # repeats, and o itself drawn as a noise word
    ],
)
def test_sgns_matches_autograd_with_repeated_negatives(neg):
    rng = np.random.default_rng(len(neg) + sum(neg))
    V, d, o = 7, 3, 0
    v_c, U = rng.normal(size=d), rng.normal(size=(V, d))
    loss, gv, gU = neg_sampling_loss_and_gradient(v_c, o, U, np.array(neg))
    t_loss, t_gv, t_gU = _torch_sgns(v_c, o, U, neg)
    assert loss == pytest.approx(t_loss, rel=1e-12)
    np.testing.assert_allclose(gv, t_gv, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gU, t_gU, rtol=1e-10, atol=1e-12)


def test_sgns_repeated_negative_doubles_its_row():
    # Hand check: with one noise word k drawn twice, row k of grad_U is 2 σ(u_k·v_c) v_c.
    v_c = np.array([1.0, 2.0])
    U = np.array([[0.5, 0.0], [0.0, 0.25], [1.0, 1.0]])
    _, _, gU = neg_sampling_loss_and_gradient(v_c, 0, U, np.array([1, 1]))
    sig = 1.0 / (1.0 + math.exp(-0.5))  # u_1·v_c = 0.5
    np.testing.assert_allclose(gU[1], 2 * sig * v_c, rtol=1e-12)
    np.testing.assert_allclose(gU[2], [0.0, 0.0])


def test_sgns_finite_differences():
    rng = np.random.default_rng(5)
    V, d, o, neg = 6, 4, 1, np.array([2, 5, 2])
    v_c, U = rng.normal(size=d), rng.normal(size=(V, d))
    _, gv, gU = neg_sampling_loss_and_gradient(v_c, o, U, neg)
    fd_v = _central_diff(lambda v: neg_sampling_loss_and_gradient(v, o, U, neg)[0], v_c)
    fd_U = _central_diff(lambda W: neg_sampling_loss_and_gradient(v_c, o, W, neg)[0], U)
    np.testing.assert_allclose(gv, fd_v, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gU, fd_U, rtol=1e-6, atol=1e-8)


def test_sgns_stable_for_large_scores():
    v_c = np.array([1e3, 0.0])
    U = np.array([[-1.0, 0.0], [1.0, 0.0]])
    loss, gv, gU = neg_sampling_loss_and_gradient(v_c, 0, U, np.array([1]))
    assert np.isfinite(loss) and np.all(np.isfinite(gv)) and np.all(np.isfinite(gU))
    assert loss == pytest.approx(2000.0, rel=1e-12)  # -log σ(-1000) - log σ(-1000) ≈ 1000 + 1000


# ---------------------------------------------------------------- noise distribution


def test_noise_distribution_hand_values_and_sums_to_one():
    # counts (1, 16, 0): 1^0.75 = 1, 16^0.75 = 8, 0 -> 0; normalised (1/9, 8/9, 0).
    p = noise_distribution(np.array([1, 16, 0]))
    np.testing.assert_allclose(p, [1 / 9, 8 / 9, 0.0], rtol=1e-12)
    q = noise_distribution(np.random.default_rng(0).integers(1, 1000, size=50))
    assert q.sum() == pytest.approx(1.0, abs=1e-12) and np.all(q > 0)


def test_noise_distribution_upsamples_rare_words():
    counts = np.array([1.0, 100.0])
    assert noise_distribution(counts)[0] > counts[0] / counts.sum()
    np.testing.assert_allclose(noise_distribution(counts, power=1.0), counts / counts.sum())


# ---------------------------------------------------------------- GloVe


def test_glove_weight_hand_values():
    X = np.array([[0.0, 50.0], [100.0, 250.0]])
    want = np.array([[0.0, 0.5**0.75], [1.0, 1.0]])  # (x/x_max)^α below x_max, 1 at/above, 0 at 0
    np.testing.assert_allclose(glove_weight(X), want, rtol=1e-12)
    np.testing.assert_allclose(glove_weight(X, x_max=10.0, alpha=1.0), [[0, 1], [1, 1]])


def _glove_inputs(seed, V=5, d=3):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 150, size=(V, V)).astype(float)
    X[rng.random((V, V)) < 0.3] = 0.0  # some zero counts, excluded from the sum
    return (
        rng.normal(size=(V, d)),
        rng.normal(size=(V, d)),
        rng.normal(size=V),
        rng.normal(size=V),
        X,
    )


@pytest.mark.parametrize("seed", SEEDS)
def test_glove_loss_and_gradient_match_autograd(seed):
    W, Wt, b, bt, X = _glove_inputs(seed)
    tensors = [torch.tensor(a, requires_grad=True) for a in (W, Wt, b, bt)]
    tW, tWt, tb, tbt = tensors
    tX = torch.tensor(X)
    mask = tX > 0
    f = torch.where(tX < 100.0, (tX / 100.0) ** 0.75, torch.ones_like(tX))
    logX = torch.log(torch.where(mask, tX, torch.ones_like(tX)))
    r = tW @ tWt.T + tb[:, None] + tbt[None, :] - logX
    t_loss = torch.where(mask, f * r**2, torch.zeros_like(r)).sum()
    t_loss.backward()
    loss, grads = glove_loss_and_gradient(W, Wt, b, bt, X)
    assert loss == pytest.approx(t_loss.item(), rel=1e-12)
    assert glove_loss(W, Wt, b, bt, X) == pytest.approx(loss, rel=1e-15)
    for name, t in zip(("W", "W_tilde", "b", "b_tilde"), tensors):
        np.testing.assert_allclose(grads[name], t.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_glove_loss_one_entry_by_hand():
    # V = 1, X = [[e]]: f(e) = (e/100)^0.75, residual w·w̃ + b + b̃ - log e = 1·2 + 0.5 + 0.5 - 1 = 2.
    loss = glove_loss(
        np.array([[1.0]]), np.array([[2.0]]), np.array([0.5]), np.array([0.5]), np.array([[math.e]])
    )
    assert loss == pytest.approx((math.e / 100) ** 0.75 * 4.0, rel=1e-12)


# ---------------------------------------------------------------- count-based vectors


def test_cooccurrence_matrix_hand_counts():
    # The classic window-1 example: "I like deep learning", "I like NLP", "I enjoy flying".
    corpus = [["I", "like", "deep", "learning"], ["I", "like", "NLP"], ["I", "enjoy", "flying"]]
    vocab = ["I", "like", "enjoy", "deep", "learning", "NLP", "flying"]
    want = np.array(
        [
            [0, 2, 1, 0, 0, 0, 0],
            [2, 0, 0, 1, 0, 1, 0],
            [1, 0, 0, 0, 0, 0, 1],
            [0, 1, 0, 0, 1, 0, 0],
            [0, 0, 0, 1, 0, 0, 0],
            [0, 1, 0, 0, 0, 0, 0],
            [0, 0, 1, 0, 0, 0, 0],
        ],
        dtype=float,
    )
    np.testing.assert_array_equal(cooccurrence_matrix(corpus, vocab, window=1), want)


def test_svd_embeddings_match_torch_svd_up_to_sign():
    X = np.random.default_rng(4).integers(0, 9, size=(6, 6)).astype(float)
    k = 3
    E = svd_embeddings(X, k)
    U, S, _ = torch.linalg.svd(torch.tensor(X), full_matrices=False)
    want = (U[:, :k] * S[:k]).numpy()
    signs = np.sign(np.sum(E * want, axis=0))  # singular vectors are defined up to sign
    assert E.shape == (6, k)
    np.testing.assert_allclose(E * signs, want, atol=1e-10)
    # Sign-free check: projecting X onto span(E) gives torch's best rank-k approximation.
    _, _, Vh = torch.linalg.svd(torch.tensor(X), full_matrices=False)
    best_rank_k = want @ Vh[:k].numpy()  # U_k Σ_k V_k^T
    projection = E @ np.linalg.solve(E.T @ E, E.T @ X)
    np.testing.assert_allclose(projection, best_rank_k, atol=1e-9)


# ---------------------------------------------------------------- similarity and analogy


def test_cosine_similarity_matches_torch():
    rng = np.random.default_rng(8)
    E, q = rng.normal(size=(5, 4)), rng.normal(size=4)
    want = torch.nn.functional.cosine_similarity(torch.tensor(E), torch.tensor(q)[None, :], dim=1)
    np.testing.assert_allclose(cosine_similarity(E, q), want.numpy(), rtol=1e-12)


def test_analogy_excludes_inputs_on_hand_built_embedding():
    # man:woman :: king:?   target = woman - man + king = (0,1) - (1,0) + (10,1) = (9,2), |.| = √85.
    # cos(king = (10,1)) = 92 / (√101 √85) ≈ 0.993   <- an input: wins unless excluded
    # cos(man  = (1,0))  =  9 / √85         ≈ 0.976   <- an input
    # cos(queen = (8,4)) = 80 / (√80 √85)   ≈ 0.970   <- the best non-input word
    # cos(woman = (0,1)) =  2 / √85         ≈ 0.217;  apple = (-1,-1) is negative.
    vocab = ["man", "woman", "king", "queen", "apple"]
    E = np.array([[1.0, 0.0], [0.0, 1.0], [10.0, 1.0], [8.0, 4.0], [-1.0, -1.0]])
    assert analogy(E, vocab, "man", "woman", "king") == "queen"
    assert analogy(E, vocab, "man", "woman", "king", exclude_inputs=False) == "king"
    with pytest.raises(ValueError, match="vocabulary"):
        analogy(E, vocab, "man", "woman", "prince")
