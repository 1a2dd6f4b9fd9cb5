"""Public tests for a2: the slides' RNN microscope and a few properties. Run `pytest -q` here.

Passing them is a good sign, not a guarantee: the grader also runs hidden cases (with a
non-square W_x, a nonzero h0, larger states).
"""

from __future__ import annotations

import numpy as np
import pytest
import rnn

# Week 06 slides, "Small numbers make the forward pass visible" (D = H = 2, T = 3).
X = np.array([[1.0, -0.5], [0.2, 0.8], [-0.4, 0.3]])
W_X = np.array([[0.3, -0.2], [0.1, 0.4]])
W_H = np.array([[0.5, 0.1], [-0.2, 0.3]])
B_H = np.array([0.05, -0.10])
Y = np.array([0.20, -0.15])  # "A final-state loss starts a simple backward pass"
W_O = np.array([[0.4, -0.2], [-0.3, 0.5], [0.1, 0.2]])  # "The same states produce three-class predictions"
B_O = np.array([0.02, -0.04, 0.01])
TARGETS = np.array([0, 2, 1])

SLIDE = 1.5e-4  # the slides round to four decimals


def _np(x) -> np.ndarray:
    """Your output as a float64 numpy array (accepts arrays, tensors, lists, numbers)."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x, dtype=np.float64)


def _random_case(seed: int, T: int = 4, D: int = 5, H: int = 3):
    rng = np.random.default_rng(seed)
    return (rng.normal(size=(T, D)), rng.normal(0, 0.6, size=(H, D)), rng.normal(0, 0.6, size=(H, H)),
            rng.normal(0, 0.3, size=H), rng.uniform(-0.5, 0.5, size=H))


# Finite differences that also hold for float32 work: a step of 1e-2 with the fourth-order
# stencil (f(x-2h) - 8 f(x-h) + 8 f(x+h) - f(x+2h)) / 12h. A tiny step such as 1e-6 would
# divide float32 rounding noise (about 1e-7 of the loss) by 1e-6; the stencil's own error at
# h = 1e-2 is about h^4 = 1e-8. A real mistake in a gradient is far above the tolerance.
STEP, GRAD_TOL = 1e-2, 1e-3


def _numerical_gradient(f, params: dict, name: str, h: float = STEP) -> np.ndarray:
    """Fourth-order central differences of f(params) with respect to params[name]."""
    grad = np.zeros_like(params[name])
    for idx in np.ndindex(*params[name].shape):
        old = params[name][idx]
        values = []
        for k in (-2, -1, 1, 2):
            params[name][idx] = old + k * h
            values.append(f(params))
        params[name][idx] = old
        grad[idx] = (values[0] - 8 * values[1] + 8 * values[2] - values[3]) / (12 * h)
    return grad


# ------------------------------------------------------------------ rnn_forward


def test_forward_matches_the_slides_table():
    Z, Hs = (_np(a) for a in rnn.rnn_forward(X, W_X, W_H, B_H))
    np.testing.assert_allclose(Z, [[0.4500, -0.2000], [0.1412, 0.0964], [-0.0502, -0.0192]], atol=SLIDE)
    np.testing.assert_allclose(Hs, [[0.4219, -0.1974], [0.1403, 0.0961], [-0.0502, -0.0192]], atol=SLIDE)


def test_forward_shapes_with_a_non_square_input_weight():
    X_, W_x, W_h, b_h, h0 = _random_case(0)  # D = 5, H = 3
    Z, Hs = (_np(a) for a in rnn.rnn_forward(X_, W_x, W_h, b_h, h0))
    assert Z.shape == (4, 3) and Hs.shape == (4, 3)
    np.testing.assert_allclose(Hs, np.tanh(Z), atol=1e-6)


def test_forward_h0_continues_a_sequence():
    X_, W_x, W_h, b_h, h0 = _random_case(1)
    _, whole = rnn.rnn_forward(X_, W_x, W_h, b_h, h0)
    _, first = rnn.rnn_forward(X_[:2], W_x, W_h, b_h, h0)
    _, rest = rnn.rnn_forward(X_[2:], W_x, W_h, b_h, _np(first)[-1])
    np.testing.assert_allclose(_np(whole), np.vstack([_np(first), _np(rest)]), atol=1e-6)


# ------------------------------------------------------------------ bptt_final_state


def test_final_state_gradient_of_W_h_is_the_slides_sum():
    # "Shared weights receive the sum of their uses": G_0 + G_1 + G_2
    grads = rnn.bptt_final_state(X, W_X, W_H, B_H, Y)
    assert set(grads) == {"W_x", "W_h", "b_h"}
    np.testing.assert_allclose(_np(grads["W_h"]), [[-0.0974, 0.0052], [0.0243, 0.0098]], atol=SLIDE)
    # the last row of the ledger: g^z_2 = (-0.2496, 0.1307); the first: g^z_0 = (-0.0631, -0.0101)
    g_z_sum = np.array([-0.2496, 0.1307]) + np.array([-0.1480, 0.0141]) + np.array([-0.0631, -0.0101])
    np.testing.assert_allclose(_np(grads["b_h"]), g_z_sum, atol=3 * SLIDE)


def test_final_state_matches_finite_differences():
    X_, W_x, W_h, b_h, h0 = _random_case(2)
    y = np.array([0.3, -0.2, 0.5])
    params = {"W_x": W_x.copy(), "W_h": W_h.copy(), "b_h": b_h.copy()}

    def loss(p):
        _, Hs = rnn.rnn_forward(X_, p["W_x"], p["W_h"], p["b_h"], h0)
        r = _np(Hs)[-1] - y
        return 0.5 * float(r @ r)

    grads = rnn.bptt_final_state(X_, W_x, W_h, b_h, y, h0)
    for name in params:
        got = _np(grads[name])
        assert got.shape == params[name].shape, f"{name}: shape {got.shape}, expected {params[name].shape}"
        want = _numerical_gradient(loss, params, name)
        np.testing.assert_allclose(got, want, atol=GRAD_TOL, rtol=GRAD_TOL, err_msg=name)


# ------------------------------------------------------------------ bptt_sequence_ce


def test_sequence_ce_loss_is_the_slides_value():
    loss, grads = rnn.bptt_sequence_ce(X, W_X, W_H, B_H, W_O, B_O, TARGETS)
    assert float(loss) == pytest.approx(1.027996, abs=1e-6)
    assert set(grads) == {"W_x", "W_h", "b_h", "W_o", "b_o"}


@pytest.mark.parametrize("seed", [3, 4])
def test_sequence_ce_matches_finite_differences(seed):
    X_, W_x, W_h, b_h, h0 = _random_case(seed, T=5, D=4, H=3)
    rng = np.random.default_rng(seed + 100)
    W_o, b_o = rng.normal(size=(4, 3)), rng.normal(size=4)
    targets = rng.integers(0, 4, size=5)
    params = {"W_x": W_x, "W_h": W_h, "b_h": b_h, "W_o": W_o, "b_o": b_o}
    params = {k: v.copy() for k, v in params.items()}

    def loss(p):
        value, _ = rnn.bptt_sequence_ce(X_, p["W_x"], p["W_h"], p["b_h"], p["W_o"], p["b_o"], targets, h0)
        return float(value)

    _, grads = rnn.bptt_sequence_ce(X_, W_x, W_h, b_h, W_o, b_o, targets, h0)
    for name in params:
        got = _np(grads[name])
        assert got.shape == params[name].shape, f"{name}: shape {got.shape}, expected {params[name].shape}"
        want = _numerical_gradient(loss, params, name)
        np.testing.assert_allclose(got, want, atol=GRAD_TOL, rtol=GRAD_TOL, err_msg=name)


# ------------------------------------------------------------------ clip_by_global_norm


def test_clipping_keeps_the_direction_and_caps_the_global_norm():
    grads = {"W_h": np.array([[0.0, 3.0], [0.0, 0.0]]), "b_h": np.array([4.0, 0.0])}  # global norm 5
    out = rnn.clip_by_global_norm(grads, 1.0)
    assert set(out) == {"W_h", "b_h"}
    np.testing.assert_allclose(_np(out["W_h"]), [[0.0, 0.6], [0.0, 0.0]], atol=1e-6)
    np.testing.assert_allclose(_np(out["b_h"]), [0.8, 0.0], atol=1e-6)


def test_clipping_leaves_a_small_gradient_unchanged():
    grads = {"W_h": np.array([[0.1, -0.2], [0.0, 0.3]]), "b_h": np.array([0.05, 0.0])}
    out = rnn.clip_by_global_norm(grads, 10.0)
    for k in grads:
        np.testing.assert_allclose(_np(out[k]), grads[k], atol=1e-7)


# ------------------------------------------------------------------ sequence_perplexity


def test_uniform_predictions_have_perplexity_V():
    ce, ppl = rnn.sequence_perplexity(np.zeros((3, 4)), np.array([0, 3, 1]))
    assert float(ce) == pytest.approx(np.log(4.0), rel=1e-6)
    assert float(ppl) == pytest.approx(4.0, rel=1e-6)


def test_perplexity_is_exp_of_the_mean_cross_entropy():
    logits = np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    ce, ppl = rnn.sequence_perplexity(logits, np.array([0, 2]))
    p0 = np.exp(2.0) / (np.exp(2.0) + 2.0)  # probability of the target at t = 0
    p1 = 1.0 / (np.e + 2.0)  # at t = 1
    assert float(ce) == pytest.approx(-(np.log(p0) + np.log(p1)) / 2, rel=1e-6)
    assert float(ppl) == pytest.approx(1.0 / np.sqrt(p0 * p1), rel=1e-6)  # geometric mean of 1/p
