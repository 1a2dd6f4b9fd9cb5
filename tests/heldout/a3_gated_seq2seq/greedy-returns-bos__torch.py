# question: a3.greedy
"""Greedy decoding with torch.argmax."""

import torch


def greedy_decode(next_log_probs, bos, eos, max_len):
    tokens = [bos]
    for step in range(max_len):
        logits = torch.as_tensor(next_log_probs(list(tokens)))
        nxt = int(torch.argmax(logits))
        tokens.append(nxt)
        if nxt == eos:
            return tokens
    return tokens
