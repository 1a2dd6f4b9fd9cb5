"""a3: gated RNN cells, attention scores, beam search and corpus BLEU (a solution, numpy).

Conventions: row vectors; weights in the torch.nn.Linear layout W (out, in), y = x @ W.T + b;
softmax over the last axis; natural logs.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np


def _sigmoid(x):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + e), e / (1.0 + e))


def _softmax(x):
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x))
    return e / e.sum()


# ---------------------------------------------------------------- gated cells


def lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    """torch.nn.LSTMCell: blocks i, f, g, o; c' = f*c + i*g, h' = o*tanh(c')."""
    gates = weight_ih @ x + bias_ih + weight_hh @ h + bias_hh  # (4H,)
    i, f, g, o = np.split(gates, 4)
    i, f, o = _sigmoid(i), _sigmoid(f), _sigmoid(o)
    g = np.tanh(g)
    c_new = f * c + i * g
    h_new = o * np.tanh(c_new)
    return h_new, c_new


def gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    """torch.nn.GRUCell: blocks r, z, n; n = tanh(W_in x + b_in + r*(W_hn h + b_hn))."""
    gi = weight_ih @ x + bias_ih  # (3H,)
    gh = weight_hh @ h + bias_hh  # (3H,)
    i_r, i_z, i_n = np.split(gi, 3)
    h_r, h_z, h_n = np.split(gh, 3)
    r = _sigmoid(i_r + h_r)
    z = _sigmoid(i_z + h_z)
    n = np.tanh(i_n + r * h_n)
    return (1.0 - z) * n + z * h


# ---------------------------------------------------------------- attention


def dot_scores(s, H):
    """e_i = s . h_i."""
    return H @ s


def multiplicative_scores(s, H, W):
    """e_i = s^T W h_i with W (d_s, d_h)."""
    return H @ (W.T @ s)


def reduced_rank_scores(s, H, U, V):
    """e_i = (U s) . (V h_i)."""
    return (H @ V.T) @ (U @ s)


def additive_scores(s, H, W1, W2, v):
    """e_i = v . tanh(W1 h_i + W2 s)."""
    return np.tanh(H @ W1.T + W2 @ s) @ v


def attend(scores, H):
    """alpha = softmax(scores), a = sum_i alpha_i h_i."""
    alpha = _softmax(scores)
    return alpha, alpha @ H


# ---------------------------------------------------------------- decoding


def greedy_decode(next_log_probs, bos, eos, max_len):
    """Take the argmax each step (ties to the smaller id) until eos or max_len tokens."""
    tokens = [bos]
    for _ in range(max_len):
        logp = np.asarray(next_log_probs(list(tokens)), dtype=np.float64)
        w = int(np.argmax(logp))  # the first maximum: the smaller id on a tie
        tokens.append(w)
        if w == eos:
            break
    return tokens[1:]


def beam_search(next_log_probs, bos, eos, beam_size, max_len, length_normalize=True):
    """Beam search exactly as the README defines it; returns the tokens after bos."""
    live = [([bos], 0.0)]
    finished = []
    for _ in range(max_len):
        candidates = []
        for tokens, score in live:
            logp = np.asarray(next_log_probs(list(tokens)), dtype=np.float64)
            for w in range(len(logp)):
                candidates.append((tokens + [w], score + float(logp[w])))
        candidates.sort(key=lambda cand: -cand[1])
        live = []
        for tokens, score in candidates[:beam_size]:
            if tokens[-1] == eos:
                finished.append((tokens, score))
            else:
                live.append((tokens, score))
        if len(finished) >= beam_size or not live:
            break
    pool = finished if finished else live

    def key(hyp):
        tokens, score = hyp
        n = len(tokens) - 1
        return score / n if length_normalize and n > 0 else score

    best = max(pool, key=key)
    return best[0][1:]


# ---------------------------------------------------------------- BLEU


def _ngrams(tokens, n):
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def corpus_bleu(candidates, references, max_n=4):
    """Corpus BLEU: clipped n-gram precisions, geometric mean, brevity penalty."""
    log_sum = 0.0
    for n in range(1, max_n + 1):
        matched = total = 0
        for cand, refs in zip(candidates, references):
            counts = _ngrams(cand, n)
            max_ref = Counter()
            for ref in refs:
                for g, k in _ngrams(ref, n).items():
                    max_ref[g] = max(max_ref[g], k)
            matched += sum(min(k, max_ref[g]) for g, k in counts.items())
            total += sum(counts.values())
        if matched == 0 or total == 0:
            return 0.0
        log_sum += math.log(matched / total)
    c = sum(len(cand) for cand in candidates)
    r = 0
    for cand, refs in zip(candidates, references):
        r += min((len(ref) for ref in refs), key=lambda L: (abs(L - len(cand)), L))
    bp = 1.0 if c > r else (math.exp(1.0 - r / c) if c > 0 else 0.0)
    return bp * math.exp(log_sum / max_n)
