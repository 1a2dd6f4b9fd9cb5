# question: a1.svd_embeddings
"""SVD embeddings, scaling each column of U by its singular value in a loop."""

import numpy as np


def svd_embeddings(X, k):
    X = np.array(X, dtype=float)
    U, S, Vt = np.linalg.svd(X, full_matrices=False)
    E = U.copy()
    for j in range(len(S)):
        E[:, j] = U[:, j] * S[j]
    return E
