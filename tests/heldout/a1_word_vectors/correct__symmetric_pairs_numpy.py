# question: a1.cooccurrence
"""Co-occurrence counts: each pair within the window once, added in both directions."""

import numpy as np


def cooccurrence_matrix(corpus, vocab, window=1):
    idx = {w: i for i, w in enumerate(vocab)}
    X = np.zeros((len(vocab), len(vocab)), dtype=np.float32)
    for sentence in corpus:
        ids = [idx[w] for w in sentence]
        for k in range(1, window + 1):
            a, b = np.array(ids[:-k], dtype=int), np.array(ids[k:], dtype=int)
            np.add.at(X, (a, b), 1)
            np.add.at(X, (b, a), 1)
    return X
