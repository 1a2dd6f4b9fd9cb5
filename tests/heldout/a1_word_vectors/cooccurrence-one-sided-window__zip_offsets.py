# question: a1.cooccurrence
"""Co-occurrence counts by offsets: pair each word with the words k = 1 … window before it."""

from collections import Counter

import numpy as np


def cooccurrence_matrix(corpus, vocab, window=1):
    pos = {w: i for i, w in enumerate(vocab)}
    pairs = Counter()
    for sentence in corpus:
        for k in range(1, window + 1):
            for earlier, later in zip(sentence, sentence[k:]):
                pairs[(later, earlier)] += 1
    X = np.zeros((len(vocab), len(vocab)))
    for (a, b), n in pairs.items():
        X[pos[a], pos[b]] = n
    return X
