"""a1's case searches compute cosines and norms without numpy's dispatch (issue 37): the same
numbers, bit for bit, as `reference.word_vectors.cosine_similarity` and `np.linalg.norm`, or a
case could change."""

from __future__ import annotations

import numpy as np
import pytest

from grader.suites import a1_word_vectors as a1
from reference.word_vectors import cosine_similarity


def _draws(seed: int, n: int = 400):
    rng = np.random.default_rng([37, seed])
    for _ in range(n):
        V, d = int(rng.integers(3, 13)), int(rng.integers(1, 6))
        E = rng.normal(size=(V, d)) * rng.uniform(0.2, 4.0, size=(V, 1))  # (V, d)
        yield E, E[1] - E[0] + E[2]


@pytest.mark.parametrize("seed", range(5))
def test_search_cosines_are_the_references_bit_for_bit(seed):
    for E, q in _draws(seed):
        assert a1._search_cosines(E, q).tobytes() == cosine_similarity(E, q).tobytes()


@pytest.mark.parametrize("seed", range(5))
def test_norms_are_numpys_bit_for_bit(seed):
    for E, q in _draws(seed):
        assert a1._row_norms(E).tobytes() == np.linalg.norm(E, axis=-1).tobytes()
        assert a1._norm(q).tobytes() == np.linalg.norm(q).tobytes()


def test_a_zero_row_or_target_scores_as_the_reference_does():
    E = np.array([[0.0, 0.0], [1.0, 2.0], [-3.0, 0.5]])
    for q in (np.array([0.5, -1.0]), np.zeros(2)):
        got = a1._search_cosines(E, q)
        assert got.tobytes() == cosine_similarity(E, q).tobytes()
        assert np.isfinite(got).all()


def test_the_large_epsilon_is_its_formula():
    """e_w·q / (‖e_w‖ ‖q‖ + 1), the norms by numpy."""
    for E, q in _draws(9, 100):
        want = E @ q / (np.linalg.norm(E, axis=1) * np.linalg.norm(q) + 1.0)
        assert a1._large_epsilon(E, q).tobytes() == want.tobytes()
