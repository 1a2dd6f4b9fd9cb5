# question: a1.svd_embeddings
"""SVD embeddings: X = U S V^T, keep k directions scaled by their singular values."""

import numpy as np


def svd_embeddings(X, k):
    X = np.asarray(X, dtype=np.float64)
    _, S, Vt = np.linalg.svd(X, full_matrices=False)
    return Vt[:k].T * S[:k]
