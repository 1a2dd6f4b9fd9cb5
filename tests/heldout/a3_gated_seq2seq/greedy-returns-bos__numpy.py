# question: a3.greedy
"""Greedy decoding (numpy argmax)."""

import numpy as np


def greedy_decode(next_log_probs, bos, eos, max_len):
    seq = [bos]
    while len(seq) <= max_len:
        token = int(np.argmax(next_log_probs(seq)))
        seq.append(token)
        if token == eos:
            break
    return seq
