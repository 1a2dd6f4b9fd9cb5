"""Backpropagation through time for the vanilla RNN (notes §2, the slides' BPTT ledgers).

The backward pass, in the slides' row-vector notation:
    g^h_t = (direct signal into h_t) + g^z_{t+1} W_h,   g^z_T = 0
    g^z_t = g^h_t ⊙ (1 - h_t^2)
    ∂L/∂W_h = Σ_t G_t,  G_t = (g^z_t)^T h_{t-1}  (one outer product per use of W_h)
    ∂L/∂W_x = Σ_t (g^z_t)^T x_t,   ∂L/∂b_h = Σ_t g^z_t

The pieces are public so that a mutant is one call with one piece swapped:
- `activation_derivative(Z, Hs)`: `lambda Z, Hs: 1 - Z**2`
  (`bptt-derivative-of-preactivation`), `lambda Z, Hs: np.ones_like(Hs)`
  (`bptt-missing-tanh-derivative`);
- `uses`: which uses t are summed, e.g. `uses=[-1]` (`bptt-last-use-only`);
- `outer(g, v)`: `lambda g, v: np.outer(v, g)` (`bptt-outer-product-transposed`; shapes
  only fit when D = H);
- `bptt_sequence_ce(..., direct_filter=...)`: maps the (T, H) direct signals g^a_t W_o
  before the backward pass, e.g. keeping only the last row (`bptt-missing-direct-term`);
- `bptt_sequence_ce(..., scale=1.0)`: the factor on Σ_t ℓ_t and on g^a_t (default 1/T):
  1.0 is `ce-sum-not-mean`, 1/T**2 is `ce-double-mean`;
- `forward`: the forward pass (default `rnn_forward`), e.g. with transposed weights;
- `carry=False`: no signal carried back through time, g^h_t = direct_t alone
  (`bptt-missing-future-term`);
- `backward_matrix(W_h)`: the matrix g^z_t is multiplied by on its way to h_{t-1}, e.g.
  `lambda W: W.T` (`bptt-backward-weights-transposed`: the column-vector habit in row form);
- `recurrent_inputs(Hs, h0)`: the rows h_{t-1} paired with g^z_t in ∂L/∂W_h (default
  `previous_states`), e.g. `lambda Hs, h0: Hs` (h_t for h_{t-1}) or
  `lambda Hs, h0: previous_states(Hs)` (h0 left out of the gradient);
- `bptt_sequence_ce(..., log_base=2.0)`: the loss in bits (`ce-in-bits`);
- `bptt_sequence_ce(..., output_hooks=True)`: `outer` and `uses` also shape the output
  layer's sums ∂L/∂W_o = Σ_t (g^a_t)^T h_t and ∂L/∂b_o = Σ_t g^a_t (a student who transposes
  every outer product, or keeps one use of every shared weight, output layer included).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from reference.functional import softmax
from reference.rnn import output_logits, per_position_ce, previous_states, rnn_forward

__all__ = [
    "BPTTLedger",
    "tanh_derivative",
    "backward_through_time",
    "per_use_contributions",
    "recurrent_gradients",
    "bptt_ledger",
    "final_state_loss",
    "final_state_signal",
    "final_state_ledger",
    "bptt_final_state",
    "ce_output_gradient",
    "bptt_sequence_ce",
    "sequence_ce_ledger",
    "jacobian_path_product",
    "jacobian_path_norm",
    "global_norm",
    "clip_factor",
    "clip_by_global_norm",
]

Derivative = Callable[[np.ndarray, np.ndarray], np.ndarray]  # (Z, Hs) -> (T, H)
Outer = Callable[[np.ndarray, np.ndarray], np.ndarray]
Uses = slice | Sequence[int] | None
Forward = Callable[..., tuple[np.ndarray, np.ndarray]]
RecurrentInputs = Callable[[np.ndarray, "np.ndarray | None"], np.ndarray]  # (Hs, h0) -> (T, H)


@dataclass(frozen=True)
class BPTTLedger:
    """The slides' forward and backward ledger of one sequence, rows indexed by position t."""

    Z: np.ndarray  # (T, H) preactivations z_t
    Hs: np.ndarray  # (T, H) states h_t
    H_prev: np.ndarray  # (T, H) the recurrent inputs h_{t-1} (row 0 is h_{-1})
    g_h: np.ndarray  # (T, H) ∂L/∂h_t, direct plus future
    g_z: np.ndarray  # (T, H) ∂L/∂z_t
    G: np.ndarray  # (T, H, H) per-use contributions to ∂L/∂W_h; their sum is the gradient


