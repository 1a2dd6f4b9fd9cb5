"""reference.rnn and reference.bptt against the slides' microscope, torch and finite differences."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reference.bptt import (
    bptt_final_state,
    bptt_ledger,
    bptt_sequence_ce,
    clip_by_global_norm,
    final_state_ledger,
    final_state_loss,
    final_state_signal,
    global_norm,
    jacobian_path_norm,
    jacobian_path_product,
    sequence_ce_ledger,
)
from reference.functional import softmax
from reference.rnn import output_logits, per_position_ce, rnn_forward, sequence_perplexity

# Slides 001 "Small numbers make the forward pass visible" (Week 06, Part 1):
X_MIC = np.array([[1.0, -0.5], [0.2, 0.8], [-0.4, 0.3]])
W_X_MIC = np.array([[0.3, -0.2], [0.1, 0.4]])
W_H_MIC = np.array([[0.5, 0.1], [-0.2, 0.3]])
B_H_MIC = np.array([0.05, -0.10])
Y_MIC = np.array([0.20, -0.15])  # "A final-state loss starts a simple backward pass"
# "The same states produce three-class predictions":
W_O_MIC = np.array([[0.4, -0.2], [-0.3, 0.5], [0.1, 0.2]])
B_O_MIC = np.array([0.02, -0.04, 0.01])
TARGETS_MIC = np.array([0, 2, 1])

SLIDE = 5.1e-5  # the slides round to four decimals


def _mic_forward():
    return rnn_forward(X_MIC, W_X_MIC, W_H_MIC, B_H_MIC)


# ---------------------------------------------------------------- the slides' forward ledger


def test_microscope_forward_table():
    # Slides 001, "Unrolling makes the dependency graph visible".
    Z, Hs = _mic_forward()
    np.testing.assert_allclose(
        Z, [[0.4500, -0.2000], [0.1412, 0.0964], [-0.0502, -0.0192]], atol=SLIDE
    )
    np.testing.assert_allclose(
        Hs, [[0.4219, -0.1974], [0.1403, 0.0961], [-0.0502, -0.0192]], atol=SLIDE
    )
    assert not np.array_equal(Z[2], Hs[2])  # "they differ at full precision"


def test_microscope_step_contributions():
    # Slides 001, "The next observation combines with the earlier state".
    _, Hs = _mic_forward()
    np.testing.assert_allclose(X_MIC[1] @ W_X_MIC.T, [-0.1000, 0.3400], atol=SLIDE)
    np.testing.assert_allclose(Hs[0] @ W_H_MIC.T, [0.1912, -0.1436], atol=SLIDE)


def test_rnn_forward_matches_torch_rnn():
    rng = np.random.default_rng(0)
    T, D, H = 6, 3, 4
    X, W_x, W_h, b_h, h0 = (rng.normal(size=s) for s in [(T, D), (H, D), (H, H), (H,), (H,)])
    rnn = torch.nn.RNN(D, H, nonlinearity="tanh", batch_first=True).double()
    with torch.no_grad():
        rnn.weight_ih_l0.copy_(torch.tensor(W_x))
        rnn.weight_hh_l0.copy_(torch.tensor(W_h))
        rnn.bias_ih_l0.copy_(torch.tensor(b_h))
        rnn.bias_hh_l0.zero_()
        out, _ = rnn(torch.tensor(X)[None], torch.tensor(h0)[None, None])
    Z, Hs = rnn_forward(X, W_x, W_h, b_h, h0)
    np.testing.assert_allclose(Hs, out[0].numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(np.tanh(Z), Hs, rtol=1e-15)


# ---------------------------------------------------------------- the slides' BPTT ledger


def test_microscope_final_state_loss():
    # Slides 001: L = 0.5 ||h_2 - y||^2 ≈ 0.039853.
    _, Hs = _mic_forward()
    assert final_state_loss(Hs, Y_MIC) == pytest.approx(0.039853, abs=5e-7)


def test_microscope_bptt_ledger_rows():
    # Slides 001, "The same chain rule reaches earlier states" (rows t = 2, 1, 0).
    Z, Hs = _mic_forward()
    ledger = bptt_ledger(Z, Hs, W_H_MIC, final_state_signal(Hs, Y_MIC))
    g_h = {2: [-0.2502, 0.1308], 1: [-0.1509, 0.0143], 0: [-0.0768, -0.0106]}
    one_minus_h2 = {2: [0.9975, 0.9996], 1: [0.9803, 0.9908], 0: [0.8220, 0.9610]}
    g_z = {2: [-0.2496, 0.1307], 1: [-0.1480, 0.0141], 0: [-0.0631, -0.0101]}
    for t in (2, 1, 0):
        np.testing.assert_allclose(ledger.g_h[t], g_h[t], atol=SLIDE)
        np.testing.assert_allclose(1 - ledger.Hs[t] ** 2, one_minus_h2[t], atol=SLIDE)
        np.testing.assert_allclose(ledger.g_z[t], g_z[t], atol=SLIDE)


def test_microscope_per_use_contributions_and_sum():
    # Slides 001, "Shared weights receive the sum of their uses": G_0, G_1, G_2 and their sum.
    Z, Hs = _mic_forward()
    ledger = bptt_ledger(Z, Hs, W_H_MIC, final_state_signal(Hs, Y_MIC))
    G = [
        [[0.0, 0.0], [0.0, 0.0]],
        [[-0.0624, 0.0292], [0.0060, -0.0028]],
        [[-0.0350, -0.0240], [0.0183, 0.0126]],
    ]
    total = [[-0.0974, 0.0052], [0.0243, 0.0098]]
    np.testing.assert_allclose(ledger.G, G, atol=SLIDE)
    np.testing.assert_array_equal(ledger.G[0], 0.0)  # h_{-1} = 0
    grads = bptt_final_state(X_MIC, W_X_MIC, W_H_MIC, B_H_MIC, Y_MIC)
    np.testing.assert_allclose(grads["W_h"], total, atol=SLIDE)
    np.testing.assert_allclose(grads["W_h"], ledger.G.sum(axis=0), rtol=1e-14)
    np.testing.assert_allclose(
        final_state_ledger(X_MIC, W_X_MIC, W_H_MIC, B_H_MIC, Y_MIC).G, ledger.G, rtol=1e-15
    )


def test_microscope_last_use_hook_is_G2():
    # The `uses` hook: summing only the last use gives the slides' G_2 (bptt-last-use-only).
    grads = bptt_final_state(X_MIC, W_X_MIC, W_H_MIC, B_H_MIC, Y_MIC, uses=[-1])
    np.testing.assert_allclose(grads["W_h"], [[-0.0350, -0.0240], [0.0183, 0.0126]], atol=SLIDE)


def test_microscope_per_position_ce():
    # Slides 001, "The same states produce three-class predictions": p_2 and mean L ≈ 1.027996.
    _, Hs = _mic_forward()
    logits = output_logits(Hs, W_O_MIC, B_O_MIC)
    np.testing.assert_allclose(softmax(logits)[2], [0.3379, 0.3252, 0.3370], atol=SLIDE)
    ce, ppl = sequence_perplexity(logits, TARGETS_MIC)
    assert ce == pytest.approx(1.027996, abs=5e-7)
    assert ppl == pytest.approx(np.exp(1.027996), rel=1e-6)
    loss, grads = bptt_sequence_ce(X_MIC, W_X_MIC, W_H_MIC, B_H_MIC, W_O_MIC, B_O_MIC, TARGETS_MIC)
    assert loss == pytest.approx(1.027996, abs=5e-7)
    # The CE ledger's per-use contributions sum to the same dL/dW_h (slides: one formula, both objectives).
    ledger = sequence_ce_ledger(X_MIC, W_X_MIC, W_H_MIC, B_H_MIC, W_O_MIC, B_O_MIC, TARGETS_MIC)
    np.testing.assert_allclose(ledger.G.sum(axis=0), grads["W_h"], rtol=1e-14)


# ---------------------------------------------------------------- autograd and finite differences


def _torch_forward(X, W_x, W_h, b_h, h0):
    h = torch.zeros(W_h.shape[0], dtype=torch.float64) if h0 is None else torch.tensor(h0)
    states = []
    for x in torch.tensor(X):
        h = torch.tanh(x @ W_x.T + h @ W_h.T + b_h)
        states.append(h)
    return torch.stack(states)


def _random_rnn(seed, T=5, D=3, H=4, C=6):
    rng = np.random.default_rng(seed)
    return {
        "X": rng.normal(size=(T, D)),
        "W_x": rng.normal(size=(H, D)) * 0.7,
        "W_h": rng.normal(size=(H, H)) * 0.7,
        "b_h": rng.normal(size=H) * 0.3,
        "W_o": rng.normal(size=(C, H)),
        "b_o": rng.normal(size=C),
        "y": rng.normal(size=H),
        "targets": rng.integers(0, C, size=T),
        "h0": rng.normal(size=H) if seed % 2 else None,
    }


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_bptt_final_state_matches_autograd(seed):
    p = _random_rnn(seed)
    params = {k: torch.tensor(p[k], requires_grad=True) for k in ("W_x", "W_h", "b_h")}
    Hs = _torch_forward(p["X"], params["W_x"], params["W_h"], params["b_h"], p["h0"])
    (0.5 * ((Hs[-1] - torch.tensor(p["y"])) ** 2).sum()).backward()
    grads = bptt_final_state(p["X"], p["W_x"], p["W_h"], p["b_h"], p["y"], p["h0"])
    assert set(grads) == {"W_x", "W_h", "b_h"}
    for k, t in params.items():
        assert grads[k].shape == p[k].shape
        np.testing.assert_allclose(grads[k], t.grad.numpy(), rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_bptt_sequence_ce_matches_autograd(seed):
    p = _random_rnn(seed)
    names = ("W_x", "W_h", "b_h", "W_o", "b_o")
    params = {k: torch.tensor(p[k], requires_grad=True) for k in names}
    Hs = _torch_forward(p["X"], params["W_x"], params["W_h"], params["b_h"], p["h0"])
    logits = Hs @ params["W_o"].T + params["b_o"]
    t_loss = torch.nn.functional.cross_entropy(logits, torch.tensor(p["targets"]))  # mean over T
    t_loss.backward()
    loss, grads = bptt_sequence_ce(*(p[k] for k in ("X", *names, "targets", "h0")))
    assert loss == pytest.approx(t_loss.item(), rel=1e-12)
    assert set(grads) == set(names)
    for k, t in params.items():
        assert grads[k].shape == p[k].shape
        np.testing.assert_allclose(grads[k], t.grad.numpy(), rtol=1e-10, atol=1e-13)


def test_bptt_sequence_ce_finite_differences():
    p = _random_rnn(7, T=4, D=2, H=3, C=4)
    args = [p[k] for k in ("X", "W_x", "W_h", "b_h", "W_o", "b_o", "targets", "h0")]
    _, grads = bptt_sequence_ce(*args)
    eps = 1e-6
    for pos, name in [(1, "W_x"), (2, "W_h"), (3, "b_h")]:
        fd = np.zeros_like(args[pos])
        for idx in np.ndindex(args[pos].shape):
            plus, minus = (
                [a.copy() if a is not None else None for a in args],
                [a.copy() if a is not None else None for a in args],
            )
            plus[pos][idx] += eps
            minus[pos][idx] -= eps
            fd[idx] = (bptt_sequence_ce(*plus)[0] - bptt_sequence_ce(*minus)[0]) / (2 * eps)
        np.testing.assert_allclose(grads[name], fd, rtol=1e-6, atol=1e-9)


def test_bptt_final_state_finite_differences_microscope():
    # The slides' own check: central differences, eps = 1e-6, on all ten cell parameters.
    grads = bptt_final_state(X_MIC, W_X_MIC, W_H_MIC, B_H_MIC, Y_MIC)
    eps = 1e-6

    def loss(W_x, W_h, b_h):
        return final_state_loss(rnn_forward(X_MIC, W_x, W_h, b_h)[1], Y_MIC)

    base = [W_X_MIC, W_H_MIC, B_H_MIC]
    for pos, name in enumerate(("W_x", "W_h", "b_h")):
        fd = np.zeros_like(base[pos])
        for idx in np.ndindex(base[pos].shape):
            plus, minus = [a.copy() for a in base], [a.copy() for a in base]
            plus[pos][idx] += eps
            minus[pos][idx] -= eps
            fd[idx] = (loss(*plus) - loss(*minus)) / (2 * eps)
        np.testing.assert_allclose(grads[name], fd, atol=1e-9)


# ---------------------------------------------------------------- perplexity


def test_sequence_perplexity_matches_torch_cross_entropy():
    rng = np.random.default_rng(2)
    logits, targets = rng.normal(size=(7, 11)) * 3, rng.integers(0, 11, size=7)
    ce, ppl = sequence_perplexity(logits, targets)
    want = torch.nn.functional.cross_entropy(torch.tensor(logits), torch.tensor(targets)).item()
    assert ce == pytest.approx(want, rel=1e-12)
    assert ppl == pytest.approx(np.exp(want), rel=1e-12)
    np.testing.assert_allclose(
        per_position_ce(logits, targets),
        torch.nn.functional.cross_entropy(
            torch.tensor(logits), torch.tensor(targets), reduction="none"
        ).numpy(),
        rtol=1e-12,
    )


def test_uniform_model_has_perplexity_vocab_size():
    # Notes §2: perplexity = exp(CE); a uniform model over V words has CE = log V, perplexity V.
    ce, ppl = sequence_perplexity(np.zeros((5, 8)), np.arange(5))
    assert ce == pytest.approx(np.log(8), rel=1e-14)
    assert ppl == pytest.approx(8.0, rel=1e-12)


# ---------------------------------------------------------------- Jacobian products along a path


@pytest.mark.parametrize("t,s", [(4, 1), (3, 0), (2, 2)])
def test_jacobian_path_product_matches_autograd(t, s):
    p = _random_rnn(3, T=5, D=2, H=3)
    _, Hs = rnn_forward(p["X"], p["W_x"], p["W_h"], p["b_h"], p["h0"])
    W_x, W_h, b_h = (torch.tensor(p[k]) for k in ("W_x", "W_h", "b_h"))
    X = torch.tensor(p["X"])

    def h_t_from_h_s(h):
        for u in range(s + 1, t + 1):
            h = torch.tanh(X[u] @ W_x.T + h @ W_h.T + b_h)
        return h

    J = torch.autograd.functional.jacobian(h_t_from_h_s, torch.tensor(Hs[s])).numpy()
    P = jacobian_path_product(Hs, p["W_h"], t, s)
    np.testing.assert_allclose(P, J, rtol=1e-10, atol=1e-14)
    assert jacobian_path_norm(Hs, p["W_h"], t, s) == pytest.approx(np.linalg.norm(J, 2), rel=1e-10)


def test_jacobian_path_rejects_reversed_indices():
    _, Hs = _mic_forward()
    with pytest.raises(ValueError, match="s <= t"):
        jacobian_path_product(Hs, W_H_MIC, 0, 2)


# ---------------------------------------------------------------- clipping


def _grads(scale):
    rng = np.random.default_rng(9)
    return {
        "W_x": rng.normal(size=(3, 2)) * scale,
        "W_h": rng.normal(size=(3, 3)) * scale,
        "b_h": rng.normal(size=3) * scale,
    }


def test_clip_leaves_small_gradients_unchanged():
    g = _grads(0.01)
    assert global_norm(g) < 1.0
    clipped = clip_by_global_norm(g, 1.0)
    for k in g:
        np.testing.assert_array_equal(clipped[k], g[k])
    zeros = {"a": np.zeros(3)}
    np.testing.assert_array_equal(clip_by_global_norm(zeros, 1.0)["a"], 0.0)


def test_clip_scales_to_exactly_max_norm_like_torch():
    g = _grads(10.0)
    clipped = clip_by_global_norm(g, 2.5)
    flat = np.concatenate([v.ravel() for v in clipped.values()])
    assert np.linalg.norm(flat) == pytest.approx(2.5, rel=1e-14)
    tensors = [torch.tensor(v) for v in g.values()]
    for t in tensors:
        t.grad = t.clone()
    torch.nn.utils.clip_grad_norm_(tensors, 2.5)  # torch adds 1e-6 to the norm: compare loosely
    for k, t in zip(g, tensors):
        np.testing.assert_allclose(clipped[k], t.grad.numpy(), rtol=1e-5)
        assert clipped[k].shape == g[k].shape
