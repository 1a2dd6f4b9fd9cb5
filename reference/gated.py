"""LSTM and GRU cells in PyTorch's conventions (notes §3, slides' GRU/LSTM parts).

Row blocks of the stacked weights follow torch.nn.LSTMCell (i, f, g = c̃, o) and
torch.nn.GRUCell (r, z, n). The slides call GRU's update gate u_t; here it is z as in
PyTorch, and h' = (1 - z) ⊙ n + z ⊙ h, so z near 1 keeps the old state.

Hooks for the grader's mutants:
- `lstm_cell(..., gate_order="fiog")`: read the four row blocks in another order
  (`lstm-gate-order`); `lstm_cell(..., output_cell=lambda c_old, c_new: c_old)` reads the
  old cell into h (`lstm-output-uses-old-cell`);
- `gru_cell(..., mix=lambda z, n, h: z * n + (1 - z) * h)` (`gru-update-flipped`);
  `gru_cell(..., reset_after=False)` gates h before W_hn: tanh(W_in x + b_in + W_hn (r ⊙ h) + b_hn)
  (`gru-reset-before-matmul`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from reference.functional import sigmoid

__all__ = [
    "lstm_gates",
    "lstm_cell_update",
    "lstm_hidden",
    "lstm_cell",
    "lstm_carry_jacobian",
    "gru_gates",
    "gru_mix",
    "gru_cell",
]


def _affine(x, h, weight_ih, weight_hh, bias_ih, bias_hh) -> tuple[np.ndarray, np.ndarray]:
    """The input path W_ih x + b_ih and the recurrent path W_hh h + b_hh, both stacked."""
    gi = (
        np.asarray(weight_ih, dtype=np.float64) @ np.asarray(x, dtype=np.float64) + bias_ih
    )  # (kH,)
    gh = (
        np.asarray(weight_hh, dtype=np.float64) @ np.asarray(h, dtype=np.float64) + bias_hh
    )  # (kH,)
    return np.asarray(gi, dtype=np.float64), np.asarray(gh, dtype=np.float64)


# ---------------------------------------------------------------- LSTM


def lstm_gates(
    x: np.ndarray,
    h: np.ndarray,
    weight_ih: np.ndarray,
    weight_hh: np.ndarray,
    bias_ih: np.ndarray,
    bias_hh: np.ndarray,
    *,
    gate_order: str = "ifgo",
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(i, f, c̃, o): i, f, o = σ(W_i· x + b_i· + W_h· h + b_h·), c̃ = tanh(...), blocks in `gate_order`."""
    if sorted(gate_order) != sorted("ifgo"):
        raise ValueError(f"expected a permutation of 'ifgo', got {gate_order!r}")
    gi, gh = _affine(x, h, weight_ih, weight_hh, bias_ih, bias_hh)  # (4H,), (4H,)
    blocks = dict(zip(gate_order, np.split(gi + gh, 4)))  # each (H,)
    i = sigmoid(blocks["i"])  # (H,)
    f = sigmoid(blocks["f"])  # (H,)
    g = np.tanh(blocks["g"])  # (H,) the candidate c̃
    o = sigmoid(blocks["o"])  # (H,)
    return i, f, g, o


def lstm_cell_update(i: np.ndarray, f: np.ndarray, g: np.ndarray, c: np.ndarray) -> np.ndarray:
    """c_t = f_t ⊙ c_{t-1} + i_t ⊙ c̃_t."""
    return f * np.asarray(c, dtype=np.float64) + i * g  # (H,)


def lstm_hidden(o: np.ndarray, c: np.ndarray) -> np.ndarray:
    """h_t = o_t ⊙ tanh(c_t)."""
    return o * np.tanh(c)  # (H,)


def lstm_cell(
    x: np.ndarray,
    h: np.ndarray,
    c: np.ndarray,
    weight_ih: np.ndarray,
    weight_hh: np.ndarray,
    bias_ih: np.ndarray,
    bias_hh: np.ndarray,
    *,
    gate_order: str = "ifgo",
    output_cell: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """torch.nn.LSTMCell: c' = f ⊙ c + i ⊙ c̃, h' = o ⊙ tanh(c'); returns (h', c').

    Hooks: `gate_order` (row blocks), `output_cell(c_old, c_new)` the cell read into h'.
    """
    i, f, g, o = lstm_gates(x, h, weight_ih, weight_hh, bias_ih, bias_hh, gate_order=gate_order)
    c_new = lstm_cell_update(i, f, g, c)  # (H,)
    read = c_new if output_cell is None else output_cell(np.asarray(c, dtype=np.float64), c_new)
    return lstm_hidden(o, read), c_new


def lstm_carry_jacobian(
    x: np.ndarray,
    h: np.ndarray,
    weight_ih: np.ndarray,
    weight_hh: np.ndarray,
    bias_ih: np.ndarray,
    bias_hh: np.ndarray,
) -> np.ndarray:
    """∂c_t/∂c_{t-1} = diag(f_t), gates and candidate held fixed (the additive cell carry)."""
    _, f, _, _ = lstm_gates(x, h, weight_ih, weight_hh, bias_ih, bias_hh)
    return np.diag(f)  # (H, H)


# ---------------------------------------------------------------- GRU


def gru_gates(
    x: np.ndarray,
    h: np.ndarray,
    weight_ih: np.ndarray,
    weight_hh: np.ndarray,
    bias_ih: np.ndarray,
    bias_hh: np.ndarray,
    *,
    reset_after: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r, z, n): r, z = σ(W_i· x + b_i· + W_h· h + b_h·), n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))."""
    h = np.asarray(h, dtype=np.float64)  # (H,)
    gi, gh = _affine(x, h, weight_ih, weight_hh, bias_ih, bias_hh)  # (3H,), (3H,)
    i_r, i_z, i_n = np.split(gi, 3)  # each (H,)
    h_r, h_z, h_n = np.split(gh, 3)  # each (H,)
    r = sigmoid(i_r + h_r)  # (H,)
    z = sigmoid(i_z + h_z)  # (H,)
    if reset_after:
        n = np.tanh(i_n + r * h_n)  # (H,) PyTorch: reset after the recurrent affine map
    else:
        H = h.shape[0]
        W_hn = np.asarray(weight_hh, dtype=np.float64)[2 * H :]  # (H, H)
        n = np.tanh(i_n + W_hn @ (r * h) + np.asarray(bias_hh, dtype=np.float64)[2 * H :])  # (H,)
    return r, z, n


def gru_mix(z: np.ndarray, n: np.ndarray, h: np.ndarray) -> np.ndarray:
    """h' = (1 - z) ⊙ n + z ⊙ h: z near 1 retains the old state."""
    return (1.0 - z) * n + z * np.asarray(h, dtype=np.float64)  # (H,)


def gru_cell(
    x: np.ndarray,
    h: np.ndarray,
    weight_ih: np.ndarray,
    weight_hh: np.ndarray,
    bias_ih: np.ndarray,
    bias_hh: np.ndarray,
    *,
    reset_after: bool = True,
    mix: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] = gru_mix,
) -> np.ndarray:
    """torch.nn.GRUCell: h' = (1 - z) ⊙ n + z ⊙ h (hooks: `reset_after`, `mix`)."""
    _, z, n = gru_gates(x, h, weight_ih, weight_hh, bias_ih, bias_hh, reset_after=reset_after)
    return mix(z, n, h)
