"""Public tests for assignment 1: the notes' numbers and simple properties.

Run inside this folder:  python -m pytest -q
Passing them is a good sign, not a grade: the grader runs hidden cases too (larger,
non-square, with repeated negatives, zero counts and logits near ±1000).
"""

import numpy as np
import pytest
import word_vectors as wv

NOTES_V_C = np.array([1.0, 0.0])
NOTES_U = np.array([[2.0, 0.0], [0.0, 1.0], [1.0, 0.0]])  # u_a, u_b, u_c (notes §1, numeric anchor)


def arr(x):
    """Whatever you return (array, tensor, list, number) as a float64 numpy array."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def test_softmax_notes_scores():
    # notes §1: scores (2, 0, 1) -> P = (0.67, 0.09, 0.24)
    np.testing.assert_allclose(arr(wv.softmax(np.array([2.0, 0.0, 1.0]))), [0.665, 0.090, 0.245], atol=5e-3)


def test_softmax_rows_sum_to_one_and_survive_large_logits():
    x = np.array([[1000.0, 1001.0, 999.0], [-1000.0, -1001.0, -999.0]])
    p = arr(wv.softmax(x))
    assert p.shape == (2, 3) and np.all(np.isfinite(p))
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, atol=1e-6)


def test_softmax_axis_argument():
    x = np.arange(6.0).reshape(2, 3)
    np.testing.assert_allclose(arr(wv.softmax(x, axis=0)).sum(axis=0), 1.0, atol=1e-6)


def test_skipgram_notes_anchor():
    # notes §1: d log P(a|c)/d v_c = (0.42, -0.09); the loss -log P(a|c) has the opposite sign.
    loss, g_v, g_U = wv.naive_softmax_loss_and_gradient(NOTES_V_C, 0, NOTES_U)
    assert float(loss) == pytest.approx(-np.log(0.665), abs=5e-3)
    np.testing.assert_allclose(arr(g_v), [-0.42, 0.09], atol=5e-3)
    assert arr(g_U).shape == (3, 2)


# Finite differences that also hold for float32 work: a step of 1e-2 with the fourth-order
# stencil (f(x-2h) - 8 f(x-h) + 8 f(x+h) - f(x+2h)) / 12h. A tiny step such as 1e-6 would
# divide float32 rounding noise (about 1e-7 of the loss) by 1e-6; the stencil's own error at
# h = 1e-2 is about h^4 = 1e-8. A real mistake in a gradient is far above the tolerance.
STEP, GRAD_TOL = 1e-2, 1e-3


def _numeric_grad(f, x, h=STEP):
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        values = []
        for k in (-2, -1, 1, 2):
            shifted = x.copy()
            shifted[i] += k * h
            values.append(f(shifted))
        g[i] = (values[0] - 8 * values[1] + 8 * values[2] - values[3]) / (12 * h)
    return g


@pytest.mark.parametrize("fn", ["naive", "neg"])
def test_gradients_match_finite_differences(fn):
    rng = np.random.default_rng(0)
    v_c, U, o, neg = rng.normal(size=3), rng.normal(size=(5, 3)), 1, np.array([2, 4, 2])
    if fn == "naive":
        call = lambda v, u: wv.naive_softmax_loss_and_gradient(v, o, u)  # noqa: E731
    else:
        call = lambda v, u: wv.neg_sampling_loss_and_gradient(v, o, u, neg)  # noqa: E731
    _, g_v, g_U = call(v_c, U)
    want_v = _numeric_grad(lambda v: float(call(v, U)[0]), v_c)
    want_U = _numeric_grad(lambda u: float(call(v_c, u)[0]), U)
    np.testing.assert_allclose(arr(g_v), want_v, atol=GRAD_TOL, rtol=GRAD_TOL)
    np.testing.assert_allclose(arr(g_U), want_U, atol=GRAD_TOL, rtol=GRAD_TOL)


def test_noise_distribution_counts_81_16_1():
    np.testing.assert_allclose(arr(wv.noise_distribution(np.array([81.0, 16.0, 1.0]))), [27 / 36, 8 / 36, 1 / 36],
                               rtol=1e-5)


def test_glove_weight_values():
    f = arr(wv.glove_weight(np.array([0.0, 50.0, 100.0, 250.0])))
    np.testing.assert_allclose(f, [0.0, 0.5**0.75, 1.0, 1.0], rtol=1e-5)


def test_glove_loss_one_pair():
    # a single positive count: f(1) (w·w~ + b + b~ - log 1)^2 = (1/100)^0.75 * 2^2
    W, Wt = np.array([[1.0]]), np.array([[1.0]])
    loss = wv.glove_loss(W, Wt, np.array([0.5]), np.array([0.5]), np.array([[1.0]]))
    assert float(loss) == pytest.approx(0.01**0.75 * 4.0, rel=1e-5)


def test_analogy_excludes_inputs():
    vocab = ["man", "woman", "king", "queen"]
    E = np.array([[1.0, 0.0], [1.0, 1.0], [3.0, 0.0], [2.0, 2.0]])
    # king - man + woman = (3, 1): "king" itself is closest, but it is an input word
    assert wv.analogy(E, vocab, "man", "woman", "king") == "queen"


# ---------------------------------------------------------------- count-based vectors (notes §1)

TOY_CORPUS = [["I", "like", "deep", "learning"], ["I", "like", "NLP"], ["I", "enjoy", "flying"]]
TOY_VOCAB = ["I", "like", "enjoy", "deep", "learning", "NLP", "flying"]


def test_cooccurrence_toy_corpus_window_1():
    X = np.asarray(wv.cooccurrence_matrix(TOY_CORPUS, TOY_VOCAB, window=1), dtype=np.float64)
    assert X.shape == (7, 7)
    np.testing.assert_array_equal(X, X.T)  # symmetric: the window reaches both sides
    np.testing.assert_array_equal(np.diag(X), 0)  # a word is not its own neighbour
    assert X[0, 1] == 2 and X[0, 2] == 1 and X[1, 3] == 1 and X[4, 3] == 1  # I-like twice, I-enjoy, …


def test_cooccurrence_wider_window():
    X = np.asarray(wv.cooccurrence_matrix([["a", "b", "c", "a"]], ["a", "b", "c"], window=2), dtype=np.float64)
    np.testing.assert_array_equal(X, [[0, 2, 2], [2, 0, 1], [2, 1, 0]])


def test_svd_embeddings_up_to_column_signs():
    X = np.asarray(wv.cooccurrence_matrix(TOY_CORPUS, TOY_VOCAB, window=1), dtype=np.float64)
    E = np.asarray(wv.svd_embeddings(X, 2), dtype=np.float64)
    assert E.shape == (7, 2)
    U, S, _ = np.linalg.svd(X)
    want = U[:, :2] * S[:2]  # rows of U_k Σ_k; each column only defined up to its sign
    np.testing.assert_allclose(E @ E.T, want @ want.T, atol=1e-6)  # sign-free: the dot products
