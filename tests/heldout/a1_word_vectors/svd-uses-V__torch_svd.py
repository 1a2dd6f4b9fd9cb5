# question: a1.svd_embeddings
"""SVD embeddings via torch.svd (which returns V, not V^T)."""

import torch


def svd_embeddings(X, k):
    X = torch.tensor(X, dtype=torch.float64)
    U, S, V = torch.svd(X)
    return (V[:, :k] @ torch.diag(S[:k])).numpy()
