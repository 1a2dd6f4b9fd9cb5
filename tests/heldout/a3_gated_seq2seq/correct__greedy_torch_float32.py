# question: a3.greedy
"""Greedy decoding in torch float32 (torch.argmax returns the first maximum)."""

import torch


def greedy_decode(next_log_probs, bos, eos, max_len):
    tokens = [bos]
    while len(tokens) - 1 < max_len:
        logp = torch.tensor(next_log_probs(tokens), dtype=torch.float32)
        w = int(torch.argmax(logp).item())
        tokens.append(w)
        if w == eos:
            break
    return tokens[1:]
