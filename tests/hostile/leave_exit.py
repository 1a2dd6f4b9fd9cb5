# ruff: noqa - a fragment appended to the solution, with placeholders; hostile on purpose
# ---- hostile part: leaving (exits) --------------------------------------------------------
# SystemExit and KeyboardInterrupt in a call; os._exit and a segmentation fault end the process.
import ctypes as _ctypes
import os as _os
import sys as _sys


def naive_softmax_loss_and_gradient(v_c, o, U):
    _sys.exit(0)


def noise_distribution(counts, power=0.75):
    raise KeyboardInterrupt


def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    _os._exit(0)


def analogy(E, vocab, a, b, c):
    _ctypes.string_at(0)
