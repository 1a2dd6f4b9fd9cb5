# question: a1.cooccurrence
"""Assignment 1: word vectors — count-based part (co-occurrence counts)."""

import numpy as np


def cooccurrence_matrix(corpus, vocab, window=1):
    """X[i, j] = how often vocab[j] is within `window` words of vocab[i]."""
    index = {w: i for i, w in enumerate(vocab)}
    X = np.zeros((len(vocab), len(vocab)))
    for sentence in corpus:
        for t, word in enumerate(sentence):
            start = max(0, t - window)
            stop = min(len(sentence), t + window + 1)
            for s in range(start, stop):
                X[index[word], index[sentence[s]]] += 1
    return X
