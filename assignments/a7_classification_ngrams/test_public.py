"""Public tests for a7: the README's worked examples and simple properties. Run: python -m pytest -q"""

import math

import classify as C
import numpy as np
import pytest

TOY = [["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "cat", "ran"]]
E = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 2.0]])
PARAMS = {
    "E": E,
    "W1": np.array([[1.0, -1.0], [0.5, 0.5]]),
    "b1": np.array([0.0, 0.1]),
    "W2": np.array([[1.0, 2.0], [-1.0, 1.0]]),
    "b2": np.array([0.0, 0.5]),
}
IDS = np.array([[0, 2, 2], [3, 1, 0]])
MASK = np.array([[True, True, True], [True, True, False]])


def _a(x):
    return np.asarray(x, dtype=np.float64)


def test_cosine_worked_example():
    got = _a(C.cosine_similarity(np.array([[1.0, 2.0, 2.0], [3.0, 0.0, 4.0]]), np.eye(3)))
    np.testing.assert_allclose(got, [[1 / 3, 2 / 3, 2 / 3], [0.6, 0.0, 0.8]], rtol=1e-5)
    assert float(C.cosine_similarity(np.array([1.0, 2.0, 2.0]), np.array([2.0, 0.0, 0.0]))) == pytest.approx(1 / 3)


def test_cosine_ignores_length():
    a, b = np.array([[1.0, 2.0]]), np.array([[3.0, -1.0], [0.5, 0.5]])
    np.testing.assert_allclose(_a(C.cosine_similarity(7 * a, b)), _a(C.cosine_similarity(a, 0.1 * b)), rtol=1e-5)


def test_cross_entropy_worked_example():
    loss, grad = C.softmax_cross_entropy(np.array([2.0, 1.0, 0.1]), 0)
    assert float(loss) == pytest.approx(0.41703, rel=1e-4)
    np.testing.assert_allclose(_a(grad), [-0.3410, 0.2424, 0.0986], atol=1e-4)
    loss, grad = C.softmax_cross_entropy(np.array([[1.0, 2.0, 3.0], [1.0, 0.0, 0.0]]), np.array([2, 0]))
    assert float(loss) == pytest.approx(0.47953, rel=1e-4)
    assert _a(grad).shape == (2, 3)
    np.testing.assert_allclose(_a(grad).sum(axis=1), [0.0, 0.0], atol=1e-6)  # p − e_y sums to 0


def test_cross_entropy_is_stable_on_large_logits():
    loss, grad = C.softmax_cross_entropy(np.array([1000.0, 0.0, -1000.0]), 1)
    assert float(loss) == pytest.approx(1000.0, rel=1e-6)
    assert np.all(np.isfinite(_a(grad)))


def test_dan_forward_worked_example():
    probs = _a(C.dan_forward(IDS, MASK, PARAMS))
    np.testing.assert_allclose(probs, [[0.7503, 0.2497], [0.5250, 0.4750]], atol=1e-4)


def test_dan_forward_ignores_the_ids_at_padding():
    other = IDS.copy()
    other[1, 2] = 3
    np.testing.assert_allclose(_a(C.dan_forward(other, MASK, PARAMS)), _a(C.dan_forward(IDS, MASK, PARAMS)))


def test_dan_backward_worked_example():
    loss, grads = C.dan_backward(IDS, MASK, PARAMS, np.array([1, 0]))
    assert float(loss) == pytest.approx(1.01587, rel=1e-4)
    assert set(grads) == set(PARAMS)
    g_E = _a(grads["E"])
    assert g_E.shape == E.shape
    np.testing.assert_allclose(g_E[2], 2 * g_E[0], rtol=1e-5)  # token 2 occurs twice in sentence 0
    np.testing.assert_allclose(_a(grads["b2"]), [0.1376, -0.1376], atol=1e-4)


def test_dan_backward_matches_finite_differences_on_b1():
    y = np.array([1, 0])
    _, grads = C.dan_backward(IDS, MASK, PARAMS, y)
    eps, num = 1e-3, []  # large enough for float32 work
    for i in range(2):
        up = {k: v.copy() for k, v in PARAMS.items()}
        dn = {k: v.copy() for k, v in PARAMS.items()}
        up["b1"][i] += eps
        dn["b1"][i] -= eps
        num.append((float(C.dan_backward(IDS, MASK, up, y)[0]) - float(C.dan_backward(IDS, MASK, dn, y)[0])) / (2 * eps))
    np.testing.assert_allclose(_a(grads["b1"]), num, rtol=1e-2, atol=1e-4)


def test_counts_worked_example():
    counts = C.ngram_counts(TOY, 2)
    assert counts[("<s>", "the")] == 2 and counts[("sat", "</s>")] == 2
    assert counts[("the", "cat")] == 1 and len(counts) == 10
    assert C.ngram_counts(TOY, 3)[("<s>", "<s>", "the")] == 2


def test_prob_worked_example():
    counts = C.ngram_counts(TOY, 2)
    assert float(C.ngram_prob(counts, 7, ("the",), "cat")) == pytest.approx(2 / 9)
    assert float(C.ngram_prob(counts, 7, ("the",), "ran", k=0.5)) == pytest.approx(0.5 / (2 + 3.5))


def test_probabilities_after_a_context_sum_to_one():
    counts = C.ngram_counts(TOY, 2)
    words = ["the", "cat", "sat", "dog", "a", "ran", "</s>"]
    total = sum(float(C.ngram_prob(counts, 7, ("cat",), w, k=0.3)) for w in words)
    assert total == pytest.approx(1.0)


def test_perplexity_worked_example():
    counts = C.ngram_counts(TOY, 2)
    want = (0.3 * 2 / 9 * 1 / 9) ** (-1 / 3)
    assert float(C.ngram_perplexity(counts, 7, [["the", "cat"]], 2)) == pytest.approx(want, rel=1e-6)
    assert want == pytest.approx(math.exp(-(math.log(0.3) + math.log(2 / 9) + math.log(1 / 9)) / 3))
