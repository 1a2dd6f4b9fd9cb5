"""Equivalence (in-process) and the checker: worker process, hard kill, lazy start, CLI.

The fast path (trees evaluated with mpmath, no sympy) answers almost every check; the
sympy path (grader.written.expr.symbolic) is tested by calling it directly.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import sympy
from conftest import ROOT

from grader.app.expr_equal import expr_equal_cli
from grader.written.expr import symbolic
from grader.written.expr.checker import ExprChecker, Verdict, check_equivalent
from grader.written.expr.equivalence import equivalent, fast_equivalent, numbers_close
from grader.written.expr.errors import ExprError
from grader.written.expr.numeric import compile_tree, evaluate
from grader.written.expr.numeric import numerically_equal as numerically_equal_trees
from grader.written.expr.parser import parse, read
from grader.written.expr.symbolic import numerically_equal, symbolically_zero

# ------------------------------------------------------------------ equivalence


def test_symbolic_and_numeric_methods() -> None:
    v = equivalent("d(12d+13)", "12 d^2 + 13 d", ["d"])
    assert v.equivalent and v.method == "numeric" and v.error is None  # the fast path
    assert v.canonical == "d*(12*d + 13)"
    v = symbolic.equivalent("d(12d+13)", "12 d^2 + 13 d", ["d"])
    assert v.equivalent and v.method == "symbolic" and v.error is None
    v = symbolic.equivalent("1 - tanh(z)^2", "1/cosh(z)^2", ["z"])
    assert v.equivalent and v.method in ("symbolic", "numeric")


def test_different_is_decided_numerically() -> None:
    v = equivalent("12 d^2", "12 d^2 + 13 d", ["d"])
    assert not v.equivalent and v.method == "numeric" and v.error is None
    assert v.interpreted == "12*d^2"


def test_default_symbols_are_those_of_expected() -> None:
    assert equivalent("x y + 1", "1 + y x").equivalent
    v = equivalent("x + z", "x + y")
    assert not v.equivalent and "unknown name 'z'" in (v.error or "")


def test_parse_error_becomes_the_verdicts_error() -> None:
    v = equivalent("x +", "x", ["x"])
    assert not v.equivalent and v.error and v.interpreted is None


def test_bad_expected_raises_value_error() -> None:
    with pytest.raises(ValueError, match="expected expression"):
        equivalent("x", "x +", ["x"])


def test_points_where_expected_is_undefined_are_skipped() -> None:
    x = parse("x", ["x"])
    half_undefined = 1 / (sympy.floor(x) - 1)  # zoo for x in [1, 2): those points are redrawn
    assert numerically_equal(half_undefined, half_undefined) is True
    assert numerically_equal(half_undefined + 1e-3, half_undefined) is False
    assert numerically_equal(x, sympy.nan) is None  # nowhere defined: cannot decide
    assert equivalent("(x^2 - 1)/(x - 1)", "x + 1", ["x"]).equivalent
    assert (
        equivalent("log(x - 1) + log(x + 1)", "log(x^2 - 1)", ["x"]).equivalent is False
    )  # differ for x < -1


def test_real_symbols_and_negative_points() -> None:
    assert not equivalent("sqrt(x^2)", "x", ["x"]).equivalent  # |x| != x for x < 0
    assert equivalent("sqrt(x^2)", "abs(x)", ["x"]).equivalent


def test_constants_without_symbols() -> None:
    assert equivalent("2^10", "1024", []).equivalent
    assert not equivalent("2^10", "1025", []).equivalent
    assert equivalent("e^0", "1", []).equivalent


def test_symbolically_zero() -> None:
    assert symbolically_zero(parse("(x+1)^2 - x^2 - 2x - 1", ["x"]))
    assert symbolically_zero(parse("tanh(x) - (exp(2x)-1)/(exp(2x)+1)", ["x"]))
    assert not symbolically_zero(parse("x", ["x"]))


def _programs(answer: str, expected: str, names: list[str]):
    return (
        compile_tree(read(answer, names).tree, names),
        compile_tree(read(expected, names).tree, names),
    )


SHARED = [
    # p_a, p_b, p_c of a softmax, substituted: one sum of exponentials in three places
    "exp(a c)/(exp(a c) + exp(b c)) + b exp(b c)/(exp(a c) + exp(b c)) - a",
    "(exp(a) + 1)^2 + exp(a) + (exp(a) + 1) + log(exp(a) + 1)",  # nested repeats
    "log(a - b) + log(a - b)^2 + sqrt(a - b)",  # undefined or complex at half the points
    "1/(a - a) + (a - a)",  # undefined everywhere
    "tanh(a b) tanh(a b) + tanh(b a)",  # a b and b a are different computations
    "sigmoid(a) (1 - sigmoid(a)) + sigmoid(a)^2 + max(a, b) + max(a, b)",
]


@pytest.mark.parametrize("text", SHARED)
def test_a_repeated_computation_is_done_once_with_the_same_values(text, monkeypatch) -> None:
    """Each computation that occurs twice is kept and loaded: the program is shorter, and its
    value at every point is the unshared program's, bit for bit (or undefined where it is)."""
    import mpmath

    from grader.written.expr import numeric

    names = ["a", "b", "c"]
    tree = read(text, names).tree
    shared = compile_tree(tree, names)
    monkeypatch.setattr(numeric, "_shared", lambda program: program)
    plain = compile_tree(tree, names)
    assert any(op == "load" for op, _ in shared) and len(shared) < len(plain)
    with mpmath.workdps(numeric.DIGITS):
        for raw in list(numeric.points(3))[:40]:
            point = [mpmath.mpf(x) for x in raw]
            want = numeric.value_at(plain, point)
            got = numeric.value_at(shared, point)
            assert (got is None) == (want is None) and (want is None or got == want), raw


