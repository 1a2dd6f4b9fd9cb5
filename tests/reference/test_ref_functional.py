"""reference.functional against torch, including the extremes where naive formulas overflow."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reference.functional import log_sigmoid, log_softmax, sigmoid, softmax

X = np.array(
    [[-1000.0, -30.0, -1.5, 0.0, 2.0, 40.0, 1000.0], [1e4, 1e4 - 1, 0.0, -1e4, 3.0, 3.0, 3.0]]
)


def test_softmax_and_log_softmax_match_torch_on_any_axis():
    for axis in (-1, 0):
        want = torch.softmax(torch.from_numpy(X), dim=axis).numpy()
        np.testing.assert_allclose(softmax(X, axis=axis), want, rtol=1e-12, atol=1e-300)
        want_log = torch.log_softmax(torch.from_numpy(X), dim=axis).numpy()
        np.testing.assert_allclose(log_softmax(X, axis=axis), want_log, rtol=1e-12)


@pytest.mark.parametrize(
    "fn, authority", [(sigmoid, torch.sigmoid), (log_sigmoid, torch.nn.functional.logsigmoid)]
)
def test_sigmoids_match_torch_without_overflow(fn, authority):
    with np.errstate(over="raise", invalid="raise"):
        got = fn(X)
    np.testing.assert_allclose(got, authority(torch.from_numpy(X)).numpy(), rtol=1e-12, atol=1e-300)
    assert np.all(np.isfinite(got))
