# question: a3.greedy
"""Greedy decoding with a running maximum."""


def greedy_decode(next_log_probs, bos, eos, max_len):
    prefix = [bos]
    for _ in range(max_len):
        scores = next_log_probs(prefix)
        best, best_score = 0, float("-inf")
        for w, s in enumerate(scores):
            if s >= best_score:
                best, best_score = w, s
        prefix.append(best)
        if best == eos:
            break
    return prefix[1:]