def test_a_program_without_repeats_is_left_as_it_is() -> None:
    (program, _) = _programs("exp(x) + log(x + 1) x", "x", ["x"])
    assert not any(op in ("keep", "load") for op, _ in program)


def test_fast_path_on_trees() -> None:
    assert numerically_equal_trees(*_programs("(x+1)^2", "x^2 + 2x + 1", ["x"]), 1) is True
    assert numerically_equal_trees(*_programs("(x+1)^2", "x^2 + 1", ["x"]), 1) is False
    # complex values, principal branches, as sympy with real symbols
    assert numerically_equal_trees(*_programs("sqrt(x)^2", "x", ["x"]), 1) is True
    assert numerically_equal_trees(*_programs("log(x^2)", "2 log(x)", ["x"]), 1) is False
    assert numerically_equal_trees(*_programs("log(x^2)", "2 log(abs(x))", ["x"]), 1) is True
    assert numerically_equal_trees(*_programs("x^(1/3)", "sqrt(x^(2/3))", ["x"]), 1) is True
    assert numerically_equal_trees(*_programs("sigmoid(x)", "1/(1+exp(-x))", ["x"]), 1) is True
    assert numerically_equal_trees(*_programs("log(8, 2)", "3", []), 0) is True
    assert evaluate(read("max(x, 2) + min(x, 2) + e^0 + pi - pi", ["x"]).tree, {"x": 0.5}) == 3.5


def test_fast_path_answers_without_sympy_and_labels_numeric() -> None:
    v = fast_equivalent("2 sinh(x) cosh(x)", "sinh(2x)", ["x"])
    assert v is not None and v.equivalent and v.method == "numeric"
    v = fast_equivalent("1/2d", "1/(2d)", ["d"])
    assert v is not None and not v.equivalent and v.method == "numeric"
    assert v.interpreted == "(1/2)*d" and v.canonical == "d/2" and v.note
    v = fast_equivalent("1/(1-1) + x", "x", ["x"])  # caught on the tree, exactly
    assert v is not None and not v.equivalent and "undefined" in (v.error or "")
    with pytest.raises(ValueError, match="expected expression"):
        fast_equivalent("x", "1/(1-1)", ["x"])
    # a constant mpmath cannot evaluate: sympy decides (undefined, or just large)
    assert fast_equivalent("log(0) + x", "x", ["x"]) is None
    v = equivalent("log(0) + x", "x", ["x"])
    assert not v.equivalent and "undefined" in (v.error or "")
    assert fast_equivalent("cosh(10^9) + x", "x", ["x"]) is None


