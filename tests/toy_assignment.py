"""A small assignment of the tests' own, to exercise the engine independently of the course's.

Its questions reuse the trusted reference (softmax) and tiny formulas whose expected values
are obvious by hand; its misconceptions are registered here, test-only.
"""

from __future__ import annotations

import numpy as np

from grader.catalog import Misconception, register
from grader.questions import Assignment, Case, CodeQuestion
from reference.functional import softmax

register(
    Misconception(
        "toy-grad-sign",
        "gradient with the wrong sign",
        "You returned the ascent direction.",
        "toy notes §1",
    ),
    Misconception(
        "toy-weights-transposed",
        "x W instead of x W^T",
        "Weights use the (out, in) layout.",
        "toy notes §2",
    ),
    Misconception(
        "toy-softmax-unstable",
        "softmax without the max shift",
        "exp of a large logit overflows to inf; subtract the row max first.",
        "notes §1",
        credit=0.5,
    ),
)


def _softmax_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([7, seed])
    return [
        Case("notes example", (np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 1.0]]),), visible=True),
        Case("hidden case 1", (rng.normal(size=(3, 5)),)),
        Case("hidden case 2", (rng.normal(size=(2, 4)) * 3,)),
        Case("large logits", (np.array([[1000.0, 1001.0, 999.0]]) + rng.normal(size=(1, 3)),)),
    ]


def _linear_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([8, seed])
    return [
        Case(
            f"hidden case {i + 1}",
            (rng.normal(size=(2, 3)), rng.normal(size=(3, 3)), rng.normal(size=3)),
        )
        for i in range(3)
    ]


def _quad_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng([9, seed])
    return [
        Case("visible case", (np.array([1.0, -2.0]),), visible=True),
        Case("hidden case", (rng.normal(size=4),)),
    ]


def _norm_cases(seed: int) -> list[Case]:
    return [Case("3-4-5", (np.array([3.0, 4.0]),), visible=True)]


ASSIGNMENT = Assignment(
    id="toy",
    title="Toy assignment (engine tests)",
    code_file="toy.py",
    questions=(
        CodeQuestion(
            id="toy.softmax",
            title="Stable softmax",
            points=4,
            file="toy.py",
            function="softmax",
            reference=softmax,
            cases=_softmax_cases,
            mutants={
                "softmax-wrong-axis": lambda x, axis=-1: softmax(x, axis=0),
                "toy-softmax-unstable": lambda x, axis=-1: (
                    np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True)
                ),
            },
        ),
        CodeQuestion(
            id="toy.linear",
            title="Linear layer",
            points=3,
            file="toy.py",
            function="linear",
            reference=lambda x, W, b: x @ W.T + b,
            cases=_linear_cases,
            mutants={"toy-weights-transposed": lambda x, W, b: x @ W + b},
        ),
        CodeQuestion(
            id="toy.quad",
            title="Loss and gradient",
            points=2,
            file="toy.py",
            function="quad",
            reference=lambda x: (float(np.sum(x**2)), 2 * x),
            cases=_quad_cases,
            mutants={"toy-grad-sign": lambda x: (float(np.sum(x**2)), -2 * x)},
            output_names=("loss", "grad"),
        ),
        CodeQuestion(
            id="toy.norm",
            title="Euclidean norm by hand",
            points=1,
            file="toy.py",
            function="norm",
            reference=lambda x: float(np.sqrt(np.sum(x**2))),
            cases=_norm_cases,
            forbidden=("numpy.linalg.norm",),
        ),
    ),
)

NUMPY_SOLUTION = """
import numpy as np

def softmax(x, axis=-1):
    z = x - x.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)

def linear(x, W, b):
    return x @ W.T + b

def quad(x):
    return float((x ** 2).sum()), 2 * x

def norm(x):
    return float(np.sqrt((x ** 2).sum()))
"""

TORCH_SOLUTION = """
import torch

def softmax(x, axis=-1):
    t = torch.as_tensor(x, dtype=torch.float32)
    return torch.softmax(t, dim=axis)

def linear(x, W, b):
    x, W, b = (torch.as_tensor(a, dtype=torch.float32) for a in (x, W, b))
    return x @ W.T + b

def quad(x):
    t = torch.as_tensor(x, dtype=torch.float32)
    return (t ** 2).sum(), 2 * t

def norm(x):
    return torch.as_tensor(x).pow(2).sum().sqrt()
"""

LISTS_SOLUTION = """
import math

def softmax(x, axis=-1):
    rows = [list(r) for r in x]
    out = []
    for r in rows:
        m = max(r)
        e = [math.exp(v - m) for v in r]
        s = sum(e)
        out.append([v / s for v in e])
    return out

def linear(x, W, b):
    return [[sum(xi[k] * W[j][k] for k in range(len(xi))) + b[j] for j in range(len(W))] for xi in x]

def quad(x):
    return sum(v * v for v in x), [2 * v for v in x]

def norm(x):
    return math.sqrt(sum(v * v for v in x))
"""

STUB = """
def softmax(x, axis=-1):
    raise NotImplementedError

def linear(x, W, b):
    raise NotImplementedError

def quad(x):
    raise NotImplementedError

def norm(x):
    raise NotImplementedError
"""
