# question: a3.greedy
"""Greedy decoding with loops, eos tested with `is`."""

import math
from collections import Counter


def _sig(v):
    if v >= 0:
        return 1.0 / (1.0 + math.exp(-v))
    e = math.exp(v)
    return e / (1.0 + e)


def _matvec(W, v):
    return [sum(w * u for w, u in zip(row, v)) for row in W]


def lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    H = len(h)
    a = _matvec(weight_ih, x)
    b = _matvec(weight_hh, h)
    z = [a[k] + b[k] + bias_ih[k] + bias_hh[k] for k in range(4 * H)]
    h_new, c_new = [], []
    for j in range(H):
        i = _sig(z[j])
        f = _sig(z[H + j])
        g = math.tanh(z[2 * H + j])
        o = _sig(z[3 * H + j])
        cj = f * c[j] + i * g
        c_new.append(cj)
        h_new.append(o * math.tanh(cj))
    return h_new, c_new


def gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    H = len(h)
    gi = [v + b for v, b in zip(_matvec(weight_ih, x), bias_ih)]
    gh = [v + b for v, b in zip(_matvec(weight_hh, h), bias_hh)]
    out = []
    for j in range(H):
        r = _sig(gi[j] + gh[j])
        z = _sig(gi[H + j] + gh[H + j])
        n = math.tanh(gi[2 * H + j] + r * gh[2 * H + j])
        out.append((1 - z) * n + z * h[j])
    return out


def dot_scores(s, H):
    return [sum(a * b for a, b in zip(s, h_i)) for h_i in H]


def multiplicative_scores(s, H, W):
    sW = [sum(s[a] * W[a][b] for a in range(len(s))) for b in range(len(W[0]))]
    return [sum(p * q for p, q in zip(sW, h_i)) for h_i in H]


def reduced_rank_scores(s, H, U, V):
    us = _matvec(U, s)
    return [sum(p * q for p, q in zip(us, _matvec(V, h_i))) for h_i in H]


def additive_scores(s, H, W1, W2, v):
    w2s = _matvec(W2, s)
    out = []
    for h_i in H:
        w1h = _matvec(W1, h_i)
        out.append(sum(v[k] * math.tanh(w1h[k] + w2s[k]) for k in range(len(v))))
    return out


def attend(scores, H):
    m = max(scores)
    ex = [math.exp(e - m) for e in scores]
    tot = sum(ex)
    alpha = [e / tot for e in ex]
    a = [sum(alpha[i] * H[i][j] for i in range(len(H))) for j in range(len(H[0]))]
    return alpha, a


def beam_search(next_log_probs, bos, eos, beam_size, max_len, length_normalize=True):
    live = [(0.0, [bos])]
    done = []
    step = 0
    while step < max_len and live:
        step += 1
        cands = []
        for sc, seq in live:
            lps = list(next_log_probs(seq))
            for tok in range(len(lps)):
                cands.append((sc + float(lps[tok]), seq + [tok]))
        cands = sorted(cands, key=lambda t: t[0], reverse=True)[:beam_size]
        live = [t for t in cands if t[1][-1] != eos]
        done += [t for t in cands if t[1][-1] == eos]
        if len(done) >= beam_size:
            break
    pool = done if done else live
    best = None
    best_val = -math.inf
    for sc, seq in pool:
        val = sc / (len(seq) - 1) if (length_normalize and len(seq) > 1) else sc
        if val > best_val:
            best, best_val = seq, val
    return best[1:]


def corpus_bleu(candidates, references, max_n=4):
    c = 0
    r = 0
    logs = 0.0
    nums = [0] * max_n
    dens = [0] * max_n
    for cand, refs in zip(candidates, references):
        c += len(cand)
        closest = None
        for ref in refs:
            d = abs(len(ref) - len(cand))
            if closest is None or d < closest[0] or (d == closest[0] and len(ref) < closest[1]):
                closest = (d, len(ref))
        r += closest[1]
        for n in range(1, max_n + 1):
            cc = Counter(tuple(cand[i:i + n]) for i in range(len(cand) - n + 1))
            for g, k in cc.items():
                best = 0
                for ref in refs:
                    best = max(best, Counter(tuple(ref[i:i + n]) for i in range(len(ref) - n + 1))[g])
                nums[n - 1] += min(k, best)
            dens[n - 1] += sum(cc.values())
    for n in range(max_n):
        if nums[n] == 0:
            return 0.0
        logs += math.log(nums[n] / dens[n])
    bp = 1.0 if c > r else math.exp(1 - r / c)
    return bp * math.exp(logs / max_n)


def greedy_decode(next_log_probs, bos, eos, max_len):
    prefix = [bos]
    while len(prefix) <= max_len:
        logp = list(next_log_probs(prefix))
        best = 0
        for w in range(1, len(logp)):
            if logp[w] > logp[best]:  # strictly greater: a tie keeps the smaller id
                best = w
        prefix.append(best)
        if best is eos:
            break
    return prefix[1:]
