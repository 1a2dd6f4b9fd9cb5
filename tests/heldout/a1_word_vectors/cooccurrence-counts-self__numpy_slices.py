# question: a1.cooccurrence
"""Co-occurrence matrix with numpy: every window slice is added to the centre word's row."""

import numpy as np


def cooccurrence_matrix(corpus, vocab, window=1):
    lookup = {w: i for i, w in enumerate(vocab)}
    V = len(vocab)
    X = np.zeros((V, V), dtype=np.float64)
    for sent in corpus:
        ids = np.array([lookup[w] for w in sent], dtype=np.int64)
        for t in range(len(ids)):
            context = ids[max(t - window, 0): t + window + 1]  # the window around t
            np.add.at(X[ids[t]], context, 1.0)
    return X
