# question: a1.svd_embeddings
"""SVD embeddings: U Σ from X = U Σ V^T."""

import numpy as np


def svd_embeddings(X, k):
    U, S, Vt = np.linalg.svd(np.asarray(X, dtype=np.float64), full_matrices=False)
    return U @ np.diag(S)
