# question: a3.greedy
"""Greedy decoding with lists: list.index(max(...)) is the first, smallest id on a tie."""


def greedy_decode(next_log_probs, bos, eos, max_len):
    out = []
    for _ in range(max_len):
        logp = [float(x) for x in next_log_probs([bos] + out)]
        w = logp.index(max(logp))
        out.append(w)
        if w == eos:
            break
    return out
