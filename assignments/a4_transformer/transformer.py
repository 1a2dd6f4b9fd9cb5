"""A4 · The Transformer — your implementation.

Conventions (see README): row vectors — a token is (d,), a sequence (T, d), a batch (B, T, d);
any function below must also accept extra leading axes ("...") unless its shape says (B, T, d).
Weights use the torch.nn.Linear layout W (out, in): y = x @ W.T + b. Softmax over the last axis.
Inputs arrive as numpy float64 arrays (ints for lengths, bools for masks). You may use numpy
or torch, float32 or float64, and return arrays, tensors or lists; shapes must match exactly.

Not allowed anywhere in this file (the question scores 0): torch.nn.functional.scaled_dot_product_attention,
torch.nn.MultiheadAttention, torch.nn.functional.multi_head_attention_forward,
torch.nn.functional.layer_norm, torch.nn.LayerNorm, torch.nn.functional.rms_norm, torch.nn.RMSNorm,
torch.nn.Transformer* (Transformer, TransformerEncoderLayer, ...).
"""

from __future__ import annotations

import numpy as np  # noqa: F401

# ---------------------------------------------------------------- attention and masks


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Attention(Q, K, V) = softmax(Q K^T / sqrt(d_k) + M) V.

    Q (..., Tq, d_k), K (..., Tk, d_k), V (..., Tk, d_v).
    mask: None, or bool broadcastable to (..., Tq, Tk); True = the query MAY attend to that key
          (torch's boolean attn_mask). M = 0 where True, -inf where False; masked weights are exactly 0.
    Returns (out (..., Tq, d_v), weights (..., Tq, Tk)); each row of weights sums to 1.
    """
    raise NotImplementedError


def causal_mask(T):
    """bool (T, T): M[i, j] = True where key j <= query i (lower triangle, diagonal included)."""
    raise NotImplementedError


def padding_mask(lengths, T):
    """bool (B, T): m[b, t] = True at real tokens, t < lengths[b]; False at padding. lengths (B,) int."""
    raise NotImplementedError


def multi_head_attention(X, W_Q, W_K, W_V, W_O, n_heads, causal=False, key_padding_mask=None):
    """MHA(X) = Concat(head_1, ..., head_h) W_O^T, no biases.

    X (..., T, d); W_Q, W_K (h*d_k, d); W_V (h*d_v, d); W_O (d, h*d_v); n_heads = h.
    head i = Attention(X W_Qi^T, X W_Ki^T, X W_Vi^T) where W_Qi = W_Q[i*d_k:(i+1)*d_k] (same for
    W_K; rows i*d_v:(i+1)*d_v of W_V), scale 1/sqrt(d_k). Heads are concatenated in order.
    causal: each query sees keys j <= i. key_padding_mask: None or bool (..., T), True = real KEY
    (padded keys get weight 0 for every query). Both may be given: they combine (logical and).
    Returns (..., T, d).
    """
    raise NotImplementedError


# ---------------------------------------------------------------- norms


def layer_norm(x, gamma, beta, eps=1e-5):
    """LN(x) = gamma * (x - mu) / sqrt(var + eps) + beta over the last axis (the d features of a token).

    x (..., d); gamma, beta (d,). var is the population variance (divide by d); eps INSIDE the sqrt.
    Returns (..., d).
    """
    raise NotImplementedError


def layer_norm_stats(X):
    """LayerNorm's statistics of X (B, T, d): (mean (B, T), var (B, T)), one pair per token; population variance."""
    raise NotImplementedError


def batch_norm_stats(X):
    """BatchNorm's statistics of X (B, T, d): (mean (d,), var (d,)), one pair per feature over B and T."""
    raise NotImplementedError


def rms_norm(x, gamma, eps=1e-6):
    """RMSNorm(x) = x / sqrt(mean(x^2 over the last axis) + eps) * gamma; no centring, no beta. (..., d)."""
    raise NotImplementedError


# ---------------------------------------------------------------- feed-forward networks and positions


def feed_forward(X, W1, b1, W2, b2, activation="relu"):
    """FFN(x) = g(x W1^T + b1) W2^T + b2, per token.

    X (..., d); W1 (d_ff, d); b1 (d_ff,); W2 (d, d_ff); b2 (d,).
    activation "relu": g(z) = max(0, z); "gelu": the exact GELU g(z) = z * Phi(z) = z (1 + erf(z / sqrt(2))) / 2.
    Returns (..., d).
    """
    raise NotImplementedError


def swiglu_ffn(X, W_gate, W_up, W_down):
    """SwiGLU(x) = (swish(x W_gate^T) * (x W_up^T)) W_down^T, swish(z) = z * sigmoid(z); no biases.

    X (..., d); W_gate, W_up (d_ff, d); W_down (d, d_ff). Returns (..., d).
    """
    raise NotImplementedError


def sinusoidal_positions(T, d):
    """P (T, d): P[t, 2r] = sin(t / 10000^(2r/d)), P[t, 2r+1] = cos(t / 10000^(2r/d)); d even, t and r from 0."""
    raise NotImplementedError


def apply_rope(X, base=10000.0):
    """Rotary position embedding (RoPE, Su et al. 2021; Lecture 7's "modern alternative").

    X (..., T, d), d even; the row at position t (t = 0 … T-1 along the second-to-last axis).
    Each pair of features (2i, 2i+1) — interleaved pairs, as in RoFormer — is rotated by the
    angle phi = t * base^(-2i/d) (i = 0 … d/2 - 1):
        out[..., t, 2i]   = x cos(phi) - y sin(phi)
        out[..., t, 2i+1] = x sin(phi) + y cos(phi)      where x = X[..., t, 2i], y = X[..., t, 2i+1].
    Returns an array of X's shape. (In attention RoPE is applied to queries and keys, not values.)
    """
    raise NotImplementedError


# ---------------------------------------------------------------- blocks


def encoder_block(X, params, n_heads, norm="pre", key_padding_mask=None):
    """One encoder block on X (..., T, d) -> (..., T, d).

    params: dict with W_Q W_K W_V W_O (as in multi_head_attention), ln1_gamma ln1_beta ln2_gamma
    ln2_beta (d,), W1 b1 W2 b2 (a ReLU feed_forward). Every LayerNorm uses eps = 1e-5.
    norm "pre":  U = X + MHA(LN1(X));  out = U + FFN(LN2(U))
    norm "post": U = LN1(X + MHA(X));  out = LN2(U + FFN(U))
    key_padding_mask: None or bool (..., T), passed to the self-attention (not causal).
    """
    raise NotImplementedError


def decoder_block(Y, memory, params, n_heads, memory_padding_mask=None):
    """One pre-norm decoder block on Y (..., T, d) with encoder memory (..., S, d) -> (..., T, d).

    U1  = Y  + MHA_causal(LN1(Y))                      (self-attention: W_Q W_K W_V W_O, causal)
    U2  = U1 + CrossMHA(queries LN2(U1), keys/values memory)   (C_Q C_K C_V C_O; no LN on memory)
    out = U2 + FFN(LN3(U2))                            (ReLU; W1 b1 W2 b2)
    CrossMHA is multi-head attention whose queries come from LN2(U1) (length T) and whose keys and
    values come from memory (length S): C_Q, C_K (h*d_k, d), C_V (h*d_v, d), C_O (d, h*d_v).
    memory_padding_mask: None or bool (..., S), True = real memory position. LayerNorm eps = 1e-5.
    """
    raise NotImplementedError


# ---------------------------------------------------------------- the complete forward pass (Lecture 7)


def gpt_forward(token_ids, params, n_heads):
    """Next-token probabilities of a decoder-only, pre-norm transformer: Lecture 7's
    "The Complete Forward Pass".

    token_ids: (T,) int. params: dict with
      W_E (V, d) token embeddings;  P (T_max, d) learned position embeddings (T <= T_max);
      blocks: a list of dicts, each with the encoder_block keys (W_Q W_K W_V W_O ln1_gamma
              ln1_beta ln2_gamma ln2_beta W1 b1 W2 b2);
      lnf_gamma, lnf_beta (d,): the final LayerNorm;  optional W_U (V, d): the unembedding.
    Computes, with your own multi_head_attention, layer_norm (eps 1e-5) and feed_forward (ReLU):
        x = W_E[token_ids] + P[:T]
        for each block:  x = x + MHA_causal(LN_1(x));  x = x + FFN(LN_2(x))
        x = LN_f(x);  logits = x @ W_U.T  (W_U = W_E when params has no "W_U": tied weights)
    Returns probs (T, V) = softmax over the vocabulary: row t is P(next token | tokens 0 … t).
    """
    raise NotImplementedError
