"""a3's gated cells: the LSTM and GRU cases (torch's row-block conventions) and the mistakes
they must tell apart (gate order, old cell read, flipped update, reset before the matmul)."""

from __future__ import annotations

import itertools
import math

import numpy as np

from grader.mutants import AnyOf
from grader.questions import Case
from reference import gated

CELL_SHORTCUTS = (
    "torch.nn.LSTM*",
    "torch.nn.GRU*",
    "torch.nn.modules.rnn.*",
    "torch._VF.*",
    "torch.lstm*",
    "torch.gru*",
)


def _fixed(*shape: int, salt: int, scale: float = 1.0) -> np.ndarray:
    """Fixed visible numbers, one decimal: the same for every student."""
    return np.round(np.random.default_rng(salt).normal(size=shape) * scale, 1)


# ---------------------------------------------------------------- LSTM / GRU


def _lstm_args(rng: np.random.Generator, D: int, H: int) -> tuple[np.ndarray, ...]:
    return (
        rng.normal(size=D),  # x
        rng.normal(size=H) * 0.8,  # h
        rng.normal(size=H) * 1.5,  # c: large enough that tanh(c_old) and tanh(c_new) differ
        rng.normal(size=(4 * H, D)) * 0.8,  # weight_ih
        rng.normal(size=(4 * H, H)) * 0.8,  # weight_hh
        rng.normal(size=4 * H) * 0.5,  # bias_ih
        rng.normal(size=4 * H) * 0.5,  # bias_hh
    )


def _lstm_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([31, seed])
    D, H = 3, 2
    visible = (
        _fixed(D, salt=310),
        _fixed(H, salt=311),
        _fixed(H, salt=312),
        _fixed(4 * H, D, salt=313),
        _fixed(4 * H, H, salt=314),
        _fixed(4 * H, salt=315, scale=0.5),
        _fixed(4 * H, salt=316, scale=0.5),
    )
    cases = [Case("small example (D=3, H=2)", visible, visible=True)]
    for i, (D, H) in enumerate([(3, 4), (5, 2), (2, 3)]):
        cases.append(
            Case(f"hidden case {i + 1}: D={D}, H={H}, nonzero h and c", _lstm_args(rng, D, H))
        )
    return cases


def _gru_args(rng: np.random.Generator, D: int, H: int) -> tuple[np.ndarray, ...]:
    return (
        rng.normal(size=D),  # x
        rng.normal(size=H),  # h
        rng.normal(size=(3 * H, D)) * 0.9,  # weight_ih
        rng.normal(size=(3 * H, H)) * 0.9,  # weight_hh
        rng.normal(size=3 * H) * 0.5,  # bias_ih
        rng.normal(size=3 * H) * 0.8,  # bias_hh: b_hn inside the reset product matters
    )


def _gru_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([32, seed])
    # The slides' retention example: update gate u = z = 0.9, old state 0.5, candidate -0.4
    # -> 0.9 * 0.5 + 0.1 * (-0.4) = 0.41. One unit; the input x = 1 sets z and n exactly.
    slides = (
        np.array([1.0]),
        np.array([0.5]),
        np.array([[0.0], [math.log(9.0)], [math.atanh(-0.4)]]),
        np.zeros((3, 1)),
        np.zeros(3),
        np.zeros(3),
    )
    cases = [Case("slides' retention example (0.41)", slides, visible=True)]
    for i, (D, H) in enumerate([(3, 4), (4, 2), (2, 5)]):
        cases.append(
            Case(f"hidden case {i + 1}: D={D}, H={H}, nonzero h and b_hn", _gru_args(rng, D, H))
        )
    return cases


# Every wrong reading of torch's i, f, g, o row blocks; the notes' own listing order (f, i, o,
# then the candidate) first.
WRONG_GATE_ORDERS = ("fiog",) + tuple(
    "".join(p) for p in itertools.permutations("ifgo") if "".join(p) not in ("ifgo", "fiog")
)


def _lstm_gate_order(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    return AnyOf(
        *(
            gated.lstm_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, gate_order=order)
            for order in WRONG_GATE_ORDERS
        )
    )


def _lstm_old_cell(x, h, c, weight_ih, weight_hh, bias_ih, bias_hh):
    return gated.lstm_cell(
        x, h, c, weight_ih, weight_hh, bias_ih, bias_hh, output_cell=lambda c_old, c_new: c_old
    )


def _gru_flipped(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return gated.gru_cell(
        x, h, weight_ih, weight_hh, bias_ih, bias_hh, mix=lambda z, n, h: z * n + (1 - z) * h
    )


def _gru_reset_before(x, h, weight_ih, weight_hh, bias_ih, bias_hh):
    return gated.gru_cell(x, h, weight_ih, weight_hh, bias_ih, bias_hh, reset_after=False)