def test_huge_values_are_undefined_not_slow() -> None:
    start = time.perf_counter()
    # exp(exp(exp(exp(2)))) is about 10^(10^702): out of range, not computed
    assert not equivalent("exp(exp(exp(exp(x))))", "x", ["x"]).equivalent
    assert not equivalent("x", "x + exp(exp(exp(exp(x))))", ["x"]).equivalent
    assert equivalent("exp(exp(exp(exp(x))))", "exp(exp(exp(exp(x))))", ["x"]).equivalent
    assert not equivalent("sin(10^25 x)", "x", ["x"]).equivalent
    assert not equivalent("(10^999 x)^1000 * (10^999 x)^1000", "x", ["x"]).equivalent
    assert not equivalent("2^(10^20 x)", "x", ["x"]).equivalent
    assert not equivalent("sigmoid(10^20 x) + cosh(10^20 x) + tanh(10^20 x)", "x", ["x"]).equivalent
    assert equivalent("sigmoid(-10^20 x^2)", "0", ["x"]).equivalent  # underflows to 0
    assert time.perf_counter() - start < 2.0


def test_undecidable_numerically_falls_back_to_sympy() -> None:
    # overflows at every sample point: the numeric check cannot decide, sympy can
    big = "exp(exp(exp(exp(x + 3))))"
    assert fast_equivalent(big, big, ["x"]) is None
    v = equivalent(big, big, ["x"])
    assert v.equivalent and v.method == "symbolic"


def test_constant_division_by_zero_is_caught_on_the_tree() -> None:
    for text in ("1/0", "x/(2 - 2)", "0^-1", "(1 - 1)^(-1/2)"):
        with pytest.raises(ExprError, match="undefined"):
            read(text, ["x"])


def test_fast_path_does_not_import_sympy() -> None:
    code = (
        "import sys, json; sys.path.insert(0, 'tests')\n"
        "from pathlib import Path\n"
        "from grader.written.expr.checker import _answer\n"
        "import test_expr_corpus as c\n"
        "cases = c.EQUIVALENT + c.DIFFERENT + c._hostile(Path('/nonexistent/CANARY'))\n"
        "for a, e, s in cases:\n"
        "    v = _answer({'answer': a, 'expected': e, 'symbols': s})\n"
        "    assert v['method'] in ('numeric', None), (a, v)\n"
        "print('sympy' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_worker_does_not_import_sympy() -> None:
    # the real worker loop: warm-up, then requests from stdin; it returns at EOF
    code = (
        "import sys; from grader.written.expr.checker import _worker_main; _worker_main(); "
        "sys.stderr.write('SYMPY=%s' % ('sympy' in sys.modules))"
    )
    requests = [
        {"answer": "d(12d+13)", "expected": "12 d^2 + 13 d", "symbols": ["d"]},
        {"answer": "$\\frac{1}{\\sqrt{d_k}}$", "expected": "1/sqrt(d_k)", "symbols": ["d_k"]},
        {"answer": "-u_a + p_a u_a", "expected": "(p_a - 1) u_a", "symbols": ["u_a", "p_a"]},
    ]
    start = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        input="".join(json.dumps(r) + "\n" for r in requests),
        capture_output=True,
        text=True,
        timeout=60,
    )
    elapsed = time.perf_counter() - start
    lines = out.stdout.strip().splitlines()
    assert json.loads(lines[0]) == {"ready": True}
    assert all(json.loads(line)["equivalent"] for line in lines[1:]) and len(lines) == 4
    assert "SYMPY=False" in out.stderr
    assert elapsed < 10.0


def test_numbers_close() -> None:
    assert numbers_close(1.0, 1.0 + 1e-12)
    assert not numbers_close(1.0, 1.0 + 1e-6)
    assert numbers_close(0.0, 1e-14)
    assert numbers_close(1e300, 1e300 * (1 + 1e-12))
    assert numbers_close(1j, 1j)


# ------------------------------------------------------------------------ checker


def test_checker_reuses_one_worker() -> None:
    with ExprChecker() as checker:
        assert not checker.started  # lazy
        assert checker.check("2 d", "d + d", ["d"]).equivalent
        pid = checker._proc.pid if checker._proc else None
        assert not checker.check("3 d", "d + d", ["d"]).equivalent
        assert checker._proc is not None and checker._proc.pid == pid
    assert not checker.started


def test_hard_kill_on_timeout_and_restart() -> None:
    with ExprChecker(timeout=2.0) as checker:
        checker.check("x", "x", ["x"])  # started and warm
        first = checker._proc
        start = time.perf_counter()
        assert first is not None
        os.kill(first.pid, signal.SIGSTOP)  # a worker that hangs mid-check never answers
        assert (
            checker.request({"answer": "x", "expected": "x", "symbols": ["x"]}, timeout=0.5) is None
        )
        assert time.perf_counter() - start < 5.0
        assert checker.restarts == 1 and not checker.started
        assert first is not None and first.poll() is not None  # killed, not left running
        assert checker.check("x + x", "2x", ["x"]).equivalent  # a new worker takes over


