# question: a1.svd_embeddings
"""SVD word vectors: the rows of U are the embeddings (notes §1)."""

import numpy as np


def svd_embeddings(X, k):
    U, S, Vt = np.linalg.svd(np.asarray(X, dtype=float))
    return U[:, :k]
