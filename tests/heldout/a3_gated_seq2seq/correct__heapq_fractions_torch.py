# question: all
"""a3: gated RNN cells, attention scores, beam search and corpus BLEU (a solution, numpy).

Conventions: row vectors; weights in the torch.nn.Linear layout W (out, in), y = x @ W.T + b;
softmax over the last axis; natural logs.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import torch


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
    e = torch.as_tensor(scores, dtype=torch.float64)
    alpha = torch.exp(e - torch.logsumexp(e, dim=0))
    return alpha, torch.as_tensor(H, dtype=torch.float64).T @ alpha


# ---------------------------------------------------------------- decoding


def beam_search(next_log_probs, bos, eos, beam_size, max_len, length_normalize=True):
    import heapq

    beam = [(0.0, (bos,))]
    complete = []
    t = 0
    while t < max_len:
        t += 1
        pool = []
        for score, seq in beam:
            lp = next_log_probs(list(seq))
            pool.extend((score + float(lp[w]), seq + (w,)) for w in range(len(lp)))
        best = heapq.nlargest(beam_size, pool, key=lambda p: p[0])
        complete.extend(p for p in best if p[1][-1] == eos)
        beam = [p for p in best if p[1][-1] != eos]
        if len(complete) >= beam_size or len(beam) == 0:
            break
    final = complete or beam
    norm = (lambda p: p[0] / max(len(p[1]) - 1, 1)) if length_normalize else (lambda p: p[0])
    return list(max(final, key=norm)[1][1:])


# ---------------------------------------------------------------- BLEU


def _ngrams(tokens, n):
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def corpus_bleu(candidates, references, max_n=4):
    from fractions import Fraction

    hyp_len = sum(len(c) for c in candidates)
    ref_len = 0
    nums = [0] * (max_n + 1)
    dens = [0] * (max_n + 1)
    for cand, refs in zip(candidates, references):
        ref_lens = [len(r) for r in refs]
        ref_len += min(ref_lens, key=lambda L: (abs(L - len(cand)), L))
        for n in range(1, max_n + 1):
            counts = _ngrams(cand, n)
            max_counts = {}
            for ref in refs:
                rc = _ngrams(ref, n)
                for g in counts:
                    max_counts[g] = max(max_counts.get(g, 0), rc[g])
            nums[n] += sum(min(k, max_counts[g]) for g, k in counts.items())
            dens[n] += max(0, len(cand) - n + 1)
    ps = [Fraction(nums[n], dens[n]) if dens[n] else Fraction(0) for n in range(1, max_n + 1)]
    if min(ps) == 0:
        return 0
    bp = 1.0 if hyp_len > ref_len else math.exp(1 - ref_len / hyp_len)
    return bp * math.exp(math.fsum(math.log(p) / max_n for p in ps))


def greedy_decode(next_log_probs, bos, eos, max_len):
    out = []
    for _ in range(max_len):
        logp = torch.as_tensor(np.asarray(next_log_probs([bos] + out)))
        w = int(torch.argmax(logp))  # the first maximum on a tie
        out.append(w)
        if w == eos:
            break
    return out
