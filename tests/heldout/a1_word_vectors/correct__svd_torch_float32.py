# question: a1.svd_embeddings
"""SVD embeddings with torch in float32, signs flipped so each column's largest entry is positive."""

import torch


def svd_embeddings(X, k):
    X = torch.as_tensor(X, dtype=torch.float32)
    U, S, Vh = torch.linalg.svd(X, full_matrices=False)
    E = U[:, :k] * S[:k]
    signs = torch.sign(E.gather(0, E.abs().argmax(dim=0, keepdim=True)))
    return E * signs
