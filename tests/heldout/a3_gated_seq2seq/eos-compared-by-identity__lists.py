# question: a3.greedy
"""Greedy decoding with lists, eos tested with `is`."""


def greedy_decode(next_log_probs, bos, eos, max_len):
    out = []
    for _ in range(max_len):
        logp = [float(x) for x in next_log_probs([bos] + out)]
        w = logp.index(max(logp))
        out.append(w)
        if w is eos:
            break
    return out
