# ruff: noqa - a fragment appended to the solution, with placeholders; hostile on purpose
# ---- hostile part: hanging ----------------------------------------------------------------
# `glove_loss` loops forever, `analogy` sleeps, `noise_distribution` waits for input.
import time as _time


def noise_distribution(counts, power=0.75):
    answer = input("power? ")
    return answer


def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    n = 0
    while True:
        n += 1


def analogy(E, vocab, a, b, c):
    _time.sleep(3600)
