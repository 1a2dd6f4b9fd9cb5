"""A derivation step's derivative, taken on the parsed tree (grader/written/expr/derivative.py),
against sympy's `diff` as the authority: equal in value at random points for every rule, None
(sympy then answers) for abs, max and min, and a derivation graded without importing sympy."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import sympy

from grader.written.expr.derivative import derivative
from grader.written.expr.parser import read
from grader.written.expr.printing import show
from grader.written.expr.sympy_tree import to_sympy

SYMBOLS = ["x", "y", "w_h", "h_prev", "b"]
CORPUS = [
    "x",
    "y",
    "3",
    "pi x + e",
    "x + y - 2x",
    "-x^3 + 3x",
    "x y",
    "2 x (x + y)",
    "x / (1 + x^2)",
    "1 / x",
    "x^(-1)",
    "x^(1/2)",
    "(x^2 + 1)^(3/2)",
    "x^x",
    "2^x",
    "e^(x y)",
    "y^x",
    "exp(-x^2)",
    "log(x^2 + 1)",
    "ln(x + 2)",
    "log(x + 3, 2)",
    "log(5, x + 2)",
    "sqrt(x^2 + 1)",
    "tanh(w_h h_prev + x b)",
    "sigmoid(2x + 1)",
    "sigma(x y)",
    "sinh(x) + cosh(x^2)",
    "sin(x) cos(2x)",
    "exp(x) / (1 + exp(x))",
    "tanh(tanh(x))^2",
]
# abs, max and min have no rule, but where the variable does not reach them they are constants
BY_X_ONLY = ["max(y, 2) x", "abs(y) + x", "min(y, 1, 2) / x"]


def _value(expr: sympy.Expr, point: dict[sympy.Symbol, float]) -> float:
    return complex(expr.evalf(subs=point)).real


@pytest.mark.parametrize(
    ("text", "by"), [(t, v) for t in CORPUS for v in ("x", "y")] + [(t, "x") for t in BY_X_ONLY]
)
def test_the_tree_derivative_equals_sympys_at_random_points(text: str, by: str) -> None:
    tree = read(text, SYMBOLS).tree
    taken = derivative(tree, by)
    assert taken is not None, text
    table = {n: sympy.Symbol(n, real=True) for n in SYMBOLS}
    ours = to_sympy(taken, table)
    theirs = sympy.diff(to_sympy(tree, table), table[by])
    reread = to_sympy(read(show(taken), SYMBOLS).tree, table)  # printed back, read again
    rng = np.random.default_rng(abs(hash((text, by))) % 2**32)
    for _ in range(5):
        point = {table[n]: float(rng.uniform(0.3, 1.7)) for n in SYMBOLS}
        want = _value(theirs, point)
        for got in (_value(ours, point), _value(reread, point)):
            assert got == pytest.approx(want, rel=1e-9, abs=1e-12), (text, by, show(taken))


@pytest.mark.parametrize("text", ["abs(x)", "max(x, 1)", "min(x, y) + x", "x abs(x)"])
def test_functions_without_a_rule_are_left_to_sympy(text: str) -> None:
    assert derivative(read(text, SYMBOLS).tree, "x") is None


def test_products_by_zero_and_one_are_folded() -> None:
    assert show(derivative(read("tanh(w_h h_prev + x b)", SYMBOLS).tree, "h_prev")) == (
        "(1 - tanh(w_h*h_prev + x*b)^2)*w_h"
    )
    assert show(derivative(read("x^3 + 3x", SYMBOLS).tree, "x")) == "3*x^2 + 3"
    assert show(derivative(read("y^2", SYMBOLS).tree, "x")) == "0"


def test_a_derivation_is_checked_without_importing_sympy() -> None:
    """The steps of a BPTT factor (the a2 answer key's) are checked, their derivative taken,
    and sympy is never imported (about 0.2 s of a grade)."""
    script = textwrap.dedent(
        """
        import sys
        from grader.written.expr.steps import check_step
        names = ["w_h", "h_prev", "w_x", "x_t", "b", "h_t", "z_t",
                 "z_t = w_h h_prev + w_x x_t + b", "h_t = tanh(z_t)"]
        steps = ["d/dh_prev tanh(w_h h_prev + w_x x_t + b)", "tanh'(z_t) w_h", "w_h (1 - h_t^2)"]
        previous = None
        for step in steps:
            verdict = check_step(step, previous, names)
            assert verdict.equivalent and verdict.error is None, (step, verdict)
            previous = step
        wrong = check_step("w_h h_t", steps[0], names)
        assert not wrong.equivalent, wrong
        print("sympy" in sys.modules)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False", done.stdout + done.stderr


def test_only_a_derivative_of_abs_max_or_min_warms_sympy_first() -> None:
    """The checker imports sympy before a step (outside the step's time limit) only when the
    step may need it: a derivative reaching abs, max or min, in the step or a definition."""
    from grader.written.expr.checker import _needs_sympy

    assert _needs_sympy("d/dx abs(x)", None, ["x"])
    assert _needs_sympy("x", "d/dx max(x, 0)", ["x"])
    assert _needs_sympy("d/dz h", None, ["z", "h", "h = max(0, z)"])
    assert not _needs_sympy("d/dz tanh(z)", None, ["z"])
    assert not _needs_sympy("max(z, 0)", "abs(z)", ["z"])  # no derivative asked for


def test_a_derivative_of_abs_still_reads_as_before() -> None:
    """sympy answers for abs, and its sign(x) is not a function an answer may use: the step is
    refused with the same words as before the tree derivative."""
    from grader.written.expr.steps import check_step

    verdict = check_step("d/dx abs(x)", None, ["x"])
    assert not verdict.equivalent and verdict.error.startswith("unknown name 'sign'")
