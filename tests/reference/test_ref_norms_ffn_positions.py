"""reference/norms.py, ffn.py and positions.py against torch modules and the slides' numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from reference.ffn import feed_forward, gelu, gelu_tanh, linear, relu, swiglu_ffn, swish
from reference.norms import batch_norm_stats, layer_norm, layer_norm_stats, rms_norm
from reference.positions import position_frequencies, sinusoidal_positions


def t64(a) -> torch.Tensor:
    return torch.as_tensor(np.asarray(a), dtype=torch.float64)


# ---- LayerNorm ----


@pytest.mark.parametrize("shape", [(7,), (3, 7), (2, 3, 7)])
def test_layer_norm_matches_torch(shape):
    rng = np.random.default_rng(sum(shape))
    x = rng.normal(size=shape) * 3 + 1
    gamma, beta = rng.normal(size=7), rng.normal(size=7)
    ln = torch.nn.LayerNorm(7, eps=1e-5, dtype=torch.float64)
    with torch.no_grad():
        ln.weight.copy_(t64(gamma))
        ln.bias.copy_(t64(beta))
    np.testing.assert_allclose(layer_norm(x, gamma, beta), ln(t64(x)).detach().numpy(), atol=1e-12)


def test_layer_norm_eps_inside_sqrt_on_tiny_variance():
    # variance 1e-6, comparable to eps: sqrt(var + eps) and sqrt(var) + eps differ a lot
    x = np.array([[0.0, 2e-3, 0.0, 2e-3]])
    expected = F.layer_norm(t64(x), (4,), eps=1e-5).numpy()
    np.testing.assert_allclose(layer_norm(x, np.ones(4), np.zeros(4)), expected, atol=1e-12)


def test_layer_norm_microscope_rows():
    # slides 001, Part 4, "LayerNorm numbers for all three rows" (gamma = 1, beta = 0, eps 1e-5)
    h = np.array([[1, 0, -1, 2], [0, 2, 1, -1], [2, 1, 0, 1]], dtype=float)
    np.testing.assert_allclose(
        layer_norm(h, np.ones(4), np.zeros(4)),
        [
            [0.4472, -0.4472, -1.3416, 1.3416],
            [-0.4472, 1.3416, 0.4472, -1.3416],
            [1.4142, 0.0000, -1.4142, 0.0000],
        ],
        atol=5e-5,
    )
    mean, var = layer_norm_stats(h[None])
    np.testing.assert_allclose(mean, [[0.5, 0.5, 1.0]])
    np.testing.assert_allclose(var, [[1.25, 1.25, 0.5]])


def test_layer_norm_stats_are_per_token_and_match_torch():
    rng = np.random.default_rng(11)
    X = rng.normal(size=(2, 4, 8))
    mean, var = layer_norm_stats(X)
    var_t, mean_t = torch.var_mean(t64(X), dim=-1, correction=0)
    assert mean.shape == (2, 4) and var.shape == (2, 4)  # notes §6: statistics of shape (B, T)
    np.testing.assert_allclose(mean, mean_t.numpy(), atol=1e-12)
    np.testing.assert_allclose(var, var_t.numpy(), atol=1e-12)


def test_batch_norm_stats_are_per_feature_and_match_batchnorm():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(2, 4, 8)) * 2 + 3
    mean, var = batch_norm_stats(X)
    assert mean.shape == (8,) and var.shape == (8,)  # notes §6: statistics of shape (d,)
    bn = torch.nn.BatchNorm1d(8, eps=1e-5, affine=False, momentum=None, dtype=torch.float64)
    bn.train()
    normalized = bn(t64(X.reshape(-1, 8))).numpy()  # uses the batch's population variance
    np.testing.assert_allclose(
        normalized, ((X - mean) / np.sqrt(var + 1e-5)).reshape(-1, 8), atol=1e-10
    )
    np.testing.assert_allclose(bn.running_mean.numpy(), mean, atol=1e-12)


def test_stats_reject_wrong_rank():
    with pytest.raises(ValueError, match=r"\(B, T, d\)"):
        layer_norm_stats(np.zeros((4, 8)))


@pytest.mark.parametrize("shape", [(6,), (2, 3, 6)])
def test_rms_norm_matches_torch(shape):
    rng = np.random.default_rng(13)
    x = rng.normal(size=shape)
    gamma = rng.normal(size=6)
    rms = torch.nn.RMSNorm(6, eps=1e-6, dtype=torch.float64)
    with torch.no_grad():
        rms.weight.copy_(t64(gamma))
    np.testing.assert_allclose(rms_norm(x, gamma), rms(t64(x)).detach().numpy(), atol=1e-12)


# ---- activations and FFNs ----

Z = np.linspace(-6, 6, 121)


def test_gelu_exact_matches_torch():
    np.testing.assert_allclose(gelu(Z), F.gelu(t64(Z)).numpy(), atol=1e-14)


def test_gelu_tanh_matches_torch_and_differs_from_exact():
    np.testing.assert_allclose(gelu_tanh(Z), F.gelu(t64(Z), approximate="tanh").numpy(), atol=1e-14)
    assert np.max(np.abs(gelu(Z) - gelu_tanh(Z))) > 1e-5


def test_swish_and_relu_match_torch():
    np.testing.assert_allclose(swish(Z), F.silu(t64(Z)).numpy(), atol=1e-14)
    np.testing.assert_allclose(swish(np.array([-800.0, 800.0])), [0.0, 800.0])  # no overflow
    np.testing.assert_array_equal(relu(Z), F.relu(t64(Z)).numpy())


def _torch_ffn(W1, b1, W2, b2, act):
    l1 = torch.nn.Linear(W1.shape[1], W1.shape[0], dtype=torch.float64)
    l2 = torch.nn.Linear(W2.shape[1], W2.shape[0], dtype=torch.float64)
    with torch.no_grad():
        l1.weight.copy_(t64(W1))
        l1.bias.copy_(t64(b1))
        l2.weight.copy_(t64(W2))
        l2.bias.copy_(t64(b2))
    return torch.nn.Sequential(l1, act, l2)


@pytest.mark.parametrize(
    "activation, module", [("relu", torch.nn.ReLU()), ("gelu", torch.nn.GELU())]
)
def test_feed_forward_matches_torch(activation, module):
    rng = np.random.default_rng(14)
    X = rng.normal(size=(2, 3, 4))
    W1, b1 = rng.normal(size=(16, 4)), rng.normal(size=16)
    W2, b2 = rng.normal(size=(4, 16)), rng.normal(size=4)
    expected = _torch_ffn(W1, b1, W2, b2, module)(t64(X)).detach().numpy()
    np.testing.assert_allclose(feed_forward(X, W1, b1, W2, b2, activation), expected, atol=1e-12)


def test_feed_forward_activation_hook_and_bad_name():
    rng = np.random.default_rng(15)
    X = rng.normal(size=(3, 4))
    W1, b1, W2, b2 = (
        rng.normal(size=(5, 4)),
        rng.normal(size=5),
        rng.normal(size=(4, 5)),
        np.zeros(4),
    )
    identity = feed_forward(X, W1, b1, W2, b2, activation=lambda z: z)
    np.testing.assert_allclose(identity, (X @ W1.T + b1) @ W2.T + b2)
    with pytest.raises(ValueError, match="activation"):
        feed_forward(X, W1, b1, W2, b2, activation="tanh")


def test_swiglu_matches_torch():
    rng = np.random.default_rng(16)
    X = rng.normal(size=(2, 3, 4))
    Wg, Wu, Wd = rng.normal(size=(6, 4)), rng.normal(size=(6, 4)), rng.normal(size=(4, 6))
    x = t64(X)
    expected = (F.silu(x @ t64(Wg).T) * (x @ t64(Wu).T)) @ t64(Wd).T  # Shazeer (2020)
    np.testing.assert_allclose(swiglu_ffn(X, Wg, Wu, Wd), expected.numpy(), atol=1e-12)


def test_linear_matches_torch_linear_layout():
    rng = np.random.default_rng(17)
    x, W, b = rng.normal(size=(5, 3)), rng.normal(size=(2, 3)), rng.normal(size=2)
    np.testing.assert_allclose(linear(x, W, b), F.linear(t64(x), t64(W), t64(b)).numpy())


# ---- positions ----


def test_sinusoid_p0_p1_from_slides():
    P = sinusoidal_positions(2, 4)
    # slides 001, Part 4: p_0 = (0, 1, 0, 1), p_1 ≈ (0.8415, 0.5403, 0.0100, 1.0000)
    np.testing.assert_allclose(P[0], [0, 1, 0, 1], atol=1e-15)
    np.testing.assert_allclose(P[1], [0.8415, 0.5403, 0.0100, 1.0000], atol=5e-5)
    # slides: "D=4 gives frequency divisors 1 and 100"
    np.testing.assert_allclose(1 / position_frequencies(4), [1, 100])


def test_sinusoid_matches_vaswani_formula_elementwise():
    T, d = 9, 10
    P = sinusoidal_positions(T, d)
    for t in range(T):
        for r in range(d // 2):  # Vaswani et al. §3.5, written out one coordinate at a time
            assert P[t, 2 * r] == pytest.approx(math.sin(t / 10000 ** (2 * r / d)), abs=1e-12)
            assert P[t, 2 * r + 1] == pytest.approx(math.cos(t / 10000 ** (2 * r / d)), abs=1e-12)


def test_sinusoid_rejects_odd_width():
    with pytest.raises(ValueError, match="even"):
        sinusoidal_positions(3, 5)
