"""What a4's topics share: the slides' microscopes (the inputs of the visible cases) and the
per-student random draws.
"""

from __future__ import annotations

import numpy as np

from grader.mutants import any_form

Array = np.ndarray

# ---------------------------------------------------------------- the slides' microscopes (001)

# Part 3, "A three-token microscope": the, cat, sleeps (T=3, D=4, d_k=d_v=2)
MICRO_X = np.array([[1.0, 0, 1, 0], [0, 1, 0, 1], [1, 1, 0, 0]])
MICRO_WQ1 = np.array([[1.0, 0, 0, 0], [0, 1, 0, 0]])
MICRO_WK1 = np.array([[0.0, 0, 1, 0], [0, 0, 0, 1]])
MICRO_WV1 = np.array([[1.0, 0, 1, 0], [0, 1, 0, 2]])
# "Multiple heads": head 2 uses W_Q2 = W_K1, W_K2 = W_Q1, W_V2 = [[0,1,1,0],[1,0,0,-1]]
MICRO_WV2 = np.array([[0.0, 1, 1, 0], [1, 0, 0, -1]])
MICRO_WO = np.array([[1.0, 0, 0.5, 0], [0, 1, 0, 0.5], [0.5, 0, 1, 0], [0, 0.5, 0, 1]])

# Part 4, "A complete block microscope" (pre-norm, one head, ReLU MLP with F=3)
BLOCK_H = np.array([[1.0, 0, -1, 2], [0, 2, 1, -1], [2, 1, 0, 1]])
BLOCK_PARAMS = {
    "W_Q": np.array([[1, 0, 0.5, 0], [0, 1, 0, 0.5]]),
    "W_K": np.array([[0.5, 0, 1, 0], [0, 0.5, 0, 1]]),
    "W_V": np.array([[1.0, 0, 0, 0], [0, 0, 1, 0]]),
    "W_O": np.array([[1.0, 0], [0, 1], [0.5, 0], [0, 0.5]]),
    "ln1_gamma": np.ones(4),
    "ln1_beta": np.zeros(4),
    "ln2_gamma": np.ones(4),
    "ln2_beta": np.zeros(4),
    "W1": np.array([[1, 0, -0.5, 0], [0, 1, 0, 0.5], [0.5, -0.5, 0.5, 0]]),
    "b1": np.array([0, 0.1, -0.1]),
    "W2": np.array([[0.5, 0, 0.2], [0, 0.5, -0.2], [0.3, -0.1, 0.1], [-0.2, 0.2, 0.4]]),
    "b2": np.array([0, -0.05, 0.05, 0]),
}


def _rng(salt: int, seed: int) -> np.random.Generator:
    return np.random.default_rng([salt, seed])


def _lengths(rng: np.random.Generator, B: int, T: int) -> Array:
    """Lengths in [1, T-1]: every sequence has padding and none is empty."""
    return rng.integers(1, T, size=B).astype(np.int64)


_any = any_form  # one mistake, several natural forms (grader.engine.diagnosis)
