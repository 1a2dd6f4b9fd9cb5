# ruff: noqa - a fragment appended to the solution, with placeholders; hostile on purpose
# ---- hostile part: lying ------------------------------------------------------------------
# Objects that claim equality with anything, raise from __array__, carry a pickle payload,
# numpy and torch subclasses, and monkeypatched numpy/torch comparisons. None of it may earn a
# mark: the trusted side decodes plain data only and compares in its own process.
import os as _os

import numpy as _np
import torch as _torch

# Comparisons in this process now always agree (the trusted side never uses them).
_np.allclose = lambda *a, **k: True
_np.array_equal = lambda *a, **k: True
_np.isclose = lambda a, b, *r, **k: _np.ones(_np.broadcast(a, b).shape, dtype=bool)
_np.testing.assert_allclose = lambda *a, **k: None
_torch.allclose = lambda *a, **k: True
_torch.equal = lambda *a, **k: True


class _Payload:
    """Would run a command if anyone unpickled it."""

    def __reduce__(self):
        return (_os.system, ("touch __MARKER__",))


class _Liar:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    __hash__ = object.__hash__

    def __array__(self, *args, **kwargs):
        raise RuntimeError("no array for you")

    def __float__(self):
        raise RuntimeError("no float for you")

    def __reduce__(self):
        return _Payload().__reduce__()


class _AgreeingArray(_np.ndarray):
    def __eq__(self, other):
        return _np.ones(self.shape, dtype=bool).view(_AgreeingArray)

    def __array__(self, *args, **kwargs):
        return _np.zeros(self.shape)


class _AgreeingTensor(_torch.Tensor):
    def __eq__(self, other):
        return True


class _AgreeingStr(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


def naive_softmax_loss_and_gradient(v_c, o, U):
    grad_v = _torch.zeros(len(v_c), dtype=_torch.float64).as_subclass(_AgreeingTensor)
    grad_U = _torch.zeros(_np.shape(U), dtype=_torch.float64).as_subclass(_AgreeingTensor)
    return 0.0, grad_v, grad_U


def neg_sampling_loss_and_gradient(v_c, o, U, neg_indices):
    return 0.0, _np.zeros(len(v_c)), _np.zeros(_np.shape(U))


def noise_distribution(counts, power=0.75):
    return _np.full(len(counts), 0.5).view(_AgreeingArray)


def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    return _Liar()


def analogy(E, vocab, a, b, c):
    return _AgreeingStr("not-a-word")
