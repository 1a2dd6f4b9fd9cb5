"""The expr-equal corpus: equivalent forms, near misses, and hostile inputs.

Every case runs through the real checker (a worker process with a hard time limit), as
grading does. The hostile inputs must never be called equivalent, never run code (a
canary file must not appear) and must be answered quickly.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.written.expr.checker import ExprChecker

SKIPGRAM = ["u_o", "u_a", "u_b", "u_c", "p_a", "p_b", "p_c"]
SKIPGRAM_GRAD = "-u_o + p_a u_a + p_b u_b + p_c u_c"
TANH_RELATION = ["h", "z", "h = tanh(z)"]  # a2's tanh_derivative: symbols h, z with h = tanh(z)

# (answer, expected, symbols)
EQUIVALENT = [
    ("12 d^2 + 13 d", "d(12d+13)", ["d"]),
    ("d(12d+13)", "12*d**2 + 13*d", ["d"]),
    ("4 d^2 + 4 d + 2 d d_ff + d_ff + d + 4d", "4d^2 + 9d + 2 d d_ff + d_ff", ["d", "d_ff"]),
    ("2 d d_ff + d_ff + d", "d_ff(2d + 1) + d", ["d", "d_ff"]),
    ("2dd_ff + d_ff + d", "d_ff(2d + 1) + d", ["d", "d_ff"]),
    ("d_model^2 * 4 + 4 d_model", "4 d_model (d_model + 1)", ["d_model"]),
    ("V d + T d + L(12 d^2 + 13 d) + 2 d", "d(V + T + 2) + L d (12 d + 13)", ["V", "T", "L", "d"]),
    ("1 - tanh(z)^2", "1/cosh(z)^2", ["z"]),
    ("sigmoid(x)(1-sigmoid(x))", "exp(-x)/(1+exp(-x))^2", ["x"]),
    ("$\\sigma(z)(1-\\sigma(z))$", "sigmoid(z) - sigmoid(z)^2", ["z"]),
    ("σ(z)(1 − σ(z))", "sigmoid(z) - sigmoid(z)^2", ["z"]),
    ("sigmoid(-x)", "1 - sigmoid(x)", ["x"]),
    ("-log(sigmoid(s))", "log(1 + exp(-s))", ["s"]),
    ("tanh(x)", "(exp(2x) - 1)/(exp(2x) + 1)", ["x"]),
    ("2 sinh(x) cosh(x)", "sinh(2x)", ["x"]),
    ("$\\frac{1}{\\sqrt{d_k}}$", "1/sqrt(d_k)", ["d_k"]),
    ("sqrt(d_k)/d_k", "1/sqrt(d_k)", ["d_k"]),
    ("$\\frac{d_k}{\\sqrt{d_k}}$", "sqrt(d_k)", ["d_k"]),
    ("d_k^(-1/2)", "1/sqrt(d_k)", ["d_k"]),
    (SKIPGRAM_GRAD, "p_a u_a + p_b u_b + p_c u_c - u_o", SKIPGRAM),
    ("p_a u_a + p_b u_b + p_c u_c - u_o", SKIPGRAM_GRAD, SKIPGRAM),
    ("-(u_o - p_a u_a - p_b u_b - p_c u_c)", SKIPGRAM_GRAD, SKIPGRAM),
    ("(p_a - 1) u_a + p_b u_b + p_c u_c", "-u_a + p_a u_a + p_b u_b + p_c u_c", SKIPGRAM),
    ("(a+b)(a-b)", "a^2 - b^2", ["a", "b"]),
    ("2(x+1)", "2x + 2", ["x"]),
    ("x**2", "x^2", ["x"]),
    ("α x + β", "alpha*x + beta", ["alpha", "beta", "x"]),
    ("log(exp(x))", "x", ["x"]),
    ("exp(a+b)", "exp(a) exp(b)", ["a", "b"]),
    ("0.5 x", "x/2", ["x"]),
    ("1e-3 d", "d/1000", ["d"]),
    ("x − 2 × y", "x - 2y", ["x", "y"]),
    ("$x^{2} \\cdot y$", "x^2 y", ["x", "y"]),
    ("max(x, y) + min(x, y)", "x + y", ["x", "y"]),
    ("(1 - z) n + z h", "n - z n + z h", ["z", "n", "h"]),
    ("e^(-x^2)", "exp(-x^2)", ["x"]),
    ("4d²", "4 d^2", ["d"]),
    # LaTeX's function powers: \tanh^2(z) is (tanh z)^2 (issue 18)
    ("$1 - \\tanh^2(z)$", "1 - tanh(z)^2", ["z"]),
    ("$\\tanh^2 z$", "tanh(z)^2", ["z"]),
    ("$\\sin^2(x) + \\cos^{2}(x)$", "1", ["x"]),
    ("tanh^2(z)", "tanh(z) tanh(z)", ["z"]),
    # declared relations between symbols: h = tanh(z)
    ("1 - tanh(z)^2", "1 - h^2", TANH_RELATION),
    ("$1 - \\tanh^2(z)$", "1 - h^2", TANH_RELATION),
    ("1/cosh(z)^2", "1 - h^2", TANH_RELATION),
    ("1 - h^2", "1 - h^2", TANH_RELATION),
    # Unicode Greek for a declared short name, and for every declared Greek symbol
    ("ε x", "eps x", ["eps", "x"]),
    ("$\\varepsilon + \\epsilon$", "2 eps", ["eps"]),
    ("γ x + β + λ", "gamma x + beta + lam", ["gamma", "beta", "lam", "x"]),
    ("ε₁ + ε_2", "eps_1 + eps_2", ["eps_1", "eps_2"]),
]

DIFFERENT = [
    ("12 d^2 - 13 d", "12 d^2 + 13 d", ["d"]),  # sign flip
    ("12 d^2", "12 d^2 + 13 d", ["d"]),  # missing term
    ("12 d^3 + 13 d", "12 d^2 + 13 d", ["d"]),  # wrong power
    ("d(12d+13) + 1", "12 d^2 + 13 d", ["d"]),  # extra constant
    (
        "4 d^2 + 4 d + 2 d d_ff + d_ff",
        "4d^2 + 9d + 2 d d_ff + d_ff",
        ["d", "d_ff"],
    ),  # missing biases
    ("2/sqrt(d_k)", "1/sqrt(d_k)", ["d_k"]),  # constant factor
    ("1/d_k", "1/sqrt(d_k)", ["d_k"]),  # scale by d_k
    ("u_o - p_a u_a - p_b u_b - p_c u_c", SKIPGRAM_GRAD, SKIPGRAM),  # skipgram-grad-sign
    ("-u_o", SKIPGRAM_GRAD, SKIPGRAM),  # skipgram-grad-no-expectation
    ("p_a u_a + p_b u_b + p_c u_c", SKIPGRAM_GRAD, SKIPGRAM),  # missing -u_o
    ("1 - z^2", "1 - tanh(z)^2", ["z"]),  # derivative of the preactivation
    ("sigmoid(x)", "sigmoid(-x)", ["x"]),
    ("exp(-x)/(1+exp(-x))", "exp(-x)/(1+exp(-x))^2", ["x"]),
    ("1/2d", "1/(2d)", ["d"]),  # read left to right: d/2
    ("x", "abs(x)", ["x"]),  # differs only for negative x
    ("(a+b)^2", "a^2 + b^2", ["a", "b"]),
    ("log(x)", "log(x) + 1e-9 x", ["x"]),  # tiny but real difference
    ("exp(exp(exp(exp(x))))", "x", ["x"]),
    ("1 - z^2", "1 - h^2", TANH_RELATION),  # the preactivation squared, even with the relation
    ("1 - h", "1 - h^2", TANH_RELATION),
    ("$\\tanh^2(z)$", "tanh(z^2)", ["z"]),  # the power is on the value, not the argument
]


def _hostile(canary: Path) -> list[tuple[str, str, list[str]]]:
    c = str(canary)
    return [
        (f"__import__('os').system('touch {c}')", "x", ["x"]),
        ("x.__class__", "x", ["x"]),
        ("x.__class__.__mro__[1].__subclasses__()", "x", ["x"]),
        ('eval("1")', "1", []),
        (f"exec(\"open('{c}', 'w')\")", "x", ["x"]),
        (f"open('{c}', 'w')", "x", ["x"]),
        ("lambda: 1", "1", []),
        ("9^9^9^9", "x", ["x"]),
        ("9^9^9", "x", ["x"]),
        ("2^2^2^2^2", "x", ["x"]),
        ("factorial(10^9)", "x", ["x"]),
        ("10!", "x", ["x"]),
        ("10**10**10", "x", ["x"]),
        ("x^(10^12)", "x", ["x"]),
        ("1" * 40, "x", ["x"]),
        ("x + " * 25_000 + "x", "x", ["x"]),  # 100 000 characters
        ("(" * 5000 + "x" + ")" * 5000, "x", ["x"]),
        ("(" * 900 + "x" + ")" * 900, "x", ["x"]),
        ("-" * 500 + "x", "x", ["x"]),
        ("x\x00", "x", ["x"]),
        ("x\x1b[2J", "x", ["x"]),
        ("x\u202e", "x", ["x"]),
        ("x if x else y", "x", ["x", "y"]),
        ("x[0]", "x", ["x"]),
        ("'x'", "x", ["x"]),
        ("b'x'", "x", ["x"]),
        ('"x"', "x", ["x"]),
        ("$\\input{/etc/passwd}$", "x", ["x"]),
        ("$\\include{x}$", "x", ["x"]),
        ("$\\def\\x{1}$", "x", ["x"]),
        ("x; import os", "x", ["x"]),
        ("().__class__", "x", ["x"]),
        ("[c for c in ()]", "x", ["x"]),
        ("{'a': 1}", "x", ["x"]),
        ("globals()", "x", ["x"]),
        ("x = 1", "1", ["x"]),
        ("1/0", "x", ["x"]),
        ("", "x", ["x"]),
    ]


@pytest.fixture(scope="module")
def checker() -> Iterator[ExprChecker]:
    with ExprChecker(timeout=2.0) as j:
        yield j


def _check(checker: ExprChecker, answer: str, expected: str, symbols: list[str]):
    start = time.perf_counter()
    verdict = checker.check(answer, expected, symbols)
    elapsed = time.perf_counter() - start
    assert elapsed < 5.0, f"{answer[:60]!r} took {elapsed:.1f} s"
    return verdict


def test_corpus_is_large_enough() -> None:
    assert len(EQUIVALENT) + len(DIFFERENT) >= 40
    assert len(_hostile(Path("c"))) >= 20


@pytest.mark.parametrize(
    ("answer", "expected", "symbols"), EQUIVALENT, ids=[a for a, _, _ in EQUIVALENT]
)
def test_equivalent_forms(
    checker: ExprChecker, answer: str, expected: str, symbols: list[str]
) -> None:
    verdict = _check(checker, answer, expected, symbols)
    assert verdict.error is None
    assert verdict.equivalent, verdict
    assert verdict.method in ("symbolic", "numeric")
    assert verdict.interpreted


@pytest.mark.parametrize(
    ("answer", "expected", "symbols"), DIFFERENT, ids=[a for a, _, _ in DIFFERENT]
)
def test_different_forms(
    checker: ExprChecker, answer: str, expected: str, symbols: list[str]
) -> None:
    verdict = _check(checker, answer, expected, symbols)
    assert verdict.error is None, verdict.error
    assert not verdict.equivalent


def test_hostile_inputs_are_refused_quickly_and_run_nothing(
    checker: ExprChecker, tmp_path: Path
) -> None:
    canary = tmp_path / "CANARY"
    for answer, expected, symbols in _hostile(canary):
        verdict = _check(checker, answer, expected, symbols)
        assert not verdict.equivalent, answer[:60]
        assert verdict.error, answer[:60]
        assert not verdict.internal, answer[:60]
    assert not canary.exists()


def test_hostile_expected_side_is_also_safe(checker: ExprChecker, tmp_path: Path) -> None:
    # EXPECTED is trusted, but even a broken one must not run code
    canary = tmp_path / "CANARY"
    verdict = _check(checker, "x", f"__import__('os').system('touch {canary}')", None)
    assert not verdict.equivalent and verdict.internal
    assert not canary.exists()


# ------------------------------------------------- the fast path against sympy's


def _both(answer: str, expected: str, symbols: list[str] | None):
    from grader.written.expr.equivalence import equivalent
    from grader.written.expr.symbolic import equivalent as sympy_equivalent

    def run(check):
        try:
            return check(answer, expected, symbols)
        except ValueError:
            return "bad expected"

    return run(equivalent), run(sympy_equivalent)


@pytest.mark.parametrize(
    ("answer", "expected", "symbols"),
    EQUIVALENT + DIFFERENT,
    ids=[a for a, _, _ in EQUIVALENT + DIFFERENT],
)
def test_fast_path_agrees_with_sympy(answer: str, expected: str, symbols: list[str]) -> None:
    fast, slow = _both(answer, expected, symbols)
    assert fast.equivalent == slow.equivalent, (fast, slow)
    assert fast.error == slow.error and fast.interpreted == slow.interpreted
    assert fast.method == "numeric" and fast.note == slow.note


def test_fast_path_agrees_with_sympy_on_hostile_inputs(tmp_path: Path) -> None:
    canary = tmp_path / "CANARY"
    for answer, expected, symbols in _hostile(canary):
        fast, slow = _both(answer, expected, symbols)
        assert not fast.equivalent and not slow.equivalent, answer[:60]
        assert fast.error and slow.error, answer[:60]
        assert fast.internal == slow.internal, answer[:60]
    assert not canary.exists()


def test_fast_path_agrees_with_sympy_across_pairs() -> None:
    # every answer of the corpus against every expected that shares its symbols
    pairs = EQUIVALENT + DIFFERENT
    checked = 0
    for answer, _, symbols in pairs:
        for _, expected, other in pairs:
            if symbols != other:
                continue
            fast, slow = _both(answer, expected, symbols)
            assert fast.equivalent == slow.equivalent, (answer, expected, fast, slow)
            checked += 1
    assert checked > 200


# ------------------------------------------------- answers TOML mangled (issue 18)


@pytest.mark.parametrize(
    ("answer", "eaten"),
    [
        ("1 - \tanh(z)^2", "`\\t` is read as a TAB"),  # "1 - \tanh(z)^2" in a TOML "…" string
        ("$\\frac{1}{2} + \x08ar{x}$", "`\\b` is read as a backspace"),  # \bar: not a command here
        ("x +\tx", "`\\t` is read as a TAB"),
    ],
)
def test_a_toml_escape_in_an_answer_says_so(checker: ExprChecker, answer: str, eaten: str) -> None:
    verdict = _check(checker, answer, "1 - tanh(z)^2", ["z", "x"])
    assert not verdict.equivalent and not verdict.internal
    assert eaten in verdict.error
    assert "literal string in single quotes" in verdict.error


def test_latex_commands_eaten_by_toml_escapes_are_put_back(checker: ExprChecker) -> None:
    # "$1 - \tanh^2(z)$" in a TOML basic string arrives with a TAB for "\t"
    verdict = _check(checker, "$1 - \tanh^2(z)$", "1 - h^2", TANH_RELATION)
    assert verdict.equivalent and verdict.error is None
    assert verdict.interpreted == "1 - tanh(z)^2"
