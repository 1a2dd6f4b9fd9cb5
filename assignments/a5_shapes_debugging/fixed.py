"""Assignment 5 — your corrected versions of the functions in buggy.py.

Inputs arrive as torch tensors (float64 for values, int64 for ids and lengths, bool for
masks); return torch tensors (numpy arrays, lists and numbers are accepted too). You may
work in float32 or float64. Shapes must match exactly. Letters: B batch, T positions,
d model width, h heads, d_h = d / h, V vocabulary, d_ff FFN width.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: F401  (cross_entropy is allowed)


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, d) -> (B, h, T, d_h) with d_h = d / h.

    Head i holds features i*d_h:(i+1)*d_h of every position:
    out[b, i, t, :] = x[b, t, i*d_h:(i+1)*d_h].
    """
    raise NotImplementedError


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, h, T, d_h) -> (B, T, h*d_h): the inverse of split_heads.

    out[b, t, i*d_h:(i+1)*d_h] = x[b, i, t, :] (heads concatenated in order).
    """
    raise NotImplementedError


def masked_softmax(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the last axis of scores (..., Tq, Tk) with a boolean mask.

    mask is broadcastable to scores; True = may attend (torch's boolean attn_mask).
    A = softmax(S + M), M = 0 where mask is True and -inf where it is False, so masked
    weights are exactly 0 and every row sums to 1 over its allowed keys. Same shape as scores.
    Scores may be large (hundreds apart): the softmax must stay finite (shift by the row max).
    """
    raise NotImplementedError


def causal_lm_loss(logits: torch.Tensor, tokens: torch.Tensor, pad_id: int) -> torch.Tensor:
    """Next-token cross-entropy: logits (B, T, V), tokens (B, T) int64 -> scalar tensor (shape ()).

    L = mean over the pairs (b, t) with t < T-1 and tokens[b, t+1] != pad_id of
        -log softmax(logits[b, t])[tokens[b, t+1]]     (natural log).
    One mean over every real target of the batch together (torch's default reduction="mean"
    with ignore_index): not a mean per sequence then over the batch, not the sum. Logits may
    be large (hundreds apart): take log_softmax, not log(softmax).
    """
    raise NotImplementedError


def masked_mean_pool(H: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """H (B, T, d), lengths (B,) int64 -> (B, d): the mean of the first lengths[b] rows of H[b].

    h̄_b = Σ_t m_bt h_bt / Σ_t m_bt with m_bt = 1 if t < lengths[b] else 0.
    """
    raise NotImplementedError


def block_shapes(B: int, T: int, d: int, n_heads: int, d_ff: int) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor in one pre-norm encoder block, as tuples of ints.

    Keys: input q q_heads scores weights context_heads context attn_out ffn_hidden ffn_out
    block_out ln_stats bn_stats. q is X W_Q^T (all heads together), q_heads after split_heads,
    scores = Q K^T per head, weights after the softmax, context_heads = weights @ V per head,
    context after merge_heads, attn_out after W_O, ffn_hidden after W_1 and the ReLU, ffn_out
    after W_2, block_out the block's output; ln_stats / bn_stats: the shape of LayerNorm's /
    BatchNorm's mean (no keepdim) on a (B, T, d) input.
    """
    raise NotImplementedError


# Questions 7 and 8 are not in buggy.py: write them from their docstrings (README,
# "Visibility for a task").


def task_mask(task: str, lengths: torch.Tensor, T: int) -> torch.Tensor:
    """(B, T, T) bool, True where query t may attend to key s, for one task.

    task: "tagging", "classification" or "next_token"; lengths (B,) int64 real tokens per row.
    Every task: keys s < lengths[b] only (padding is never seen). "next_token" also causal:
    s <= t. A padded query row keeps its real keys.
    """
    raise NotImplementedError


def task_loss_positions(task: str, lengths: torch.Tensor, T: int) -> torch.Tensor:
    """(B, T) bool: the positions whose output the task's loss reads.

    "tagging": every real token, t < lengths[b]; "next_token": t <= lengths[b] - 2 (the target
    of position t is the token at t + 1); "classification": none (the loss reads the pooled
    vector).
    """
    raise NotImplementedError
