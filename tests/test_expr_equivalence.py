"""Equivalence (in-process) and the judge: worker process, hard kill, lazy start, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import sympy

from grader.expr.equivalence import equivalent, numbers_close, numerically_equal, symbolically_zero
from grader.expr.judge import ExprJudge, Verdict, check_equivalent, expr_equal_cli
from grader.expr.parser import parse

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ equivalence


def test_symbolic_and_numeric_methods() -> None:
    v = equivalent("d(12d+13)", "12 d^2 + 13 d", ["d"])
    assert v.equivalent and v.method == "symbolic" and v.error is None
    v = equivalent("1 - tanh(z)^2", "1/cosh(z)^2", ["z"])
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


def test_numbers_close() -> None:
    assert numbers_close(1.0, 1.0 + 1e-12)
    assert not numbers_close(1.0, 1.0 + 1e-6)
    assert numbers_close(0.0, 1e-14)
    assert numbers_close(1e300, 1e300 * (1 + 1e-12))
    assert numbers_close(1j, 1j)


# ------------------------------------------------------------------------ judge


def test_judge_reuses_one_worker() -> None:
    with ExprJudge() as judge:
        assert not judge.started  # lazy
        assert judge.check("2 d", "d + d", ["d"]).equivalent
        pid = judge._proc.pid if judge._proc else None
        assert not judge.check("3 d", "d + d", ["d"]).equivalent
        assert judge._proc is not None and judge._proc.pid == pid
    assert not judge.started


def test_hard_kill_on_timeout_and_restart() -> None:
    with ExprJudge(timeout=2.0) as judge:
        judge.check("x", "x", ["x"])  # started and warm
        first = judge._proc
        start = time.perf_counter()
        assert judge.request({"sleep": 60}, timeout=0.5) is None  # the test hook never answers
        assert time.perf_counter() - start < 5.0
        assert judge.restarts == 1 and not judge.started
        assert first is not None and first.poll() is not None  # killed, not left running
        assert judge.check("x + x", "2x", ["x"]).equivalent  # a new worker takes over


def test_timeout_verdict_message() -> None:
    with ExprJudge() as judge:
        judge.check("x", "x", ["x"])
        slow = " + ".join(f"sin({k} x)" for k in range(1, 120))
        v = judge.check(slow, slow, ["x"], timeout=0.001)
        assert v == Verdict(False, "took too long to check (over 0.001 s)")
        assert judge.check("x", "x", ["x"]).equivalent


def test_worker_survives_a_killed_process() -> None:
    with ExprJudge() as judge:
        judge.check("x", "x", ["x"])
        assert judge._proc is not None
        judge._proc.kill()
        judge._proc.wait()
        assert judge.check("x", "x", ["x"]).equivalent


def test_check_equivalent_one_off() -> None:
    v = check_equivalent("sigmoid(x)(1-sigmoid(x))", "exp(-x)/(1+exp(-x))^2")
    assert v.equivalent and v.interpreted == "sigmoid(x)*(1 - sigmoid(x))"


def test_non_string_answer() -> None:
    with ExprJudge() as judge:
        v = judge.check(12, "x", ["x"])  # type: ignore[arg-type]
        assert not v.equivalent and "as text" in (v.error or "")
        assert not judge.started


def test_importing_the_grader_side_does_not_import_sympy() -> None:
    code = (
        "import sys; import grader.expr, grader.expr.judge, grader.answers, grader.written; "
        "from grader.expr import ExprJudge; ExprJudge(); print('sympy' in sys.modules)"
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
        [sys.executable, "-m", "grader.expr.judge", "1 - tanh(z)^2", "1/cosh(z)^2"],
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
