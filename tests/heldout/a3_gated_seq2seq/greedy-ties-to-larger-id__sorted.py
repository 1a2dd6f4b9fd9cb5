# question: a3.greedy
"""Greedy decoding: sort the vocabulary by log-probability and take the top one."""

import numpy as np


def greedy_decode(next_log_probs, bos, eos, max_len):
    out = []
    for _ in range(max_len):
        logp = np.asarray(next_log_probs([bos] + out))
        ranked = sorted(range(len(logp)), key=lambda w: (logp[w], w), reverse=True)
        out.append(ranked[0])
        if ranked[0] == eos:
            break
    return out