def test_timeout_verdict_message() -> None:
    with ExprChecker() as checker:
        checker.check("x", "x", ["x"])
        slow = " + ".join(f"sin({k} x)" for k in range(1, 120))
        v = checker.check(slow, slow, ["x"], timeout=0.001)
        assert v == Verdict(False, "took too long to check (over 0.001 s)")
        assert checker.check("x", "x", ["x"]).equivalent


def test_worker_survives_a_killed_process() -> None:
    with ExprChecker() as checker:
        checker.check("x", "x", ["x"])
        assert checker._proc is not None
        checker._proc.kill()
        checker._proc.wait()
        assert checker.check("x", "x", ["x"]).equivalent


def test_check_equivalent_one_off() -> None:
    v = check_equivalent("sigmoid(x)(1-sigmoid(x))", "exp(-x)/(1+exp(-x))^2")
    assert v.equivalent and v.interpreted == "sigmoid(x)*(1 - sigmoid(x))"


def test_non_string_answer() -> None:
    with ExprChecker() as checker:
        v = checker.check(12, "x", ["x"])  # type: ignore[arg-type]
        assert not v.equivalent and "as text" in (v.error or "")
        assert not checker.started


def test_importing_the_grader_side_does_not_import_sympy() -> None:
    code = (
        "import sys; import grader.written.expr, grader.written.expr.checker, grader.written.answers, grader.written.grading; "
        "from grader.written.expr import ExprChecker; ExprChecker(); print('sympy' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "False"


# -------------------------------------------------------------------------- CLI


def test_cli_prints_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert expr_equal_cli(["d(12d+13)", "12 d^2 + 13 d", "--symbols", "d"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1
    assert json.loads(lines[0]) == {
        "equivalent": True,
        "error": None,
        "interpreted": "d*(12*d + 13)",
    }


def test_cli_answer_may_start_with_a_minus(capsys: pytest.CaptureFixture[str]) -> None:
    assert expr_equal_cli(["-u_o + p u", "p u - u_o"]) == 0
    assert json.loads(capsys.readouterr().out)["equivalent"] is True


def test_cli_parse_error_is_reported_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert expr_equal_cli(["foo", "x", "--symbols=x,y"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (
        out["equivalent"] is False
        and "unknown name 'foo'" in out["error"]
        and out["interpreted"] is None
    )


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["x"],
        ["x", "y", "z"],
        ["x", "x", "--bogus"],
        ["x", "x", "--symbols"],
        ["x", "x", "--timeout", "zero"],
    ],
)
def test_cli_bad_arguments(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert expr_equal_cli(argv) == 2
    assert capsys.readouterr().out == ""


def test_cli_as_a_module() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "grader", "expr-equal", "1 - tanh(z)^2", "1/cosh(z)^2"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0
    assert json.loads(out.stdout) == {
        "equivalent": True,
        "error": None,
        "interpreted": "1 - tanh(z)^2",
    }


# ---------------------------------------------------------------- declared relations


def test_declared_relations_are_split_from_the_names() -> None:
    from grader.written.expr.equivalence import declarations

    assert declarations(["h", "z", "h = tanh(z)"]) == (["h", "z"], {"h": "tanh(z)"})
    assert declarations(["z", "h=tanh(z)"]) == (["z", "h"], {"h": "tanh(z)"})
    assert declarations(None) == (None, {})


def test_relations_are_used_on_both_sides_and_chain() -> None:
    symbols = ["h", "z", "a", "h = tanh(z)", "a = 1 - h^2"]
    assert equivalent("1 - tanh(z)^2", "a", symbols).equivalent
    assert equivalent("a", "1/cosh(z)^2", symbols).equivalent
    assert not equivalent("1 - z^2", "a", symbols).equivalent
    v = equivalent("1 - tanh(z)^2", "1 - h^2", ["h", "z", "h = tanh(z)"])
    assert v.equivalent and v.interpreted == "1 - tanh(z)^2"  # shown as written, not substituted


def test_without_the_relation_h_and_tanh_z_are_different_symbols() -> None:
    assert not equivalent("1 - tanh(z)^2", "1 - h^2", ["h", "z"]).equivalent
