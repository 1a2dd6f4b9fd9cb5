"""a2: a vanilla RNN, backpropagation through time, clipping and perplexity.

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
        row t of Hs is the state h_t = tanh(z_t). One bias b_h (torch.nn.RNN adds two,
        b_ih + b_hh). T may be 1: the outputs are still (T, H).
    """
    raise NotImplementedError


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
    raise NotImplementedError


def bptt_sequence_ce(X, W_x, W_h, b_h, W_o, b_o, targets, h0=None):
    """Loss and gradients of the mean per-position cross-entropy, by BPTT.

    Args:
        X, W_x, W_h, b_h, h0: as in `rnn_forward`.
        W_o: (C, H) output weights; b_o: (C,) output bias.
        targets: (T,) int class ids y_t in [0, C).

    Returns:
        (loss, grads): loss is a float,
            a_t = h_t W_o^T + b_o,  L = (1/T) Σ_t -log softmax(a_t)[y_t];
        grads = {"W_x": (H, D), "W_h": (H, H), "b_h": (H,), "W_o": (C, H), "b_o": (C,)}.

    The backward ledger (slides "A hidden state receives direct and future gradients"):
        g^a_t = (p_t - onehot(y_t)) / T
        g^h_t = g^a_t W_o + g^z_{t+1} W_h   (g^z_T = 0)
        g^z_t = g^h_t ⊙ (1 - h_t^2)
        dL/dW_o = Σ_t (g^a_t)^T h_t,  dL/db_o = Σ_t g^a_t, and the recurrent sums as above.

    The logits a_t can be in the hundreds: compute the softmax stably (subtract the row max).
    """
    raise NotImplementedError


def clip_by_global_norm(grads, max_norm):
    """Clip a dict of gradient arrays by their global L2 norm.

    Args:
        grads: {name: array} of any shapes.
        max_norm: the threshold c > 0.

    Returns:
        A dict with the same keys and shapes: g when ||g||_2 <= c, else (c / ||g||_2) g, where
        ||g||_2 = sqrt(Σ over all arrays, all entries of g^2) is ONE norm over all arrays together.
        Not clipping by value (each entry to [-c, c], as min-char-rnn does). A zero gradient
        (norm 0) is returned unchanged.
    """
    raise NotImplementedError


def sequence_perplexity(logits, targets):
    """Mean cross-entropy (nats) and perplexity of a sequence of predictions.

    Args:
        logits: (T, V) unnormalised scores a_t.
        targets: (T,) int ids y_t in [0, V).

    Returns:
        (ce_nats, perplexity): ce_nats = (1/T) Σ_t -log softmax(a_t)[y_t] (a float),
        perplexity = exp(ce_nats) (a float).

    The logits can be in the hundreds: compute log-softmax stably (subtract the row max).
    Natural logs: not log2 (nltk.lm) nor log10 (KenLM). T may be 1.
    """
    raise NotImplementedError
