# question: a3.greedy
"""Greedy decoding, generating until the output is max_len tokens long."""


def greedy_decode(next_log_probs, bos, eos, max_len):
    output = []
    while len(output) < max_len:
        logp = list(next_log_probs([bos, *output]))
        output.append(logp.index(max(logp)))
    return output