def tanh_derivative(Z: np.ndarray, Hs: np.ndarray) -> np.ndarray:
    """∂h_t/∂z_t = 1 - h_t^2 for h_t = tanh(z_t)."""
    return 1.0 - np.asarray(Hs) ** 2  # (T, H)


def backward_through_time(
    Z: np.ndarray,
    Hs: np.ndarray,
    W_h: np.ndarray,
    direct: np.ndarray,
    *,
    activation_derivative: Derivative = tanh_derivative,
    carry: bool = True,
    backward_matrix: Callable[[np.ndarray], np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """g^h_t = direct_t + g^z_{t+1} W_h (g^z_T = 0), g^z_t = g^h_t ⊙ σ'(z_t); returns (g_h, g_z)."""
    W_h = np.asarray(W_h, dtype=np.float64)  # (H, H)
    if backward_matrix is not None:
        W_h = np.asarray(backward_matrix(W_h), dtype=np.float64)
    direct = np.asarray(direct, dtype=np.float64)  # (T, H)
    deriv = np.asarray(activation_derivative(Z, Hs), dtype=np.float64)  # (T, H)
    T, H = direct.shape
    g_h = np.zeros((T, H))  # (T, H)
    g_z = np.zeros((T, H))  # (T, H)
    future = np.zeros(H)  # (H,) g^z_{t+1} W_h, zero past the last position
    for t in range(T - 1, -1, -1):
        g_h[t] = direct[t] + future
        g_z[t] = g_h[t] * deriv[t]
        future = g_z[t] @ W_h if carry else np.zeros(H)  # (H,)
    return g_h, g_z


def per_use_contributions(
    g_z: np.ndarray, inputs: np.ndarray, *, outer: Outer = np.outer
) -> np.ndarray:
    """G_t = (g^z_t)^T v_t for each use t (v_t = h_{t-1} for W_h, x_t for W_x)."""
    return np.stack([outer(g, v) for g, v in zip(g_z, inputs)])  # (T, H, K)


def _sum_uses(per_use: np.ndarray, uses: Uses) -> np.ndarray:
    chosen = per_use if uses is None else per_use[uses]
    return np.sum(chosen, axis=0)


def recurrent_gradients(
    g_z: np.ndarray,
    X: np.ndarray,
    H_prev: np.ndarray,
    *,
    outer: Outer = np.outer,
    uses: Uses = None,
) -> dict[str, np.ndarray]:
    """∂L/∂W_x = Σ_t (g^z_t)^T x_t, ∂L/∂W_h = Σ_t (g^z_t)^T h_{t-1}, ∂L/∂b_h = Σ_t g^z_t."""
    g_z = np.asarray(g_z, dtype=np.float64)  # (T, H)
    return {
        "W_x": _sum_uses(per_use_contributions(g_z, X, outer=outer), uses),  # (H, D)
        "W_h": _sum_uses(per_use_contributions(g_z, H_prev, outer=outer), uses),  # (H, H)
        "b_h": _sum_uses(g_z, uses),  # (H,)
    }


def bptt_ledger(
    Z: np.ndarray,
    Hs: np.ndarray,
    W_h: np.ndarray,
    direct: np.ndarray,
    h0: np.ndarray | None = None,
    *,
    activation_derivative: Derivative = tanh_derivative,
    outer: Outer = np.outer,
) -> BPTTLedger:
    """The full ledger (h_t, z_t, g^h_t, g^z_t, G_t) from a forward pass and the direct signals."""
    g_h, g_z = backward_through_time(
        Z, Hs, W_h, direct, activation_derivative=activation_derivative
    )
    H_prev = previous_states(Hs, h0)  # (T, H)
    G = per_use_contributions(g_z, H_prev, outer=outer)  # (T, H, H)
    return BPTTLedger(Z=np.asarray(Z), Hs=np.asarray(Hs), H_prev=H_prev, g_h=g_h, g_z=g_z, G=G)


# ---------------------------------------------------------------- final-state objective


def final_state_loss(Hs: np.ndarray, y: np.ndarray) -> float:
    """L = 0.5 ‖h_{T-1} - y‖^2."""
    r = np.asarray(Hs, dtype=np.float64)[-1] - np.asarray(y, dtype=np.float64)  # (H,)
    return float(0.5 * r @ r)


def final_state_signal(Hs: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Direct signals of L = 0.5 ‖h_{T-1} - y‖^2: zero rows, then h_{T-1} - y at the last position."""
    Hs = np.asarray(Hs, dtype=np.float64)  # (T, H)
    direct = np.zeros_like(Hs)  # (T, H)
    direct[-1] = Hs[-1] - np.asarray(y, dtype=np.float64)
    return direct


def bptt_final_state(
    X: np.ndarray,
    W_x: np.ndarray,
    W_h: np.ndarray,
    b_h: np.ndarray,
    y: np.ndarray,
    h0: np.ndarray | None = None,
    *,
    forward: Forward = rnn_forward,
    activation_derivative: Derivative = tanh_derivative,
    outer: Outer = np.outer,
    uses: Uses = None,
    carry: bool = True,
    backward_matrix: Callable[[np.ndarray], np.ndarray] | None = None,
    recurrent_inputs: RecurrentInputs = previous_states,
) -> dict[str, np.ndarray]:
    """Gradients {W_x, W_h, b_h} of L = 0.5 ‖h_{T-1} - y‖^2 by BPTT (hooks: module docstring)."""
    Z, Hs = forward(X, W_x, W_h, b_h, h0)  # (T, H), (T, H)
    direct = final_state_signal(Hs, y)  # (T, H)
    _, g_z = backward_through_time(
        Z,
        Hs,
        W_h,
        direct,
        activation_derivative=activation_derivative,
        carry=carry,
        backward_matrix=backward_matrix,
    )
    return recurrent_gradients(g_z, X, recurrent_inputs(Hs, h0), outer=outer, uses=uses)


def final_state_ledger(
    X: np.ndarray,
    W_x: np.ndarray,
    W_h: np.ndarray,
    b_h: np.ndarray,
    y: np.ndarray,
    h0: np.ndarray | None = None,
) -> BPTTLedger:
    """The slides' first microscope ledger: forward, then BPTT of L = 0.5 ‖h_{T-1} - y‖^2."""
    Z, Hs = rnn_forward(X, W_x, W_h, b_h, h0)  # (T, H), (T, H)
    return bptt_ledger(Z, Hs, W_h, final_state_signal(Hs, y), h0)


# ---------------------------------------------------------------- per-position cross-entropy


def ce_output_gradient(logits: np.ndarray, targets: np.ndarray, scale: float) -> np.ndarray:
    """g^a_t = scale · (softmax(a_t) - onehot(y_t)); scale = 1/T for the mean objective."""
    P = softmax(np.asarray(logits, dtype=np.float64), axis=-1)  # (T, C)
    targets = np.asarray(targets, dtype=np.int64)  # (T,)
    P[np.arange(P.shape[0]), targets] -= 1.0
    return scale * P  # (T, C)


def bptt_sequence_ce(
    X: np.ndarray,
    W_x: np.ndarray,
    W_h: np.ndarray,
    b_h: np.ndarray,
    W_o: np.ndarray,
    b_o: np.ndarray,
    targets: np.ndarray,
    h0: np.ndarray | None = None,
    *,
    forward: Forward = rnn_forward,
    activation_derivative: Derivative = tanh_derivative,
    outer: Outer = np.outer,
    uses: Uses = None,
    scale: float | None = None,
    direct_filter: Callable[[np.ndarray], np.ndarray] | None = None,
    output_hooks: bool = False,
    carry: bool = True,
    backward_matrix: Callable[[np.ndarray], np.ndarray] | None = None,
    recurrent_inputs: RecurrentInputs = previous_states,
    log_base: float = np.e,
) -> tuple[float, dict[str, np.ndarray]]:
    """L = (1/T) Σ_t -log softmax(a_t)[y_t], a_t = h_t W_o^T + b_o; returns (L, gradients).

    g^a_t = (p_t - onehot(y_t))/T, direct signal g^a_t W_o, then the shared BPTT pieces;
    ∂L/∂W_o = Σ_t (g^a_t)^T h_t, ∂L/∂b_o = Σ_t g^a_t (hooks: module docstring).
    """
    W_o = np.asarray(W_o, dtype=np.float64)  # (C, H)
    Z, Hs = forward(X, W_x, W_h, b_h, h0)  # (T, H), (T, H)
    logits = output_logits(Hs, W_o, b_o)  # (T, C)
    T = logits.shape[0]
    k = 1.0 / T if scale is None else scale
    loss = float(k * np.sum(per_position_ce(logits, targets, base=log_base)))
    g_a = ce_output_gradient(logits, targets, k)  # (T, C)
    direct = g_a @ W_o  # (T, H)
    if direct_filter is not None:
        direct = direct_filter(direct)
    _, g_z = backward_through_time(
        Z,
        Hs,
        W_h,
        direct,
        activation_derivative=activation_derivative,
        carry=carry,
        backward_matrix=backward_matrix,
    )
    grads = recurrent_gradients(g_z, X, recurrent_inputs(Hs, h0), outer=outer, uses=uses)
    if output_hooks:
        grads["W_o"] = _sum_uses(per_use_contributions(g_a, Hs, outer=outer), uses)  # (C, H)
        grads["b_o"] = _sum_uses(g_a, uses)  # (C,)
        return loss, grads
    grads["W_o"] = g_a.T @ Hs  # (C, H) Σ_t (g^a_t)^T h_t
    grads["b_o"] = g_a.sum(axis=0)  # (C,)
    return loss, grads


def sequence_ce_ledger(
    X: np.ndarray,
    W_x: np.ndarray,
    W_h: np.ndarray,
    b_h: np.ndarray,
    W_o: np.ndarray,
    b_o: np.ndarray,
    targets: np.ndarray,
    h0: np.ndarray | None = None,
) -> BPTTLedger:
    """The slides' second microscope ledger: direct signals g^a_t W_o of the mean per-position CE."""
    Z, Hs = rnn_forward(X, W_x, W_h, b_h, h0)  # (T, H), (T, H)
    logits = output_logits(Hs, W_o, b_o)  # (T, C)
    g_a = ce_output_gradient(logits, targets, 1.0 / logits.shape[0])  # (T, C)
    return bptt_ledger(Z, Hs, W_h, g_a @ np.asarray(W_o, dtype=np.float64), h0)


# ---------------------------------------------------------------- long paths and clipping


def jacobian_path_product(
    Hs: np.ndarray,
    W_h: np.ndarray,
    t: int,
    s: int,
    *,
    Z: np.ndarray | None = None,
    activation_derivative: Derivative = tanh_derivative,
) -> np.ndarray:
    """∂h_t/∂h_s = (D_t W_h)(D_{t-1} W_h)···(D_{s+1} W_h), D_u = diag(1 - h_u^2); I when s = t.

    In row form g^h_s = g^h_t · this matrix along the one path with no direct losses between.
    """
    if not 0 <= s <= t < len(Hs):
        raise ValueError(f"expected 0 <= s <= t < T = {len(Hs)}, got s = {s}, t = {t}")
    W_h = np.asarray(W_h, dtype=np.float64)  # (H, H)
    deriv = np.asarray(
        activation_derivative(Hs if Z is None else Z, Hs), dtype=np.float64
    )  # (T, H)
    P = np.eye(W_h.shape[0])  # (H, H)
    for u in range(t, s, -1):
        P = P @ (deriv[u][:, None] * W_h)  # (H, H) right-multiply by D_u W_h
    return P


def jacobian_path_norm(
    Hs: np.ndarray,
    W_h: np.ndarray,
    t: int,
    s: int,
    ord: int | float | str = 2,
    **kwargs,
) -> float:
    """‖∏_{u=t}^{s+1} D_u W_h‖ (spectral norm by default; `ord` as in numpy.linalg.norm)."""
    return float(np.linalg.norm(jacobian_path_product(Hs, W_h, t, s, **kwargs), ord=ord))


def global_norm(grads: Mapping[str, np.ndarray]) -> float:
    """‖g‖_2 over all arrays together: sqrt(Σ_arrays Σ_entries g^2)."""
    return float(
        np.sqrt(sum(float(np.sum(np.asarray(g, dtype=np.float64) ** 2)) for g in grads.values()))
    )


def clip_factor(norm: float, max_norm: float) -> float:
    """1 when ‖g‖ <= c, else c/‖g‖ (zero gradients fall in the first case)."""
    return 1.0 if norm <= max_norm else max_norm / norm


def clip_by_global_norm(
    grads: Mapping[str, np.ndarray],
    max_norm: float,
    *,
    factor: Callable[[float, float], float] = clip_factor,
) -> dict[str, np.ndarray]:
    """g̃ = g when ‖g‖_2 <= c, else (c/‖g‖_2) g, with one norm over all arrays together.

    A per-tensor mutant (`clip-per-tensor`) is {k: clip_factor(global_norm({k: g}), c) * g};
    hook: `factor(norm, c)`, e.g. `lambda n, c: c / n` (`clip-always-rescales`).
    """
    k = factor(global_norm(grads), max_norm)
    return {name: k * np.asarray(g, dtype=np.float64) for name, g in grads.items()}
