"""reference.gated against torch.nn.LSTMCell / GRUCell and the slides' GRU scalar check."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from reference.gated import gru_cell, lstm_carry_jacobian, lstm_cell


def _copy_weights(cell: torch.nn.Module, rng: np.random.Generator) -> dict[str, np.ndarray]:
    weights = {}
    with torch.no_grad():
        for name in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"):
            param = getattr(cell, name)
            value = rng.normal(size=tuple(param.shape))
            param.copy_(torch.tensor(value))
            weights[name] = value
    return weights


@pytest.mark.parametrize("seed,D,H", [(0, 3, 5), (1, 4, 2), (2, 1, 3), (3, 6, 6)])
def test_lstm_cell_matches_torch(seed, D, H):
    rng = np.random.default_rng(seed)
    cell = torch.nn.LSTMCell(D, H).double()
    w = _copy_weights(cell, rng)
    x, h, c = rng.normal(size=D), rng.normal(size=H), rng.normal(size=H)
    with torch.no_grad():
        t_h, t_c = cell(torch.tensor(x)[None], (torch.tensor(h)[None], torch.tensor(c)[None]))
    h_new, c_new = lstm_cell(x, h, c, w["weight_ih"], w["weight_hh"], w["bias_ih"], w["bias_hh"])
    assert h_new.shape == (H,) and c_new.shape == (H,)
    np.testing.assert_allclose(h_new, t_h[0].numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(c_new, t_c[0].numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("seed,D,H", [(0, 3, 5), (1, 4, 2), (2, 1, 3), (3, 6, 6)])
def test_gru_cell_matches_torch(seed, D, H):
    rng = np.random.default_rng(100 + seed)
    cell = torch.nn.GRUCell(D, H).double()
    w = _copy_weights(cell, rng)
    x, h = rng.normal(size=D), rng.normal(size=H)
    with torch.no_grad():
        t_h = cell(torch.tensor(x)[None], torch.tensor(h)[None])
    h_new = gru_cell(x, h, w["weight_ih"], w["weight_hh"], w["bias_ih"], w["bias_hh"])
    assert h_new.shape == (H,)
    np.testing.assert_allclose(h_new, t_h[0].numpy(), rtol=1e-12, atol=1e-14)


def test_gru_slides_scalar_check():
    # Slides 001, "A GRU learns how much old state to retain": h_t = u ⊙ h_{t-1} + (1-u) ⊙ h̃
    # with u = 0.9, h_{t-1} = 0.5, h̃ = -0.4 gives 0.9·0.5 + 0.1·(-0.4) = 0.41.
    # Built as a one-unit GRUCell: zero weights, bias_z = logit(0.9), bias_n = atanh(-0.4).
    zeros3x1 = np.zeros((3, 1))
    bias_ih = np.array([0.0, math.log(0.9 / 0.1), math.atanh(-0.4)])
    h_new = gru_cell(np.array([0.0]), np.array([0.5]), zeros3x1, zeros3x1, bias_ih, np.zeros(3))
    np.testing.assert_allclose(h_new, [0.41], rtol=1e-12)


def test_lstm_zero_weights_by_hand():
    # All weights and biases 0: i = f = o = σ(0) = 1/2, c̃ = tanh(0) = 0,
    # so c' = c/2 and h' = tanh(c/2)/2.
    H, D = 3, 2
    c = np.array([1.0, -2.0, 0.5])
    h_new, c_new = lstm_cell(
        np.ones(D),
        np.ones(H),
        c,
        np.zeros((4 * H, D)),
        np.zeros((4 * H, H)),
        np.zeros(4 * H),
        np.zeros(4 * H),
    )
    np.testing.assert_allclose(c_new, c / 2, rtol=1e-15)
    np.testing.assert_allclose(h_new, np.tanh(c / 2) / 2, rtol=1e-15)


@pytest.mark.parametrize("seed", [0, 1])
def test_lstm_carry_jacobian_matches_autograd(seed):
    # Notes §3 / slides: with gates held fixed ∂c_t/∂c_{t-1} = diag(f_t). Within one cell the gates
    # depend on (x, h) only, so torch's Jacobian of c' with respect to c is exactly that diagonal.
    rng = np.random.default_rng(seed)
    D, H = 3, 4
    cell = torch.nn.LSTMCell(D, H).double()
    w = _copy_weights(cell, rng)
    x, h, c = rng.normal(size=D), rng.normal(size=H), rng.normal(size=H)

    def c_new(c_prev):
        return cell(torch.tensor(x)[None], (torch.tensor(h)[None], c_prev[None]))[1][0]

    J = torch.autograd.functional.jacobian(c_new, torch.tensor(c)).numpy()
    mine = lstm_carry_jacobian(x, h, w["weight_ih"], w["weight_hh"], w["bias_ih"], w["bias_hh"])
    np.testing.assert_allclose(mine, J, rtol=1e-12, atol=1e-15)
    assert np.all((np.diag(mine) > 0) & (np.diag(mine) < 1))


def test_lstm_gate_order_hook_changes_the_cell():
    # The `gate_order` hook reads the row blocks in another order (lstm-gate-order mutant).
    rng = np.random.default_rng(4)
    D, H = 2, 3
    args = (
        rng.normal(size=D),
        rng.normal(size=H),
        rng.normal(size=H),
        rng.normal(size=(4 * H, D)),
        rng.normal(size=(4 * H, H)),
        rng.normal(size=4 * H),
        rng.normal(size=4 * H),
    )
    right = lstm_cell(*args)
    wrong = lstm_cell(*args, gate_order="fiog")
    assert not np.allclose(right[0], wrong[0])
    with pytest.raises(ValueError, match="permutation"):
        lstm_cell(*args, gate_order="ifgx")
