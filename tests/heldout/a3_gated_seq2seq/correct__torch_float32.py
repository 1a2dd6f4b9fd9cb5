# question: all
"""a3 in torch, float32 throughout."""

import torch
import torch.nn.functional as F


def _t(a):
    return torch.as_tensor(a, dtype=torch.float32)


def lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    x, h, c = _t(x), _t(h), _t(c)
    gates = F.linear(x, _t(weight_ih), _t(bias_ih)) + F.linear(h, _t(weight_hh), _t(bias_hh))
    i, f, g, o = gates.chunk(4)
    c_next = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    h_next = torch.sigmoid(o) * torch.tanh(c_next)
    return h_next, c_next


def gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    x, h = _t(x), _t(h)
    gi = F.linear(x, _t(weight_ih), _t(bias_ih))
    gh = F.linear(h, _t(weight_hh), _t(bias_hh))
    ir, iz, in_ = gi.chunk(3)
    hr, hz, hn = gh.chunk(3)
    r = torch.sigmoid(ir + hr)
    z = torch.sigmoid(iz + hz)
    n = torch.tanh(in_ + r * hn)
    return (1 - z) * n + z * h


def dot_scores(s, H):
    return _t(H) @ _t(s)


def multiplicative_scores(s, H, W):
    return _t(H) @ (_t(W).T @ _t(s))


def reduced_rank_scores(s, H, U, V):
    return F.linear(_t(H), _t(V)) @ (_t(U) @ _t(s))


def additive_scores(s, H, W1, W2, v):
    return torch.tanh(F.linear(_t(H), _t(W1)) + F.linear(_t(s), _t(W2))) @ _t(v)


def attend(scores, H):
    alpha = torch.softmax(_t(scores), dim=-1)
    return alpha, alpha @ _t(H)


def beam_search(next_log_probs, bos, eos, beam_size, max_len, length_normalize=True):
    beams = [([bos], 0.0)]
    finished = []
    for _ in range(max_len):
        seqs, scores = [], []
        for seq, sc in beams:
            lp = torch.as_tensor(next_log_probs(list(seq)), dtype=torch.float64)
            for w in range(lp.shape[0]):
                seqs.append(seq + [w])
                scores.append(sc + lp[w].item())
        top = torch.topk(torch.tensor(scores, dtype=torch.float64), k=min(beam_size, len(scores)))
        beams = []
        for idx in top.indices.tolist():
            cand = (seqs[idx], scores[idx])
            if cand[0][-1] == eos:
                finished.append(cand)
            else:
                beams.append(cand)
        if len(finished) >= beam_size or not beams:
            break
    pool = finished or beams

    def final(c):
        n = len(c[0]) - 1
        return c[1] / n if (length_normalize and n > 0) else c[1]

    return max(pool, key=final)[0][1:]


def _count(seq, n):
    out = {}
    for i in range(len(seq) - n + 1):
        g = tuple(seq[i:i + n])
        out[g] = out.get(g, 0) + 1
    return out


def corpus_bleu(candidates, references, max_n=4):
    match = torch.zeros(max_n, dtype=torch.float64)
    total = torch.zeros(max_n, dtype=torch.float64)
    for cand, refs in zip(candidates, references):
        for n in range(1, max_n + 1):
            cc = _count(cand, n)
            rcs = [_count(r, n) for r in refs]
            for g, k in cc.items():
                match[n - 1] += min(k, max(rc.get(g, 0) for rc in rcs))
            total[n - 1] += sum(cc.values())
    if bool((match == 0).any()) or bool((total == 0).any()):
        return 0.0
    geo = torch.exp(torch.log(match / total).mean()).item()
    c = sum(len(x) for x in candidates)
    r = sum(sorted((len(ref) for ref in refs), key=lambda L: (abs(L - len(cand)), L))[0]
            for cand, refs in zip(candidates, references))
    bp = 1.0 if c > r else torch.exp(torch.tensor(1.0 - r / c, dtype=torch.float64)).item()
    return bp * geo


def greedy_decode(next_log_probs, bos, eos, max_len):
    tokens = torch.tensor([bos])
    for _ in range(max_len):
        w = torch.argmax(_t(next_log_probs(tokens.tolist())))
        tokens = torch.cat([tokens, w[None]])
        if int(w) == eos:
            break
    return tokens[1:]
