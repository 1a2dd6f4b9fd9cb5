"""The course's computations, trusted and tested; NumPy first, read next to the notes.

Conventions: row vectors (a token is a 1-D array, a sequence (T, D), a batch (B, T, D));
weights in the torch.nn.Linear layout, W of shape (out, in) and y = x @ W.T + b;
softmax over the last axis; natural logarithms.
"""
