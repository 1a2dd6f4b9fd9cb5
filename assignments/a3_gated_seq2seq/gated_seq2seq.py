"""a3: gated RNN cells, attention scores, beam search and corpus BLEU.

Fill in every function below (replace `raise NotImplementedError`). Conventions:
- row vectors: one token is a 1-D array (D,), a sequence (T, D);
- weights in the torch.nn.Linear layout: W has shape (out, in) and y = x @ W.T + b;
- softmax over the last axis; logs are natural.
Inputs arrive as numpy float64 arrays. You may compute with numpy or torch, in float32 or
float64, and return numpy arrays, torch tensors, lists or Python numbers. Shapes must match
exactly. `lstm_cell` and `gru_cell` must not call torch.nn.LSTM*/GRU* modules or torch._VF.
"""

from __future__ import annotations

# ---------------------------------------------------------------- gated cells (notes §3)


def lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """One step of an LSTM cell in torch.nn.LSTMCell's conventions.

    Shapes: x (D,), h (H,), c (H,), weight_ih (4H, D), weight_hh (4H, H), bias_ih (4H,),
    bias_hh (4H,). The four row blocks (rows k*H:(k+1)*H) are, in order: input i, forget f,
    candidate g (the notes' c̃), output o.

        i = σ(W_ii x + b_ii + W_hi h + b_hi)      (likewise f and o)
        g = tanh(W_ig x + b_ig + W_hg h + b_hg)
        c' = f ⊙ c + i ⊙ g
        h' = o ⊙ tanh(c')

    Returns (h_new (H,), c_new (H,)).
    """
    raise NotImplementedError


def gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """One step of a GRU cell in torch.nn.GRUCell's conventions.

    Shapes: x (D,), h (H,), weight_ih (3H, D), weight_hh (3H, H), bias_ih (3H,), bias_hh (3H,).
    Row blocks, in order: reset r, update z, candidate n.

        r = σ(W_ir x + b_ir + W_hr h + b_hr)
        z = σ(W_iz x + b_iz + W_hz h + b_hz)
        n = tanh(W_in x + b_in + r ⊙ (W_hn h + b_hn))
        h' = (1 - z) ⊙ n + z ⊙ h

    Returns h_new (H,).
    """
    raise NotImplementedError


# ---------------------------------------------------------------- attention (notes §4)


def dot_scores(s, H):
    """Dot-product scores e_i = s · h_i.  s (d,), H (N, d) (row i is h_i) -> (N,)."""
    raise NotImplementedError


def multiplicative_scores(s, H, W):
    """Multiplicative scores e_i = s^T W h_i.  s (d_s,), H (N, d_h), W (d_s, d_h) -> (N,)."""
    raise NotImplementedError


def reduced_rank_scores(s, H, U, V):
    """Reduced-rank scores e_i = (U s) · (V h_i).  s (d_s,), H (N, d_h), U (k, d_s), V (k, d_h) -> (N,)."""
    raise NotImplementedError


def additive_scores(s, H, W1, W2, v):
    """Additive scores e_i = v · tanh(W1 h_i + W2 s).

    s (d_s,), H (N, d_h), W1 (k, d_h), W2 (k, d_s), v (k,) -> (N,).
    """
    raise NotImplementedError


def attend(scores, H):
    """Attention weights and output: α = softmax(scores), a = Σ_i α_i h_i.

    scores (N,), H (N, d_h) -> (alpha (N,), a (d_h,)). Keep the softmax stable for large scores.
    """
    raise NotImplementedError


# ---------------------------------------------------------------- decoding and evaluation (notes §4)


def greedy_decode(next_log_probs, bos, eos, max_len):
    """Greedy decoding: the baseline beam search improves on (notes §4).

    `next_log_probs(prefix)` is the same callable as for beam_search: it takes the token list
    so far (starting with `bos`) and returns a 1-D array (V,) of next-token log-probabilities.
    Each step appends the argmax (on a tie, the smaller token id). Stop right after appending
    `eos`, or once `max_len` tokens have been generated.

    Returns the generated tokens as a list of ints: `bos` not included, `eos` included when
    it was generated.
    """
    raise NotImplementedError


def beam_search(next_log_probs, bos, eos, beam_size, max_len, length_normalize=True):
    """Beam search, exactly as the README's 'Beam search, exactly' defines it.

    A hypothesis is a token list starting with `bos`; its score is the sum of the
    log-probabilities of its tokens after `bos`. `next_log_probs(prefix)` takes the list and
    returns a 1-D array of next-token log-probabilities (V,). For at most `max_len` steps:
    expand every live hypothesis by every token, keep the `beam_size` best candidates by
    score; kept candidates ending in `eos` move to the finished list. Stop early once
    `beam_size` hypotheses have finished or none is live. Choose among the finished ones (the
    live ones if none finished) by score / (number of tokens after bos) when
    `length_normalize`, else by score.

    Returns the tokens after `bos` as a list of ints (with `eos` when it finished).
    """
    raise NotImplementedError


def corpus_bleu(candidates, references, max_n=4):
    """Corpus-level BLEU in [0, 1], exactly as the README's 'BLEU, exactly' defines it.

    candidates: list of token lists; references: for each candidate, a list of reference
    token lists. p_n = Σ_sentences clipped n-gram matches / Σ_sentences candidate n-grams
    (n = 1 … max_n); BLEU = BP · exp((1/max_n) Σ_n log p_n), 0.0 when any p_n is 0;
    BP = exp(1 - r/c) when c <= r, else 1, with c the total candidate length and r the sum of
    each sentence's closest reference length (ties to the shorter).
    """
    raise NotImplementedError
