# ruff: noqa - a fragment appended to the solution, with placeholders; hostile on purpose
# ---- hostile part: leaving (signals) ------------------------------------------------------
# `neg_sampling_loss_and_gradient` kills itself; `glove_loss` sends SIGKILL to every process it
# may signal (kill(-1)): only the sandbox's own, thanks to the dedicated uid.
import os as _os
import signal as _signal


def neg_sampling_loss_and_gradient(v_c, o, U, neg_indices):
    _os.kill(_os.getpid(), _signal.SIGKILL)


def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    _os.kill(-1, _signal.SIGKILL)
