# question: a1.cooccurrence
"""Co-occurrence counts with plain Python lists, converted at the end."""


def cooccurrence_matrix(corpus, vocab, window=1):
    index = {w: i for i, w in enumerate(vocab)}
    V = len(vocab)
    counts = [[0.0] * V for _ in range(V)]
    for sentence in corpus:
        for t, word in enumerate(sentence):
            for offset in range(-window, window + 1):
                s = t + offset
                if offset != 0 and 0 <= s < len(sentence):
                    counts[index[word]][index[sentence[s]]] += 1
    return counts
