# question: a1.cooccurrence
"""Co-occurrence counts: look ahead `window` words from each word."""

import numpy as np


def cooccurrence_matrix(corpus, vocab, window=1):
    index = {w: i for i, w in enumerate(vocab)}
    X = np.zeros((len(vocab), len(vocab)))
    for sentence in corpus:
        for t in range(len(sentence)):
            for s in range(t + 1, min(t + window + 1, len(sentence))):
                X[index[sentence[t]], index[sentence[s]]] += 1
    return X
