# question: a1.svd_embeddings
"""SVD embeddings with torch in float32."""

import torch


def svd_embeddings(X, k):
    X = torch.as_tensor(X, dtype=torch.float32)
    U, S, Vh = torch.linalg.svd(X, full_matrices=False)
    return U[:, :k].numpy()
