# question: a3.greedy
"""Greedy decoding: max_len argmax steps."""

import numpy as np


def greedy_decode(next_log_probs, bos, eos, max_len):
    tokens = [bos]
    for _ in range(max_len):
        tokens.append(int(np.argmax(next_log_probs(tokens))))
    return tokens[1:]
