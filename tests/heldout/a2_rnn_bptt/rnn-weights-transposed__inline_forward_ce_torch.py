# question: a2.bptt_sequence_ce
"""a2 solution: a vanilla RNN, backpropagation through time, clipping and perplexity.

Conventions (README, "Conventions"): row vectors — one input x_t is 1-D (D,), a sequence X
is (T, D); weights in the torch.nn.Linear layout (out, in), so z_t = x_t W_x^T + ...;
softmax over the last axis; natural logs (nats). Inputs arrive as numpy float64 arrays
(ints for class ids). Use numpy or torch, float32 or float64; return arrays, tensors,
lists or numbers — but the shapes must be exactly the ones stated.

Do not use autograd (`.backward()`, `torch.autograd`, `torch.func`) in the two BPTT
functions, nor `torch.nn.utils.clip_grad_norm_` in `clip_by_global_norm`: those
questions ask you to write the computation yourself.
"""

from __future__ import annotations

import numpy as np
import torch


def rnn_forward(X, W_x, W_h, b_h, h0=None):
    """The forward pass of a vanilla tanh RNN over one sequence.

    Args:
        X: (T, D) inputs, row t is x_t.
        W_x: (H, D) input weights.
        W_h: (H, H) recurrent weights.
        b_h: (H,) bias.
        h0: (H,) initial state h_{-1}, or None for zeros.

    Returns:
        (Z, Hs), both (T, H): row t of Z is the preactivation
            z_t = x_t W_x^T + h_{t-1} W_h^T + b_h,
        row t of Hs is the state h_t = tanh(z_t).
    """
    X = np.asarray(X, dtype=np.float64)  # (T, D)
    W_x = np.asarray(W_x, dtype=np.float64)  # (H, D)
    W_h = np.asarray(W_h, dtype=np.float64)  # (H, H)
    b_h = np.asarray(b_h, dtype=np.float64)  # (H,)
    T, H = X.shape[0], W_h.shape[0]
    h = np.zeros(H) if h0 is None else np.asarray(h0, dtype=np.float64)  # (H,)
    Z = np.zeros((T, H))
    Hs = np.zeros((T, H))
    for t in range(T):
        Z[t] = X[t] @ W_x.T + h @ W_h.T + b_h  # (H,)
        h = np.tanh(Z[t])
        Hs[t] = h
    return Z, Hs


def bptt_final_state(X, W_x, W_h, b_h, y, h0=None):
    """Gradients of L = 0.5 * ||h_{T-1} - y||^2 by backpropagation through time.

    Args:
        X, W_x, W_h, b_h, h0: as in `rnn_forward`.
        y: (H,) the target for the final state.

    Returns:
        {"W_x": (H, D), "W_h": (H, H), "b_h": (H,)}: dL/dW_x, dL/dW_h, dL/db_h.

    The backward ledger (row vectors, slides "One final loss travels backward through time"):
        g^h_{T-1} = h_{T-1} - y
        g^z_t = g^h_t ⊙ (1 - h_t^2)
        g^h_{t-1} = g^z_t W_h
        dL/dW_h = Σ_t (g^z_t)^T h_{t-1},  dL/dW_x = Σ_t (g^z_t)^T x_t,  dL/db_h = Σ_t g^z_t
    """
    X = np.asarray(X, dtype=np.float64)
    W_h = np.asarray(W_h, dtype=np.float64)
    Z, Hs = rnn_forward(X, W_x, W_h, b_h, h0)  # (T, H) each
    direct = np.zeros_like(Hs)  # (T, H): only the final state has a loss
    direct[-1] = Hs[-1] - np.asarray(y, dtype=np.float64)
    return _backward(X, W_h, Hs, h0, direct)


def bptt_sequence_ce(X, W_x, W_h, b_h, W_o, b_o, targets, h0=None):
    f = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    X, W_x, W_h, b_h, W_o, b_o = map(f, (X, W_x, W_h, b_h, W_o, b_o))
    y = torch.as_tensor(targets, dtype=torch.long)
    T, H = X.shape[0], W_h.shape[0]
    h_init = torch.zeros(H, dtype=torch.float64) if h0 is None else f(h0)
    hs, h = [], h_init
    for t in range(T):
        h = torch.tanh(X[t] @ W_x.T + h @ W_h + b_h)
        hs.append(h)
    Hs = torch.stack(hs)
    H_prev = torch.cat([h_init[None], Hs[:-1]])
    logp = torch.log_softmax(Hs @ W_o.T + b_o, dim=1)
    loss = -logp[torch.arange(T), y].mean()
    g_a = (logp.exp() - torch.nn.functional.one_hot(y, W_o.shape[0]).double()) / T
    g_z = torch.zeros(T, H, dtype=torch.float64)
    carry = torch.zeros(H, dtype=torch.float64)
    for t in reversed(range(T)):
        g_z[t] = (g_a[t] @ W_o + carry) * (1 - Hs[t] ** 2)
        carry = g_z[t] @ W_h
    return loss.item(), {"W_x": g_z.T @ X, "W_h": g_z.T @ H_prev, "b_h": g_z.sum(0),
                         "W_o": g_a.T @ Hs, "b_o": g_a.sum(0)}


def _backward(X, W_h, Hs, h0, direct):
    """BPTT from the direct signals dL/dh_t (T, H): g^h_t = direct_t + g^z_{t+1} W_h."""
    T, H = Hs.shape
    H_prev = np.vstack([np.zeros((1, H)) if h0 is None else np.asarray(h0, dtype=np.float64)[None], Hs[:-1]])
    g_z = np.zeros((T, H))
    future = np.zeros(H)  # g^z_{t+1} W_h, zero after the last position
    for t in range(T - 1, -1, -1):
        g_h = direct[t] + future
        g_z[t] = g_h * (1.0 - Hs[t] ** 2)
        future = g_z[t] @ W_h
    return {"W_x": g_z.T @ X, "W_h": g_z.T @ H_prev, "b_h": g_z.sum(axis=0)}


def clip_by_global_norm(grads, max_norm):
    """Clip a dict of gradient arrays by their global L2 norm.

    Args:
        grads: {name: array} of any shapes.
        max_norm: the threshold c > 0.

    Returns:
        A dict with the same keys and shapes: g when ||g||_2 <= c, else (c / ||g||_2) g, where
        ||g||_2 = sqrt(Σ over all arrays, all entries of g^2) is ONE norm over all arrays together.
    """
    arrays = {k: np.asarray(g, dtype=np.float64) for k, g in grads.items()}
    norm = np.sqrt(sum(float(np.sum(g**2)) for g in arrays.values()))
    scale = 1.0 if norm <= max_norm else max_norm / norm
    return {k: scale * g for k, g in arrays.items()}


def sequence_perplexity(logits, targets):
    """Mean cross-entropy (nats) and perplexity of a sequence of predictions.

    Args:
        logits: (T, V) unnormalised scores a_t.
        targets: (T,) int ids y_t in [0, V).

    Returns:
        (ce_nats, perplexity): ce_nats = (1/T) Σ_t -log softmax(a_t)[y_t] (a float),
        perplexity = exp(ce_nats) (a float).
    """
    A = np.asarray(logits, dtype=np.float64)  # (T, V)
    A = A - A.max(axis=1, keepdims=True)
    logp = A - np.log(np.exp(A).sum(axis=1, keepdims=True))
    targets = np.asarray(targets, dtype=np.int64)
    ce = float(-logp[np.arange(len(targets)), targets].mean())
    return ce, float(np.exp(ce))
