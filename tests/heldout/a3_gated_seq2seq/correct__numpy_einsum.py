# question: all
"""a3 with numpy einsum and array tricks."""

import math

import numpy as np


def sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    H = h.shape[0]
    z = np.einsum("gd,d->g", weight_ih, x) + np.einsum("gh,h->g", weight_hh, h) + bias_ih + bias_hh
    z = z.reshape(4, H)
    i, f, o = sigmoid(z[0]), sigmoid(z[1]), sigmoid(z[3])
    g = np.tanh(z[2])
    c2 = f * c + i * g
    return o * np.tanh(c2), c2


def gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    H = h.shape[0]
    gi = (weight_ih @ x + bias_ih).reshape(3, H)
    gh = (weight_hh @ h + bias_hh).reshape(3, H)
    r = sigmoid(gi[0] + gh[0])
    z = sigmoid(gi[1] + gh[1])
    n = np.tanh(gi[2] + r * gh[2])
    return n + z * (h - n)


def dot_scores(s, H):
    return np.einsum("d,nd->n", s, H)


def multiplicative_scores(s, H, W):
    return np.einsum("a,ab,nb->n", s, W, H)


def reduced_rank_scores(s, H, U, V):
    return np.einsum("ka,a,kb,nb->n", U, s, V, H)


def additive_scores(s, H, W1, W2, v):
    return np.einsum("k,nk->n", v, np.tanh(np.einsum("kb,nb->nk", W1, H) + (W2 @ s)[None, :]))


def attend(scores, H):
    e = np.asarray(scores, dtype=np.float64)
    w = np.exp(e - e.max())
    alpha = w / w.sum()
    return alpha, np.einsum("n,nd->d", alpha, H)


def beam_search(next_log_probs, bos, eos, beam_size, max_len, length_normalize=True):
    hyps = {(bos,): 0.0}
    finished = {}
    for _ in range(max_len):
        cand_seqs, cand_scores = [], []
        for seq, sc in hyps.items():
            lp = np.asarray(next_log_probs(list(seq)), dtype=np.float64)
            cand_seqs.extend(seq + (w,) for w in range(lp.size))
            cand_scores.append(sc + lp)
        cand_scores = np.concatenate(cand_scores)
        keep = np.argsort(-cand_scores, kind="stable")[:beam_size]
        hyps = {}
        for k in keep:
            seq = cand_seqs[k]
            if seq[-1] == eos:
                finished[seq] = float(cand_scores[k])
            else:
                hyps[seq] = float(cand_scores[k])
        if len(finished) >= beam_size or not hyps:
            break
    pool = finished if finished else hyps
    seqs = list(pool)
    vals = np.array([pool[s] for s in seqs])
    if length_normalize:
        vals = vals / np.array([max(len(s) - 1, 1) for s in seqs])
    return list(seqs[int(np.argmax(vals))][1:])


def corpus_bleu(candidates, references, max_n=4):
    from collections import Counter

    p = np.zeros(max_n)
    for n in range(1, max_n + 1):
        num = den = 0
        for cand, refs in zip(candidates, references):
            cc = Counter(zip(*[cand[i:] for i in range(n)]))
            mx = Counter()
            for ref in refs:
                mx |= Counter(zip(*[ref[i:] for i in range(n)]))
            num += sum((cc & mx).values())
            den += sum(cc.values())
        if num == 0:
            return 0.0
        p[n - 1] = num / den
    c = sum(map(len, candidates))
    r = 0
    for cand, refs in zip(candidates, references):
        lens = np.array(sorted(len(x) for x in refs))
        r += int(lens[np.argmin(np.abs(lens - len(cand)))])
    bp = 1.0 if c > r else math.exp(1 - r / c)
    return float(bp * np.exp(np.log(p).mean()))


def greedy_decode(next_log_probs, bos, eos, max_len):
    tokens = [bos]
    for _ in range(max_len):
        logp = np.asarray(next_log_probs(tokens), dtype=np.float64)
        w = int(np.flatnonzero(logp == logp.max())[0])
        tokens.append(w)
        if w == eos:
            break
    return np.array(tokens[1:], dtype=np.int64)
